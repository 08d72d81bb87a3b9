"""The error a misbehaving piece of user code (mechanism, prior, secret function) raises, and the
warning for user code that runs but deserves attention."""

from __future__ import annotations

from estimators.validation import InputError

__all__ = ["MechanismError", "MechanismWarning"]


def _rebuild(cls, message, mechanism, database_index):
    return cls(message, mechanism=mechanism, database_index=database_index)


class MechanismError(InputError):
    """A mechanism (or a prior or secret function) misbehaved on a batch of databases.

    The command line exits with status 1 on it (a failing user function), not 2 (bad input).

    Attributes
    ----------
    mechanism : str
        The name of the mechanism (or user function).
    database_index : int or None
        Index in the batch of the first database on which it misbehaved, when known.
    """

    exit_status = 1

    def __init__(self, message: str, *, mechanism: str, database_index: int | None = None):
        super().__init__(message)
        self.mechanism = mechanism
        self.database_index = database_index

    def __reduce__(self):
        # Keyword-only arguments defeat the default exception pickling; worker processes and
        # Ray tasks send this error back to the audit.
        return _rebuild, (type(self), self.args[0], self.mechanism, self.database_index)


class MechanismWarning(UserWarning):
    """User code that runs but deserves attention (e.g. it draws randomness the audit's seed does
    not control); the command line prints it as one line on stderr."""
