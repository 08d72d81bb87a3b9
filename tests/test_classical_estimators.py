"""Classical MI estimators (KSG, Gaussian/CCA, discrete plug-in, exact pmf MI).

Every expected value is computed here, independently of the code under test: closed
forms, numerical integration, or direct summation / counting written in this file.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate

from estimators.discrete import exact_mi, plugin_mi, plugin_mi_batch
from estimators.gaussian import gaussian_mi, gaussian_mi_batch
from estimators.ksg import ksg_mi, ksg_mi_batch
from estimators.validation import InputError


def correlated_gaussian_pairs(rng, n, dim, rho):
    """dim independent pairs (X_i, Y_i), each standard bivariate normal with correlation rho."""
    x = rng.standard_normal((n, dim))
    y = rho * x + math.sqrt(1.0 - rho**2) * rng.standard_normal((n, dim))
    return x, y


def gaussian_pairs_mi(dim, rho):
    """I = −½ log(1 − ρ²) per independent pair (Cover and Thomas, Example 8.5.1)."""
    return -0.5 * dim * math.log(1.0 - rho**2)


def direct_sum_mi(pmf):
    """Σ_ij p_ij log(p_ij / (p_i. p_.j)) by explicit loops."""
    rows = [sum(row) for row in pmf]
    cols = [sum(pmf[i][j] for i in range(len(pmf))) for j in range(len(pmf[0]))]
    total = 0.0
    for i, row in enumerate(pmf):
        for j, p in enumerate(row):
            if p > 0:
                # Logs of each factor: p_i. p_.j can underflow to 0 for subnormal entries.
                total += p * (math.log(p) - math.log(rows[i]) - math.log(cols[j]))
    return total


def sample_pmf(rng, pmf, n):
    """n pairs (i, j) drawn from a joint pmf table, as two (n, 1) float columns."""
    pmf = np.asarray(pmf)
    flat = rng.choice(pmf.size, size=n, p=pmf.ravel())
    rows, cols = np.divmod(flat, pmf.shape[1])
    return rows[:, None].astype(float), cols[:, None].astype(float)


DEPENDENT_PMF = [[0.20, 0.05, 0.05, 0.00], [0.05, 0.25, 0.05, 0.05], [0.02, 0.03, 0.10, 0.15]]


# --------------------------------------------------------------------------- Gaussian data


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.9])
@pytest.mark.parametrize("dim", [1, 3])
def test_gaussian_mi_on_correlated_pairs(rho, dim):
    x, y = correlated_gaussian_pairs(np.random.default_rng(10 + dim), 40_000, dim, rho)
    truth = gaussian_pairs_mi(dim, rho)
    # Sampling sd of the estimate is about dim·ρ/sqrt(n) ≈ 0.01 at most here.
    assert gaussian_mi(x, y) == pytest.approx(truth, abs=0.02)


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.9])
@pytest.mark.parametrize("dim", [1, 2])
def test_ksg_on_correlated_pairs(rho, dim):
    x, y = correlated_gaussian_pairs(np.random.default_rng(20 + dim), 5000, dim, rho)
    truth = gaussian_pairs_mi(dim, rho)
    # KSG at n = 5000, k = 3: sd ≤ 0.02 over seeds, bias < 0.01; the tolerance is ~4 sd.
    assert ksg_mi(x, y, k=3) == pytest.approx(truth, abs=0.07)


def gaussian_channel(rng, n):
    """Y = A X + N with X ~ N(0, Σ_X), N ~ N(0, σ² I); returns x, y and ½ log det(I + AΣ_XAᵀ/σ²)."""
    a = np.array([[1.0, 0.5], [-0.3, 0.8], [0.2, 0.1]])
    sigma_x = np.array([[1.0, 0.4], [0.4, 2.0]])
    noise_sd = 0.7
    x = rng.multivariate_normal(np.zeros(2), sigma_x, size=n)
    y = x @ a.T + noise_sd * rng.standard_normal((n, 3))
    signal = a @ sigma_x @ a.T / noise_sd**2
    truth = 0.5 * np.linalg.slogdet(np.eye(3) + signal)[1]
    return x, y, truth


def test_gaussian_mi_on_gaussian_channel():
    x, y, truth = gaussian_channel(np.random.default_rng(3), 50_000)
    assert gaussian_mi(x, y) == pytest.approx(truth, abs=0.02)


def test_ksg_on_gaussian_channel():
    x, y, truth = gaussian_channel(np.random.default_rng(4), 4000)
    assert ksg_mi(x, y) == pytest.approx(truth, rel=0.08)


def test_gaussian_mi_equals_canonical_correlation_form():
    """½ log(det Σ_X det Σ_Y / det Σ) = −½ Σ log(1 − ρ_i²), the ρ_i² being the eigenvalues
    of Σ_X⁻¹ Σ_XY Σ_Y⁻¹ Σ_YX (computed here from the sample covariance directly)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((500, 3))
    y = x[:, :2] @ rng.standard_normal((2, 4)) + rng.standard_normal((500, 4))
    cov = np.cov(np.hstack([x, y]), rowvar=False)
    sxx, syy, sxy = cov[:3, :3], cov[3:, 3:], cov[:3, 3:]
    rho_sq = np.linalg.eigvals(np.linalg.solve(sxx, sxy) @ np.linalg.solve(syy, sxy.T)).real
    assert gaussian_mi(x, y) == pytest.approx(-0.5 * np.sum(np.log1p(-rho_sq)), rel=1e-9)


# --------------------------------------------------------------------------- KSG, non-Gaussian


@pytest.mark.parametrize("classes", [2, 4, 8])
def test_ksg_discrete_input_plus_uniform_noise_gives_log_k(classes):
    rng = np.random.default_rng(classes)
    x = rng.integers(0, classes, size=(4000, 1)).astype(float)
    y = x + rng.random((4000, 1))
    # Y determines X exactly and X is uniform on K values: I = H(X) = log K.
    assert ksg_mi(x, y) == pytest.approx(math.log(classes), abs=0.05)


def additive_uniform_mi(a):
    """I(X; X + U) for X ~ U(0,1), U ~ U(0,a): h(Y) − log a, h(Y) of the trapezoid density of Y.

    Closed form: a/2 − log a for a ≤ 1 and 1/(2a) for a ≥ 1. The integral is checked
    against numerical quadrature of −∫ f log f so the closed form is not taken on trust.
    """
    lo, hi = min(1.0, a), max(1.0, a)

    def density(t):
        # f(t) = |[t − a, t] ∩ [0, 1]| / a: ramps of width min(1, a), plateau min(1, a)/a.
        return min(t, lo, 1.0 + a - t) / a

    def integrand(t):
        f = density(t)
        return -f * math.log(f) if f > 0 else 0.0

    entropy_y = integrate.quad(integrand, 0.0, 1.0 + a, points=[lo, hi], limit=200)[0]
    closed = a / 2 - math.log(a) if a <= 1 else 1 / (2 * a)
    assert entropy_y - math.log(a) == pytest.approx(closed, abs=1e-8)
    return closed


@pytest.mark.parametrize("width", [0.2, 0.5, 2.0])
def test_ksg_additive_uniform_noise(width):
    rng = np.random.default_rng(int(width * 10))
    x = rng.random((5000, 1))
    y = x + width * rng.random((5000, 1))
    # Bounded supports bias KSG down (≈ −0.025 at width 0.2, n = 5000; sd ≈ 0.013).
    assert ksg_mi(x, y) == pytest.approx(additive_uniform_mi(width), abs=0.08)


def test_estimators_near_zero_under_independence():
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((4000, 2)), rng.standard_normal((4000, 1))
    assert abs(ksg_mi(x, y)) < 0.06  # sd ≈ 0.013 at n = 4000
    assert gaussian_mi(x, y) < 0.003  # ≈ χ²_2 / (2n): mean 2.5e-4
    xd, yd = rng.integers(0, 4, (4000, 1)), rng.integers(0, 3, (4000, 1))
    assert abs(plugin_mi(xd, yd, correction="miller-madow")) < 0.004


def test_ksg_nearly_invariant_under_monotone_transforms():
    x, y = correlated_gaussian_pairs(np.random.default_rng(7), 3000, 1, 0.8)
    base = ksg_mi(x, y)
    # The truth (−½ log(1 − 0.64) = 0.51) is invariant; KSG moves by ≈ 0.01–0.02 (sd 0.01).
    for transformed in (np.exp(x), x**3 + x, np.arctan(2 * x)):
        assert ksg_mi(transformed, y) == pytest.approx(base, abs=0.06)


def test_ksg_counts_neighbours_by_brute_force():
    """Small n: the estimator equals Eq. (8) of Kraskov et al. evaluated with O(n²) distances
    on coordinates standardized to mean 0 and unit standard deviation."""
    from scipy.special import digamma

    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((60, 2)) * [1.0, 30.0], rng.standard_normal((60, 1)) + 5.0
    k = 4
    x, y = (x - x.mean(0)) / x.std(0), (y - y.mean(0)) / y.std(0)
    dx = np.abs(x[:, None, :] - x[None, :, :]).max(axis=2)
    dy = np.abs(y[:, None, :] - y[None, :, :]).max(axis=2)
    joint = np.maximum(dx, dy)
    np.fill_diagonal(joint, np.inf)
    eps = np.sort(joint, axis=1)[:, k - 1]
    n_x = (dx < eps[:, None]).sum(axis=1) - 1
    n_y = (dy < eps[:, None]).sum(axis=1) - 1
    expected = digamma(k) + digamma(60) - np.mean(digamma(n_x + 1) + digamma(n_y + 1))
    assert ksg_mi(x, y, k=k) == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------- discrete


def test_exact_mi_matches_direct_summation():
    assert exact_mi(DEPENDENT_PMF) == pytest.approx(direct_sum_mi(DEPENDENT_PMF), rel=1e-12)
    product = np.outer([0.2, 0.8], [0.1, 0.3, 0.6])
    assert exact_mi(product) == pytest.approx(0.0, abs=1e-15)
    # Y = X uniform on 4 symbols: I = log 4.
    assert exact_mi(np.eye(4) / 4) == pytest.approx(math.log(4), rel=1e-12)


def test_plugin_converges_to_exact_mi():
    n = 50_000
    x, y = sample_pmf(np.random.default_rng(9), DEPENDENT_PMF, n)
    truth = direct_sum_mi(DEPENDENT_PMF)
    # The plug-in MI is asymptotically normal around the MI with variance Var[i(X; Y)] / n, i the
    # information density, and biased by (|X| − 1)(|Y| − 1) / (2n) to first order (Miller 1955;
    # Paninski 2003, Sec. 3): four standard deviations plus that bias.
    pmf = np.asarray(DEPENDENT_PMF)
    joint = pmf > 0
    density = np.log((pmf / (pmf.sum(1, keepdims=True) * pmf.sum(0, keepdims=True)))[joint])
    variance = np.sum(pmf[joint] * (density - truth) ** 2)
    tolerance = 4 * math.sqrt(variance / n) + (pmf.shape[0] - 1) * (pmf.shape[1] - 1) / (2 * n)
    for correction in ("miller-madow", None):
        assert plugin_mi(x, y, correction=correction) == pytest.approx(truth, abs=tolerance)


def test_plugin_equals_empirical_pmf_mi_by_counting():
    rng = np.random.default_rng(11)
    x = rng.integers(0, 3, (300, 2)).astype(float)
    y = (x[:, :1] + rng.integers(0, 2, (300, 1))).astype(float)
    n = len(x)
    joint = Counter(zip(map(tuple, x), map(tuple, y)))
    px, py = Counter(map(tuple, x)), Counter(map(tuple, y))
    expected = sum(c / n * math.log(c * n / (px[a] * py[b])) for (a, b), c in joint.items())
    assert plugin_mi(x, y, correction=None) == pytest.approx(expected, rel=1e-12)
    # Miller–Madow subtracts (m_XY − m_X − m_Y + 1) / (2n).
    mm_shift = (len(joint) - len(px) - len(py) + 1) / (2 * n)
    assert plugin_mi(x, y) == pytest.approx(expected - mm_shift, rel=1e-12)


def test_miller_madow_reduces_small_sample_bias():
    rng = np.random.default_rng(12)
    truth = direct_sum_mi(DEPENDENT_PMF)
    # 400 independent small samples (n = 60) as the slices of one batch.
    draws = [sample_pmf(rng, DEPENDENT_PMF, 60) for _ in range(400)]
    x = np.stack([d[0] for d in draws])
    y = np.stack([d[1] for d in draws])
    bias_plugin = plugin_mi_batch(x, y, correction=None).mean() - truth
    bias_mm = plugin_mi_batch(x, y, correction="miller-madow").mean() - truth
    assert bias_plugin > 0.03  # the plug-in bias ≈ (12 − 3 − 4 + 1)/(2·60) = 0.05
    assert abs(bias_mm) < 0.5 * abs(bias_plugin)


def test_plugin_treats_negative_zero_as_zero():
    x = np.array([[0.0], [-0.0], [1.0], [1.0]])
    y = np.array([[0.0], [0.0], [1.0], [1.0]])
    assert plugin_mi(x, y, correction=None) == pytest.approx(math.log(2), rel=1e-12)


# --------------------------------------------------------------------------- batches


def test_batches_equal_per_slice_scalars():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((4, 300, 2))
    y = x[..., :1] * rng.random((4, 1, 1)) + rng.standard_normal((4, 300, 1))
    xd, yd = np.round(x), np.round(y)
    np.testing.assert_allclose(ksg_mi_batch(x, y, k=5), [ksg_mi(a, b, k=5) for a, b in zip(x, y)], rtol=1e-13)
    np.testing.assert_allclose(gaussian_mi_batch(x, y), [gaussian_mi(a, b) for a, b in zip(x, y)], rtol=1e-12)
    for correction in ("miller-madow", None):
        np.testing.assert_allclose(
            plugin_mi_batch(xd, yd, correction=correction),
            [plugin_mi(a, b, correction=correction) for a, b in zip(xd, yd)],
            rtol=1e-12,
            atol=1e-15,
        )


def test_plugin_batch_keeps_slices_apart():
    """Identical rows in different slices are different symbols: slice 1 is slice 0 relabelled."""
    # Each row twice: the same empirical pmf, with enough repeats for the plug-in estimator.
    x0 = np.repeat([[0.0], [0.0], [1.0], [1.0], [2.0], [2.0]], 2, axis=0)
    y0 = np.repeat([[0.0], [1.0], [0.0], [1.0], [1.0], [1.0]], 2, axis=0)
    x = np.stack([x0, x0[::-1]])
    y = np.stack([y0, y0])
    values = plugin_mi_batch(x, y, correction=None)
    # Slice 0: X = 0, 1 carry no information about Y, X = 2 forces Y = 1.
    expected0 = direct_sum_mi([[1 / 6, 1 / 6], [1 / 6, 1 / 6], [0.0, 2 / 6]])
    assert values[0] == pytest.approx(expected0, rel=1e-12)
    expected1 = direct_sum_mi([[0.0, 2 / 6], [1 / 6, 1 / 6], [1 / 6, 1 / 6]])
    assert values[1] == pytest.approx(expected1, rel=1e-12)


# --------------------------------------------------------------------------- validation


def test_k_is_validated():
    x = np.zeros((10, 1)) + np.arange(10)[:, None]
    for bad in (0, -1, 10, 11, 2.5, True):
        with pytest.raises(InputError, match="'k'"):
            ksg_mi(x, x, k=bad)
        with pytest.raises(InputError, match="'k'"):
            ksg_mi_batch(x[None], x[None], k=bad)


@pytest.mark.parametrize("estimator", [ksg_mi, gaussian_mi, plugin_mi])
def test_scalar_estimators_validate_samples(estimator):
    good = np.random.default_rng(0).standard_normal((20, 2))
    with pytest.raises(InputError, match="'x' has 20.*'y' has 19"):
        estimator(good, good[:19])
    bad = good.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InputError, match="'y'.*NaN"):
        estimator(good, bad)
    with pytest.raises(InputError, match="'x'.*shape"):
        estimator(good[None], good)


@pytest.mark.parametrize("estimator", [ksg_mi_batch, gaussian_mi_batch, plugin_mi_batch])
def test_batch_estimators_validate_samples(estimator):
    good = np.random.default_rng(0).standard_normal((3, 20, 2))
    with pytest.raises(InputError, match="'x' and 'y'"):
        estimator(good, good[:2])
    with pytest.raises(InputError, match="'x' and 'y'"):
        estimator(good, good[:, :19])
    with pytest.raises(InputError, match="'x'.*shape"):
        estimator(good[0], good)
    bad = good.copy()
    bad[1, 2, 0] = np.inf
    with pytest.raises(InputError, match="'x'.*NaN or inf"):
        estimator(bad, good)


def test_gaussian_mi_needs_regular_covariances():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 2))
    with pytest.raises(InputError, match="more samples"):
        gaussian_mi(x, rng.standard_normal((4, 2)))
    constant = np.ones((50, 1))
    with pytest.raises(InputError, match="'y'.*singular"):
        gaussian_mi(rng.standard_normal((50, 2)), constant)
    # Regular marginals with an exact linear relation: infinite information.
    z = rng.standard_normal((50, 2))
    assert gaussian_mi(z, z[:, :1]) == math.inf


def test_correction_and_pmf_are_validated():
    with pytest.raises(InputError, match="'correction'"):
        plugin_mi(np.zeros(5), np.zeros(5), correction="jackknife")
    with pytest.raises(InputError, match="'correction'"):
        plugin_mi_batch(np.zeros((1, 5, 1)), np.zeros((1, 5, 1)), correction="mm")
    for bad in ([[0.5, 0.6]], [[-0.1, 1.1]], [[np.nan, 1.0]], [0.5, 0.5], [[0.5, 0.5 + 1e-6]], [[]], "abc"):
        with pytest.raises(InputError, match="'joint_pmf'"):
            exact_mi(bad)
    # Within the 1e-9 tolerance is accepted.
    assert exact_mi([[0.5, 0.5 + 1e-10]]) == pytest.approx(0.0, abs=1e-12)


# --------------------------------------------------------------------------- properties

shapes = st.tuples(st.integers(1, 3), st.integers(8, 30), st.integers(1, 3), st.integers(1, 3))


@settings(max_examples=30, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_batch_shapes_and_symmetry(shape, seed):
    p, n, dx, dy = shape
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((p, n, dx)), rng.standard_normal((p, n, dy))
    k = int(rng.integers(1, n))
    ksg = ksg_mi_batch(x, y, k=k)
    assert ksg.shape == (p,) and np.isfinite(ksg).all()
    # Estimator 1 is symmetric in X and Y (the same ε_i; n_x and n_y swap).
    np.testing.assert_allclose(ksg_mi_batch(y, x, k=k), ksg, rtol=1e-12, atol=1e-12)
    if n > dx + dy:
        gauss = gaussian_mi_batch(x, y)
        assert gauss.shape == (p,) and (gauss >= 0).all()
        np.testing.assert_allclose(gaussian_mi_batch(y, x), gauss, rtol=1e-9, atol=1e-12)
    # Every rounded sample twice, so that at most half the (x, y) pairs are distinct (the
    # plug-in estimator refuses data with more).
    xd, yd = np.tile(np.round(x), (1, 2, 1)), np.tile(np.round(y), (1, 2, 1))
    plug = plugin_mi_batch(xd, yd, correction=None)
    assert plug.shape == (p,) and (plug >= -1e-12).all()
    # The plug-in MI never exceeds the smaller empirical entropy, at most log(2n).
    assert (plug <= math.log(2 * n) + 1e-12).all()
    np.testing.assert_allclose(plugin_mi_batch(yd, xd, correction=None), plug, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 4),
    weights=st.lists(st.floats(0.0, 1.0), min_size=16, max_size=16),
)
def test_exact_mi_properties(rows, cols, weights):
    table = np.asarray(weights[: rows * cols]).reshape(rows, cols)
    if table.sum() == 0:
        table[0, 0] = 1.0
    pmf = table / table.sum()
    value = exact_mi(pmf)
    assert value == pytest.approx(direct_sum_mi(pmf.tolist()), rel=1e-9, abs=1e-12)
    assert -1e-12 <= value <= math.log(min(rows, cols)) + 1e-12
    assert exact_mi(pmf.T) == pytest.approx(value, rel=1e-9, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 25), k=st.integers(-3, 40), extra=st.integers(1, 3), p=st.integers(1, 3))
def test_invalid_k_and_mismatched_samples_always_raise(n, k, extra, p):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal((p, n, 1)), rng.standard_normal((p, n, 2))
    if 1 <= k < n:
        assert ksg_mi_batch(x, y, k=k).shape == (p,)
    else:
        with pytest.raises(InputError, match="'k'"):
            ksg_mi_batch(x, y, k=k)
        with pytest.raises(InputError, match="'k'"):
            ksg_mi(x[0], y[0], k=k)
    longer = rng.standard_normal((p, n + extra, 2))
    for estimator in (ksg_mi_batch, gaussian_mi_batch, plugin_mi_batch):
        with pytest.raises(InputError, match="'x' and 'y'"):
            estimator(x, longer)
    for estimator in (ksg_mi, gaussian_mi, plugin_mi):
        with pytest.raises(InputError, match=f"'x' has {n}.*'y' has {n + extra}"):
            estimator(x[0], longer[0])
