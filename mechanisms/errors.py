"""The error a misbehaving piece of user code (mechanism, prior, secret function) raises, and the
warning for user code that runs but deserves attention."""

from __future__ import annotations

from pathlib import Path

from estimators.validation import InputError

__all__ = ["MechanismError", "MechanismWarning", "REFUSAL_ERRORS", "StatisticError", "exception_text", "raised_in_file",
           "raised_where", "refuses"]

#: What user code raises to refuse its argument's values (miaudit's own and Python's convention), by the exception
#: class's name: :attr:`MechanismError.refused`.
REFUSAL_ERRORS = ("InputError", "ValueError")


#: The folders of miaudit's packages: code there is not the user's.
_PACKAGES = tuple(Path(__file__).resolve().parents[1] / name for name in ("audit", "estimators", "experiments",
                                                                          "mechanisms"))


def exception_text(exc: BaseException) -> str:
    """``": message"`` of ``exc`` for an error that names it after its type, or ``""`` where it has no message
    (``MemoryError()``, ``raise ValueError``): "raised MemoryError on database 0" rather than "…0:  (at …)"."""
    text = str(exc)
    return f": {text}" if text else ""


def raised_where(exc: BaseException, function) -> str:
    """Where in the user's file ``exc`` was raised: `` (at FILE line N, in NAME)``, else ``""``.

    The innermost frame of ``exc``'s traceback in the file that defines ``function`` (a function, or an
    object whose ``__call__`` is one): the line of the user's own code that raised, or that called the
    library that did, so that a one-line error points at the line to fix.
    """
    import inspect

    try:  # a hostile object (a __wrapped__ cycle, an attribute that raises) gets no location, not a second error
        target = function if inspect.isfunction(inspect.unwrap(function)) else getattr(type(function), "__call__", None)
        code = getattr(inspect.unwrap(target), "__code__", None) if target is not None else None
        if code is None or any(Path(code.co_filename).resolve().is_relative_to(folder) for folder in _PACKAGES):
            return ""  # miaudit's own adapter (a per-database function's), not the user's code
    except Exception:  # noqa: BLE001 - the location is a courtesy; the error it decorates must still be raised
        return ""
    return raised_in_file(exc, code.co_filename)


def raised_in_file(exc: BaseException, filename: str, folder: bool = False) -> str:
    """Where in the file ``filename`` ``exc`` was raised: `` (at FILE line N, in NAME)``, the innermost frame of
    its traceback in that file (`` (at FILE line N)`` for the file's top level, as it runs at import), else ``""``.

    With ``folder``, the innermost frame in any file of ``filename``'s folder, a file it imported (a helper beside it,
    not a library outside), is said first where it is another file: `` (at helper.py line 5, reached from f.py line
    1)``, the helper named from the folder. One walk of the traceback finds both frames.

    A :class:`SyntaxError` of a source file names the line the parser stopped at (in the user's file or in one it
    imports): the traceback holds no frame of the file that failed to compile.
    """
    import os
    import traceback

    if isinstance(exc, SyntaxError) and exc.lineno and os.path.isfile(exc.filename or ""):  # not eval's "<string>"
        return f" (at {os.path.basename(exc.filename)} line {exc.lineno})"
    try:
        wanted = Path(filename).resolve()
        own = inner = None  # the innermost frames in the file, and in its folder
        for frame in traceback.extract_tb(exc.__traceback__):
            path = Path(frame.filename).resolve()
            if frame.filename == filename or path == wanted:
                own = inner = frame
            elif folder and path.is_relative_to(wanted.parent):
                inner = frame
    except Exception:  # noqa: BLE001 - the location is a courtesy; the error it decorates must still be raised
        return ""
    if own is None:
        return ""
    here = _frame_place(own, os.path.basename(own.filename))
    if inner is own:
        return f" (at {here})"
    return f" (at {_frame_place(inner, os.path.relpath(inner.filename, wanted.parent))}, reached from {here})"


def _frame_place(frame, shown: str) -> str:
    """``FILE line N, in NAME`` of a traceback frame, its file shown as ``shown`` (``FILE line N`` at a file's top
    level)."""
    inside = "" if frame.name == "<module>" else f", in {frame.name}"
    return f"{shown} line {frame.lineno}{inside}"


def refuses(exc: BaseException) -> bool:
    """Whether ``exc``, an exception user code raised, refuses its argument's values: one of :data:`REFUSAL_ERRORS`."""
    return type(exc).__name__ in REFUSAL_ERRORS


def _rebuild(cls, message, mechanism, database_index, printed=None, refused=False, timed_out=False, failure=None):
    error = cls(message, mechanism=mechanism, database_index=database_index)
    error.printed, error.refused, error.failure = printed, refused, failure
    if timed_out:
        error.timed_out = True
    return error


class MechanismError(InputError):
    """A mechanism (or a prior or secret function) misbehaved on a batch of databases.

    The command line exits with status 1 on it (a failing user function), not 2 (bad input).

    Attributes
    ----------
    mechanism : str
        The name of the mechanism (or user function).
    database_index : int or None
        Index in the batch of the first database on which it misbehaved, when known.
    printed : mechanisms.calls.printed.Printed or None
        What the mechanism printed in the attempt at a chunk that raised this error, set where the chunk ran
        (:func:`mechanisms.execution.worker.run_chunk`) and sent back with it, so that the runner counts a failed
        attempt's prints too; None elsewhere.
    timed_out : bool
        True where the error is a bounded call's that did not return in time
        (:func:`mechanisms.calls.user_call.call_user_code`), not the code's own failure; kept through the runner's
        retries and worker processes (it is pickled).
    refused : bool
        True where the mechanism refused its databases' values: its call raised one of :data:`REFUSAL_ERRORS`
        (:func:`refuses`), the errors that say an argument's value is not accepted (a one-hot histogram given a
        record with two 1s). Set where the mechanism's own exception is wrapped and kept through the runner's retries
        and worker processes (it is pickled), so that a caller that may leave refused databases out
        (:func:`audit.search.pair_probe.refusal`) reads this flag, not the message. False for any other failure (a
        bug raising on valid input, a hang, a wrong shape, a statistic's error).
    failure : str or None
        How the attempt at a chunk that raised this error failed, apart from where: the type and message of the
        user code's own exception it reports, else its own (set where the chunk ran,
        :func:`mechanisms.execution.worker.run_chunk`, and pickled with it; None elsewhere). Two attempts at one
        chunk that fail in the same words fail the same way, and the runner stops retrying it
        (:func:`mechanisms.execution.backends.run_tasks`).
    """

    exit_status = 1
    timed_out = False
    refused = False
    failure = None

    def __init__(self, message: str, *, mechanism: str, database_index: int | None = None):
        super().__init__(message)
        self.mechanism = mechanism
        self.database_index = database_index
        self.printed = None

    def __reduce__(self):
        # Keyword-only arguments defeat the default exception pickling; worker processes and
        # Ray tasks send this error back to the audit, with what the failed attempt printed.
        return _rebuild, (type(self), self.args[0], self.mechanism, self.database_index, self.printed, self.refused,
                          self.timed_out, self.failure)


class StatisticError(MechanismError):
    """A user's statistic of one output (``--statistic``) raised, hung or returned what it may not.

    A failing user function as a :class:`MechanismError` is (exit status 1), named by itself: a per-database
    function's statistic runs inside the function's call, whose error handling passes it on unprefixed rather
    than blaming the mechanism (:func:`mechanisms.base.run_on_batch`).
    """


class MechanismWarning(UserWarning):
    """User code that runs but deserves attention (e.g. it draws randomness the audit's seed does
    not control); the command line prints it as one line on stderr."""
