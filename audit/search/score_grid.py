"""The grid of thresholds an event choice considers on selection scores, and the tail frequencies at them.

:mod:`audit.search.event_choice` sorts both inputs' selection scores once (:class:`_Selection`) and reads
every event family's frequencies from them.
"""

from __future__ import annotations

import numpy as np


def _first_of_each_value(ordered: np.ndarray) -> np.ndarray:
    """Where each distinct value of the sorted ``ordered`` first occurs (a boolean mask)."""
    return np.concatenate(([True], ordered[1:] != ordered[:-1]))


def _equal_values_differ(zeros: np.ndarray, has_nan: bool) -> bool:
    """Whether data with these ``zeros`` (its values equal to 0) and a NaN or none hold values that compare equal
    but differ in their bits: zeros of both signs, or a NaN (in any payload). Where they do, a sort's output
    depends on its algorithm: which zero lands where, and (NumPy's vectorised sorts move values through
    minimum and maximum instructions) which of the two signs each zero keeps."""
    return bool(has_nan or (len(zeros) > 1 and np.signbit(zeros).any() and not np.signbit(zeros).all()))


def _merged(ordered_a: np.ndarray, ordered_b: np.ndarray, scores_a: np.ndarray, scores_b: np.ndarray) -> np.ndarray:
    """``np.sort(np.concatenate((scores_a, scores_b)))``, to the bit, from the sorted ``ordered_a`` and
    ``ordered_b``: their merge, which a stable sort (NumPy's timsort for floats) finds as two runs and merges in
    linear time, where a fresh sort of the pooled scores costs O(n log n). Where equal values differ in their bits
    (:func:`_equal_values_differ`) the bits a sort leaves are its algorithm's, so the pooled scores are sorted
    as before."""
    pooled = np.concatenate((scores_a, scores_b))
    if _equal_values_differ(pooled[pooled == 0], bool(np.isnan(pooled).any())):
        return np.sort(pooled)
    return np.sort(np.concatenate((ordered_a, ordered_b)), kind="stable")


def _quantiles_of_sorted(ordered: np.ndarray, count: int) -> np.ndarray:
    """``np.quantile(ordered, np.linspace(0, 1, count))`` of sorted data, to the bit, mostly without its partition.

    NumPy's default ("linear") quantile, definition 7 of Hyndman and Fan (1996): the q quantile
    of n sorted values x₀ ≤ … ≤ xₙ₋₁ is x_j + g (x_{j+1} − x_j) at the virtual index
    v = (n − 1) q, j = ⌊v⌋, g = v − j, with NumPy's interpolation formula (``_lerp`` of
    numpy/lib/_function_base_impl.py: x_{j+1} − (1 − g)(x_{j+1} − x_j) where g ≥ 0.5, exact at
    both ends) and the last value where v ≥ n − 1: the same operations on the same values
    (tests/test_event_test.py checks it against np.quantile). np.quantile first partitions the
    data around every index, which costs more than the rest of an event choice; it is called
    only where its partition could read other bits at an index than the sorted data hold there:
    when the data hold a NaN or zeros of both signs (equal values of different bits, which a
    partition may reorder).
    """
    n = len(ordered)
    zeros = ordered[np.searchsorted(ordered, 0.0, side="left"):np.searchsorted(ordered, 0.0, side="right")]
    if _equal_values_differ(zeros, np.isnan(ordered[-1])):
        return np.quantile(ordered, np.linspace(0.0, 1.0, count))
    virtual = (n - 1) * np.linspace(0.0, 1.0, count)
    previous = np.floor(virtual).astype(np.intp)
    previous[virtual >= n - 1] = -1
    following = np.where(previous == -1, -1, previous + 1)
    gamma = virtual - previous
    left, right = ordered[previous], ordered[following]
    with np.errstate(invalid="ignore"):  # inf − inf: NaN, as np.quantile gives
        difference = right - left
        return np.where(gamma >= 0.5, right - difference * (1 - gamma), left + difference * gamma)


def _thresholds(ordered: np.ndarray, count: int, values: np.ndarray | None = None) -> np.ndarray:
    """The distinct values of the sorted scores ``ordered`` if at most ``count``, else ``count`` quantiles of them
    (:func:`_quantiles_of_sorted`); ``values``: those distinct values, where already found."""
    if values is None:
        values = ordered[_first_of_each_value(ordered)]
    if len(values) <= count:
        return values
    return np.unique(_quantiles_of_sorted(ordered, count))


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
        self.pooled = _merged(self.ordered_a, self.ordered_b, scores_a, scores_b)
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
