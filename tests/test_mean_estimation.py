"""Algorithm 1 (ε-MI DP mean estimation), its medians and the Proposition 5 sample sizes."""

import math

import numpy as np
import pytest
from scipy import optimize

from estimators.validation import InputError
from mechanisms.constructions.mean_estimation import (MIDPMeanEstimator, algorithm1_blocks, algorithm1_noise_variance, coordinate_median, geometric_median, mi_dp_mean, noisy_block_means, proposition5_block_size, proposition5_sample_size, sample_complexity_rate)


def test_geometric_median_of_symmetric_points_is_the_centre():
    rng = np.random.default_rng(0)
    centre = np.array([1.0, -2.0, 0.5])
    half = rng.normal(size=(40, 3))
    points = np.concatenate([centre + half, centre - half])
    result = geometric_median(points, tol=1e-12)
    assert result.converged
    np.testing.assert_allclose(result.point, centre, atol=1e-8)


def test_geometric_median_matches_direct_minimization_batched():
    rng = np.random.default_rng(1)
    batch = rng.standard_t(df=2, size=(5, 31, 2))
    result = geometric_median(batch, tol=1e-12, max_iter=5000)
    assert result.point.shape == (5, 2) and np.all(result.converged)
    for points, found in zip(batch, result.point):
        def cost(y, pts=points):
            return np.linalg.norm(pts - y, axis=1).sum()
        best = optimize.minimize(cost, np.median(points, axis=0), method="Nelder-Mead",
                                 options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
        assert cost(found) <= best.fun + 1e-8


def test_geometric_median_on_a_data_point_and_in_one_dimension():
    # Collinear odd set: the geometric median is the ordinary median (a data point).
    points = np.array([[0.0], [1.0], [5.0], [6.0], [100.0]])
    np.testing.assert_allclose(geometric_median(points, tol=1e-12).point, [5.0], atol=1e-8)
    # A point holding most of the mass is the median.
    heavy = np.array([[0.0, 0.0]] * 5 + [[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(geometric_median(heavy, tol=1e-12).point, [0.0, 0.0], atol=1e-10)


def test_geometric_median_reports_the_iteration_cap():
    rng = np.random.default_rng(2)
    result = geometric_median(rng.normal(size=(50, 4)), tol=1e-15, max_iter=2)
    assert result.iterations == 2 and result.max_iter == 2 and not result.converged


def test_coordinate_median_by_hand():
    pts = np.array([[1.0, 9.0], [3.0, 2.0], [2.0, 4.0]])
    np.testing.assert_array_equal(coordinate_median(pts), [2.0, 4.0])


def test_algorithm1_noise_by_hand_and_dominates_corollary3():
    n, m, d, eps, c = 1000, 10, 3, 0.5, 2.0
    k = n // m
    sigma2 = algorithm1_noise_variance(k, d, eps, c)
    assert sigma2 == pytest.approx(d * m ** 2 * c / (2 * n ** 2 * eps))  # the printed form when m | n
    # Corollary 3 (variance form) for a block mean: Var(f_ℓ | other rows) = c/k².
    corollary3 = d * (c / k ** 2) / (d * (math.exp(2 * eps / d) - 1))
    assert sigma2 >= corollary3
    assert algorithm1_blocks(0.1) == math.ceil(200 * math.log(10))


def test_block_noise_is_the_algorithm1_variance():
    est = MIDPMeanEstimator(0.5, blocks=8)
    rng = np.random.default_rng(3)
    dbs = np.full((2000, 80, 2), 3.0)
    sigma2 = algorithm1_noise_variance(10, 2, 0.5)
    means = noisy_block_means(dbs, 8, math.sqrt(sigma2), rng)
    assert means.shape == (2000, 8, 2)
    np.testing.assert_allclose((means - 3.0).reshape(-1, 2).var(axis=0), sigma2, rtol=0.03)
    result = est.estimate(dbs[:20], 0)
    assert result.noise_variance == pytest.approx(sigma2)
    assert (result.block_size, result.samples_used) == (10, 80)


@pytest.mark.parametrize("median", ["geometric", "coordinate"])
def test_error_shrinks_with_n_on_gaussian_data(median):
    rng = np.random.default_rng(4)
    mu = np.array([2.0, -1.0, 0.5])
    est = MIDPMeanEstimator(0.5, blocks=15, median=median)
    errors = []
    for n in (300, 3000, 30000):
        dbs = rng.normal(mu, 1.0, size=(30, n, 3))
        out = est(dbs, rng)
        assert out.shape == (30, 3)
        errors.append(np.linalg.norm(out - mu, axis=1).mean())
    assert errors[0] > 2 * errors[1] > 4 * errors[2]
    assert errors[2] < 0.05


def test_mi_dp_mean_single_dataset_and_seed():
    rng = np.random.default_rng(5)
    x = rng.normal(1.0, 1.0, size=(4000, 2))
    a = mi_dp_mean(x, 1.0, blocks=20, seed=7)
    b = mi_dp_mean(x, 1.0, blocks=20, seed=7)
    np.testing.assert_array_equal(a.estimate, b.estimate)
    assert a.estimate.shape == (2,) and a.converged is True and a.iterations >= 1
    out = a.to_dict()
    assert out["unit"] == "nats" and out["tol"] == 1e-9 and out["max_iter"] == 1000
    assert np.linalg.norm(a.estimate - 1.0) < 0.1


def test_proposition5_block_size_meets_lemma2_bounds():
    alpha, eps, d, c = 0.2, 0.3, 4, 1.5
    k = proposition5_block_size(alpha, eps, d, c)
    a = alpha / 1.04
    assert 4 * d * c / (k * a ** 2) <= 0.1  # Chebyshev step
    sigma2 = d * c / (2 * k ** 2 * eps)
    assert 2 * math.exp(-a ** 2 / (8 * sigma2 * d)) <= 0.1 + 1e-12  # Gaussian tail step
    assert proposition5_sample_size(alpha, 0.05, eps, d, c) == math.ceil(200 * math.log(20)) * k


def test_rates_by_hand_and_epsilon_scaling():
    assert sample_complexity_rate(0.1, 0.1, 0.25, 2) == pytest.approx(math.log(10) * (200 + 40))
    assert sample_complexity_rate(0.1, 0.1, 0.25, 2, method="mi-dp-coordinate") == pytest.approx(
        math.log(20) * (200 + 40))
    dp = sample_complexity_rate(0.1, 0.1, 0.25, 2, method="dp", moment=2, radius=math.e)
    assert dp == pytest.approx(math.log(20) * (200 + 2 / (0.25 * 0.01) + 8))


@pytest.mark.parametrize("call,name", [
    (lambda: MIDPMeanEstimator(0.0, blocks=2), "'epsilon'"),
    (lambda: MIDPMeanEstimator(1.0), "'beta'"),
    (lambda: MIDPMeanEstimator(1.0, beta=1.2), "'beta'"),
    (lambda: MIDPMeanEstimator(1.0, blocks=2, median="mean"), "'median'"),
    (lambda: MIDPMeanEstimator(1.0, blocks=2, variance_bound=-1.0), "'variance_bound'"),
    (lambda: MIDPMeanEstimator(1.0, blocks=50).estimate(np.zeros((1, 10, 2))), "'dbs'"),
    (lambda: MIDPMeanEstimator(1.0, blocks=2).estimate(np.zeros((10, 2))), "'dbs'"),
    (lambda: mi_dp_mean(np.array([[np.nan, 1.0]] * 10), 1.0, blocks=2), "'samples'"),
    (lambda: noisy_block_means(np.zeros((1, 4, 2)), 5, 1.0, 0), "'blocks'"),
    (lambda: noisy_block_means(np.zeros((1, 4, 2)), 2, -1.0, 0), "'noise_std'"),
    (lambda: geometric_median(np.zeros((2, 3, 4, 5))), "'points'"),
    (lambda: geometric_median(np.zeros((3, 2)), tol=0.0), "'tol'"),
    (lambda: proposition5_block_size(0.0, 1.0, 2), "'alpha'"),
    (lambda: sample_complexity_rate(0.1, 0.1, 1.0, 2, method="dp"), "'moment'"),
    (lambda: sample_complexity_rate(0.1, 0.1, 1.0, 2, moment=3), "'moment'"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(InputError, match=name):
        call()
