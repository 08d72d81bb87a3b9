"""The estimators' and statistics' speed-ups against straightforward references written here: order statistics
from one partition (estimators.scaling.order_statistics, the critics' robust standardization) against a full sort,
bit for bit, on continuous and tied data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from estimators.neural import _standardization
from estimators.scaling import order_statistics


def _data(kind: str, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        return rng.standard_normal(shape)
    if kind == "tied":  # a handful of values, each many times
        return rng.integers(-2, 3, size=shape).astype(np.float64)
    return np.where(rng.random(shape) < 0.9, 1.5, rng.standard_normal(shape))  # one atom holding 90%


@pytest.mark.parametrize("kind", ["continuous", "tied", "atom"])
def test_order_statistics_are_those_of_the_sorted_values(kind):
    values = _data(kind, (7, 301, 3), seed=1)
    for axis in (0, 1, 2):
        n = values.shape[axis]
        ranks = sorted({0, n // 4, n // 2, (3 * n) // 4, n - 1})
        ordered = np.sort(values, axis=axis)
        for rank, found in zip(ranks, order_statistics(values, ranks, axis=axis)):
            expected = np.take(ordered, [rank], axis=axis)
            assert found.shape == expected.shape and found.tobytes() == expected.tobytes(), (kind, axis, rank)


@pytest.mark.parametrize("kind", ["continuous", "tied", "atom"])
def test_critic_standardization_is_the_median_and_iqr_of_the_sorted_training_values(kind):
    values = _data(kind, (5, 400, 2), seed=2)
    train = np.random.default_rng(3).permutation(400)[:257]
    centre, scale = _standardization(torch.as_tensor(values), torch.as_tensor(train))
    halves = np.sort(values[:, train] * 0.5, axis=1)  # the statistics are those of u / 2
    at = [int(round(q * (len(train) - 1))) for q in (0.25, 0.5, 0.75)]
    assert centre.numpy().tobytes() == halves[:, at[1]:at[1] + 1].tobytes()
    iqr_scale = (halves[:, at[2]] - halves[:, at[0]]) / 1.349
    positive = iqr_scale > 0
    assert np.array_equal(scale.numpy()[:, 0][positive], iqr_scale[positive])
    if kind == "continuous":
        assert positive.all()
    else:  # a zero IQR falls back to the standard deviation, positive where the values vary
        assert (scale.numpy()[:, 0] > 0).all()
