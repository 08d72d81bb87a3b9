"""A user's statistic: a function of one output, returning a number or a vector, as one more event-test candidate.

A user who knows where a mechanism leaks (a canary weight's variance, a count's parity) can say so with
``--statistic FILE.py:fn`` (``[audit] statistic``): ``fn(output)`` returns a number or a vector of one
length. It joins the cross-fitted candidates of :func:`audit.statistics.classifier_critic.cross_fitted_candidates`
and is scored and paid for exactly as they are: fitted on folds of the MI sample, the event chosen on its
out-of-fold scores (held-out draws, no α), and certified on fresh runs with the event test's share of α.
A number is the score itself (the event search tries either tail); a vector is scored by a logistic
regression on its entries (:class:`audit.statistics.classifier.LogOdds`), fitted on the training folds.

What ``output`` is: for a per-database function (``--per-database``) the output it returned, before
encoding — the encoder appends the statistic's values to each encoded row
(:class:`mechanisms.outputs.encoding.OutputEncoder`'s ``statistic``) — and for any other mechanism
its output row, a vector. Either way the statistic is a fixed function of the output, so an event on it
is an event on the output (post-processing, Dwork and Roth 2014, Proposition 2.1).
"""

from __future__ import annotations

import numpy as np

from estimators.validation import InputError
from mechanisms.base import released_outputs
from mechanisms.calls.user_call import call_user_code
from mechanisms.errors import MechanismError

from audit.statistics.classifier import LogOdds

__all__ = ["UserStatistic", "user_statistic_kind"]


class UserStatistic:
    """A user's function of one output, returning a number or a vector of one length (module docstring).

    Parameters
    ----------
    function : callable
        ``function(output) -> number or (s,) vector``.
    name : str
        How errors name it (``"--statistic stats.py:variance"``).

    Examples
    --------
    >>> statistic = UserStatistic(lambda y: y[0] - y[1], "gap")
    >>> statistic.rows(np.array([[3.0, 1.0], [0.0, 2.0]]))
    array([[ 2.],
           [-2.]])
    """

    def __init__(self, function, name: str):
        if not callable(function):
            raise InputError(f"argument 'statistic' ({name}) must be a function of one output, got "
                             f"{type(function).__name__}")
        self.function, self.name = function, name
        self.length: int | None = None  # the vector's length, fixed by its first value
        # Seconds one call may take: set by AuditSpec where the statistic reads outputs after the runs (--timeout,
        # else FIRST_CALL_TIMEOUT); None inside a per-database function's call, which its own timeout bounds (a
        # time-out there names the statistic: mechanisms.calls.user_call, "Whose time ran out").
        self.timeout: float | None = None

    def values(self, output) -> np.ndarray:
        """The statistic on one output, as a vector of its fixed length.

        Raises
        ------
        MechanismError
            One line naming the statistic where its function raises, calls ``sys.exit`` or takes longer than
            :attr:`timeout`.
        InputError
            Where it returns something other than finite numbers, or a vector of another length than before.
        """
        try:  # sys.exit and, with a timeout, a hang become one error naming the statistic (call_user_code)
            value = call_user_code(self.function, (output,), who=f"statistic {self.name!r}", timeout=self.timeout)
        except MechanismError:
            raise
        except Exception as exc:  # noqa: BLE001 - a user's function may raise anything
            raise MechanismError(f"statistic {self.name!r} raised {type(exc).__name__}: {exc}",
                                 mechanism=f"statistic {self.name!r}") from None
        try:
            vector = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float64 (10**400)
            raise InputError(f"statistic {self.name!r} returned a {type(value).__name__}; it must return a number or "
                             "a vector of numbers") from None
        if vector.ndim > 1:
            raise InputError(f"statistic {self.name!r} returned an array of shape {vector.shape}; it must return a "
                             "number or a vector (one dimension)")
        vector = vector.reshape(-1)
        if self.length is None:
            if not len(vector):
                raise InputError(f"statistic {self.name!r} returned an empty vector")
            self.length = len(vector)
        if len(vector) != self.length:
            raise InputError(f"statistic {self.name!r} returned {len(vector)} numbers for one output and "
                             f"{self.length} for an earlier one; it must return as many for every output")
        if not np.all(np.isfinite(vector)):
            raise InputError(f"statistic {self.name!r} returned {vector.tolist()}, not finite; it must return finite "
                             "numbers")
        return vector

    def rows(self, outputs) -> np.ndarray:
        """The statistic on each output row: shape (N, s)."""
        outputs = np.asarray(outputs)
        return np.stack([self.values(row) for row in outputs]) if len(outputs) else np.empty((0, self.length or 1))

    def __repr__(self) -> str:
        return f"UserStatistic({self.name!r})"


def user_statistic_kind(statistic: UserStatistic, columns: slice | None = None, missing: bool = False) -> type:
    """The event-statistic class of a user's statistic, in the form of
    :data:`audit.statistics.classifier.PAIR_STATISTICS`' classes (``fit(first_outputs, second_outputs)``, then
    called on outputs), with ``label`` and ``what`` for the candidate's description.

    ``columns``: where the encoded rows hold the statistic's values (the encoder appends them); None: the
    statistic is applied to each output row. ``missing``: the rows carry missing marks after the values
    (``--allow-nan``, :func:`mechanisms.base.with_missing_marks`); the statistic reads the output as released,
    NaN where a mark says missing (:func:`mechanisms.base.released_outputs`).
    """

    class UserStatisticScore:
        label = f"{statistic.name}(y)"
        what = f"the user's statistic {statistic.name}"

        def __init__(self, model):
            self.model = model

        @staticmethod
        def features(outputs: np.ndarray) -> np.ndarray:
            outputs = np.asarray(outputs, dtype=np.float64)
            if missing:  # back to the output as released: the values, NaN where their mark says missing
                outputs = released_outputs(outputs)
            return outputs[:, columns] if columns is not None else statistic.rows(outputs)

        @classmethod
        def fit(cls, first_outputs: np.ndarray, second_outputs: np.ndarray):
            first, second = cls.features(first_outputs), cls.features(second_outputs)
            if first.shape[1] == 1:
                return cls(None)  # a number is its own score
            model = LogOdds.fit(first, second)
            return None if model is None else cls(model)

        def __call__(self, outputs: np.ndarray) -> np.ndarray:
            features = self.features(outputs)
            return features[:, 0] if self.model is None else self.model(features)

    return UserStatisticScore
