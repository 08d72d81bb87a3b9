"""Call a piece of user code (a mechanism, a prior) so that it can neither hang nor end the audit.

Two ways a user's callable escapes the ``except Exception`` that turns its failures into one
error naming it:

- it never returns (an endless loop, a dead network call, a lost lock): with a ``timeout``
  the audit stops waiting and raises :class:`~mechanisms.errors.MechanismError` naming it;
- it calls ``sys.exit()`` (``SystemExit`` is no ``Exception``, and the audit would end
  silently with the user code's status): it becomes a ``MechanismError`` naming it;
- it calls ``os._exit()``, which ends the process at once, in the audit's own process without a
  word: while user code runs, ``os._exit`` called by it (not by miaudit's own code, such as a
  signal handler that runs meanwhile, and not in a process it forked) raises instead, and the
  call becomes a ``MechanismError`` naming it (:func:`_exit_guard`).

How the wait is bounded. On the main thread of a process that has ``SIGALRM`` (POSIX), an
interval timer interrupts the call: the user code runs where it always ran, and a loop in
Python, a ``time.sleep`` or a blocked system call are interrupted (code inside one compiled
call is interrupted only when it returns to Python). User code that uses ``SIGALRM`` itself
keeps its own timer and handler, shared with the bound (:mod:`mechanisms.calls.alarm`).
Elsewhere (another thread, Windows) the call runs on a daemon thread and the caller stops
waiting after ``timeout``; the abandoned thread runs on in the background until the process ends. Worker processes add a hard kill
for code stuck in compiled code (:mod:`mechanisms.execution.worker`).

Whose time ran out. User code may run inside another's bounded call with no bound of its own (a
user's statistic inside a per-database function's call, :mod:`audit.statistics.user_statistic`):
the enclosing bound covers both. Every call made inside a bounded one is recorded while it runs,
and when the bound fires the error names the innermost user code then running, not the enclosing
call it was waiting on; the bound itself, and so every timeout's meaning, is unchanged. A worker process
also reports that innermost code as it changes (:func:`report_running_to`), so that the audit's process can
name it when the worker dies in it (the hard kill of code stuck in compiled code, :mod:`mechanisms.execution.worker`).
"""

from __future__ import annotations

import contextvars
import math
import os
import sys
import threading
from contextlib import contextmanager
from time import monotonic

from mechanisms.calls.alarm import UnhandledAlarm, call_sharing_the_alarm, can_share_the_alarm
from mechanisms.calls.interrupts import raised_by_user_code
from mechanisms.calls.printed import is_miaudit_code
from mechanisms.errors import MechanismError
from mechanisms.calls.watchdog import STUCK_GRACE, WATCHDOG, stuck_message

__all__ = ["FIRST_CALL_TIMEOUT", "TIMEOUT_HINT", "call_user_code", "escape_error", "first_call_timeout", "first_calls_bounded_by",
           "report_running_to", "run_on_daemon_thread", "time_left"]

#: Seconds a first call of user code may take when no ``--timeout`` is given (executing a user's
#: file, a prior's probe, the mechanism's probe): long enough for a small training run, short
#: enough that code that never returns is reported within a minute.
FIRST_CALL_TIMEOUT = 60.0

_FIRST_CALL_LIMIT = contextvars.ContextVar("miaudit_first_call_limit", default=None)

#: The calls of user code in progress inside the outermost bounded call of this context, outermost first
#: (module docstring, "Whose time ran out"); None outside any bounded call.
_IN_PROGRESS = contextvars.ContextVar("miaudit_user_calls_in_progress", default=None)

#: Told the ``who`` of the innermost user code running inside the outermost bounded call of other code ("" for
#: none) each time a call inside a bounded one starts or ends (:func:`report_running_to`); None: nobody is told.
_REPORT = None


def report_running_to(report):
    """From now on tell ``report(who)`` which user code runs inside the outermost bounded call, whenever that
    changes: the ``who`` of the innermost call of other code than the bounded call's (a statistic inside a
    mechanism's call), "" when none runs (module docstring). None stops the reports.

    Returns
    -------
    The function told before, for the caller to restore.
    """
    global _REPORT
    previous, _REPORT = _REPORT, report
    return previous


def _report(calls: list) -> None:
    """Tell :data:`_REPORT` the innermost call in ``calls`` of other code than the outermost's
    (:func:`_innermost_inside`), "" where none runs."""
    inner = _innermost_inside(calls, calls[0]) if calls else None
    _REPORT(inner.who if inner is not None else "")


def first_call_timeout() -> float:
    """The bound on a first call of user code: the audit's ``--timeout`` where one is being built
    (:func:`first_calls_bounded_by`), else :data:`FIRST_CALL_TIMEOUT`."""
    return _FIRST_CALL_LIMIT.get() or FIRST_CALL_TIMEOUT


@contextmanager
def first_calls_bounded_by(timeout):
    """Within the block, first calls of user code are bounded by ``timeout`` seconds (a positive
    finite number; anything else keeps :data:`FIRST_CALL_TIMEOUT`, its validation is the caller's)."""
    usable = isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and 0 < timeout < math.inf
    token = _FIRST_CALL_LIMIT.set(float(timeout) if usable else None)
    try:
        yield
    finally:
        _FIRST_CALL_LIMIT.reset(token)


#: The process's own ``os._exit``, called by :func:`_exit_of_user_code` for everyone but the user code it guards.
_REAL_EXIT = os._exit

#: How many calls of user code each (process id, thread id) is running now, guarded by :func:`_exit_guard`.
_GUARDED: dict = {}
_GUARD_LOCK = threading.Lock()


class _ExitCalled(BaseException):
    """Raised in place of ``os._exit(status)`` called by user code while it runs (:func:`_exit_guard`)."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


def _exit_of_user_code(status):
    """``os._exit`` while user code runs: from that code, on the thread running it in this process, raise
    :class:`_ExitCalled`; from miaudit's code (a signal handler, the watchdog) or a forked child, end the process."""
    guarded = (os.getpid(), threading.get_ident()) in _GUARDED
    if guarded and not is_miaudit_code(sys._getframe(1).f_code.co_filename):
        raise _ExitCalled(status)
    _REAL_EXIT(status)


@contextmanager
def _exit_guard():
    """Within the block, ``os._exit`` called by user code on this thread raises :class:`_ExitCalled` (module
    docstring); ``os._exit`` is the process's own again once no thread runs guarded user code."""
    key = (os.getpid(), threading.get_ident())
    with _GUARD_LOCK:
        if not _GUARDED:
            os._exit = _exit_of_user_code
        _GUARDED[key] = _GUARDED.get(key, 0) + 1
    try:
        yield
    finally:
        with _GUARD_LOCK:
            _GUARDED[key] -= 1
            if not _GUARDED[key]:
                del _GUARDED[key]
            if not _GUARDED:
                os._exit = _REAL_EXIT


def _guarded(fn):
    """``fn`` run under :func:`_exit_guard` on whichever thread calls it."""
    def call(*arguments):
        with _exit_guard():
            return fn(*arguments)
    return call


class _Deadline(BaseException):
    """Raised inside user code when its time is up. A ``BaseException``, so that the user's own
    ``except Exception`` does not swallow it."""


TIMEOUT_HINT = "(--timeout); raise --timeout if it is merely slow"


class _Running:
    """One call of user code in progress, named ``who``, to end by ``deadline`` (``time.monotonic``; None: no bound
    of its own). Compared by identity: two calls of one code are two."""

    __slots__ = ("who", "deadline")

    def __init__(self, who: str, deadline: float | None = None):
        self.who, self.deadline = who, deadline


#: What :func:`time_left` says of a bound already past: soon, not never (a bound of 0 s would be none).
_PAST = 1e-3


def time_left() -> float | None:
    """Seconds left until the nearest deadline of the bounded calls of user code in progress in this context (at
    least a millisecond), None outside any: the time that code the user gave miaudit, started inside such a call
    (an external program's batch, :class:`mechanisms.adapters.callables.ExternalCommandMechanism`), may take."""
    deadlines = [call.deadline for call in _IN_PROGRESS.get() or () if call.deadline is not None]
    return max(min(deadlines) - monotonic(), _PAST) if deadlines else None


def _innermost_inside(calls: list, call: _Running) -> _Running | None:
    """The innermost call in progress inside ``call`` (recorded after it) of other user code, or None.

    A call of the same kind (the first word of ``who``: "prior", "mechanism", "statistic") is the same user
    code reached through a layer of miaudit's (a prior's draws bounded again by the caller that asked for
    them), not other code running inside it: naming it would name the code twice."""
    kind = call.who.split(" ", 1)[0]
    inside = [c for c in (calls[calls.index(call) + 1:] if call in calls else []) if c.who.split(" ", 1)[0] != kind]
    return inside[-1] if inside else None


def _overrun(who: str, timeout: float, where: str, inner: _Running | None) -> str:
    """What ran out of time: ``who`` itself, or the user code ``inner`` that was running inside its call."""
    if inner is None:
        return f"{who} did not return within {timeout:g} s{where}"
    return f"{inner.who}, running inside the call of {who}{where}, did not return within {timeout:g} s"


def _timed_out(who: str, timeout: float, where: str, hint: str, inner: _Running | None = None) -> MechanismError:
    # The error's mechanism stays the bounded call's: its bound fired, and its caller reports and retries it.
    error = MechanismError(f"{_overrun(who, timeout, where, inner)} {hint}", mechanism=who)
    error.timed_out = True  # not a failure of the code itself: a scan's resume audits such a case again
    return error


def _exited(who: str, exc: SystemExit, where: str) -> MechanismError:
    return MechanismError(f"{who} called sys.exit({exc.code!r}){where}; user code must return "
                          "its output or raise an exception", mechanism=who)


def escape_error(exc: BaseException, who: str, where: str = "") -> MechanismError | None:
    """The one-line error for ``exc``, raised by the user code ``who`` (on ``where``), when it is a way out of the
    call that is no ``Exception``: ``sys.exit``, ``os._exit`` (:func:`_exit_guard`), a ``SIGALRM`` with no handler,
    ``GeneratorExit``, a ``KeyboardInterrupt`` the code raised itself (no Ctrl-C arrived:
    :func:`mechanisms.calls.interrupts.raised_by_user_code`) or a user's own ``BaseException`` subclass. None for an
    ``Exception`` (the caller describes it), the user's Ctrl-C (which ends the audit) and an enclosing call's deadline
    (not this code's failure): those propagate as they are. A caller that runs user code once per database inside one call
    (:class:`mechanisms.adapters.callables.PerDatabaseMechanism`) names the database with it."""
    if isinstance(exc, (Exception, _Deadline)) or (isinstance(exc, KeyboardInterrupt) and not raised_by_user_code(exc)):
        return None
    if isinstance(exc, SystemExit):
        return _exited(who, exc, where)
    if isinstance(exc, _ExitCalled):
        return MechanismError(f"{who} called os._exit({exc.status!r}){where}; user code must return its output or "
                              "raise an exception", mechanism=who)
    if isinstance(exc, UnhandledAlarm):
        return MechanismError(f"{who} received SIGALRM{where} with no handler installed (a timer armed by it or by "
                              "code it calls went off while SIGALRM's handler was SIG_DFL): outside miaudit this ends "
                              "the process; install a handler with signal.signal before arming the timer",
                              mechanism=who)
    text = f": {exc}" if str(exc) else ""
    return MechanismError(f"{who} raised {type(exc).__name__}{where}{text} (a BaseException that is not an "
                          "Exception; user code must raise an Exception to fail)", mechanism=who)


def _call_with_alarm(fn, arguments, timeout, running):
    fired = False
    culprit = None

    def time_up():
        nonlocal fired, culprit
        fired, culprit = True, running()  # before the deadline unwinds the code that was running
        raise _Deadline

    try:
        result = call_sharing_the_alarm(fn, arguments, timeout, time_up)
    except _Deadline:
        return None, True, culprit
    # User code that caught the interruption with a bare ``except:`` still ran out of time.
    return result, fired, culprit


def run_on_daemon_thread(fn, timeout: float | None, name: str) -> tuple:
    """``fn()`` on a daemon thread named ``name``, in a copy of the caller's context, waited for at most
    ``timeout`` seconds (None: no bound).

    A call still running at the deadline is left behind, blocked, until the process ends (a thread
    cannot be stopped from outside); the caller stops waiting. The copied context carries the caller's
    first-call bound and its record of the user code running (module docstring) into the thread.

    Returns
    -------
    (result, error, timed_out)
        ``fn``'s return value (None unless it returned), the ``BaseException`` it raised (None unless
        it raised; the caller decides how to report it) and whether the deadline passed first.
    """
    outcome = {}

    def target():
        try:
            outcome["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as it is
            outcome["error"] = exc

    thread = threading.Thread(target=contextvars.copy_context().run, args=(target,), name=name, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return None, None, True
    return outcome.get("result"), outcome.get("error"), False


def _call_on_thread(fn, arguments, timeout, running):
    result, error, timed_out = run_on_daemon_thread(lambda: fn(*arguments), timeout, "miaudit-user-call")
    if timed_out:
        return None, True, running()
    if error is not None:
        raise error
    return result, False, None


def call_user_code(fn, arguments=(), *, who: str, timeout: float | None = None, where: str = "",
                   hint: str = TIMEOUT_HINT):
    """Return ``fn(*arguments)``, bounded in time and with ``sys.exit`` turned into an error.

    Parameters
    ----------
    fn : callable
        The user's code.
    arguments : tuple
        Its arguments.
    who : str
        What it is, for messages (``"mechanism 'noisy_sum'"``).
    timeout : float, optional
        Seconds to wait for it (default: no limit).
    where : str
        Appended to messages to say on what it was called (``" on databases 0-255"``).
    hint : str
        Ends the timeout message: what bounds the wait and how to change it.

    Raises
    ------
    MechanismError
        Naming ``who`` when it does not return within ``timeout``, calls ``sys.exit`` or raises a
        ``BaseException`` that is not an ``Exception`` (``GeneratorExit``, a class of its own).
        Where the time ran out while other user code ran inside this call, unbounded itself (a
        statistic inside a mechanism's call), the message names that code first (module docstring).
        Any other exception of ``fn`` propagates unchanged, for the caller to describe.
    """
    calls = _IN_PROGRESS.get()
    if calls is None and timeout is None:  # inside no bound, and none of its own: nothing to record
        return _call(fn, arguments, who, where)
    token = None
    if calls is None:  # the outermost bound: the calls inside it are recorded for it
        calls = []
        token = _IN_PROGRESS.set(calls)
    this = _Running(who, None if timeout is None else monotonic() + timeout)
    calls.append(this)
    if _REPORT is not None:
        _report(calls)
    try:
        return _call(fn, arguments, who, where, timeout, hint, lambda: _innermost_inside(calls, this))
    finally:
        # Forget this call and whatever an abandoned thread inside it still runs (a later bound must not name it).
        if this in calls:
            del calls[calls.index(this):]
        if _REPORT is not None:
            _report(calls)
        if token is not None:
            _IN_PROGRESS.reset(token)


def _call(fn, arguments, who: str, where: str, timeout: float | None = None, hint: str = TIMEOUT_HINT,
          running=lambda: None):
    """:func:`call_user_code`'s call; ``running()``: the user code in progress inside it when its time ran out."""
    fn = _guarded(fn)
    try:
        if timeout is None:
            return fn(*arguments)
        runner = _call_with_alarm if can_share_the_alarm() else _call_on_thread
        if runner is _call_with_alarm and WATCHDOG.enabled:  # the alarm may be ignored: bound it anyway
            previous = WATCHDOG.arm(timeout + STUCK_GRACE,
                                    lambda: stuck_message(_overrun(who, timeout, where, running())))
            try:
                result, late, culprit = runner(fn, arguments, timeout, running)
            finally:
                WATCHDOG.restore(previous)
        else:
            result, late, culprit = runner(fn, arguments, timeout, running)
    except BaseException as exc:
        error = escape_error(exc, who, where)
        if error is None:
            raise
        raise error from None
    if late:
        raise _timed_out(who, timeout, where, hint, culprit)
    return result
