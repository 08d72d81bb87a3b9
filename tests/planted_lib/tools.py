"""Central tools on an array (the shape of diffprivlib.tools): a sum, counts; three planted bugs."""

import numpy as np

from planted_lib._noise import two_sided_geometric


def noisy_sum(array, epsilon=1.0, bounds=None, random_state=None):
    """The sum of the records clamped to ``bounds`` plus noise for sensitivity high − low (replace-one).

    BUG (bounds=None): the bounds are read from the data, so the noise depends on the records."""
    array = np.asarray(array, dtype=float)
    low, high = (array.min(), array.max()) if bounds is None else bounds
    total = np.clip(array, low, high).sum()
    width = high - low
    if width == 0:
        return float(total)
    return float(total + two_sided_geometric(epsilon, width, random_state))


def weighted_count(array, epsilon=1.0, weights=None, random_state=None):
    """The (weighted) number of records ≥ 5 plus noise for sensitivity 1.

    BUG (weights given): a record's weight multiplies its contribution but not the noise."""
    array = np.asarray(array, dtype=float)
    weights = np.ones(len(array)) if weights is None else np.asarray(weights, dtype=float)
    return float(np.sum(weights * (array >= 5)) + two_sided_geometric(epsilon, 1, random_state))


def loose_count(array, epsilon=1.0, random_state=None):
    """The number of records ≥ 5 plus noise. BUG: calibrated to sensitivity 1/2, the count's is 1."""
    array = np.asarray(array, dtype=float)
    return float(np.sum(array >= 5) + two_sided_geometric(epsilon, 0.5, random_state))


def exact_count(array, epsilon=1.0, random_state=None):
    """The number of records ≥ 5 plus noise for sensitivity 1: correct."""
    array = np.asarray(array, dtype=float)
    return float(np.sum(array >= 5) + two_sided_geometric(epsilon, 1, random_state))


def clamped_sum(array, epsilon, bounds, random_state=None):
    """BUG: the sum of the raw records plus noise for sensitivity high − low, clamped to [n·low, n·high]
    afterwards; a record beyond the bounds moves the sum by more than the noise covers."""
    array = np.asarray(array, dtype=float)
    low, high = bounds
    total = array.sum() + two_sided_geometric(epsilon, high - low, random_state)
    return float(np.clip(total, len(array) * low, len(array) * high))


def needs_config(array, epsilon, config):
    """An entry point with a required argument the scan cannot fill: listed as skipped."""
    return float(np.sum(array))
