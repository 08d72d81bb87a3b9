"""The rate-ratio certificate of pure ε-DP (audit.certificates.rate_ratio): the bound against SciPy's exact binomial
interval, its exact type-I error under the Poisson design by enumeration at a mechanism on the boundary
(p₁ = e^ε p₂), the run budget (Poisson mean and overflow), the event search choosing it for a rare event,
and the claim check."""

import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import special, stats

from audit.certificates.claim_tests import ClaimPlan, cross_checks
from audit.search.event_search import event_search
from audit.certificates.event_bounds import certified_epsilon, clopper_pearson
from audit.certificates.rate_ratio import (RUN_OVERFLOW, _paulson_log_ratio, draw_run_counts, poisson_run_mean, predicted_epsilon, rate_ratio_epsilon, rate_ratio_lower_bound)
from estimators.validation import InputError
from mechanisms.claims.parsing import parse_claim

sys.path.insert(0, str(Path(__file__).parent))
from bit_mechanism import BitRunner, bit_candidate  # noqa: E402 - the one-bit mechanism, next to this test


@pytest.mark.parametrize("x1, x2, alpha", [
    (30, 10, 0.05), (1, 0, 0.05), (12, 0, 0.1), (500, 480, 0.01), (7, 40, 0.2), (21000, 2600, 0.05),
])
def test_lower_bound_matches_scipys_exact_binomial_interval(x1, x2, alpha):
    # Given the total, x₁ is binomial with θ = p₁/(p₁ + p₂); SciPy's one-sided exact (Clopper–Pearson) interval
    # for θ, found by its own root search, maps to ρ̲ = θ̲/(1 − θ̲).
    theta = stats.binomtest(x1, x1 + x2, alternative="greater").proportion_ci(1 - alpha, method="exact").low
    assert rate_ratio_lower_bound(x1, x2, alpha) == pytest.approx(theta / (1 - theta), rel=1e-8)


def test_bound_is_zero_without_a_hit_under_the_first_input():
    assert rate_ratio_lower_bound(0, 0, 0.05) == 0.0 and rate_ratio_lower_bound(0, 9, 0.05) == 0.0
    assert rate_ratio_epsilon(0.0) == 0.0 and rate_ratio_epsilon(0.7) == 0.0
    assert rate_ratio_epsilon(math.e ** 1.5) == pytest.approx(1.5)
    # Every hit under the first input: θ̲ = α^{1/x₁} (the Beta(x₁, 1) quantile), by hand.
    theta = 0.05 ** (1 / 12)
    assert rate_ratio_lower_bound(12, 0, 0.05) == pytest.approx(theta / (1 - theta), rel=1e-12)


@pytest.mark.parametrize("mean_second", [3.0, 15.0, 40.0])
def test_exact_type_one_error_of_the_poisson_design_is_at_most_alpha(mean_second):
    # A mechanism on the boundary, p₁ = e^ε p₂, run a Poisson(λ) number of times per input: the hit counts are
    # independent Poisson(λp₁) and Poisson(λp₂). Enumerate both (to a tail far below 1e-12) and add the
    # probability of the outcomes whose certified ε exceeds the truth.
    eps, alpha = 0.7, 0.1
    mean_first = mean_second * math.exp(eps)
    k1 = np.arange(int(mean_first + 15 * math.sqrt(mean_first) + 30))
    k2 = np.arange(int(mean_second + 15 * math.sqrt(mean_second) + 30))
    law1, law2 = stats.poisson.pmf(k1, mean_first), stats.poisson.pmf(k2, mean_second)

    def type_one(level):
        above = np.array([[rate_ratio_epsilon(rate_ratio_lower_bound(int(x1), int(x2), level)) > eps for x2 in k2]
                          for x1 in k1])
        return float(law1 @ above @ law2)

    assert 0.3 * alpha < type_one(alpha) <= alpha
    assert type_one(4 * alpha) > alpha  # at four times the level it exceeds α: the check can fail


def test_poisson_run_mean_by_direct_summation():
    # P(N > m) for N ~ Poisson(λ), summed term by term in logs: 1e-6 at the λ found, more just above it.
    def overflow(lam, m):
        return 1.0 - sum(math.exp(k * math.log(lam) - lam - math.lgamma(k + 1)) for k in range(m + 1))

    for budget in (50, 400):
        lam = poisson_run_mean(budget)
        assert overflow(lam, budget) == pytest.approx(RUN_OVERFLOW, rel=1e-5)
        assert overflow(lam * 1.01, budget) > RUN_OVERFLOW
        assert 0 < lam < budget
    # About m − 4.75 √m runs on average at the benchmark's 23,333 (the normal tail at 1e-6 is 4.75 σ).
    assert poisson_run_mean(23333) == pytest.approx(23333 - 4.75 * math.sqrt(23333), rel=2e-3)


def test_run_counts_are_poisson_and_within_the_budget():
    rng = np.random.default_rng(0)
    budget = 1000
    counts = np.array([draw_run_counts(budget, rng) for _ in range(4000)])
    lam = poisson_run_mean(budget)
    assert counts.max() <= budget
    assert counts.mean() == pytest.approx(lam, abs=4 * math.sqrt(lam / counts.size))
    assert counts.var() == pytest.approx(lam, rel=0.1)
    assert np.corrcoef(counts.T)[0, 1] == pytest.approx(0.0, abs=0.05)


@pytest.mark.parametrize("alpha", [0.001, 0.05, 0.2])
def test_paulsons_approximation_is_close_where_it_predicts_an_epsilon(alpha):
    x = np.concatenate([np.arange(1.0, 40.0, 0.25), np.geomspace(40.0, 1e7, 300)])
    x1, x2 = np.meshgrid(x, np.concatenate([[0.0, 0.3, 1.0, 2.0, 4.0], x]))
    theta = special.betaincinv(x1, x2 + 1.0, alpha)
    exact = np.log(theta) - np.log1p(-theta)
    error = np.abs(_paulson_log_ratio(x1, x2, alpha) - exact)
    positive = exact > 0
    assert error[positive].max() < 0.025
    assert error[positive & (x2 >= 5)].max() < 0.005


def test_prediction_approaches_the_true_ratio_with_many_runs():
    predicted = predicted_epsilon(np.array([0.2, 0.2, 1e-9]), np.array([0.05, 0.3, 0.0]), 10**8, 0.05)
    assert math.log(4) - 2e-3 < predicted[0] < math.log(4)
    assert predicted[1] == -np.inf and predicted[2] == -np.inf  # no ε; under one hit expected
    exact = predicted_epsilon(np.array([0.02]), np.array([0.001]), 5000, 0.05, exact=True)[0]
    lam = poisson_run_mean(5000)
    theta = special.betaincinv(0.02 * lam, 0.001 * lam + 1, 0.05)
    assert exact == pytest.approx(math.log(theta / (1 - theta)), rel=1e-12)


@pytest.mark.parametrize("kwargs, name", [
    (dict(hits_first=-1), "hits_first"), (dict(hits_second=-2), "hits_second"), (dict(hits_first=1.5), "hits_first"),
    (dict(alpha=1.0), "alpha"), (dict(alpha=0.0), "alpha"),
])
def test_bad_input_names_the_argument(kwargs, name):
    with pytest.raises(InputError, match=name):
        rate_ratio_lower_bound(**(dict(hits_first=5, hits_second=2, alpha=0.05) | kwargs))


def test_bad_budget_names_the_argument():
    with pytest.raises(InputError, match="budget"):
        poisson_run_mean(0)
    with pytest.raises(InputError, match="budget"):
        draw_run_counts(-3, np.random.default_rng(0))


def test_event_search_certifies_a_rare_event_by_its_rate_ratio():
    # P(y = 1) 0.02 against 0.0005 (ratio 40): the odds ratio's halved log loses, and the two Clopper–Pearson
    # bounds spend α twice where the rate ratio spends it once.
    p, q, runs, alpha = 0.02, 0.0005, 20000, 0.05
    rng = np.random.default_rng(4)
    runner = BitRunner(p, q)
    result = event_search([bit_candidate(p, q, 20000, rng)], runner=runner, rng=rng, runs=runs, alpha=alpha)
    assert result.certificate == "rate-ratio" and result.runs_per_input == runs
    runs_first, runs_second = result.runs_made
    assert max(runs_first, runs_second) <= runs and sorted(runner.calls) == sorted([runs_first, runs_second])
    x1, x2 = round(result.p_first * runs_first), round(result.p_second * runs_second)
    theta = stats.binomtest(x1, x1 + x2, alternative="greater").proportion_ci(1 - alpha, method="exact").low
    assert result.rate_ratio_lower == pytest.approx(theta / (1 - theta), rel=1e-8)
    assert result.epsilon_lower_bound == pytest.approx(math.log(theta / (1 - theta)), rel=1e-8)
    # Tighter than the Clopper–Pearson pair (at the chosen split) on the same hits, and below the truth.
    p_lower = clopper_pearson(x1, runs_first, alpha / 2)[0]
    p_upper = clopper_pearson(x2, runs_second, alpha / 2)[1]
    assert certified_epsilon(p_lower, p_upper) < result.epsilon_lower_bound < math.log(p / q)


class _Overflowing:
    """A generator whose Poisson draws exceed any budget (the case of probability ≤ 2e-6)."""

    def __init__(self, seed):
        self._rng = np.random.default_rng(seed)

    def poisson(self, lam, size):
        return np.full(size, 10**9)

    def __getattr__(self, name):
        return getattr(self._rng, name)


def test_an_overflowing_draw_makes_no_run_and_certifies_nothing():
    p, q = 0.02, 0.0005
    runner = BitRunner(p, q)
    result = event_search([bit_candidate(p, q, 20000, np.random.default_rng(4))], runner=runner, rng=_Overflowing(5),
                          runs=20000, alpha=0.05)
    assert result.certificate == "rate-ratio" and result.runs_made == [0, 0] and runner.calls == []
    assert result.epsilon_lower_bound == 0.0 and result.rate_ratio_lower == 0.0
    assert "exceeded the budget" in result.description


def test_claim_check_of_a_rate_ratio_certificate():
    event = SimpleNamespace(certificate="rate-ratio", rate_ratio_lower=math.exp(1.2), epsilon_lower_bound=1.2,
                            runs_made=[19310, 19402], p_first_lower=0.01, p_second_upper=0.004)
    plan = ClaimPlan({"event": 0.05}, 0.05, 0.05, 2)
    _, refuting = cross_checks(parse_claim("dp:1"), "mi-dp", 0.1, 0.1, event=event, plan=plan)
    assert refuting.test == "event" and refuting.certified_contradiction
    assert refuting.statistic == 1.2 and refuting.threshold == 1.0
    assert "rate-ratio" in refuting.detail and "19310" in refuting.detail
    assert any("Poisson" in theorem for theorem in refuting.theorems)
    _, holding = cross_checks(parse_claim("ldp:1.5"), "mi-dp", 0.1, 0.1, event=event, plan=plan)
    assert not holding.certified_contradiction
    # A claim that is not pure is checked by the same runs' Clopper–Pearson pair (issue 32 A1):
    # 0.01 ≤ e · 0.004 + 10⁻⁶ = 0.01087, so (1, 10⁻⁶)-DP holds for it.
    _, approximate = cross_checks(parse_claim("dp:1:1e-6"), "mi-dp", 0.1, 0.1, event=event, plan=plan)
    assert approximate.test == "event" and not approximate.certified_contradiction and "p̲ = 0.01" in approximate.detail
