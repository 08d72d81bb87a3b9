"""Candidate pairs for the event test: two neighbouring databases and the statistic that scores their runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from mechanisms.inputs.missing_values import rows_differ
from mechanisms.inputs.priors import TwoPoint
from mechanisms.inputs.relation import GroupPairPrior



#: The fewest selection runs per input of a candidate pair.
MIN_SELECTION_RUNS = 100
#: The same floor at a sequential audit's early look (:mod:`audit.gating.sequential`), whose MI sample of a few
#: dozen draws is the event test's selection: a deterministic difference between the two inputs (an output seen
#: under one only) shows in a few runs of each. Fewer draws only make the choice noisier; the certificate is on
#: fresh runs either way, so its level does not depend on this floor.
EARLY_LOOK_SELECTION_RUNS = 8


@dataclass(frozen=True, eq=False)
class PairCandidate:
    """A neighbouring pair of databases and the statistic that tests it.

    Attributes
    ----------
    first, second : ndarray of shape (n, k)
        The two databases; they differ in ``record`` only (value a in ``first``, b in ``second``).
    record : int
        The record that differs.
    statistic : callable
        ``statistic(a, b, dbs, outputs) -> (N,)`` scores, larger where the output looks
        produced with the record at ``a`` rather than ``b``.
    origin : str
        Where the pair comes from, for the result (``"exposing pair"``, ``"structured pair ..."``).
    statistic_label : str
        The statistic's label, for the event's description (``E = {label > t}``).
    statistic_words : str
        What the statistic is, in words (""  where its label says it all): carried by the event test's result
        (its ``event``), which a report explains the event from (:func:`audit.report.content.event_explanation`).
    held_out : (ndarray, ndarray) or None
        The statistic's scores on held-out draws of the first and of the second database (the
        MI sample's validation and test splits under the pair's two-point prior): when every
        candidate has them, the pair and the event are chosen on them and no selection run is
        spent (:func:`event_search`).
    """

    first: np.ndarray
    second: np.ndarray
    record: int
    statistic: Callable
    origin: str = ""
    statistic_label: str = "T(a, y) − T(b, y)"
    held_out: tuple | None = None
    statistic_words: str = ""

    @property
    def values(self) -> tuple:
        return self.first[self.record], self.second[self.record]

    def runs(self, which: int, count: int, runner, rng) -> tuple:
        """(databases, outputs) of ``count`` fresh runs of the first (``which = 0``) or second database."""
        return runner.runs_of(self.first if which == 0 else self.second, count, rng, what="event-test run",
                              budget="event_runs")

    def score(self, batch: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """The statistic on runs of this pair (:meth:`runs`)."""
        a, b = self.values
        return self.statistic(a, b, batch, outputs)

    def scores(self, which: int, count: int, runner, rng) -> np.ndarray:
        """The statistic on ``count`` fresh runs of the first (``which = 0``) or second database."""
        return self.score(*self.runs(which, count, runner, rng))

    def same_pair(self, other: "PairCandidate") -> bool:
        """Whether ``other`` tests the same two databases (so it may score this pair's runs)."""
        return (self.record == other.record and np.array_equal(self.first, other.first, equal_nan=True)
                and np.array_equal(self.second, other.second, equal_nan=True))


def neighbouring_pair_of(prior, record) -> tuple | None:
    """(first, second) when ``prior`` is a two-point prior on two databases that differ in ``record`` only, or
    switches a group of records together (:class:`~mechanisms.inputs.relation.GroupPairPrior`, a user-level
    relation's pair) of which ``record`` is the first."""
    first, second = getattr(prior, "first", None), getattr(prior, "second", None)
    if not isinstance(prior, TwoPoint) or record is None:
        return None
    rows = np.flatnonzero(rows_differ(first, second))  # a NaN in both places is no difference
    together = isinstance(prior, GroupPairPrior) and len(rows) > 1
    return (first, second) if (len(rows) == 1 or together) and rows[0] == record else None


def draws_of_first(dbs: np.ndarray, first: np.ndarray, record: int) -> np.ndarray:
    """Which draws of a two-point prior on ``first`` and its neighbour (differing in ``record``) are ``first``."""
    drawn, value = dbs[:, record], first[record]
    return np.all((drawn == value) | (np.isnan(drawn) & np.isnan(value)), axis=-1)  # NaN: a missing value, as given


def held_out_scores(statistic, first: np.ndarray, second: np.ndarray, record: int, dbs: np.ndarray,
                    outputs: np.ndarray, min_draws: int = MIN_SELECTION_RUNS) -> tuple | None:
    """A statistic's scores on draws of a two-point prior, split by the database drawn.

    ``dbs`` are draws of the prior on ``first`` and ``second`` (which differ in ``record`` only)
    and ``outputs`` the mechanism's outputs on them. Returns (scores on the draws of ``first``,
    scores on those of ``second``), or None when either has fewer than ``min_draws`` draws (too few to
    choose an event on; :data:`MIN_SELECTION_RUNS`, or :data:`EARLY_LOOK_SELECTION_RUNS` at an early look).
    """
    is_first = draws_of_first(dbs, first, record)
    if min(int(is_first.sum()), int((~is_first).sum())) < min_draws:
        return None
    scores = np.asarray(statistic(first[record], second[record], dbs, outputs), dtype=np.float64)
    return scores[is_first], scores[~is_first]


def value_pairs(base: np.ndarray, record: int, values: np.ndarray, statistic, origin: str = "") -> list:
    """Candidates switching ``record`` of ``base`` between every two of ``values``."""
    out = []
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            first = np.array(base, dtype=np.float64, copy=True)
            second = first.copy()
            first[record], second[record] = values[i], values[j]
            out.append(PairCandidate(first, second, record, statistic, origin))
    return out
