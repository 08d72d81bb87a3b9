"""The μ certificate of Gaussian DP (audit.gdp_certificate), against independent computations:
G_μ and its inverse with scipy.stats.norm, the DKW–Massart band by brute force over thresholds and by its
coverage, the Clopper–Pearson point with scipy.stats.beta, Dong–Roth–Su's δ(ε) at the estimated ε, the
event optimum by a direct grid search, and (slow) the certificate's type-I error at the boundary."""

import math

import numpy as np
import pytest
from scipy import stats

from audit.event_search import PairCandidate, event_search
from audit.gdp_certificate import (DEFAULT_POINTS, dkw_band, gdp_certificate, gdp_epsilon, optimal_event_epsilon,
                                   tradeoff_mu)
from estimators.validation import InputError


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0, 3.5])
def test_tradeoff_mu_inverts_the_gaussian_tradeoff_curve(mu):
    # G_μ(x) = Φ(Φ⁻¹(1 − x) − μ) (Dong, Roth and Su, Eq. (2.2)), computed with scipy.stats.norm.
    x = np.array([1e-4, 0.01, 0.2, 0.5, 0.9])
    y = stats.norm.cdf(stats.norm.ppf(1 - x) - mu)
    assert np.allclose(tradeoff_mu(x, y), mu, atol=1e-9)
    # A point above the curve of 0 (y > 1 − x) certifies nothing.
    assert tradeoff_mu(0.3, 0.8) == 0.0


def test_dkw_certificate_equals_a_brute_force_over_every_threshold():
    rng = np.random.default_rng(3)
    first, second = rng.normal(1.5, 1, 300), rng.normal(0, 1, 280)
    alpha = 0.05
    eta_first = math.sqrt(math.log(4 / alpha) / (2 * len(first)))  # Massart: 2 exp(−2nη²) = α/2
    eta_second = math.sqrt(math.log(4 / alpha) / (2 * len(second)))
    best = 0.0
    for t in list(first) + list(second) + [-np.inf]:
        # "s > t": FPR under the second input, FNR under the first; "s <= t": the roles swapped.
        fpr = min(1.0, sum(s > t for s in second) / len(second) + eta_second)
        fnr = min(1.0, sum(s <= t for s in first) / len(first) + eta_first)
        best = max(best, stats.norm.ppf(1 - fpr) - stats.norm.ppf(fnr))
        fpr = min(1.0, sum(s <= t for s in first) / len(first) + eta_first)
        fnr = min(1.0, sum(s > t for s in second) / len(second) + eta_second)
        best = max(best, stats.norm.ppf(1 - fpr) - stats.norm.ppf(fnr))
    certificate = gdp_certificate(first, second, alpha=alpha, method="dkw")
    assert certificate.mu_lower_bound == pytest.approx(best, abs=1e-9)
    assert certificate.points == 2 * (len(first) + len(second) + 1)


def test_dkw_band_covers_the_empirical_cdf_at_its_level():
    # Coverage by simulation: sup_t |F̂ₙ(t) − t| of uniform draws exceeds η in at most α of the samples.
    rng = np.random.default_rng(0)
    n, alpha, reps = 50, 0.1, 4000
    eta = dkw_band(n, alpha)
    u = np.sort(rng.random((reps, n)), axis=1)
    i = np.arange(1, n + 1)
    sup = np.maximum(np.max(i / n - u, axis=1), np.max(u - (i - 1) / n, axis=1))
    exceed = np.mean(sup > eta)
    assert exceed <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)
    assert exceed > 0.02  # the band is not vacuous: Massart's constant is nearly tight


def test_grid_point_is_clopper_pearson_at_the_union_level():
    rng = np.random.default_rng(1)
    first, second = rng.normal(2, 1, 2000), rng.normal(0, 1, 2000)
    selection = (rng.normal(2, 1, 1000), rng.normal(0, 1, 1000))
    alpha, points = 0.05, 3
    c = gdp_certificate(first, second, alpha=alpha, selection=selection, points=points)
    t = c.threshold
    if c.direction == "s > t":
        fp, n_fp, fn, n_fn = np.sum(second > t), len(second), np.sum(first <= t), len(first)
    else:
        fp, n_fp, fn, n_fn = np.sum(first <= t), len(first), np.sum(second > t), len(second)
    level = alpha / (2 * points)
    fpr = stats.beta.ppf(1 - level, fp + 1, n_fp - fp)
    fnr = stats.beta.ppf(1 - level, fn + 1, n_fn - fn)
    assert c.fpr_upper == pytest.approx(fpr, rel=1e-9)
    assert c.fnr_upper == pytest.approx(fnr, rel=1e-9)
    assert c.mu_lower_bound == pytest.approx(stats.norm.ppf(1 - fpr) - stats.norm.ppf(fnr), rel=1e-9)
    assert c.points == points
    assert 1.7 < c.mu_lower_bound < 2.0


def test_gdp_epsilon_solves_dong_roth_su_corollary_2_13():
    mu, delta = 2.0, 1e-5
    eps = gdp_epsilon(mu, delta)
    profile = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    assert profile == pytest.approx(delta, rel=1e-6)
    c = gdp_certificate(np.array([1.0, 2.0]), np.array([0.0, -1.0]), selection=([1.0, 2.0], [0.0, -1.0]),
                        delta=0.0)
    assert c.epsilon_estimate is None  # no finite ε at δ = 0


def test_event_optimum_matches_a_direct_search():
    # N(μ, 1) vs N(0, 1), upper-tail events, Clopper–Pearson at αs and α(1 − s) from scipy.stats.beta.
    mu, runs, alpha, delta = 2.0, 10_000, 0.05, 1e-5
    best = 0.0
    for t in np.linspace(0.0, 6.0, 601):
        k1, k2 = runs * stats.norm.sf(t - mu), runs * stats.norm.sf(t)
        for s in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
            lower = stats.beta.ppf(alpha * s, k1, runs - k1 + 1)
            upper = stats.beta.ppf(1 - alpha * (1 - s), k2 + 1, runs - k2)
            if lower > delta:
                best = max(best, math.log((lower - delta) / upper))
    assert optimal_event_epsilon(mu, runs, alpha, delta) == pytest.approx(best, abs=0.01)
    assert 4.3 < best < 4.6  # "about 4.5 at μ = 2, 10⁴ runs, δ = 1e-5" (issue 33)


def test_bad_arguments_name_themselves():
    ok = np.zeros(5)
    with pytest.raises(InputError, match="'method'"):
        gdp_certificate(ok, ok, method="band")
    with pytest.raises(InputError, match="'selection'"):
        gdp_certificate(ok, ok)
    with pytest.raises(InputError, match="'scores_first'"):
        gdp_certificate([np.nan], ok, method="dkw")
    with pytest.raises(InputError, match="'alpha'"):
        gdp_certificate(ok, ok, method="dkw", alpha=0.7)
    with pytest.raises(InputError, match="'points'"):
        gdp_certificate(ok, ok, selection=(ok, ok), points=0)


class _Runner:
    def __init__(self, mechanism):
        self.mechanism = mechanism

    def sample(self, dbs, rng, what=""):
        return self.mechanism(dbs, rng)


def test_event_search_reports_the_mu_certificate_of_its_certification_runs():
    mu = 1.5

    def gaussian(dbs, rng):  # record 0 shifts the mean by μ: exactly μ-GDP between the pair
        return (mu * dbs[:, 0, 0] + rng.normal(size=len(dbs)))[:, None]

    first, second = np.ones((2, 1)), np.zeros((2, 1))
    candidate = PairCandidate(first, second, 0, lambda a, b, dbs, y: y[:, 0])
    result = event_search([candidate], runner=_Runner(gaussian), rng=np.random.default_rng(5), runs=4000,
                          alpha=0.05, delta=1e-5)
    certificate = result.gaussian_dp
    assert certificate.runs_first == certificate.runs_second == 4000
    assert certificate.points == DEFAULT_POINTS
    assert 0.8 * mu < certificate.mu_lower_bound < mu
    assert certificate.epsilon_estimate == pytest.approx(gdp_epsilon(certificate.mu_lower_bound, 1e-5))
    assert result.to_dict()["gaussian_dp"]["mu_lower_bound"] == certificate.mu_lower_bound


@pytest.mark.slow
@pytest.mark.parametrize("method", ["clopper-pearson-grid", "dkw"])
def test_type_one_error_at_the_boundary(method):
    # Exactly μ-GDP scores (N(μ, 1) vs N(0, 1)): μ̲ > μ is a false refutation; at most α of 400 audits
    # (with three binomial standard errors of slack).
    mu, alpha, audits, runs = 1.0, 0.05, 400, 1000
    rng = np.random.default_rng(2024)
    first = rng.normal(mu, 1, (audits, runs))
    second = rng.normal(0, 1, (audits, runs))
    sel_first, sel_second = rng.normal(mu, 1, (audits, 500)), rng.normal(0, 1, (audits, 500))
    wrong = 0
    for i in range(audits):
        selection = (sel_first[i], sel_second[i]) if method != "dkw" else None
        c = gdp_certificate(first[i], second[i], alpha=alpha, method=method, selection=selection, points=4)
        wrong += c.mu_lower_bound > mu
    assert wrong / audits <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / audits)
