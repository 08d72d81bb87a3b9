"""Sorted scores, to the bit of NumPy's own results: the merge of two sorted inputs and quantiles of sorted data.

A certificate's grid (:mod:`audit.certificates.gaussian_dp`) and an event choice's thresholds
(:mod:`audit.search.score_grid`) read both inputs' sorted scores, their sorted pool and quantiles of the pool. The
pool is the merge of the sorted inputs (:func:`merge_sorted`, linear time) and its quantiles are read off it
(:func:`quantiles_of_sorted`, without NumPy's partition): the same numbers as ``np.sort`` of the pool and
``np.quantile`` of it, to the bit, which the tests check; where equal values differ in their bits
(:func:`equal_values_differ`) both fall back to NumPy's own calls, whose bits there are their algorithms'.
"""

from __future__ import annotations

import numpy as np

__all__ = ["equal_values_differ", "merge_sorted", "quantiles_of_sorted"]


def equal_values_differ(zeros: np.ndarray, has_nan: bool) -> bool:
    """Whether data with these ``zeros`` (its values equal to 0) and a NaN or none hold values that compare equal
    but differ in their bits: zeros of both signs, or a NaN (in any payload). Where they do, a sort's output
    depends on its algorithm: which zero lands where, and (NumPy's vectorised sorts move values through
    minimum and maximum instructions) which of the two signs each zero keeps."""
    return bool(has_nan or (len(zeros) > 1 and np.signbit(zeros).any() and not np.signbit(zeros).all()))


def merge_sorted(ordered_a: np.ndarray, ordered_b: np.ndarray, scores_a: np.ndarray,
                 scores_b: np.ndarray) -> np.ndarray:
    """``np.sort(np.concatenate((scores_a, scores_b)))``, to the bit, from ``ordered_a`` and ``ordered_b``, the
    two sorted: their merge, which a stable sort (NumPy's timsort for floats) finds as two runs and merges in
    linear time, where a fresh sort of the pool costs O(n log n). Where equal values differ in their bits
    (:func:`equal_values_differ`) the bits a sort leaves are its algorithm's, so the pool is sorted as NumPy
    sorts it."""
    pooled = np.concatenate((scores_a, scores_b))
    if equal_values_differ(pooled[pooled == 0], bool(np.isnan(pooled).any())):
        return np.sort(pooled)
    return np.sort(np.concatenate((ordered_a, ordered_b)), kind="stable")


def quantiles_of_sorted(ordered: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """``np.quantile(ordered, levels)`` of sorted data at ``levels`` in [0, 1], to the bit, mostly without its
    partition.

    NumPy's default ("linear") quantile, definition 7 of Hyndman and Fan (1996): the q quantile
    of n sorted values x₀ ≤ … ≤ xₙ₋₁ is x_j + g (x_{j+1} − x_j) at the virtual index
    v = (n − 1) q, j = ⌊v⌋, g = v − j, with NumPy's interpolation formula (``_lerp`` of
    numpy/lib/_function_base_impl.py: x_{j+1} − (1 − g)(x_{j+1} − x_j) where g ≥ 0.5, exact at
    both ends) and the last value where v ≥ n − 1: the same operations on the same values
    (tests/test_event_test.py checks it against np.quantile). np.quantile first partitions the
    data around every index, which costs more than the rest of an event choice; it is called
    only where its partition could read other bits at an index than the sorted data hold there:
    when the data hold a NaN or zeros of both signs (:func:`equal_values_differ`).
    """
    n = len(ordered)
    zeros = ordered[np.searchsorted(ordered, 0.0, side="left"):np.searchsorted(ordered, 0.0, side="right")]
    if equal_values_differ(zeros, np.isnan(ordered[-1])):
        return np.quantile(ordered, levels)
    virtual = (n - 1) * np.asarray(levels, dtype=np.float64)
    previous = np.floor(virtual).astype(np.intp)
    previous[virtual >= n - 1] = -1
    following = np.where(previous == -1, -1, previous + 1)
    gamma = virtual - previous
    left, right = ordered[previous], ordered[following]
    with np.errstate(invalid="ignore"):  # inf − inf: NaN, as np.quantile gives
        difference = right - left
        return np.where(gamma >= 0.5, right - difference * (1 - gamma), left + difference * gamma)
