"""A watchdog for in-process user calls that outlive their timeout and ignore its interruption.

Standard library only, so that the command line turns it on before it imports anything heavy.
"""

from __future__ import annotations

import os
import threading
import time

from mechanisms.calls.printed import terminal_stderr

__all__ = ["STUCK_EXIT_STATUS", "STUCK_GRACE", "WATCHDOG", "exit_when_stuck", "stuck_message"]

#: Seconds past its timeout that a call which ignored the interruption may run before the process
#: ends (when :func:`exit_when_stuck` is on: the command line).
STUCK_GRACE = 5.0

#: The exit status of a process ended by the watchdog (that of a failing user function).
STUCK_EXIT_STATUS = 1


class _Watchdog:
    """Ends the process, with one line on stderr, when an in-process call outlives its deadline.

    The interval timer cannot interrupt user code that ignores ``SIGALRM`` (blocks the signal,
    installs a handler from compiled code: one installed through the signal module is for the
    user's own alarms only, :mod:`mechanisms.calls.alarm`) or swallows the interruption in a loop
    of bare ``except:``;
    without a bound the audit then hangs for ever (issue 32 B3). A daemon thread waits for the
    armed deadline; it needs the interpreter lock, which Python code releases regularly.
    """

    def __init__(self):
        self._condition = threading.Condition()
        self._deadline = self._message = self._thread = None
        self.enabled = False

    def arm(self, seconds: float, message):
        """Arm a deadline ``seconds`` from now; ``message``: the line, or a function that returns it when it fires.
        Returns the previous deadline, for :meth:`restore`."""
        with self._condition:
            previous = (self._deadline, self._message)
            self._deadline, self._message = time.monotonic() + seconds, message
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="miaudit-watchdog", daemon=True)
                self._thread.start()
            self._condition.notify()
            return previous

    def restore(self, previous) -> None:
        with self._condition:
            self._deadline, self._message = previous
            self._condition.notify()

    def _watch(self):
        with self._condition:
            while True:
                if self._deadline is None:
                    self._condition.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._condition.wait(left)
                    continue
                try:  # a message given as a function says what runs now (mechanisms.calls.user_call)
                    message = self._message() if callable(self._message) else self._message
                    stream = terminal_stderr()  # not the capture of the call's prints (mechanisms.calls.printed)
                    stream.write(message + "\n")
                    stream.flush()
                finally:
                    os._exit(STUCK_EXIT_STATUS)


WATCHDOG = _Watchdog()


def exit_when_stuck(enabled: bool = True) -> None:
    """Let a call that outlives its timeout by :data:`STUCK_GRACE` seconds, having ignored the
    interruption, end the process with one line naming it (the command line turns this on; a
    library caller's process is never ended unless it asks)."""
    WATCHDOG.enabled = bool(enabled)


#: Why a bounded call can ignore its interruption. A handler or timer the user code sets for SIGALRM does not
#: (:mod:`mechanisms.calls.alarm` keeps the user's apart from the bound's); a signal mask does, as does compiled code
#: that never returns to the interpreter (where Python runs signal handlers) or a handler of every exception.
IGNORED_INTERRUPTION_CAUSES = "it is stuck in compiled code, blocks SIGALRM, or catches every exception"


def stuck_message(overrun: str) -> str:
    """The line for a call that ignored its interruption; ``overrun`` says what did not return within what."""
    return (f"miaudit: error: {overrun} and ignored the interruption ({IGNORED_INTERRUPTION_CAUSES}); the audit "
            f"was stopped {STUCK_GRACE:g} s later")
