"""Direct tests of audit/certificates/claim_tests.py: which tests of a claim may refute it, their α shares,
the notes, and the checks against the evidence.

Expected values are computed here from the definitions: the MI budget of ε-DP is min(ε, ε²/2)
(Pufferfish paper, Theorem 1); a record with s values carries at most log s nats; for ε-DP the
privacy profile δ(ε′) = (e^ε − e^ε′)₊/(1 + e^ε) makes p̲ − e^ε′ p̄ − δ(ε′) largest at ε′ = ε, so a
certified pair refutes ε-DP iff p̲ > e^ε p̄ (or 1 − p̄ > e^ε (1 − p̲)); and what n runs per input
can certify at best (all hits against none) is computed in tests/separated_bounds.py from SciPy's Beta
quantiles (the Clopper–Pearson pair at each split of α) and Fisher's noncentral hypergeometric law (the
odds ratio), the smallest refuting n by trying each.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from audit.certificates.claim_tests import (ClaimPlan, cross_checks, plan_claim_tests, record_support, smallest_refutable_runs)
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import Categorical, FixedRest, ProductBernoulli, ProductGaussian, TwoPoint
from mechanisms.inputs.user_priors import EmpiricalResample

import separated_bounds as separated

ALPHA = 0.05
BINARY_RECORDS = TwoPoint(np.zeros((2, 1)), np.ones((2, 1)))  # each record takes 2 values


def _spec(claim, *, notion="mi-dp", priors=(BINARY_RECORDS,), event_runs=10_000, alpha=ALPHA, arithmetic="ideal",
          delta=0.0):
    """The attributes of an AuditSpec that plan_claim_tests reads (ideal arithmetic: no float-bit test, unless asked)."""
    return SimpleNamespace(alpha=alpha, claim=None if claim is None else parse_claim(claim), notion=notion,
                           priors=list(priors), event_runs=event_runs, arithmetic=arithmetic, delta=delta)


def _runs_needed(epsilon: float, share: float, ratios: bool = True) -> int:
    """Fewest runs per input whose best outcome refutes ε-DP: some split's Clopper–Pearson pair, or (``ratios``) the
    odds or rate ratio, certifies more than ε (tests/separated_bounds.py, by trying each n)."""
    return separated.smallest(lambda n: separated.refutes_pure(n, share, epsilon, ratios))


def test_record_support_counts_values_from_the_priors_definitions():
    assert record_support([BINARY_RECORDS]) == 2
    assert record_support([ProductBernoulli(np.full((3, 3), 0.5))]) == 2 ** 3
    assert record_support([Categorical(np.full((2, 2, 3), 1 / 3))]) == 3 ** 2
    assert record_support([FixedRest(np.zeros((3, 2)), 1, ProductBernoulli(np.full((1, 2), 0.5)))]) == 4
    data = np.array([[0, 1], [0, 1], [2, 2], [3, 0]])
    assert record_support([EmpiricalResample(data, 5)]) == 3
    assert record_support([BINARY_RECORDS, ProductBernoulli(np.full((2, 2), 0.5))]) == 4  # the largest
    assert record_support([BINARY_RECORDS, ProductGaussian(np.zeros(2), 1.0)]) is None  # continuous
    assert record_support([EmpiricalResample(np.zeros((4, 1)), 2)]) == 2  # one value: still at least 2


def test_no_claim_plans_nothing():
    plan = plan_claim_tests(_spec(None))
    assert plan == ClaimPlan({}, ALPHA, ALPHA, 2, ())


def test_float_arithmetic_gives_the_float_bit_test_a_fifth_of_the_event_share_before_sampling():
    plan = plan_claim_tests(_spec("dp:1", arithmetic="float"))
    assert plan.alpha_spent == pytest.approx({"mi": ALPHA / 2, "event": 0.8 * ALPHA / 2, "float": 0.2 * ALPHA / 2})
    assert plan.float_alpha == pytest.approx(0.2 * ALPHA / 2)
    # Without a float-bit candidate (decided before any event run) the event test gets both shares.
    merged = plan.without_float_test()
    assert merged.alpha_spent == pytest.approx({"mi": ALPHA / 2, "event": ALPHA / 2}) and merged.float_alpha is None
    assert merged.event_alpha == pytest.approx(ALPHA / 2)
    # Runs enough for the event test's share but not for the float-bit test's: it is not planned, and said.
    runs = _runs_needed(1.0, 0.8 * ALPHA / 2)
    assert runs < _runs_needed(1.0, 0.2 * ALPHA / 2)
    plan = plan_claim_tests(_spec("dp:1", arithmetic="float", event_runs=runs))
    assert set(plan.alpha_spent) == {"mi", "event"}
    assert any("float-bit event test" in note and "cannot refute" in note for note in plan.notes)


def test_pure_dp_claim_splits_alpha_between_the_mi_and_event_tests():
    plan = plan_claim_tests(_spec("dp:1"))
    # min(1, 1/2) = 0.5 nats < log 2: the MI test can refute; 10,000 runs can certify an event.
    assert plan.alpha_spent == {"mi": ALPHA / 2, "event": ALPHA / 2}
    assert (plan.mi_alpha, plan.event_alpha) == (ALPHA / 2, ALPHA / 2)
    assert sum(plan.alpha_spent.values()) == pytest.approx(ALPHA)
    assert plan.notes == ()


def test_mi_test_spends_nothing_when_the_budget_is_at_least_log_support():
    plan = plan_claim_tests(_spec("dp:2"))  # min(2, 2) = 2 nats ≥ log 2
    assert plan.alpha_spent == {"event": ALPHA}
    assert (plan.mi_alpha, plan.event_alpha) == (ALPHA, ALPHA)
    assert len(plan.notes) == 1 and "cannot refute" in plan.notes[0] and "at most 2 values" in plan.notes[0]


def test_an_mi_claim_has_no_event_test():
    plan = plan_claim_tests(_spec("mi-dp:0.1"))
    assert plan.alpha_spent == {"mi": ALPHA}
    assert len(plan.notes) == 1 and plan.notes[0].startswith("The event test does not test the claim")


def test_a_record_claim_on_a_pufferfish_audit_has_no_test():
    plan = plan_claim_tests(_spec("dp:1", notion="mi-pp"))
    assert plan.alpha_spent == {}
    assert (plan.mi_alpha, plan.event_alpha) == (ALPHA, ALPHA)
    assert [note.split(":")[0] for note in plan.notes] == [
        "The MI test does not test the claim 1-DP", "The event test does not test the claim 1-DP",
        "No test of this audit can refute the claim 1-DP; it is reported as not refuted."]
    assert "Pufferfish secrets" in plan.notes[1]


def test_event_test_off():
    plan = plan_claim_tests(_spec("dp:1", event_runs=0))
    assert plan.alpha_spent == {"mi": ALPHA}
    assert plan.notes == ("The event test is off (event_runs = 0), so it does not test the claim 1-DP.",)


def test_event_test_is_planned_from_the_first_run_count_that_could_refute():
    needed = _runs_needed(1.0, ALPHA / 2)
    # The odds ratio at 9 hits against none certifies ε ≥ 1.089 > 1 (8: 0.95); the pair at an even split needs 14
    # (log(0.0125) / log(e / (1 + e)) = 13.99), at its best split 14 too.
    assert needed == 9 and separated.odds_epsilon(9, ALPHA / 2) == pytest.approx(1.0889, abs=1e-4)
    assert _runs_needed(1.0, ALPHA / 2, ratios=False) == 14
    assert smallest_refutable_runs(parse_claim("dp:1"), ALPHA / 2) == needed
    # At an audit's δ > 0 the event test certifies by the pair alone (no ratio certificate bounds (ε, δ)).
    assert smallest_refutable_runs(parse_claim("dp:1"), ALPHA / 2, delta=1e-6) == 14
    enough = plan_claim_tests(_spec("dp:1", event_runs=needed))
    assert enough.alpha_spent == {"mi": ALPHA / 2, "event": ALPHA / 2}
    short = plan_claim_tests(_spec("dp:1", event_runs=needed - 1))
    assert short.alpha_spent == {"mi": ALPHA}
    assert len(short.notes) == 1
    assert f"With {needed - 1} runs per input" in short.notes[0]
    assert f"needs at least {needed} runs per input" in short.notes[0]


def _gdp_refutes(n: int, alpha: float, mu: float) -> bool:
    """Whether all n hits against none refutes μ-GDP: some split's pair has 1 − p̲ < G_μ(p̄) = Φ(Φ⁻¹(1 − p̄) − μ), a
    test of the second input against the first below the claim's trade-off curve (Dong, Roth and Su 2022, Definition
    2.6; the complement with the roles swapped gives the same condition, G_μ being symmetric)."""
    from scipy.stats import norm

    return any(1 - lo < norm.cdf(norm.isf(up) - mu)
               for lo, up in (separated.cp_pair(n, alpha, s) for s in separated.SHARES))


def test_a_gdp_claims_event_test_is_checked_at_its_share_after_the_mu_certificates_half():
    # The MI test (its budget below log 2), the event test and the μ certificate: α/3 each. With runs that refute at
    # α/2 but not at α/3, the event test keeps α/2 and μ̲ is a separate statement; with fewer, the note gives the
    # runs the event test alone needs.
    at_half = separated.smallest(lambda n: _gdp_refutes(n, ALPHA / 2, 1.0))
    at_third = separated.smallest(lambda n: _gdp_refutes(n, ALPHA / 3, 1.0))
    assert at_half < at_third  # 12 and 13
    full = plan_claim_tests(_spec("gdp:1", event_runs=at_third))
    assert full.alpha_spent == pytest.approx({"mi": ALPHA / 3, "event": ALPHA / 3, "gdp": ALPHA / 3})
    short = plan_claim_tests(_spec("gdp:1", event_runs=at_half))
    assert short.alpha_spent == pytest.approx({"mi": ALPHA / 2, "event": ALPHA / 2})
    assert short.gdp_alpha == short.event_alpha == pytest.approx(ALPHA / 2)
    assert len(short.notes) == 1 and short.notes[0].startswith("The μ certificate does not test the claim")
    none = plan_claim_tests(_spec("gdp:1", event_runs=at_half - 1))
    assert none.alpha_spent == {"mi": ALPHA}
    assert f"needs at least {at_half} runs per input" in none.notes[0] and "α = 0.025" in none.notes[0]
    assert sum(short.alpha_spent.values()) == pytest.approx(ALPHA) == sum(full.alpha_spent.values())


@pytest.mark.parametrize("epsilon, share", [(0.5, 0.05), (2.0, 0.01), (3.0, 0.025), (1.0, 0.05), (2.0, 0.05),
                                            (4.0, 0.05), (1.0, 0.025), (2.0, 0.025), (4.0, 0.025)])
def test_smallest_refutable_runs_matches_trying_each_count(epsilon, share):
    assert smallest_refutable_runs(parse_claim(f"dp:{epsilon}"), share) == _runs_needed(epsilon, share)
    assert smallest_refutable_runs(parse_claim(f"dp:{epsilon}"), share, delta=1e-9) == _runs_needed(epsilon, share,
                                                                                                     ratios=False)


def test_smallest_refutable_runs_for_an_approximate_claim_uses_the_best_split():
    # (ε, δ)-DP: the pair at n hits against none refutes iff p̲ − e^ε p̄ > δ or the same for the complement (its
    # privacy region, Kairouz, Oh and Viswanath 2015), at the best of the splits; no ratio certificate.
    def refutes(n, shares=separated.SHARES):
        return any(max(lo - math.exp(2) * up, (1 - up) - math.exp(2) * (1 - lo)) > 1e-3
                   for lo, up in (separated.cp_pair(n, ALPHA, s) for s in shares))

    needed = separated.smallest(refutes)
    assert smallest_refutable_runs(parse_claim("dp:2:1e-3"), ALPHA) == needed
    assert needed < separated.smallest(lambda n: refutes(n, (0.5,)))  # 27 against 30 at the even split



@pytest.mark.parametrize("claim", ["dp:1", "dp:0.1", "dp:1:1e-5", "ldp:3", "zcdp:0.5", "rdp:2:0.3", "gdp:1"])
def test_refutable_with_answers_as_the_full_event_check(claim):
    # The shortcut through the claim's grid (event_margin) gives check_event's answer, run count by run count,
    # on both sides of the smallest count that refutes.
    # The pair is checked at every split the event test may choose; a pure claim is also refuted by a ratio
    # certificate's ε above its own.
    from audit.certificates.claim_tests import _best_event_bounds, best_ratio_epsilon, refutable_with

    parsed = parse_claim(claim)
    for alpha in (0.05, 0.001):
        for runs in (1, 2, 3, 5, 8, 13, 14, 15, 30, 100, 1000, 23333, 10**6):
            expected = any(parsed.check_event(*_best_event_bounds(runs, alpha, s)).refuted for s in separated.SHARES)
            if parsed.pure_epsilon is not None:
                expected = expected or best_ratio_epsilon(runs, alpha) > parsed.pure_epsilon
            assert refutable_with(parsed, alpha, runs) == expected


@pytest.mark.parametrize("n, alpha, share", [(1, 0.05, 0.5), (14, 0.025, 0.5), (20000, 0.05, 0.5), (20, 0.05, 0.2),
                                             (9, 0.025, 0.9), (10**6, 0.001, 0.1)])
def test_best_event_bounds_are_the_clopper_pearson_bounds_of_all_and_no_hits(n, alpha, share):
    from audit.certificates.claim_tests import _best_event_bounds

    lower, upper = _best_event_bounds(n, alpha, share)
    expected_lower, expected_upper = separated.cp_pair(n, alpha, share)
    assert lower == pytest.approx(expected_lower, rel=1e-12)
    assert upper == pytest.approx(expected_upper, rel=1e-9)


def test_an_uneven_split_certifies_more_than_the_even_one():
    # n = 20, α = 0.05: the split 0.2 for p̲ certifies 1.676, the even split 1.597 (the review's numbers).
    from audit.certificates.claim_tests import _best_event_bounds

    assert separated.cp_epsilon(20, 0.05, 0.2) == pytest.approx(1.6758, abs=1e-4)
    assert separated.cp_epsilon(20, 0.05, 0.5) == pytest.approx(1.5968, abs=1e-4)
    lower, upper = _best_event_bounds(20, 0.05, 0.2)
    assert math.log(lower / upper) == pytest.approx(separated.cp_epsilon(20, 0.05, 0.2), rel=1e-9)
    # dp:1.65 at α = 0.05 is refuted by 20 runs per input at the split 0.2 only (ratio certificates apart).
    assert max(separated.cp_epsilon(20, 0.05, s) for s in separated.SHARES) > 1.65 > separated.cp_epsilon(20, 0.05)
    assert smallest_refutable_runs(parse_claim("dp:1.65"), 0.05, delta=1e-12) == separated.smallest(
        lambda n: separated.refutes_pure(n, 0.05, 1.65, ratios=False)) <= 20


@pytest.mark.parametrize("n, alpha", [(1, 0.05), (3, 0.05), (4, 0.05), (9, 0.025), (20, 0.05), (150, 0.025),
                                      (400, 0.001), (60, 1e-5)])
def test_best_ratio_epsilon_is_the_odds_or_rate_ratio_at_all_against_no_hits(n, alpha):
    from audit.certificates.claim_tests import best_ratio_epsilon
    from audit.certificates.odds_ratio import odds_ratio_epsilon, odds_ratio_lower_bound

    expected = max(separated.odds_epsilon(n, alpha), separated.rate_epsilon(n, alpha))
    assert best_ratio_epsilon(n, alpha) == pytest.approx(expected, abs=1e-9)
    # ... the certificate the event test runs, at that outcome
    assert best_ratio_epsilon(n, alpha) == pytest.approx(max(
        odds_ratio_epsilon(odds_ratio_lower_bound(n, n, 0, n, alpha)), separated.rate_epsilon(n, alpha)), abs=1e-9)


def test_best_ratio_epsilon_at_large_counts_matches_the_certificate():
    # Its sum is cut after a few hundred terms; the certificate's has n + 1.
    from audit.certificates.claim_tests import best_ratio_epsilon
    from audit.certificates.odds_ratio import odds_ratio_epsilon, odds_ratio_lower_bound

    for n, alpha in ((20000, 0.05), (100000, 0.001)):
        assert best_ratio_epsilon(n, alpha) == pytest.approx(odds_ratio_epsilon(odds_ratio_lower_bound(n, n, 0, n, alpha)),
                                                             abs=1e-9)
    assert math.isfinite(best_ratio_epsilon(10**9, 0.05))


def test_ratio_helpers_name_a_bad_argument():
    from audit.certificates.claim_tests import best_ratio_epsilon, refutable_with
    from estimators.validation import InputError

    with pytest.raises(InputError, match="'alpha'"):
        best_ratio_epsilon(5, 1.5)
    with pytest.raises(InputError, match="'runs'"):
        refutable_with(parse_claim("dp:1"), 0.05, 0)

def test_cross_checks_without_a_claim():
    assert cross_checks(None, "mi-dp", 1.0, 1.0) == []


def test_mi_check_refutes_only_with_an_alpha_share_and_a_bound_above_the_budget():
    claim = parse_claim("dp:1")
    plan = ClaimPlan({"mi": 0.025, "event": 0.025}, 0.025, 0.025, 2)
    (above,) = cross_checks(claim, "mi-dp", 0.6, 0.7, plan=plan)
    assert above.test == "mi" and above.certified_contradiction
    assert (above.implied_mi_upper_bound, above.statistic, above.threshold, above.alpha_spent) == (0.5, 0.6, 0.5, 0.025)
    assert above.estimate_consistent is False  # 0.7 > 0.5
    assert above.theorems and "Theorem 1" in above.theorems[0]
    (below,) = cross_checks(claim, "mi-dp", 0.4, 0.45, plan=plan)
    assert not below.certified_contradiction and below.estimate_consistent
    (no_bound,) = cross_checks(claim, "mi-dp", None, 0.45, plan=plan)
    assert not no_bound.certified_contradiction and "certified lower bound none" in no_bound.detail
    (unplanned,) = cross_checks(claim, "mi-dp", 0.6, 0.7, plan=ClaimPlan({"event": 0.05}, 0.05, 0.05, 2))
    assert not unplanned.certified_contradiction and unplanned.alpha_spent is None
    assert "not a test of the claim" in unplanned.detail


def test_mi_check_of_a_claim_without_budget():
    claim = parse_claim("dp:1:1e-6")
    (check,) = cross_checks(claim, "mi-dp", 5.0, 5.0, plan=ClaimPlan({"mi": 0.05}, 0.05, 0.05, None))
    assert (check.implied_mi_upper_bound, check.certified_contradiction, check.estimate_consistent) == (None, False, None)
    assert check.detail == claim.implied_mi_budget("mi-dp", None).reason


@pytest.mark.parametrize("p_lower, p_upper, refuted, form, statistic", [
    (0.6, 0.1, True, "E", 0.6 - math.e * 0.1),                     # p̲ > e p̄
    (0.95, 0.5, True, "complement", 0.5 - math.e * 0.05),           # 1 − p̄ > e (1 − p̲)
    (0.3, 0.2, False, None, None),
])
def test_event_check_against_the_pure_dp_profile(p_lower, p_upper, refuted, form, statistic):
    claim = parse_claim("dp:1")
    event = SimpleNamespace(p_first_lower=p_lower, p_second_upper=p_upper, certificate="clopper-pearson")
    plan = ClaimPlan({"mi": 0.025, "event": 0.025}, 0.025, 0.025, 2)
    mi, check = cross_checks(claim, "mi-dp", 0.1, 0.1, event=event, plan=plan)
    assert mi.test == "mi" and check.test == "event"
    assert check.certified_contradiction is refuted and check.alpha_spent == 0.025
    if refuted:
        assert check.epsilon_prime == pytest.approx(1.0, abs=1e-4)  # the excess peaks at ε′ = ε
        assert check.statistic == pytest.approx(statistic, abs=1e-4)
        assert check.threshold == pytest.approx(0.0, abs=1e-4)  # δ(ε) = 0
        assert ("p̲ − e^ε′ p̄" if form == "E" else "(1 − p̄) − e^ε′ (1 − p̲)") in check.detail
    else:
        assert check.statistic <= check.threshold


def test_event_check_without_a_share_or_without_a_profile_cannot_refute():
    event = SimpleNamespace(p_first_lower=0.6, p_second_upper=0.1, certificate="clopper-pearson")
    _, unplanned = cross_checks(parse_claim("dp:1"), "mi-dp", 0.1, 0.1, event=event,
                                plan=ClaimPlan({"mi": 0.05}, 0.05, 0.05, 2))
    assert not unplanned.certified_contradiction and "no α was planned" in unplanned.detail
    checks = cross_checks(parse_claim("mi-dp:0.1"), "mi-dp", 0.05, 0.05, event=event,
                          plan=ClaimPlan({"mi": 0.05}, 0.05, 0.05, 2))
    assert [c.test for c in checks] == ["mi"]
