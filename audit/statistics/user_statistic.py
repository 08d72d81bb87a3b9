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

:class:`UserStatistic` itself (calling the function, checking what it returns, and how it travels to worker
processes with a per-database function) is :mod:`mechanisms.adapters.user_statistic`'s, re-exported here.
"""

from __future__ import annotations

import numpy as np

from mechanisms.adapters.user_statistic import UserStatistic
from mechanisms.base import released_outputs

from audit.statistics.classifier import LogOdds

__all__ = ["UserStatistic", "user_statistic_kind"]


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
