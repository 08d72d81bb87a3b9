"""The grid of thresholds an event choice considers on selection scores, and the tail frequencies at them.

:mod:`audit.search.event_choice` sorts both inputs' selection scores once (:class:`_Selection`) and reads
every event family's frequencies from them.
"""

from __future__ import annotations

import numpy as np

from audit.certificates.sorted_scores import merge_sorted, quantiles_of_sorted


def _first_of_each_value(ordered: np.ndarray) -> np.ndarray:
    """Where each distinct value of the sorted ``ordered`` first occurs (a boolean mask)."""
    return np.concatenate(([True], ordered[1:] != ordered[:-1]))


def _thresholds(ordered: np.ndarray, count: int, values: np.ndarray | None = None) -> np.ndarray:
    """The distinct values of the sorted scores ``ordered`` if at most ``count``, else ``count`` quantiles of them
    at evenly spaced levels from 0 to 1 (:func:`~audit.certificates.sorted_scores.quantiles_of_sorted`);
    ``values``: those distinct values, where already found."""
    if values is None:
        values = ordered[_first_of_each_value(ordered)]
    if len(values) <= count:
        return values
    return np.unique(quantiles_of_sorted(ordered, np.linspace(0.0, 1.0, count)))


def _tail_frequencies(ordered: np.ndarray, thresholds: np.ndarray) -> tuple:
    """(P̂(s > t excluding the atom), P̂(s = t), P̂(s < t excluding the atom)) for each t, from the sorted scores
    ``ordered``."""
    tol = 1e-9 * np.maximum(1.0, np.abs(thresholds))
    below_or_at = np.searchsorted(ordered, thresholds + tol, side="right")
    below = np.searchsorted(ordered, thresholds - tol, side="left")
    n = len(ordered)
    return (n - below_or_at) / n, (below_or_at - below) / n, below / n


class _Selection:
    """Both inputs' selection scores sorted once, for every event family an event choice considers on them
    (:func:`audit.search.event_choice.best_event`).

    ``grid(count)`` gives the thresholds (at most ``count``, :func:`_thresholds`) and the tail
    frequencies (:func:`_tail_frequencies`) under each input at them, computed once per ``count``.
    """

    def __init__(self, scores_a: np.ndarray, scores_b: np.ndarray):
        self.n_a, self.n_b = len(scores_a), len(scores_b)
        self.ordered_a, self.ordered_b = np.sort(scores_a), np.sort(scores_b)
        self.pooled = merge_sorted(self.ordered_a, self.ordered_b, scores_a, scores_b)
        self.values = self.pooled[_first_of_each_value(self.pooled)]
        self._grids = {}
        self.scores = scores_a, scores_b

    def pooled_max(self) -> float:
        """The largest score (np.max of both inputs' scores, as given)."""
        return np.concatenate(self.scores).max()

    @property
    def has_atoms(self) -> bool:
        """Whether some score value occurs more than once among both inputs' scores."""
        return len(self.values) < len(self.pooled)

    def grid(self, count: int) -> tuple:
        """(thresholds, tail frequencies under a, tail frequencies under b) for at most ``count`` thresholds."""
        if count not in self._grids:
            thresholds = _thresholds(self.pooled, count, self.values)
            self._grids[count] = (thresholds, _tail_frequencies(self.ordered_a, thresholds),
                                  _tail_frequencies(self.ordered_b, thresholds))
        return self._grids[count]
