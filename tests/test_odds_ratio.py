"""The odds-ratio certificate of pure ε-DP (audit.certificates.odds_ratio): against SciPy's conditional odds-ratio
interval, its exact type-I error by enumeration at a mechanism on the boundary (ψ = e^{2ε}), the event
search choosing it where the event and its complement both inform, and the claim check."""

import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats
from scipy.stats.contingency import odds_ratio

from audit.certificates.claim_tests import ClaimPlan, cross_checks
from audit.search.event_search import event_search
from audit.certificates.event_bounds import certified_epsilon, claim_objective, clopper_pearson
from audit.search.event_choice import choose_event
from audit.certificates.odds_ratio import odds_ratio_epsilon, odds_ratio_lower_bound, predicted_epsilon
from estimators.validation import InputError
from mechanisms.claims.parsing import parse_claim

sys.path.insert(0, str(Path(__file__).parent))
from bit_mechanism import BitRunner, bit_candidate  # noqa: E402 - the one-bit mechanism, next to this test


@pytest.mark.parametrize("x1, n1, x2, n2, alpha", [
    (1700, 2333, 630, 2333, 0.05), (3, 50, 0, 40, 0.1), (50, 50, 10, 50, 0.05), (2300, 2333, 3, 2333, 0.05),
    (5, 10, 5, 10, 0.2), (10, 10, 0, 10, 0.05), (400, 1000, 380, 1200, 0.01),
])
def test_lower_bound_matches_scipys_conditional_interval(x1, n1, x2, n2, alpha):
    # SciPy inverts the same conditional (noncentral hypergeometric) test by its own root search (seconds at
    # tens of thousands of runs, so the tables here stay in the thousands).
    expected = odds_ratio([[x1, n1 - x1], [x2, n2 - x2]], kind="conditional").confidence_interval(
        1 - alpha, alternative="greater").low
    assert odds_ratio_lower_bound(x1, n1, x2, n2, alpha) == pytest.approx(expected, rel=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("x1, x2", [(17000, 6300), (23000, 12)])
def test_lower_bound_matches_scipy_at_the_benchmarks_run_count(x1, x2):
    n, alpha = 23333, 0.05  # 70,000 runs: 23,333 per input certify (scipy takes seconds here)
    expected = odds_ratio([[x1, n - x1], [x2, n - x2]], kind="conditional").confidence_interval(
        1 - alpha, alternative="greater").low
    assert odds_ratio_lower_bound(x1, n, x2, n, alpha) == pytest.approx(expected, rel=1e-8)


def test_lower_bound_is_zero_where_no_odds_ratio_makes_the_count_surprising():
    assert odds_ratio_lower_bound(0, 10, 0, 10, 0.1) == 0.0
    assert odds_ratio_lower_bound(0, 10, 7, 10, 0.1) == 0.0
    assert odds_ratio_lower_bound(3, 10, 10, 10, 0.1) == 0.0  # x₁ is the smallest the total 13 allows
    assert odds_ratio_epsilon(0.0) == 0.0 and odds_ratio_epsilon(0.5) == 0.0
    assert odds_ratio_epsilon(math.e ** 3) == pytest.approx(1.5)


def test_exact_type_one_error_at_the_boundary_is_at_most_alpha():
    # Randomized response at ε: p₁ = e^ε/(1 + e^ε), p₂ = 1/(1 + e^ε), so ψ = e^{2ε} exactly, the case where
    # ε ≥ log(ψ̲)/2 is sharpest. Enumerate every outcome of n runs per input and add the probability of those
    # whose certified ε exceeds the truth.
    eps, n, alpha = 0.5, 30, 0.1
    p1, p2 = math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))
    k = np.arange(n + 1)
    law1, law2 = stats.binom.pmf(k, n, p1), stats.binom.pmf(k, n, p2)
    above = np.array([[odds_ratio_epsilon(odds_ratio_lower_bound(x1, n, x2, n, alpha)) > eps for x2 in k] for x1 in k])
    type_one = float(law1 @ above @ law2)
    assert 0.2 * alpha < type_one <= alpha
    # The same enumeration at twice the level would exceed α: the check can fail.
    loose = np.array([[odds_ratio_epsilon(odds_ratio_lower_bound(x1, n, x2, n, 4 * alpha)) > eps for x2 in k]
                      for x1 in k])
    assert float(law1 @ loose @ law2) > alpha


def test_prediction_approaches_the_true_bound_with_many_runs():
    p1, p2 = 0.7, 0.3
    truth = math.log(p1 * (1 - p2) / (p2 * (1 - p1))) / 2
    predicted = predicted_epsilon(np.array([p1]), np.array([p2]), 10**8, 0.05)[0]
    assert truth - 1e-3 < predicted < truth
    # Woolf's interval by hand at 1,000 runs: (log ψ̂ − z · se)/2.
    se = math.sqrt(1 / 700 + 1 / 300 + 1 / 300 + 1 / 700)  # cells 700, 300 (first) and 300, 700 (second)
    by_hand = (2 * truth - stats.norm.ppf(0.95) * se) / 2
    assert predicted_epsilon(np.array([p1]), np.array([p2]), 1000, 0.05)[0] == pytest.approx(by_hand)
    assert predicted_epsilon(np.array([0.5]), np.array([0.5]), 1000, 0.05)[0] == -np.inf


@pytest.mark.parametrize("kwargs, name", [
    (dict(hits_first=-1), "hits_first"), (dict(runs_first=0), "runs_first"), (dict(hits_second=11), "hits_second"),
    (dict(hits_first=11), "hits_first"), (dict(alpha=1.0), "alpha"), (dict(alpha=0.0), "alpha"),
])
def test_bad_input_names_the_argument(kwargs, name):
    arguments = dict(hits_first=5, runs_first=10, hits_second=2, runs_second=10, alpha=0.05) | kwargs
    with pytest.raises(InputError, match=name):
        odds_ratio_lower_bound(**arguments)


def test_event_search_certifies_randomized_response_by_its_odds_ratio():
    eps, runs, alpha = 1.0, 4000, 0.05
    p, q = math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))
    rng = np.random.default_rng(3)
    result = event_search([bit_candidate(p, q, 4000, rng)], runner=BitRunner(p, q), rng=rng, runs=runs, alpha=alpha)
    assert result.certificate == "odds-ratio"
    x1, x2 = round(result.p_first * runs), round(result.p_second * runs)
    low = odds_ratio([[x1, runs - x1], [x2, runs - x2]], kind="conditional").confidence_interval(
        1 - alpha, alternative="greater").low
    assert result.odds_ratio_lower == pytest.approx(low, rel=1e-8)
    assert result.epsilon_lower_bound == pytest.approx(math.log(low) / 2, rel=1e-8)
    # Tighter than the two Clopper–Pearson bounds the same runs give, and below the truth here.
    p_lower = clopper_pearson(x1, runs, alpha / 2)[0]
    p_upper = clopper_pearson(x2, runs, alpha / 2)[1]
    assert certified_epsilon(p_lower, p_upper) < result.epsilon_lower_bound < eps


def test_event_search_keeps_clopper_pearson_for_delta_and_impure_claims():
    # With δ > 0 (or a claim that is not pure) neither the odds ratio nor the rate ratio bounds anything.
    rng = np.random.default_rng(4)
    for p, q in ((0.73, 0.27), (0.02, 0.0005)):
        for settings in (dict(delta=1e-6), dict(claim=parse_claim("dp:1:1e-6")), dict(claim=parse_claim("zcdp:0.5"))):
            result = event_search([bit_candidate(p, q, 10000, rng)], runner=BitRunner(p, q), rng=rng, runs=20000,
                                  alpha=0.05, **settings)
            assert result.certificate == "clopper-pearson" and result.runs_made is None
            assert result.odds_ratio_lower is None and result.rate_ratio_lower is None


def test_choose_event_predicts_with_the_better_certificate():
    rng = np.random.default_rng(5)
    a, b = (rng.random(20000) < 0.73).astype(float), (rng.random(20000) < 0.27).astype(float)
    plain = choose_event(a, b, runs=20000, alpha=0.05)
    with_odds = choose_event(a, b, runs=20000, alpha=0.05, pure_dp=True)
    assert plain.certificate == "clopper-pearson" and with_odds.certificate == "odds-ratio"
    assert with_odds.predicted > plain.predicted
    # A pure claim ranks an ε certified directly as it ranks the same ε from two bounds.
    objective = claim_objective(parse_claim("dp:0.5"))
    eps = np.array([-np.inf, 0.2, 0.9])
    ranked = objective.rank_epsilon(eps)
    lower, upper = np.array([0.0, 0.1 * math.exp(0.2), 0.1 * math.exp(0.9)]), np.array([0.1, 0.1, 0.1])
    assert ranked[0] == -np.inf
    np.testing.assert_allclose(ranked[1:], objective(lower, upper)[1:])
    assert not hasattr(claim_objective(parse_claim("zcdp:0.5")), "rank_epsilon")


def test_claim_check_of_an_odds_ratio_certificate():
    event = SimpleNamespace(certificate="odds-ratio", odds_ratio_lower=math.exp(2.4), epsilon_lower_bound=1.2,
                            p_first_lower=0.6, p_second_upper=0.3)
    plan = ClaimPlan({"event": 0.05}, 0.05, 0.05, 2)
    _, refuting = cross_checks(parse_claim("dp:1"), "mi-dp", 0.1, 0.1, event=event, plan=plan)
    assert refuting.test == "event" and refuting.certified_contradiction
    assert refuting.statistic == 1.2 and refuting.threshold == 1.0 and "odds-ratio" in refuting.detail
    _, holding = cross_checks(parse_claim("ldp:1.5"), "mi-dp", 0.1, 0.1, event=event, plan=plan)
    assert not holding.certified_contradiction
    # A claim that is not pure is checked by the same runs' Clopper–Pearson pair (issue 32 A1):
    # 0.6 ≤ e · 0.3 + 10⁻⁶, so (1, 10⁻⁶)-DP holds for it.
    _, approximate = cross_checks(parse_claim("dp:1:1e-6"), "mi-dp", 0.1, 0.1, event=event, plan=plan)
    assert approximate.test == "event" and not approximate.certified_contradiction and "p̲ = 0.6" in approximate.detail
