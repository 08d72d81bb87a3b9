"""Rescaling data before an estimator sees it, without overflow and without changing the MI.

Mutual information is invariant under invertible maps of each variable separately (Cover and
Thomas, *Elements of Information Theory*, 2nd ed., Sec. 8.6 for affine maps of continuous
variables), so an estimator may rescale its inputs freely. Rescaling per coordinate makes the
k-nearest-neighbour estimator scale-invariant, as MI is; rescaling before float32 keeps data of
any finite float64 size in the critics' range (float32 overflows at 3.4e38).
"""

from __future__ import annotations

import numpy as np

__all__ = ["order_statistics", "power_of_two_exponent", "standardized_columns", "unit_power_of_two"]


def unit_power_of_two(values: np.ndarray) -> np.ndarray:
    """``values`` times one power of two that brings its largest magnitude into [0.5, 1).

    Multiplying by a power of two is exact in binary floating point (short of subnormal
    numbers), so every linear statistic of the data, sliced MI included, is unchanged while
    sums of the values can no longer overflow. All-zero data are returned unchanged.
    """
    values = np.asarray(values, dtype=np.float64)
    return np.ldexp(values, power_of_two_exponent(values))


def power_of_two_exponent(values: np.ndarray) -> int:
    """The exponent e with which :func:`unit_power_of_two` returns ``values`` · 2^e (0 for all-zero data)."""
    values = np.asarray(values, dtype=np.float64)
    top = float(np.max(np.abs(values))) if values.size else 0.0
    if top == 0.0:
        return 0
    _, exponent = np.frexp(top)
    return -int(exponent)


def standardized_columns(values: np.ndarray) -> np.ndarray:
    """Each column (last axis, over the second-to-last) centred to mean 0 and scaled to unit
    standard deviation, computed without overflow for any finite float64 data.

    The columns are first divided by their largest magnitude (so that squares cannot
    overflow), then standardized. A constant column becomes all zeros. Works on ``(n, d)``
    and on stacked ``(p, n, d)`` arrays.
    """
    values = np.asarray(values, dtype=np.float64)
    top = np.max(np.abs(values), axis=-2, keepdims=True)
    scaled = values / np.where(top > 0, top, 1.0)
    centred = scaled - scaled.mean(axis=-2, keepdims=True)
    spread = centred.std(axis=-2, keepdims=True)
    return centred / np.where(spread > 0, spread, 1.0)


def order_statistics(values: np.ndarray, ranks, axis: int) -> list[np.ndarray]:
    """The order statistics of ``values`` at the 0-based ``ranks`` along ``axis`` (that axis kept, of length 1):
    what ``np.sort(values, axis)`` holds at those indices, from one partition around all the ranks.

    ``np.partition`` with several ranks (introselect, Musser 1997) puts each rank's order statistic in place without
    sorting the rest. The robust standardization's three (median and quartiles of 256 slices' 12,000 training
    values) took 55 ms this way on the 2-core CPU, where torch's ``kthvalue``, one selection per rank, took 144 ms.
    """
    parted = np.partition(values, ranks, axis=axis)
    return [np.take(parted, [rank], axis=axis) for rank in ranks]
