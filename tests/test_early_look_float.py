"""The float-bit event test at a sequential audit's early look (audit.gating.early_look, the claim tests' plan with
``early``): the look's level split between the event test and the float-bit test as at the other looks where both
refute a pair with one miss on the look's runs, and a leak only the float bits show refuted there."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from audit.certificates.claim_tests import plan_claim_tests
from audit.search.early_choice import early_rule
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from test_early_look_odds_choice import _by_rule

FLOAT_PART = 0.2  # the float-bit test's part of the event test's share (docs/explanation/architecture.md)
SAMPLES = 40  # the early look's MI sample of its one two-point prior


def _float_noise(dbs, rng):
    return dbs[:, :, 0].sum(axis=1)[:, None] + rng.laplace(0.0, 1.0, (len(dbs), 1))


def _early_spec(claim: str, event_runs: int, alpha: float, arithmetic: str = "float") -> AuditSpec:
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    return AuditSpec(mechanism=_float_noise, priors=(pair.prior(),), claim=parse_claim(claim), records=(0,),
                     samples=SAMPLES, event_runs=event_runs, alpha=alpha, arithmetic=arithmetic)


def _early_plan(spec: AuditSpec):
    """The early look's claim plan, by the early look's one-miss rule for ``spec`` (as the audit plans it)."""
    return plan_claim_tests(spec, classifier_critics=True, early=True, early_refutes=early_rule(spec))


def _one_miss_refutes(epsilon: float, alpha: float, runs: int) -> bool:
    """Pure ε-DP against runs − 1 hits of ``runs`` and 0 of ``runs``: Clopper–Pearson bounds from the Beta quantiles
    (Clopper and Pearson 1934), α/2 each, on the event and on its complement (Dwork and Roth 2014, Definition 2.4)."""
    lower = stats.beta.ppf(alpha / 2, runs - 1, 2)  # k = n − 1: the α/2 quantile of Beta(k, n − k + 1)
    upper = stats.beta.ppf(1 - alpha / 2, 1, runs)  # k = 0: the 1 − α/2 quantile of Beta(1, n)
    return lower > math.exp(epsilon) * upper or (1 - upper) > math.exp(epsilon) * (1 - lower)


def test_an_early_look_under_float_arithmetic_splits_its_level_as_the_other_looks_do():
    # dp:0.5, 29 runs per input at α_k = 3.38e-5 (the early look of a 6,000-run schedule at α = 0.05): both tests
    # refute a pair with one miss at their parts, 0.8 α_k and 0.2 α_k, so the float-bit test gets its fifth.
    level = 3.38e-5
    assert _one_miss_refutes(0.5, 0.8 * level, 29) and _one_miss_refutes(0.5, 0.2 * level, 29)
    plan = _early_plan(_early_spec("dp:0.5", 29, level))
    assert plan.alpha_spent == pytest.approx({"event": 0.8 * level, "float": 0.2 * level}, rel=1e-12)
    assert math.fsum(plan.alpha_spent.values()) == pytest.approx(level, rel=1e-12)
    assert (plan.event_alpha, plan.float_alpha) == pytest.approx((0.8 * level, 0.2 * level), rel=1e-12)
    # No float-bit candidate on the MI sample (decided before any event-test run): the event test takes both parts.
    assert plan.without_float_test().alpha_spent == pytest.approx({"event": level}, rel=1e-12)
    # Ideal arithmetic: no float-bit test, the look's level is the event test's.
    ideal = _early_plan(_early_spec("dp:0.5", 29, level, "ideal"))
    assert ideal.alpha_spent == pytest.approx({"event": level}, rel=1e-12) and ideal.float_alpha is None


def test_a_gdp_claim_splits_the_event_tests_half_at_an_early_look():
    # μ = 0.5 (a pair of probabilities 1 and 0 is far outside its curve), 60 runs per input at α_k = 1e-3: the μ
    # certificate takes half of the look's level, and the event test's half is split 0.8/0.2 with the float-bit test.
    level = 1e-3
    plan = _early_plan(_early_spec("gdp:0.5", 60, level))
    assert plan.alpha_spent == pytest.approx({"event": 0.4 * level, "float": 0.1 * level, "gdp": 0.5 * level},
                                             rel=1e-12)
    assert math.fsum(plan.alpha_spent.values()) == pytest.approx(level, rel=1e-12)
    # Too few runs for the float-bit test's part (20 per input): the event test keeps its half.
    small = _early_plan(_early_spec("gdp:0.5", 20, level))
    assert small.alpha_spent == pytest.approx({"event": 0.5 * level, "gdp": 0.5 * level}, rel=1e-12)


def test_an_early_look_too_small_for_both_tests_keeps_its_level_for_the_event_test():
    # dp:1, 25 runs per input at α_k = 2e-5: the float-bit test at 0.2 α_k cannot refute with one miss, by the pair
    # nor by the odds ratio where its choice picks it (the early look's rule, computed in test_early_look_odds_choice),
    # so it is not run there and the event test spends the whole level (its one-miss refutation at α_k holds by it).
    level = 2e-5
    assert not _by_rule(1.0, 0.2 * level, 24, 25) and _by_rule(1.0, level, 24, 25)
    assert not _one_miss_refutes(1.0, level, 25)  # the pair alone: the odds ratio's count is what lets it refute
    plan = _early_plan(_early_spec("dp:1", 25, level))
    assert plan.alpha_spent == pytest.approx({"event": level}, rel=1e-12) and plan.float_alpha is None
    assert any("float-bit test is not run here" in note for note in plan.notes)


def _expected_float_early_look(epsilon: float, alpha: float, last_runs: int):
    """(event runs c, level) of the early look sized with the float-bit test: the fewest c whose look of 40 + 4c runs
    (the MI sample, then c runs of each input for each event test), at most 100 runs per input, at α·t², t = its runs
    over the last look's, has both tests refute with one miss at 0.8 and 0.2 of that level."""
    for runs in range(2, 41):
        level = alpha * ((SAMPLES + 4 * runs) / last_runs) ** 2
        if _one_miss_refutes(epsilon, 0.8 * level, runs) and _one_miss_refutes(epsilon, 0.2 * level, runs):
            return runs, level
    return None


def test_a_leak_in_the_float_bits_only_is_refuted_at_the_early_look_of_a_scan_case(planted_on_path):
    """planted_lib._float_leak: an exactly 0.1-DP jittered count whose lowest significand bit is the true count's
    parity. The scan's one case (α = 0.05, 6,000 runs: five a sample with the float-bit test's runs) is refuted by
    the float-bit test at its early look, after the early look's planned runs; before, the early look ran no
    float-bit test and the case was refuted at look 2, after 2,224 runs."""
    from audit.scan.running import scan

    runs, level = _expected_float_early_look(0.1, 0.05, 6000)
    result = scan("planted_lib._float_leak", epsilons=(0.1,), alpha=0.05, max_runs=6000, timeout=60, seed=0,
                  in_process=True)
    (outcome,) = result.outcomes
    assert outcome["status"] == "finding" and outcome["refuting_test"] == "float"
    assert (outcome["looks"], outcome["runs"]) == (1, SAMPLES + 4 * runs)
    assert outcome["refuting_alpha"] == pytest.approx(FLOAT_PART * level, rel=1e-9)


def test_the_planted_leak_is_in_the_float_bits_only(planted_on_path):
    from planted_lib._float_leak import parity_bit_count

    from audit.statistics.arithmetic import round_significand

    rng = np.random.default_rng(0)
    pair = (np.array([[5.0], [0.0]]), np.array([[0.0], [0.0]]))  # counts of records ≥ 5: 1 and 0
    outputs = [np.array([parity_bit_count(db, 0.1, rng) for _ in range(400)]) for db in pair]
    assert set(outputs[0].view(np.int64) & 1) == {1} and set(outputs[1].view(np.int64) & 1) == {0}
    for y in outputs:  # the bit is one unit in the last place, below the 32 significant bits the ideal test keeps
        flipped = (y.view(np.int64) ^ 1).view(np.float64)
        assert np.mean(round_significand(flipped) == round_significand(y)) == 1.0


def _exact_float_cases() -> dict:
    from audit.scan.cases import build_cases, discover
    from audit.scan.profiles import profile_for

    cases, _ = build_cases(discover(profile_for("planted_lib._float_exact"))[0], (1.0,))
    return {case.entry.qualified.rsplit(".", 1)[1]: case for case in cases}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["JitteredResponse", "jittered_count"])
def test_the_early_looks_float_bit_test_keeps_its_type_one_error_at_the_boundary(name, planted_on_path):
    """The early look's audit of an entry point exactly at its 1-DP claim, float bits included
    (planted_lib._float_exact, tests/test_scan_type_one_float.py), run at level 0.05 rather than its share so that
    its tests' parts are exercised: the float-bit test at 0.2 · 0.05 = 0.01, the event test at 0.04. Each test's
    refutations over 300 audits stay within Binomial(300, its part)'s 99.9% point."""
    from audit.engine import _run_audit
    from audit.gating.sequential import _look_runner, _planned_looks
    from audit.scan.planning import case_spec

    level, audits, refuted, ran = 0.05, 300, {"event": 0, "float": 0}, 0
    case = _exact_float_cases()[name]
    for seed in range(audits):
        spec = case_spec(case, level, seed)
        with _look_runner(spec) as runner:
            head = _planned_looks(spec, runner, 3000)[0][0]
            look = replace(spec, samples=head.samples, event_runs=head.event_runs, alpha=level)
            runner.cache.start_look()
            result = _run_audit(look, runner, early=True)
        assert head.early and result.claim_alpha == pytest.approx({"event": 0.8 * level, "float": 0.2 * level})
        ran += result.float_event_test is not None
        for test in {entry["test"] for entry in result.refuted_by}:
            refuted[test] += 1
    assert ran == audits  # the outputs hold fine bits in every MI sample: the float-bit test ran in every audit
    bounds = {test: int(stats.binom.ppf(0.999, audits, part)) for test, part in (("event", 0.8 * level),
                                                                                 ("float", 0.2 * level))}
    print(f"{name}: refuted {refuted} of {audits} early looks ({head.event_runs} runs per input; bounds {bounds})")
    for test, bound in bounds.items():
        assert refuted[test] <= bound, (test, refuted)
