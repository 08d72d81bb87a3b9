"""The interval timer and ``SIGALRM``, shared between a call's time bound and the user code it bounds.

miaudit bounds an in-process call of user code with the process's real interval timer (``ITIMER_REAL``) and a
``SIGALRM`` handler of its own (:mod:`mechanisms.calls.user_call`). Both are one per process, and user code may
use them too: a mechanism that wraps a slow library call in ``signal.alarm(5)`` with a handler of its own, a
handler installed when its file is imported and a timer armed at each call, a library's time limit. Left alone,
the user's timer replaces the bound's (the bound is lost once the user disarms it), the user's alarm runs
miaudit's handler (reported as a timeout of a bound that had not passed), and putting miaudit's handler back
after the call drops the handler the user code installed.

So while a bounded call runs on the main thread, the signal module's ``signal``, ``getsignal``, ``alarm``,
``setitimer`` and ``getitimer`` act, for ``SIGALRM`` and ``ITIMER_REAL``, on the user code's own handler and
timer, kept here (:class:`_Shared`) as it would see them without miaudit: the handler installed before the call,
the timer unarmed. The real timer is armed at the nearer of the bound's deadline and the user's timer. When it
fires, the bound's deadline is handled if it has passed; else the user's handler is run as the kernel would have
run it (``SIG_IGN``: nothing; ``SIG_DFL``, which would end the process, raises :class:`UnhandledAlarm`, reported
naming the user code), and the real timer is re-armed for whichever comes next. A ``SIGALRM`` that is neither (a
timer armed by compiled code, a kill) re-arms the bound and runs the user's handler if it has one of its own
(nothing else: it might be an earlier bound's alarm delivered late). After the call the user's handler and timer
become the process's, as it left them; a process the user code forks gets them at once. So a user's alarm runs
its handler and raises its own error, the bound survives whatever the user code does with the timer through the
signal module (``signal.signal(signal.SIGALRM, signal.SIG_IGN)`` ignores its own alarms, not the bound), and code
that never touches ``SIGALRM`` runs as before, at no extra cost (about 10 µs a bounded call, as before).

Why share rather than step aside: a call cannot be moved to the daemon-thread bound once its code is seen to use
the timer (it is already running), and on a thread ``signal.signal`` raises; the watchdog only ends the process.

Not covered: compiled code, and signal functions bound by name before the first bounded call (``from signal
import setitimer``), act on the real handler and timer: a handler they install replaces the bound's (and stays
after the call), and a timer they disarm takes the bound with it until the next alarm this module sees; the
watchdog (:mod:`mechanisms.calls.watchdog`, on the command line) and a worker's hard kill still end such a call.
"""

from __future__ import annotations

import errno
import math
import operator
import os
import signal
import struct
import threading
import time

try:  # the compiled module: signal.signal and signal.getsignal wrap it in Python, at about 1 µs a call
    import _signal as _compiled
except ImportError:  # pragma: no cover - an interpreter without it
    _compiled = signal

__all__ = ["UnhandledAlarm", "call_sharing_the_alarm", "can_share_the_alarm"]

# The signal module's own functions: miaudit's code always acts on the real timer and handler.
_real_signal, _real_getsignal = signal.signal, signal.getsignal
_real_alarm, _real_setitimer, _real_getitimer = signal.alarm, signal.setitimer, signal.getitimer
# ... and their compiled forms, for miaudit's own calls: a handler goes in and comes out as 0 (SIG_DFL), 1
# (SIG_IGN), a callable or None (installed by compiled code).
_set_handler, _handler = _compiled.signal, _compiled.getsignal

#: A real alarm this close before a deadline is that deadline's (a timer measured on another clock may fire a
#: hair early; one second's thousandth is far below any bound).
_EARLY = 1e-3

#: The shortest time the real timer is armed for (``setitimer`` with 0 disarms it).
_SOON = 1e-6


class UnhandledAlarm(BaseException):
    """A user's ``SIGALRM`` went off while its handler was ``SIG_DFL``: outside miaudit the process would have
    ended. A ``BaseException``, as the process's end is not for the user code's ``except Exception`` to catch."""


class _Shared:
    """One bounded call's share of the timer: the bound's deadline (``time.monotonic``), what to do when it
    passes, and the user code's own handler and timer (``due``: when it goes off, None when unarmed)."""

    __slots__ = ("deadline", "time_up", "handler", "due", "interval", "over", "closed", "own")

    def __init__(self, time_up):
        self.deadline, self.time_up, self.handler = math.inf, time_up, signal.Handlers.SIG_DFL
        self.due, self.interval, self.over, self.closed, self.own = None, 0.0, False, False, None

    def arm(self) -> None:
        """Arm the real timer at the nearer of the deadline and the user's timer (not once the call is over: the
        user's timer is then handed back as it stands)."""
        if self.over:
            return
        nearest = self.deadline if self.due is None else min(self.deadline, self.due)
        if nearest < math.inf:
            _real_setitimer(signal.ITIMER_REAL, max(nearest - time.monotonic(), _SOON))

    def left(self) -> tuple[float, float]:
        """The user's timer as ``getitimer`` reads it: (seconds left, interval); an armed timer reads above 0."""
        if self.due is None:
            return 0.0, 0.0
        return max(self.due - time.monotonic(), _SOON), self.interval


#: The bounded call in progress on this process's main thread, None outside any.
_ACTIVE: _Shared | None = None


def _shared(main_only: bool = False) -> _Shared | None:
    """The call whose view of the timer applies here; for ``main_only``, None on another thread
    (``signal.signal`` is refused there)."""
    if main_only and threading.current_thread() is not threading.main_thread():
        return None
    return _ACTIVE


def _on_alarm(shared: _Shared, signum, frame):
    """The real ``SIGALRM`` handler while ``shared``'s call runs (module docstring)."""
    if shared.closed:  # being handed back: the user's timer, due or not, is re-armed for its handler
        return
    now = time.monotonic()
    if now >= shared.deadline - _EARLY:
        shared.deadline = math.inf  # fired once, as a timer does; a later alarm is the user's
        shared.time_up()  # raises
    if shared.due is not None and now >= shared.due - _EARLY:
        # Periodic: the next period after now, as the kernel skips the periods it missed.
        shared.due = (shared.due + shared.interval * (math.floor((now - shared.due) / shared.interval) + 1)
                      if shared.interval > 0 else None)
        shared.arm()
        _dispatch(shared.handler, signum, frame)
        return
    # From elsewhere: a timer armed around the signal module, which consumed the bound's (re-armed here), or a
    # kill. Only a handler of the user's own is run: the default action might end the process for a late alarm
    # of an earlier bound, delivered after its disarm.
    shared.arm()
    if callable(shared.handler):
        shared.handler(signum, frame)


def _install(handler) -> None:
    """Make ``handler`` (as the user code sees it: a callable or a :class:`signal.Handlers`) the real one."""
    _set_handler(signal.SIGALRM, handler if callable(handler) else int(handler))


def _dispatch(handler, signum, frame):
    """Run ``handler`` for a ``SIGALRM`` as the process would have run it."""
    if callable(handler):
        handler(signum, frame)
    elif handler == signal.SIG_DFL:
        raise UnhandledAlarm
    # SIG_IGN: nothing.


def _signal(signalnum, handler):
    shared = _shared(main_only=True)
    if shared is None or signalnum != signal.SIGALRM:
        return _real_signal(signalnum, handler)
    if not callable(handler):
        if not (isinstance(handler, int) and handler in (signal.SIG_DFL, signal.SIG_IGN)):
            return _real_signal(signalnum, handler)  # the signal module's own TypeError
        handler = signal.Handlers(handler)
    previous, shared.handler = shared.handler, handler
    return previous


def _getsignal(signalnum):
    shared = _shared()
    if shared is None or signalnum != signal.SIGALRM:
        return _real_getsignal(signalnum)
    return shared.handler


def _seconds(value) -> float:
    """``value`` read as ``setitimer`` reads its seconds, with its errors."""
    if not isinstance(value, float):
        value = operator.index(value)  # TypeError: "'str' object cannot be interpreted as an integer"
    if math.isnan(value):
        raise ValueError("Invalid value NaN (not a number)")
    if value < 0:
        raise signal.ItimerError(errno.EINVAL, os.strerror(errno.EINVAL))
    if value >= 2.0 ** 63:
        raise OverflowError("timestamp out of range for platform time_t")
    return float(value)


def _set(shared: _Shared, seconds: float, interval: float) -> tuple[float, float]:
    previous = shared.left()
    shared.due = time.monotonic() + seconds if seconds > 0 else None
    shared.interval = interval if seconds > 0 else 0.0
    shared.arm()
    return previous


def _setitimer(which, seconds, interval=0.0):
    shared = _shared()
    if shared is None or which != signal.ITIMER_REAL:
        return _real_setitimer(which, seconds, interval)
    return _set(shared, _seconds(seconds), _seconds(interval))


def _getitimer(which):
    shared = _shared()
    if shared is None or which != signal.ITIMER_REAL:
        return _real_getitimer(which)
    return shared.left()


#: The range of a C ``int``, which ``signal.alarm`` takes its seconds as (CPython's argument conversion).
_INT_BITS = 8 * struct.calcsize("i")
_INT_MIN, _INT_MAX = -2 ** (_INT_BITS - 1), 2 ** (_INT_BITS - 1) - 1


def _alarm_seconds(value) -> int:
    """``value`` read as ``signal.alarm`` reads its seconds, with its errors: an integer (``__index__``; a float is a
    TypeError) within a C ``int`` (else CPython's OverflowError, whose words are the same for either sign), passed
    to alarm(3), which takes an ``unsigned int``: a negative one wraps (``alarm(-1)`` arms 2^32 − 1 s)."""
    value = operator.index(value)  # TypeError: "'float' object cannot be interpreted as an integer"
    if not _INT_MIN <= value <= _INT_MAX:
        raise OverflowError("Python int too large to convert to C int")
    return value % 2 ** _INT_BITS


def _alarm(seconds):
    shared = _shared()
    if shared is None:
        return _real_alarm(seconds)
    left = _set(shared, float(_alarm_seconds(seconds)), 0.0)[0]
    # What alarm(3) returns: the seconds left, rounded to the nearest, and at least 1 for an armed timer (glibc).
    whole = int(left)
    return whole + 1 if (whole == 0 and left > 0) or left - whole >= 0.5 else whole


_VIRTUAL = {"signal": _signal, "getsignal": _getsignal, "alarm": _alarm, "setitimer": _setitimer,
            "getitimer": _getitimer}
_REAL = {"signal": _real_signal, "getsignal": _real_getsignal, "alarm": _real_alarm, "setitimer": _real_setitimer,
         "getitimer": _real_getitimer}
#: Where they are swapped while a bounded call runs.
_NAMESPACE = vars(signal)


def can_share_the_alarm() -> bool:
    """Whether :func:`call_sharing_the_alarm` can bound a call here: on the main thread of a process with
    ``setitimer`` whose real timer is unarmed and whose handler was installed from Python (``getsignal`` is not
    None: one installed by compiled code could not be put back)."""
    return (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
            and _real_getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and _handler(signal.SIGALRM) is not None
            and _ACTIVE is None)  # inside a call whose bound fired and was swallowed: not twice


def call_sharing_the_alarm(fn, arguments, seconds: float, time_up):
    """``fn(*arguments)`` bounded by ``seconds``: ``time_up()`` (which raises) is called in the ``SIGALRM``
    handler when they have passed, while the user code keeps its own timer and handler (module docstring).
    Call it only where :func:`can_share_the_alarm`.

    Raises
    ------
    UnhandledAlarm
        The user's own ``SIGALRM`` went off with no handler (``SIG_DFL``).
    """
    global _ACTIVE
    shared = _Shared(time_up)

    def on_alarm(signum, frame):
        _on_alarm(shared, signum, frame)

    shared.own = on_alarm
    previous = _set_handler(signal.SIGALRM, on_alarm)
    shared.handler = previous if callable(previous) else signal.Handlers(previous)
    _ACTIVE = shared
    _NAMESPACE.update(_VIRTUAL)
    try:
        # The timer is armed and disarmed inside the caller's try that catches the deadline: an alarm firing
        # right after setitimer, or as the call returns just before the disarm, is a timeout, not an escape.
        try:
            shared.deadline = time.monotonic() + seconds
            _real_setitimer(signal.ITIMER_REAL, seconds)
            return fn(*arguments)
        finally:
            shared.over = True  # a user's alarm handled from here on re-arms nothing
            _real_setitimer(signal.ITIMER_REAL, 0)
    finally:
        # A SIGALRM handled from here on is let pass (_on_alarm): the bound's is late, the user's timer is handed
        # back (at 1 µs if it was due) to go off into its handler. The hand-back is in a finally of its own: a
        # deadline handled just before ``closed`` is set raises here, and must not leave the signal module swapped.
        try:
            shared.closed = True
        finally:
            _hand_back(shared)
            if shared.due is not None:
                value, interval = shared.left()
                _real_setitimer(signal.ITIMER_REAL, value, interval)


def _hand_back(shared: _Shared) -> None:
    """Make the user's handler the process's, as it left it (a handler installed around the signal module,
    by compiled code, stays), and the signal module's functions its own again."""
    global _ACTIVE
    _ACTIVE = None
    # Unless the user code replaced one in turn (a mock).
    _NAMESPACE.update({name: _REAL[name] for name, virtual in _VIRTUAL.items() if _NAMESPACE.get(name) is virtual})
    if _handler(signal.SIGALRM) is shared.own:
        _install(shared.handler)


def _after_fork_in_child() -> None:
    """A process forked by user code inside a bounded call has no bound, and no timer (fork does not copy
    them): it gets the user's handler and the signal module at once."""
    if _ACTIVE is not None:
        _hand_back(_ACTIVE)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
