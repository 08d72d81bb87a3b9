"""The critics' inputs at the extremes of float64 (estimators.standardization): finite inputs give finite critic
inputs, equal to the map computed here in exact rational arithmetic (fractions.Fraction, logarithms of whole
numbers), for values near 1.8e308 over scales near 1e-300 or 5e-324, and for subnormal values."""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import numpy as np
import pytest
import torch

from estimators import CriticConfig, fit_critics
from estimators.standardization import COMPRESS_BEYOND, critic_inputs, robust_standardization

LARGEST = sys.float_info.max
TINIEST = math.ulp(0.0)  # 5e-324, the smallest subnormal


def _log(value: Fraction) -> float:
    """ln(value) of a positive fraction, from its whole-number numerator and denominator (math.log takes any int)."""
    return math.log(value.numerator) - math.log(value.denominator)


def _exact_input(u: float, centre: float, scale: float) -> float:
    """The critic input of ``u`` in exact arithmetic: t = (u/2 − centre)/scale, then sign(t)·c·(1 + ln(|t|/c))
    beyond c = COMPRESS_BEYOND (estimators.standardization.critic_inputs' docstring)."""
    t = (Fraction(u) / 2 - Fraction(centre)) / Fraction(scale)
    if abs(t) <= Fraction(COMPRESS_BEYOND):
        return float(t)
    return (1.0 if t > 0 else -1.0) * COMPRESS_BEYOND * (1.0 + _log(abs(t)) - math.log(COMPRESS_BEYOND))


VALUES = [LARGEST, -LARGEST, 1e308, -1e308, 1.7e308, 1e300, 1.0, -2.5, 0.0, 2.2250738585072014e-308,
          TINIEST, -TINIEST, 3 * TINIEST, 7e-320, -1.23e-315]


@pytest.mark.parametrize("centre, scale", [
    (0.0, 1e-300),           # 1e308 / 1e-300: past float64's range before compression
    (0.0, TINIEST),          # the smallest scale there is: subnormal values become whole numbers
    (1e-300, 3 * TINIEST),
    (-8e307, 1e-200),        # the centre at the far end: u/2 − centre near 1.8e308
    (4e307, 1.5e308),        # a scale past half of float64's range (2·scale overflows)
    (0.25, 0.75),            # ordinary
])
def test_critic_inputs_are_the_exact_map_at_extreme_magnitudes(centre, scale):
    u = torch.tensor(VALUES, dtype=torch.float64).reshape(1, -1, 1)
    found = critic_inputs(u, torch.tensor([[[centre]]], dtype=torch.float64),
                          torch.tensor([[[scale]]], dtype=torch.float64)).numpy().ravel()
    assert found.dtype == np.float32 and np.isfinite(found).all()
    expected = np.array([_exact_input(value, centre, scale) for value in VALUES])
    assert np.allclose(found, expected, rtol=1e-6, atol=1e-37), list(zip(VALUES, found, expected))


def test_critic_inputs_are_finite_and_in_order_on_every_mix_of_extremes():
    rng = np.random.default_rng(11)
    magnitudes = 10.0 ** rng.uniform(-323, 308, size=(4, 500, 3))
    values = np.where(rng.random((4, 500, 3)) < 0.5, -1.0, 1.0) * np.minimum(magnitudes, LARGEST)
    values[1, :250] = 0.0   # an atom at zero holding half the training values
    values[2, :, 1] = rng.integers(0, 2, 500) * TINIEST * 3   # odd subnormals only
    train = torch.as_tensor(rng.permutation(500)[:300])
    u = torch.as_tensor(values)
    centre, scale = robust_standardization(u, train)
    assert torch.isfinite(centre).all() and torch.isfinite(scale).all() and (scale > 0).all()
    inputs = critic_inputs(u, centre, scale).numpy()
    assert np.isfinite(inputs).all()
    order = np.argsort(values, axis=1, kind="stable")
    ranked = np.take_along_axis(inputs, order, axis=1)
    assert (np.diff(ranked, axis=1) >= 0).all()  # the map is increasing in u


def test_subnormal_data_stay_apart():
    # Two values one subnormal step apart (0 and 5e-324, or 3 and 4 steps): halving merged them before.
    for low, high in ((0.0, TINIEST), (3 * TINIEST, 4 * TINIEST)):
        data = np.where(np.arange(40) % 2 == 0, low, high).reshape(1, 40, 1)
        u = torch.as_tensor(data)
        centre, scale = robust_standardization(u, torch.arange(40))
        inputs = critic_inputs(u, centre, scale).numpy().ravel()
        # The IQR / 1.349 of values one subnormal step apart is at most one step, so the scale (halved, kept at
        # least one step) is one step and the map (u − 2·centre) / (2·scale) puts the two values 1/2 apart.
        assert inputs[1] - inputs[0] >= 0.5 and len(set(inputs[0::2])) == 1 and len(set(inputs[1::2])) == 1


@pytest.mark.train
def test_critics_train_on_data_of_tiny_spread_with_a_huge_outlier():
    # Before, the outlier's standardized value overflowed to inf and training was refused as diverged.
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2, 600) * 1e-300
    x[5] = 1e300
    y = x + rng.integers(0, 2, 600) * 1e-301
    fit = fit_critics(x[None, :, None], y[None, :, None], seed=1, config=CriticConfig(max_steps=60, eval_every=20))
    assert np.isfinite(fit.estimates).all() and np.isfinite(fit.test_joint).all()
    assert np.isfinite(fit.scorer(0, x[:, None], y[:, None])).all()
