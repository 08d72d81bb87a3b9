"""Sliced MI against exact per-slice values of Gaussians, computed here in closed form."""

import math

import numpy as np
import pytest

from estimators.estimate import estimate_mi
from estimators.neural import CriticConfig
from estimators.slicing import project, random_frames


def gaussian_channel(n, d, sigma, rng):
    x = rng.standard_normal((n, d))
    return x, x + sigma * rng.standard_normal((n, d))


def exact_slice_mi(theta, phi, sigma):
    """X ~ N(0, I), Y = X + σN: corr(θᵀX, φᵀY) = θᵀφ / sqrt(1 + σ²) for unit θ, φ."""
    rho = np.sum(theta * phi, axis=-1) / math.sqrt(1 + sigma**2)
    return -0.5 * np.log1p(-rho**2)


def exact_sliced_mi(d, sigma, rng, draws=400_000):
    """SI(X; Y) by Monte Carlo over uniform directions drawn here (not by the code under test)."""
    theta = rng.standard_normal((draws, d))
    phi = rng.standard_normal((draws, d))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    phi /= np.linalg.norm(phi, axis=1, keepdims=True)
    return float(exact_slice_mi(theta, phi, sigma).mean())


def test_random_frames_are_orthonormal_and_isotropic():
    rng = np.random.default_rng(0)
    for k in (1, 3):
        frames = random_frames(20000, 5, k, rng)
        gram = np.einsum("pdk,pdl->pkl", frames, frames)
        assert np.allclose(gram, np.eye(k), atol=1e-10)
        # Uniform frames: E[θθᵀ] = (k/d) I and E[θ] = 0.
        second = np.einsum("pdk,pek->de", frames, frames) / len(frames)
        assert np.allclose(second, (k / 5) * np.eye(5), atol=0.02)
        assert np.allclose(frames.mean(axis=0), 0, atol=0.03)


def test_frames_never_exceed_the_variable_dimension():
    assert random_frames(4, 2, 5, np.random.default_rng(1)).shape == (4, 2, 2)


def test_sliced_gaussian_base_matches_exact_per_slice_values():
    rng = np.random.default_rng(2)
    d, sigma = 6, 0.7
    x, y = gaussian_channel(40000, d, sigma, rng)
    # Each slice is checked on its own: 16 of them exercise the per-slice path as well as 64.
    r = estimate_mi(x, y, estimator="gaussian", sliced=True, slices=16, seed=3)
    frames = r.details["frames"]
    exact = exact_slice_mi(frames["x"][:, :, 0], frames["y"][:, :, 0], sigma)
    assert np.allclose(r.per_slice, exact, atol=0.02)
    assert r.value == pytest.approx(exact.mean(), abs=0.005)


def test_sliced_mi_approaches_exact_si():
    rng = np.random.default_rng(4)
    d, sigma = 4, 0.5
    # The standard error is that of the average over 512 random slices; each slice's estimate,
    # on 5000 pairs, adds O(1/n) bias (within the 0.005) and little noise to it.
    x, y = gaussian_channel(5000, d, sigma, rng)
    truth = exact_sliced_mi(d, sigma, np.random.default_rng(5))
    r = estimate_mi(x, y, estimator="gaussian", sliced=True, slices=512, seed=6)
    assert abs(r.value - truth) < 4 * r.stderr + 0.005


@pytest.mark.train
def test_sliced_dv_accuracy_and_certificates():
    rng = np.random.default_rng(7)
    d, sigma = 3, 0.5
    x, y = gaussian_channel(10000, d, sigma, rng)
    r = estimate_mi(x, y, estimator="dv", sliced=True, slices=32, seed=8, critic=CriticConfig(max_steps=1200))
    frames = r.details["frames"]
    exact = exact_slice_mi(frames["x"][:, :, 0], frames["y"][:, :, 0], sigma)
    full_mi = 0.5 * d * math.log(1 + 1 / sigma**2)
    assert abs(r.value - exact.mean()) < 0.04
    assert np.mean(np.abs(r.per_slice - exact)) < 0.05
    # Certificates: per-slice bounds hold simultaneously; the best one bounds the full MI.
    assert np.all(r.per_slice_lower_bounds < exact)
    assert r.max_slice_lower_bound == pytest.approx(r.per_slice_lower_bounds.max())
    assert r.max_slice_lower_bound < full_mi
    assert r.lower_bound < exact.mean()
    assert r.max_slice_lower_bound > 0.5 * exact.max()


def test_k_dimensional_slices_gain_information():
    rng = np.random.default_rng(9)
    x, y = gaussian_channel(20000, 6, 1.0, rng)
    one = estimate_mi(x, y, estimator="gaussian", sliced=True, slices=32, slice_dim=1, seed=1)
    three = estimate_mi(x, y, estimator="gaussian", sliced=True, slices=32, slice_dim=3, seed=1)
    assert three.value > 2 * one.value


def test_conditional_sliced_independent_form():
    """X ⊥ Z, Y = X + Z + N: the sliced I(θᵀX; φᵀY, ψᵀZ) is positive and below the full MI."""
    rng = np.random.default_rng(10)
    n, d = 20000, 2
    x, z = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    y = x + z + 0.5 * rng.standard_normal((n, d))
    # One seed, so the same frames for X and Y: slice by slice, I(θᵀX; φᵀY, ψᵀZ) ≥ I(θᵀX; φᵀY)
    # (chain rule), so the first inequality needs no more slices than these.
    with_z = estimate_mi(x, y, z, estimator="gaussian", sliced=True, slices=64, seed=2)
    without = estimate_mi(x, y, estimator="gaussian", sliced=True, slices=64, seed=2)
    full = 0.5 * d * math.log(1 + 1 / 0.25)
    assert without.value < with_z.value < full


def test_sliced_classical_bases_run():
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 2, (3000, 3)).astype(float)
    flipped = np.where(rng.random((3000, 3)) < 0.1, 1 - bits, bits)
    plug = estimate_mi(bits, flipped, estimator="plugin", sliced=True, slices=16, seed=0)
    ksg = estimate_mi(*gaussian_channel(2000, 3, 0.5, rng), estimator="ksg", sliced=True, slices=8, seed=0)
    assert plug.per_slice.shape == (16,) and np.all(np.isfinite(plug.per_slice))
    assert ksg.value > 0 and ksg.lower_bound is None


def test_projection_shapes():
    frames = random_frames(7, 3, 2, np.random.default_rng(0))
    assert project(np.ones((5, 3)), frames).shape == (7, 5, 2)
