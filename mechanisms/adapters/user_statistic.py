"""A user's statistic of one output (``--statistic FILE.py:fn``), as it is called and as it travels to workers.

``fn(output)`` returns a number or a vector of one length; :class:`UserStatistic` calls it so that a failure,
a ``sys.exit`` or a hang is one error naming it, and checks what it returns. How the audit scores it is
:mod:`audit.statistics.user_statistic`'s (which re-exports this class); it lives here, below
:mod:`mechanisms.execution`, because a per-database function's statistic runs inside the function's call
(:class:`mechanisms.outputs.encoding.OutputEncoder`'s ``statistic``), and so in whichever process runs the
call: a worker process or a Ray task as well as the audit's own.

How it reaches a worker. A statistic loaded from a specification (``FILE.py:NAME`` with an absolute path, or
``package.module:NAME``: :meth:`UserStatistic.load`) travels as that specification, as the mechanism does
(:class:`mechanisms.execution.worker.MechanismReference`): a function loaded from a file lives in a module that
exists only in the process that ran the file. The worker loads it once per process (:meth:`UserStatistic.here`)
and gives it to the encoder of the mechanism it loaded. A statistic given as a function in code (from Python)
is pickled with the reference; one that cannot be (a lambda, a closure) is refused with the mechanism's
reference before any worker starts.
"""

from __future__ import annotations

import time

import numpy as np

from estimators.validation import InputError
from mechanisms.adapters.loading import load_object
from mechanisms.calls.later_bound import later_call_bound
from mechanisms.calls.user_call import TIMEOUT_HINT, call_user_code
from mechanisms.errors import MechanismError, StatisticError, exception_text, raised_where

__all__ = ["UserStatistic"]

#: How the statistic is named where its specification fails to load (the flag and the configuration key).
WHAT = "[audit] statistic (--statistic)"

#: The statistics loaded in this process from their specifications, by (specification, name): each is loaded
#: once per worker process, and keeps the length its first value fixed for the process's later chunks.
_LOADED: dict = {}


class UserStatistic:
    """A user's function of one output, returning a number or a vector of one length (module docstring).

    Parameters
    ----------
    function : callable
        ``function(output) -> number or (s,) vector``.
    name : str
        How errors name it (``"--statistic stats.py:variance"``).
    source : str, optional
        The specification that loads ``function`` in any process (``FILE.py:NAME`` with an absolute path,
        ``package.module:NAME``): given, the statistic travels to worker processes as it, not pickled.

    Examples
    --------
    >>> statistic = UserStatistic(lambda y: y[0] - y[1], "gap")
    >>> statistic.rows(np.array([[3.0, 1.0], [0.0, 2.0]]))
    array([[ 2.],
           [-2.]])
    """

    def __init__(self, function, name: str, source: str | None = None):
        if not callable(function):
            raise InputError(f"argument 'statistic' ({name}) must be a function of one output, got "
                             f"{type(function).__name__}")
        self.function, self.name, self.source = function, name, source
        self.length: int | None = None  # the vector's length, fixed by its first value
        # Seconds one call may take: set by AuditSpec where the statistic reads outputs after the runs (--timeout,
        # else FIRST_CALL_TIMEOUT); None inside a per-database function's call, which its own timeout bounds (a
        # time-out there names the statistic: mechanisms.calls.user_call, "Whose time ran out").
        self.timeout: float | None = None
        # Set by AuditSpec where no --timeout is given: ``timeout`` bounds the first call only, each later one
        # later_call_bound of the first's seconds (first_seconds, timed here) as the mechanism's chunks are (_bound).
        self.later_bounded = False
        self.first_seconds: float | None = None
        self._later = None  # (first_seconds, later_call_bound's answer) of the last call (_bound)

    @classmethod
    def load(cls, source: str, name: str | None = None) -> "UserStatistic":
        """The statistic the specification ``source`` names, which travels to workers as ``source``.

        Raises
        ------
        InputError
            Naming ``[audit] statistic (--statistic)`` and ``source`` where it does not load
            (:func:`mechanisms.adapters.loading.load_object`).
        """
        return cls(load_object(source, WHAT), name or source, source)

    def __getstate__(self):
        # By reference when possible: the process that receives it loads the specification itself (here()).
        state = dict(self.__dict__)
        if self.source is not None:
            state["function"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def here(self) -> "UserStatistic":
        """This statistic, callable in this process: itself where it holds its function, else the one its
        specification loads here (once per process, :data:`_LOADED`; its timeout is this one's).

        Raises
        ------
        InputError
            Where the specification does not load in this process (:meth:`load`).
        """
        if self.function is not None:
            return self
        key = (self.source, self.name)
        if key not in _LOADED:
            _LOADED[key] = UserStatistic.load(self.source, self.name)
        loaded = _LOADED[key]
        loaded.timeout, loaded.later_bounded = self.timeout, self.later_bounded
        return loaded

    def values(self, output) -> np.ndarray:
        """The statistic on one output, as a vector of its fixed length.

        Raises
        ------
        StatisticError
            One line naming the statistic where its function raises, calls ``sys.exit`` or takes longer than
            its bound (:meth:`_bound`), or returns something other than finite numbers, or a vector of another
            length than before (a failing user function: exit status 1).
        """
        timeout, hint = self._bound()
        started = time.perf_counter()
        who = f"statistic {self.name!r}"
        try:  # sys.exit and, with a timeout, a hang become one error naming the statistic (call_user_code)
            value = call_user_code(self.function, (output,), who=who, timeout=timeout, hint=hint)
        except MechanismError as exc:
            raise StatisticError(str(exc), mechanism=who) from None
        except Exception as exc:  # noqa: BLE001 - a user's function may raise anything
            raise StatisticError(f"{who} raised {type(exc).__name__}{exception_text(exc)}"
                                 f"{raised_where(exc, self.function)}", mechanism=who) from None
        if self.later_bounded and self.first_seconds is None:  # its first call: its time bounds the later ones
            self.first_seconds = time.perf_counter() - started
        try:
            vector = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float64 (10**400)
            raise StatisticError(f"{who} returned a {type(value).__name__}; it must return a number or a vector of "
                                 "numbers", mechanism=who) from None
        if vector.ndim > 1:
            raise StatisticError(f"{who} returned an array of shape {vector.shape}; it must return a number or a "
                                 "vector (one dimension)", mechanism=who)
        vector = vector.reshape(-1)
        if self.length is None:
            if not len(vector):
                raise StatisticError(f"{who} returned an empty vector", mechanism=who)
            self.length = len(vector)
        if len(vector) != self.length:
            raise StatisticError(f"{who} returned {len(vector)} numbers for one output and {self.length} for an "
                                 "earlier one; it must return as many for every output", mechanism=who)
        if not np.all(np.isfinite(vector)):
            raise StatisticError(f"{who} returned {vector.tolist()}, not finite; it must return finite numbers",
                                 mechanism=who)
        return vector

    def _bound(self) -> tuple[float | None, str]:
        """The bound on a call of the statistic (on one output, :meth:`values`), and the words that end its timeout
        message: :attr:`timeout` (``--timeout``; else the first-call bound, for the first call), else, once the
        first call was timed (:attr:`later_bounded`), :func:`~mechanisms.calls.later_bound.later_call_bound` of its
        seconds for one output, as a mechanism's later chunk of one database is bounded."""
        if not self.later_bounded or self.first_seconds is None:
            return self.timeout, TIMEOUT_HINT
        if self._later is None or self._later[0] != self.first_seconds:  # kept: its words cost a microsecond a call
            self._later = self.first_seconds, later_call_bound(None, self.first_seconds, 1, each="call", per="call")
        return self._later[1]

    def rows(self, outputs) -> np.ndarray:
        """The statistic on each output row: shape (N, s)."""
        outputs = np.asarray(outputs)
        return np.stack([self.values(row) for row in outputs]) if len(outputs) else np.empty((0, self.length or 1))

    def __repr__(self) -> str:
        return f"UserStatistic({self.name!r})"
