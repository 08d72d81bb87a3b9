"""Tell the user's Ctrl-C from a ``KeyboardInterrupt`` that user code raises itself.

Both reach miaudit as a ``KeyboardInterrupt`` inside the user's call: the first must end the audit ("interrupted",
status 130), the second is the user code's failure and, like any other, one error naming it. The command line keeps
Python's own SIGINT handler but notes each SIGINT that arrives (:func:`watch_interrupts`); a ``KeyboardInterrupt``
raised where no SIGINT ever arrived, or in a process that ignores SIGINT (a worker: the audit's process is the one
the user interrupts), is the user code's (:func:`raised_by_user_code`). Where nothing is watched (miaudit called
from Python), every ``KeyboardInterrupt`` is taken for a Ctrl-C, as before.

Standard library only, so that the command line turns it on before it imports anything heavy.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["raised_by_user_code", "watch_interrupts"]

#: The SIGINTs this process received since :func:`watch_interrupts` (a list: one object for the handler to change).
_RECEIVED: list = []


def _note_and_interrupt(signum, frame):
    """Python's SIGINT handler (raise ``KeyboardInterrupt``), with the signal noted first."""
    _RECEIVED.append(signum)
    signal.default_int_handler(signum, frame)


def watch_interrupts() -> None:
    """Note every SIGINT this process receives, where its handler is Python's default and this is the main
    thread (a handler of the program's own is left alone); a Ctrl-C still raises ``KeyboardInterrupt``."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _note_and_interrupt)


def raised_by_user_code(exc: BaseException) -> bool:
    """Whether ``exc``, a ``KeyboardInterrupt`` met in user code, cannot be a Ctrl-C: SIGINT is watched
    (:func:`watch_interrupts`) and none arrived, or this process ignores SIGINT. A ``KeyboardInterrupt`` that
    carries a signal number (the command line's SIGTERM and SIGHUP, ``audit.cli.main.Terminated``) is a signal's."""
    if not isinstance(exc, KeyboardInterrupt) or getattr(exc, "signum", None) is not None:
        return False
    handler = signal.getsignal(signal.SIGINT)
    return handler is signal.SIG_IGN or (handler is _note_and_interrupt and not _RECEIVED)
