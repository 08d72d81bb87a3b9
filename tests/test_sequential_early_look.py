"""The early look of a sequential audit (audit.gating.early_look): its size from its rule, a deterministic
difference refuted in it within 100 runs per input, claims it cannot refute, and its type-I error."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from audit.gating.sequential import _look_runner, _planned_looks, look_schedule, run_sequential_audit
from audit.spec import AuditSpec
from experiments.audit_power import catalog_spec
from mechanisms.catalog import get_entry
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from test_early_look_odds_choice import expected_early_runs, expected_float_early_runs

ALPHA, MAX_RUNS, SAMPLES = 0.05, 60_000, 40  # the early look's MI sample: 40 draws of the one two-point prior


def _unnoised_zero_count(dbs, rng):
    """Laplace(1) noise on every count but 0, released exactly: ε = ∞ between counts 0 and 1."""
    counts = dbs[:, :, 0].sum(axis=1)
    return np.where(counts == 0, 0.0, counts + rng.laplace(0.0, 1.0, size=len(counts)))[:, None]


def _spec(claim: str, seed: int = 0) -> AuditSpec:
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    return AuditSpec(mechanism=_unnoised_zero_count, priors=(pair.prior(),), claim=parse_claim(claim), records=(0,),
                     seed=seed)


def _expected_early_look(epsilon: float, last_runs: int):
    """(event runs, level) of the early look by its rule: the fewest certification runs c whose look of 40 + 2c
    runs, at α·t² with t = (40 + 2c) / last_runs, refutes on a pair with one miss (by the Clopper–Pearson pair, or by
    the odds ratio where the event test's choice picks it: computed in ``test_early_look_odds_choice``); None above
    100 runs per input."""
    return expected_early_runs(epsilon, ALPHA, last_runs)


def test_a_deterministic_difference_is_refuted_at_the_early_look_within_100_runs_per_input():
    spec = _spec("dp:1", seed=1)
    # Planned with the probe, as the audit plans it: Laplace outputs hold float bits, so a sample costs one MI run
    # and two runs of each input (the event test's and the float-bit test's): 60,000 / 5 samples, all 60,000 runs.
    with _look_runner(spec) as runner:
        schedule, _ = _planned_looks(spec, runner, MAX_RUNS)
    last = schedule[-1]
    assert last.samples == MAX_RUNS // 5 and last.planned_runs == MAX_RUNS
    # The early look is sized with the float-bit test too (34 runs per input each, 176 runs; 33 and 106 without it).
    runs, level = expected_float_early_runs(1.0, ALPHA, MAX_RUNS)
    head = schedule[0]
    assert head.early and (head.samples, head.event_runs, head.planned_runs) == (SAMPLES, runs, SAMPLES + 4 * runs)
    assert head.alpha == pytest.approx(level, rel=1e-12)
    assert math.fsum(look.alpha for look in schedule) == pytest.approx(ALPHA)
    audit = run_sequential_audit(spec, MAX_RUNS)
    assert audit.refuted and len(audit.looks) == 1
    # The runs made: the MI sample's 40 draws and the certification runs of the two inputs for each test, nothing else.
    assert audit.result.samples_by_purpose == {"mi": SAMPLES, "event_certification": 2 * runs,
                                               "float_certification": 2 * runs}
    assert audit.runs == SAMPLES + 4 * runs <= 2 * 100
    assert audit.runs / 2 <= 100  # runs per input of the pair
    # The MI test is skipped at that look: no bound, no verdict; the event tests refuted at their parts of its α.
    assert audit.result.lower_bound is None and audit.result.verdict is None
    assert audit.result.claim_alpha == pytest.approx({"event": 0.8 * head.alpha, "float": 0.2 * head.alpha})
    assert "early look" in audit.summary()


def test_a_claim_of_large_epsilon_gets_no_early_look_and_is_refuted_at_a_later_look():
    spec = _spec("dp:4", seed=0)
    # dp:4 needs far more than 100 runs per input even on a pair with one miss (and on a perfect pair).
    assert _expected_early_look(4.0, MAX_RUNS) is None
    schedule = look_schedule(spec, MAX_RUNS)
    assert not any(look.early for look in schedule)
    audit = run_sequential_audit(spec, MAX_RUNS)
    assert audit.refuted and audit.runs > 2 * 100


def test_a_budget_so_large_that_the_early_level_needs_more_than_100_runs_per_input_plans_none():
    spec = _spec("dp:1.5")
    assert _expected_early_look(1.5, 10**9) is None
    assert not look_schedule(spec, 10**9, float_runs=False)[0].early


def test_no_early_look_without_a_claim_the_event_test_tests():
    assert not look_schedule(replace(_spec("dp:1"), claim=None, epsilon=0.5), MAX_RUNS)[0].early


def _rr_spec(seed: int) -> AuditSpec:
    from estimators.neural import CriticConfig

    # Randomized response with ε = 1 is exactly at its 1-LDP claim (the exposing pair attains e^ε).
    return catalog_spec(get_entry("randomized_response"), 2000, seed, CriticConfig(), 0, "cpu")


@pytest.mark.slow
def test_the_early_look_alone_at_level_alpha_keeps_its_type_one_error_at_the_boundary():
    from audit.engine import _run_audit

    # The early look's audit (40 draws choose the event, fresh runs certify it) at the whole α = 0.05 rather than
    # its share, so its level is exercised: 300 audits of a mechanism exactly at its claim.
    audits, refuted = 300, 0
    for seed in range(audits):
        spec = _rr_spec(seed)
        with _look_runner(spec) as runner:
            head = _planned_looks(spec, runner, 6000)[0][0]
            assert head.early
            look = replace(spec, samples=head.samples, event_runs=head.event_runs, alpha=ALPHA)
            runner.cache.start_look()
            refuted += _run_audit(look, runner, early=True).refuted
    bound = int(stats.binom.ppf(0.999, audits, ALPHA))
    print(f"{refuted} of {audits} early looks ({head.event_runs} runs per input) refuted at α = {ALPHA} "
          f"(bound {bound})")
    assert refuted <= bound


def _laplace_sum(dbs, rng):
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(size=(len(dbs), 1))


def test_an_early_look_stays_below_the_first_ordinary_look_where_runs_are_affine_in_samples():
    # look_schedule places the early look on the samples' scale at head = r · N / runs(N), r its planned runs, and
    # runs(s) = a·s + b is affine where pairs are probed (b = 2 · prior_search): r < runs(s₁) alone would allow head
    # ≥ s₁, the first ordinary look, and power_alpha_spending would refuse the sizes (a crash). It cannot happen:
    # r ≤ 2 · EARLY_LOOK_RUNS_PER_INPUT = 200 ≤ MIN_TEST_SAMPLES ≤ s₁ (the MI test's floor, split[2] ≤ 1) and
    # a > 1 (a prior and its event runs), so head < r / a < s₁. Swept here over max_runs from the smallest that
    # can refute (its first 30 values) and on geometrically, with and without probed pairs and float-bit runs.
    from audit.engine import MIN_TEST_SAMPLES
    from audit.gating.early_look import EARLY_LOOK_RUNS_PER_INPUT
    from audit.gating.look_runs import look_run_counter
    from estimators.validation import InputError

    assert 2 * EARLY_LOOK_RUNS_PER_INPUT <= MIN_TEST_SAMPLES
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    early_with_probes = 0
    for prior_search, float_runs, claim in [(0, False, "dp:1"), (1, False, "dp:1"), (3, True, "dp:0.5"),
                                            (1, True, "gdp:1")]:
        spec = AuditSpec(mechanism=_laplace_sum, priors=(pair.prior(),), claim=parse_claim(claim), records=(0,),
                         seed=0, prior_search=prior_search)
        with pytest.raises(InputError, match=r"at least (\d+) mechanism runs") as caught:
            look_schedule(spec, 1, float_runs=float_runs)
        least = int(caught.value.args[0].split("at least ")[1].split()[0])
        runs_at = look_run_counter(spec, float_runs)
        for max_runs in list(range(least, least + 30)) + [int(least * 1.6 ** k) for k in range(1, 16)]:
            schedule = look_schedule(spec, max_runs, float_runs=float_runs)
            total = schedule[-1].samples
            places = [look.planned_runs / runs_at(total) * total if look.early else look.samples for look in schedule]
            assert all(a < b for a, b in zip(places, places[1:])), (prior_search, max_runs, places)
            assert schedule[-1].planned_runs <= max_runs and not any(look.early for look in schedule[1:])
            if schedule[0].early:
                assert schedule[0].planned_runs <= 2 * EARLY_LOOK_RUNS_PER_INPUT <= schedule[1].samples
                early_with_probes += prior_search > 0
    assert early_with_probes > 0  # the affine case (b > 0) was reached with an early look
