"""The early look sized with the float-bit event test by the early look's rule (audit.certificates.claim_tests.
early_float_test): both tests, at 0.8 and 0.2 of the look's level, refute a pair with one miss by the Clopper–Pearson
pair, or by the odds ratio where the test's certificate choice on the look's held-out draws picks it but for a chance
of at most 1% over their split.

The float-bit test chooses its certificate as the event test does (audit.search.event_search, one choice on its own
statistics' held-out scores), so where the float bits separate the inputs the choice is the one the rule sums over.
Measured end to end, 20 seeds each, within 6,000 runs, at dp:0.5, 0.9, 1 and 1.5 at α = 0.05 and at a scan case's
α = 0.05/245 (the early look alone; before: both tests by the pair):

- a count whose lowest significand bit is its parity (planted_lib._float_leak, ε = ∞ on the bit patterns): refuted
  at the early look in 20 of 20 before and after where the pair sized a float look (dp:0.5 and 0.9 at 0.05, dp:0.5
  at 0.05/245: 156, 196, 200 runs, which stand; the rule alone would size them 140, 140, 184); where it sized none (dp:1 and 1.5 at 0.05, dp:0.9 and 1 at
  0.05/245) 0 of 20 before (refuted at look 2, after 5,596 to 6,000 runs) and 19, 19, 20, 20 of 20 after (148,
  200, 184, 184 runs; the two misses chose a float statistic that did not separate the held-out draws and were
  refuted at look 2). dp:1.5 at 0.05/245 has no float-sized look either way.
- the textbook float Laplace count (an integer count plus ``rng.laplace`` of scale 1/ε, refuted through its float
  bits at the ordinary looks: its float event has probability about 1 − e^{−ε/2} per run) and the exactly ε-DP
  ``jittered_count`` and ``JitteredResponse`` (planted_lib._float_exact): 0 of 20 refuted at the early look before
  and after, in every case.

Expected sizes are computed independently (test_early_look_odds_choice: Beta quantiles, the odds ratio's tail by hand,
the split's binomial law).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_early_look_odds_choice import SCAN_ALPHA, _pair_refutes, expected_float_early_runs

import audit.certificates.claim_tests as claim_tests
import audit.gating.early_look as early
from audit.gating.sequential import _look_runner, _planned_looks, look_schedule, spec_of_look
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

SAMPLES, LAST = 40, 6000


def _laplace_count(dbs, rng):
    return dbs[:, :, 0].sum(axis=1)[:, None] + rng.laplace(0.0, 1.0, (len(dbs), 1))


def _spec(epsilon: float, alpha: float) -> AuditSpec:
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    return AuditSpec(mechanism=_laplace_count, priors=(pair.prior(),), claim=parse_claim(f"dp:{epsilon}"),
                     records=(0,), alpha=alpha, arithmetic="float")


def _by_pair_only(epsilon: float, alpha: float, last: int):
    """(c, α_0) of the float-sized look with both tests by the Clopper–Pearson pair alone (the earlier rule)."""
    for runs in range(2, 41):
        level = alpha * ((SAMPLES + 4 * runs) / last) ** 2
        if all(_pair_refutes(epsilon, part * level, runs - 1, runs) for part in (0.8, 0.2)):
            return runs, level
    return None


# (ε, α, c by the pair alone, c by the rule, c of the look): None where no float-sized look fits 100 runs per input;
# the look takes the pair's count where it has one, the rule's only where it has none.
SIZES = [(0.5, 0.05, 29, 25, 29), (0.9, 0.05, 39, 25, 39), (1.0, 0.05, None, 27, 27), (1.5, 0.05, None, 40, 40),
         (0.5, SCAN_ALPHA, 40, 36, 40), (0.9, SCAN_ALPHA, None, 36, 36), (1.0, SCAN_ALPHA, None, 36, 36),
         (1.5, SCAN_ALPHA, None, None, None)]


@pytest.mark.parametrize("epsilon, alpha, by_pair, by_rule, by_look", SIZES)
def test_the_float_sized_early_look_takes_the_pairs_count_else_the_rules(epsilon, alpha, by_pair, by_rule, by_look):
    pair_only, by_odds = _by_pair_only(epsilon, alpha, LAST), expected_float_early_runs(epsilon, alpha, LAST)
    assert (None if pair_only is None else pair_only[0], None if by_odds is None else by_odds[0]) == (by_pair,
                                                                                                       by_rule)
    expected = pair_only or by_odds
    by_rule = by_look
    spec = _spec(epsilon, alpha)
    head = look_schedule(spec, LAST, float_runs=True)[0]
    assert head.early
    if expected is None:  # sized without the float-bit test: the event test's look
        assert not early.early_float_planned(spec, head)
        return
    assert early.early_float_planned(spec, head)
    assert (head.event_runs, head.planned_runs) == (by_rule, SAMPLES + 4 * by_rule)
    assert head.alpha == pytest.approx(expected[1], rel=1e-12)


def _pair_rule(claim, event_alpha, runs, *rest):
    return all(claim_tests.refutes_with_one_miss(claim, part * event_alpha, runs) for part in (0.8, 0.2))


def _early_looks(module: str, name: str, epsilon: float, alpha: float, seeds: int) -> dict:
    """How the early looks of the scan case ``name`` of ``module`` at ``dp:epsilon`` end over ``seeds`` seeds."""
    from audit.engine import _run_audit
    from audit.scan.cases import build_cases, discover
    from audit.scan.planning import case_spec
    from audit.scan.profiles import profile_for

    cases, _ = build_cases(discover(profile_for(module))[0], (epsilon,))
    (case,) = [c for c in cases if c.entry.qualified.endswith("." + name)]
    refuted, runs = 0, set()
    for seed in range(seeds):
        spec = case_spec(case, alpha, seed)
        with _look_runner(spec) as runner:
            head = _planned_looks(spec, runner, LAST)[0][0]
            runner.cache.start_look()
            result = _run_audit(spec_of_look(spec, head), runner, early=True)
        refuted += result.claim_verdict == "refuted"
        runs.add(head.planned_runs)
    return {"refuted": refuted, "runs": sorted(runs)}


# (ε, α, {refuted at the early look, its runs} before (the pair alone) and after (the rule)), 20 seeds each.
LEAK = [(0.5, 0.05, (20, 156), (20, 156)), (0.9, 0.05, (20, 196), (20, 196)), (1.0, 0.05, (0, 120), (19, 148)),
        (1.5, 0.05, (0, 156), (19, 200)), (0.5, SCAN_ALPHA, (20, 200), (20, 200)),
        (0.9, SCAN_ALPHA, (0, 144), (20, 184)), (1.0, SCAN_ALPHA, (0, 152), (20, 184))]


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, alpha, before, after", LEAK)
def test_a_float_bit_leak_is_refuted_at_the_early_look_at_least_as_often(monkeypatch, planted_on_path, epsilon, alpha,
                                                                         before, after):
    measured = _early_looks("planted_lib._float_leak", "parity_bit_count", epsilon, alpha, 20)
    with monkeypatch.context() as patched:
        patched.setattr(claim_tests, "early_float_test", _pair_rule)
        patched.setattr(early, "early_float_test", _pair_rule)
        pair_only = _early_looks("planted_lib._float_leak", "parity_bit_count", epsilon, alpha, 20)
    print(f"dp:{epsilon} at {alpha:.3g}: before {pair_only}, after {measured}")
    assert (pair_only["refuted"], pair_only["runs"]) == (before[0], [before[1]])
    assert (measured["refuted"], measured["runs"]) == (after[0], [after[1]])
    assert measured["refuted"] >= pair_only["refuted"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["jittered_count", "JitteredResponse"])
@pytest.mark.parametrize("epsilon, alpha", [(e, a) for e in (0.5, 0.9, 1.0, 1.5) for a in (0.05, SCAN_ALPHA)])
def test_an_exactly_dp_float_mechanism_is_not_refuted_at_the_early_look(planted_on_path, name, epsilon, alpha):
    # At its claim, float bits included (planted_lib._float_exact): 0 of 20 refuted at the early look.
    assert _early_looks("planted_lib._float_exact", name, epsilon, alpha, 20)["refuted"] == 0
