"""Neural MI estimators against closed-form truths (computed here, never by the code under test)."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from estimators.certify import certify_critics
from estimators.estimate import estimate_mi
from estimators.neural import CriticConfig, fit_critics
from estimators.validation import InputError

FAST = CriticConfig(max_steps=1200)


def correlated(n, rho, dim, rng):
    x = rng.standard_normal((n, dim))
    y = rho * x + math.sqrt(1 - rho**2) * rng.standard_normal((n, dim))
    return x, y


def gaussian_pair_mi(rho, dim=1):
    return -0.5 * dim * math.log(1 - rho**2)


@pytest.mark.parametrize("rho,dim,tol", [(0.5, 1, 0.05), (0.9, 1, 0.1), (0.6, 2, 0.08)])
@pytest.mark.train
def test_dv_on_correlated_gaussians(rho, dim, tol):
    x, y = correlated(8000, rho, dim, np.random.default_rng(1))
    r = estimate_mi(x, y, estimator="dv", seed=2, critic=FAST)
    truth = gaussian_pair_mi(rho, dim)
    assert abs(r.value - truth) < tol
    assert r.lower_bound < truth
    assert r.unit == "nats" and r.confidence == pytest.approx(0.95)


@pytest.mark.parametrize("estimator", ["mine", "nwj"])
@pytest.mark.train
def test_mine_and_nwj_on_correlated_gaussian(estimator):
    x, y = correlated(8000, 0.7, 1, np.random.default_rng(3))
    r = estimate_mi(x, y, estimator=estimator, seed=4, critic=FAST)
    assert abs(r.value - gaussian_pair_mi(0.7)) < 0.08
    assert r.lower_bound < gaussian_pair_mi(0.7)


@pytest.mark.train
def test_gaussian_channel_log_det():
    rng = np.random.default_rng(5)
    a = np.array([[1.0, 0.5], [0.0, 0.8]])
    cov_x = np.array([[1.0, 0.3], [0.3, 1.0]])
    sigma = 0.9
    x = rng.multivariate_normal(np.zeros(2), cov_x, size=8000)
    y = x @ a.T + sigma * rng.standard_normal((8000, 2))
    truth = 0.5 * np.linalg.slogdet(np.eye(2) + a @ cov_x @ a.T / sigma**2)[1]
    r = estimate_mi(x, y, estimator="dv", seed=6, critic=FAST)
    assert abs(r.value - truth) < 0.1


@pytest.mark.train
def test_discrete_input_plus_uniform_noise_gives_log_k():
    rng = np.random.default_rng(7)
    k = 4
    x = rng.integers(0, k, 8000).astype(float)
    y = x + rng.random(8000)
    r = estimate_mi(x, y, estimator="dv", seed=8, critic=FAST)
    assert abs(r.value - math.log(k)) < 0.1
    assert math.log(k) - 0.35 < r.lower_bound < math.log(k)


@pytest.mark.train
def test_additive_uniform_noise():
    rng = np.random.default_rng(9)
    a = 0.5
    x = rng.random(8000)
    y = x + a * rng.random(8000)
    truth = a / 2 - math.log(a)  # h(Y) = a/2 (trapezoid density), h(Y|X) = log a
    r = estimate_mi(x, y, estimator="dv", seed=10, critic=FAST)
    assert abs(r.value - truth) < 0.1


@pytest.mark.train
def test_independence_estimate_near_zero_and_bound_not_positive():
    rng = np.random.default_rng(11)
    x, y = rng.standard_normal((6000, 2)), rng.standard_normal((6000, 2))
    r = estimate_mi(x, y, estimator="dv", seed=12, critic=FAST)
    assert abs(r.value) < 0.03
    assert r.lower_bound <= 0.0


@pytest.mark.train
def test_invariance_under_invertible_transforms():
    x, y = correlated(8000, 0.8, 1, np.random.default_rng(13))
    plain = estimate_mi(x, y, estimator="dv", seed=14, critic=FAST)
    warped = estimate_mi(x**3 + x, np.exp(y), estimator="dv", seed=14, critic=FAST)
    truth = gaussian_pair_mi(0.8)
    assert abs(plain.value - truth) < 0.08
    assert abs(warped.value - truth) < 0.1


@pytest.mark.train
def test_conditional_independent_form_and_chain_rule():
    """X ⊥ Z, Y = X + Z + N: I(X; Y | Z) = I(X; X + N) = ½ log(1 + 1/σ²)."""
    rng = np.random.default_rng(15)
    n, sigma = 8000, 0.8
    x, z = rng.standard_normal(n), rng.standard_normal(n)
    y = x + z + sigma * rng.standard_normal(n)
    truth = 0.5 * math.log(1 + 1 / sigma**2)
    independent = estimate_mi(x, y, z, estimator="dv", seed=16, critic=FAST)
    chain = estimate_mi(x, y, z, estimator="dv", conditional="chain", seed=16, critic=FAST)
    gaussian_chain = estimate_mi(x, y, z, estimator="gaussian", conditional="chain")
    assert abs(independent.value - truth) < 0.08
    assert independent.lower_bound < truth
    assert abs(chain.value - truth) < 0.1 and chain.lower_bound is None
    assert abs(gaussian_chain.value - truth) < 0.03


def test_chain_rule_with_dependent_conditioning():
    """X and Z dependent: only the chain form estimates I(X; Y | Z) correctly."""
    rng = np.random.default_rng(17)
    n = 20000
    z = rng.standard_normal(n)
    x = 0.8 * z + 0.6 * rng.standard_normal(n)
    y = x + 0.5 * rng.standard_normal(n)
    # Given Z, X has variance 0.36, so I(X; Y | Z) = ½ log(1 + 0.36/0.25).
    truth = 0.5 * math.log(1 + 0.36 / 0.25)
    chain = estimate_mi(x, y, z, estimator="gaussian", conditional="chain")
    assert abs(chain.value - truth) < 0.03


@pytest.mark.train
def test_same_seed_same_numbers_and_bits():
    x, y = correlated(3000, 0.6, 1, np.random.default_rng(18))
    config = CriticConfig(max_steps=200)
    a = estimate_mi(x, y, seed=3, critic=config)
    b = estimate_mi(x, y, seed=3, critic=config, unit="bits")
    assert b.value == pytest.approx(a.value / math.log(2))
    assert b.lower_bound == pytest.approx(a.lower_bound / math.log(2))


@pytest.mark.slow
@pytest.mark.train
def test_certified_bound_coverage_over_independent_datasets():
    """The certificate must hold for any data: over 200 independent datasets with known MI,
    the bound exceeds the truth in at most about α of them (each dataset its own critic)."""
    rng = np.random.default_rng(19)
    m, n, rho, alpha = 200, 1200, 0.6, 0.2
    x = rng.standard_normal((m, n, 1))
    y = rho * x + math.sqrt(1 - rho**2) * rng.standard_normal((m, n, 1))
    fit = fit_critics(x, y, config=CriticConfig(max_steps=300, eval_every=25), seed=20)
    bounds, _ = certify_critics(fit, alpha)
    misses = np.mean(bounds > gaussian_pair_mi(rho))
    assert misses <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / m)


@pytest.mark.train
def test_certified_bound_coverage_at_zero_mi():
    """Independent X, Y: the bound is positive in at most about α of 100 datasets."""
    rng = np.random.default_rng(21)
    m, n, alpha = 100, 800, 0.3
    x, y = rng.standard_normal((m, n, 1)), rng.standard_normal((m, n, 1))
    fit = fit_critics(x, y, config=CriticConfig(max_steps=150, eval_every=25), seed=22)
    bounds, _ = certify_critics(fit, alpha)
    assert np.mean(bounds > 0) <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / m)


@pytest.mark.train
def test_projected_shallow_class_trains():
    x, y = correlated(4000, 0.8, 1, np.random.default_rng(23))
    config = CriticConfig(max_steps=400, project_a=4.0)
    r = estimate_mi(x, y, seed=1, critic=config)
    assert 0.0 < r.value < gaussian_pair_mi(0.8) + 0.05


@pytest.mark.parametrize("kwargs,match", [
    ({"estimator": "magic"}, "'estimator'"),
    ({"alpha": 0.0}, "'alpha'"),
    ({"alpha": 1.0}, "'alpha'"),
    ({"conditional": "maybe"}, "'conditional'"),
    ({"sliced": True, "slices": 0}, "'slices'"),
    ({"unit": "hartleys"}, "'unit'"),
    ({"bound": "markov"}, "'bound'"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(InputError, match=match):
        estimate_mi(np.zeros(10), np.zeros(10), **kwargs)


def test_bad_configs():
    with pytest.raises(InputError, match="'split'"):
        CriticConfig(split=(0.5, 0.5, 0.5)).validated()
    with pytest.raises(InputError, match="'output_range'"):
        CriticConfig(output_range=(1.0, 2.0)).validated()
    with pytest.raises(InputError, match="'project_a'"):
        CriticConfig(architecture="mlp", project_a=1.0).validated()


@settings(max_examples=25, deadline=None)
@given(n_x=st.integers(2, 30), n_y=st.integers(2, 30))
def test_mismatched_lengths_name_both(n_x, n_y):
    if n_x == n_y:
        return
    with pytest.raises(InputError, match="'x' has %d.*'y' has %d" % (n_x, n_y)):
        estimate_mi(np.zeros(n_x), np.zeros(n_y), estimator="gaussian")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_samples(bad):
    y = np.ones(20)
    y[5] = bad
    with pytest.raises(InputError, match="'y'.*NaN or inf"):
        estimate_mi(np.arange(20.0), y)


def test_too_few_samples_for_splits():
    # Default splits (0.4, 0.1, 0.5): the validation split reaches 4 samples at n = 35 (round(3.5) = 4).
    with pytest.raises(InputError, match="'x' and 'y' have 8 samples.*at least 35"):
        estimate_mi(np.arange(8.0), np.arange(8.0))


@pytest.mark.train
def test_scorer_reproduces_held_out_values_and_chunks_agree(small_critic):
    rng = np.random.default_rng(24)
    x = rng.standard_normal((3, 1500, 1))
    y = x + rng.standard_normal((3, 1500, 1))
    fit = fit_critics(x, y, config=small_critic, seed=5)
    test = fit.split[2]
    for m in range(3):
        assert np.allclose(fit.scorer(m, x[m, test], y[m, test]), fit.test_joint[m], atol=1e-5)
    chunked = fit_critics(x, y, config=dataclasses.replace(small_critic, max_critics_per_chunk=2), seed=5)
    test = chunked.split[2]
    assert np.allclose(chunked.scorer(2, x[2, test], y[2, test]), chunked.test_joint[2], atol=1e-5)


@pytest.mark.train
def test_heavy_tailed_marginals():
    """Cauchy marginals from an invertible map of a Gaussian pair: the MI stays −½ log(1 − ρ²)."""
    from scipy.special import ndtr

    x, y = correlated(6000, 0.8, 1, np.random.default_rng(25))
    cauchy = lambda g: np.tan(np.pi * (ndtr(g) - 0.5))  # noqa: E731
    r = estimate_mi(cauchy(x), cauchy(y), estimator="dv", seed=26, critic=FAST)
    assert abs(r.value - gaussian_pair_mi(0.8)) < 0.1
