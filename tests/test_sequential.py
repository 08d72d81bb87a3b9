"""Sequential audits (audit.gating.sequential): the α-spending, the schedule, the stopping rule and the type-I error."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from audit.certificates.event_bounds import clopper_pearson
from audit.gating.sequential import (SPENDING_POWER, event_selection_possible, look_boundaries, look_runs, look_schedule, power_alpha_spending, run_audit_on_look_runs, run_sequential_audit, runs_per_sample, runs_to_refute)
from audit.gating.look_runs import FLOAT_PROBE_RUNS
from audit.spec import AuditSpec
from estimators.validation import InputError
from experiments.audit_power import catalog_spec
from mechanisms.catalog import get_entry
from mechanisms.claims.parsing import parse_claim


def _spec(name: str, seed: int = 0, **changes) -> AuditSpec:
    from estimators.neural import CriticConfig

    return replace(catalog_spec(get_entry(name), 2000, seed, CriticConfig(), 0, "cpu"), **changes)


def test_power_spending_levels_follow_the_closed_form_cumulative_alpha():
    sizes = [400, 1200, 2800, 20000]  # nested looks: each the first n_k of the 20,000 runs
    # ρ = 1 is linear spending: each level proportional to the runs the look adds.
    assert power_alpha_spending(sizes, 0.05, 1.0) == pytest.approx([0.05 * n / 20000 for n in (400, 800, 1600, 17200)],
                                                                   rel=1e-12)
    # Cumulative α after look k is α·t_k^ρ at the information fractions t = 0.02, 0.06, 0.14, 1 (Kim and DeMets 1987).
    for rho in (2.0, 3.0):
        levels = power_alpha_spending(sizes, 0.05, rho)
        assert list(itertools.accumulate(levels)) == pytest.approx([0.05 * t**rho for t in (0.02, 0.06, 0.14, 1.0)],
                                                                   rel=1e-12)
    # The default keeps 1 − 0.14² of α for the last look.
    assert power_alpha_spending(sizes, 0.05)[-1] == pytest.approx(0.05 * (1 - 0.14**SPENDING_POWER), rel=1e-12)
    with pytest.raises(InputError, match="sizes"):
        power_alpha_spending([0, 10], 0.05)
    with pytest.raises(InputError, match="sizes"):
        power_alpha_spending([10, 10], 0.05)
    with pytest.raises(InputError, match="rho"):
        power_alpha_spending([5, 10], 0.05, 0.0)


def _rejecting_counts(sizes, levels, p0):
    """For each look, the cumulative counts k of successes in its n_k draws at which the one-sided test of
    H0: p ≤ p0 rejects: the Clopper–Pearson lower bound at level α_k exceeds p0."""
    return [{k for k in range(n + 1) if clopper_pearson(k, n, a)[0] > p0} for n, a in zip(sizes, levels)]


def _nested_type_one_by_recursion(sizes, levels, p0):
    """P(some look rejects | p = p0) for nested looks: look k tests the first n_k draws of ONE Bernoulli(p0)
    stream. Dynamic programming over the cumulative count: the law of S_{n_k} on the paths no look has
    rejected yet, moved on by Binomial(n_{k+1} − n_k, p0) increments."""
    reject = _rejecting_counts(sizes, levels, p0)
    alive = {0: 1.0}  # P(S_0 = 0) on the paths not rejected
    previous, rejected = 0, 0.0
    for n, rejecting in zip(sizes, reject):
        step = {}
        for s, mass in alive.items():
            for j in range(n - previous + 1):
                step[s + j] = step.get(s + j, 0.0) + mass * stats.binom.pmf(j, n - previous, p0)
        rejected += sum(m for s, m in step.items() if s in rejecting)
        alive = {s: m for s, m in step.items() if s not in rejecting}
        previous = n
    return rejected


def _nested_type_one_by_enumeration(sizes, levels, p0):
    """The same probability by brute force: every one of the 2^N sequences of draws, with its probability."""
    reject = _rejecting_counts(sizes, levels, p0)
    total = 0.0
    for draws in itertools.product((0, 1), repeat=sizes[-1]):
        if any(sum(draws[:n]) in r for n, r in zip(sizes, reject)):
            ones = sum(draws)
            total += p0**ones * (1 - p0) ** (len(draws) - ones)
    return total


def test_spending_keeps_the_exact_overall_type_one_error_of_nested_looks_below_alpha():
    # A small Bernoulli case at the boundary p = p0: looks at the first 4, 9 and 14 draws of one stream.
    sizes, alpha, p0 = [4, 9, 14], 0.1, 0.3
    levels = power_alpha_spending(sizes, alpha)
    # The default spending's levels by the closed form α·(t_k² − t_{k−1}²) at t = 4/14, 9/14, 1.
    assert levels == pytest.approx([alpha * (b**2 - a**2) for a, b in ((0, 4 / 14), (4 / 14, 9 / 14), (9 / 14, 1))])
    exact = _nested_type_one_by_recursion(sizes, levels, p0)
    assert exact == pytest.approx(_nested_type_one_by_enumeration(sizes, levels, p0), rel=1e-9)
    assert 0 < exact <= alpha
    # The union bound: at most the sum of the looks' own exact levels, each at most its α_k.
    own = [sum(stats.binom.pmf(k, n, p0) for k in r) for n, r in zip(sizes, _rejecting_counts(sizes, levels, p0))]
    assert all(r <= a for r, a in zip(own, levels))
    assert exact <= sum(own) + 1e-12
    # Spending all of α at every look would not keep it: the test can tell the two apart.
    assert _nested_type_one_by_recursion(sizes, [alpha] * 3, p0) > alpha


def test_schedule_nests_doubling_early_looks_within_the_look_fraction_and_puts_most_alpha_last():
    spec = _spec("laplace_sum")
    schedule = look_schedule(spec, 60000)
    cost = runs_per_sample(spec)
    # One two-point prior; two inputs of the event test at event_runs = samples, and, planned without a probe
    # under arithmetic = "float" (the default), two of the float-bit event test, which certifies on fresh runs.
    assert cost == 5.0 and runs_per_sample(spec, float_runs=False) == 3.0
    # The entry's 1-DP claim under its two-point prior: the schedule starts with the early look (tested below).
    head, early, last = schedule[0], schedule[1:-1], schedule[-1]
    assert head.early and not any(look.early for look in schedule[1:])
    assert len(early) >= 2
    assert all(b.samples == 2 * a.samples for a, b in zip(early, early[1:]))
    assert early[-1].samples <= 0.2 * last.samples  # nested: the early looks' runs are the largest one's
    assert last.samples == 60000 // 5 and last.planned_runs == 60000
    assert math.fsum(r.alpha for r in schedule) == pytest.approx(spec.alpha)
    t = early[-1].samples / last.samples
    assert last.alpha == pytest.approx(spec.alpha * (1 - t**2))  # α(t) = α t², t the fraction of the runs seen
    assert last.alpha > 0.96 * spec.alpha
    # The early look's t_0 is its runs' fraction of the last look's; the first ordinary look spends from t_0 on.
    t0, t1 = head.planned_runs / last.planned_runs, early[0].samples / last.samples
    assert head.alpha == pytest.approx(spec.alpha * t0**2) and early[0].alpha == pytest.approx(spec.alpha * (t1**2 - t0**2))
    assert set(look_boundaries(schedule)) >= {look.samples for look in schedule} | {look.event_runs for look in schedule}


def test_max_runs_too_small_for_one_look_is_named():
    with pytest.raises(InputError, match="max_runs"):
        look_schedule(_spec("laplace_sum"), 500)


def test_sequential_audit_stops_at_the_first_refutation_and_is_deterministic():
    first = run_sequential_audit(_spec("histogram_buggy", seed=3), 30000)
    again = run_sequential_audit(_spec("histogram_buggy", seed=3), 30000)
    assert first.stopped == "refuted" and first.refuted
    assert len(first.looks) < len(first.schedule)
    # histogram_buggy's counts have no bits below the grid: the float-bit probe ran its 64 counted runs.
    assert first.probe_runs == FLOAT_PROBE_RUNS
    assert first.runs == first.probe_runs + sum(r.runs for r in first.looks) < 30000 / 2

    def without_time(result):
        return [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in result.looks]

    assert without_time(first) == without_time(again)
    assert first.result.alpha == pytest.approx(0.05)  # stated at the overall level, not the look's
    assert first.to_dict()["sequential"]["looks_run"] == len(first.looks)


class _CountingMechanism:
    """A mechanism that counts the databases it is called on."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def __call__(self, dbs, rng):
        self.calls += len(dbs)
        return self.inner(dbs, rng)


def test_unrefuted_audit_reuses_the_earlier_looks_runs_and_its_last_look_is_the_fixed_audit_on_them():
    spec = _spec("laplace_sum", seed=1)
    counting = _CountingMechanism(spec.mechanism)
    counted = replace(spec, mechanism=counting)
    result = run_sequential_audit(counted, 6000)
    assert result.stopped == "budget" and not result.refuted
    assert len(result.looks) == len(result.schedule)
    assert result.runs_to_refute_note
    # The runs counted are the calls the mechanism saw (less the runner's probe's two calls on one database), the
    # float-bit probe's 64 among them (laplace_sum's releases are snapped: its first output shows no fine bits)...
    assert counting.calls - 2 == result.runs == FLOAT_PROBE_RUNS + sum(look.runs for look in result.looks) <= 6000
    # ...and every look after the first used runs of the looks before instead of calling it again.
    assert all(look.reused_runs > 0 for look in result.looks[1:])
    assert result.looks[-1].reused_runs >= result.looks[-2].samples  # at least the earlier MI sample
    # The last look is the fixed audit of all the samples whose 3 runs each fit in what the probe left, on the same
    # runs (same seed, same chunk boundaries), at its level α_K: the same counts, the same certificate.
    last = result.schedule[-1]
    assert last.samples == (6000 - FLOAT_PROBE_RUNS) // 3
    fixed = run_audit_on_look_runs(replace(counted, alpha=last.alpha), 6000)
    ours, theirs = result.result.event_test, fixed.event_test
    assert (ours.p_first, ours.p_second, ours.runs_made) == (theirs.p_first, theirs.p_second, theirs.runs_made)
    assert ours.epsilon_lower_bound == theirs.epsilon_lower_bound
    assert result.result.lower_bound == fixed.lower_bound


def test_runs_to_refute_matches_a_direct_search_over_the_certificate():
    # Clopper–Pearson only: an (ε, δ) claim (δ > 0) has no ratio certificate. Independent check: the
    # smallest n on a fine grid whose two Clopper–Pearson bounds at α/2, at the expected counts, leave the
    # claim's profile (the claim's own check_event).
    claim = parse_claim("dp:1:1e-5")
    p_first, p_second, alpha = 0.5, 0.1, 0.05
    found = runs_to_refute(claim, p_first, p_second, alpha)

    def refutes(n):
        lower = clopper_pearson(round(p_first * n), n, alpha / 2)[0]
        upper = clopper_pearson(round(p_second * n), n, alpha / 2)[1]
        return claim.check_event(float(lower), float(upper)).refuted

    # The counts are rounded, so refuting is not monotone in n near the edge: the first n from which it
    # holds for the next 25 runs too.
    direct = next(n for n in range(10, 5000) if all(refutes(m) for m in range(n, n + 25)))
    assert found == pytest.approx(direct, rel=0.03)
    assert runs_to_refute(claim, 0.2, 0.1, alpha) is None  # e^1 · 0.1 > 0.2: inside the profile


#: The runner's own probe: two calls on one database, which a sequential audit does not count as runs.
RUNNER_PROBE_CALLS = 2
#: Seconds of the fake clock each mechanism run takes (test_the_time_limit_binds_from_the_first_look).
TICK = 0.001


def test_the_time_limit_binds_from_the_first_look(monkeypatch):
    """A fake clock on which each run takes TICK seconds (and nothing else any time): the looks' seconds are their
    calls', whatever the machine's load. Before each look, the first included, the seconds spent + the look's
    predicted seconds (before a timed ordinary look: its planned runs not made yet at seconds_per_run, or the early
    look's seconds, the larger) must be within the limit."""
    from audit.gating import look_time
    from audit.gating.look_time import FirstLookPastTimeLimit

    def audit(limit):
        counting = _CountingMechanism(_spec("laplace_sum", seed=2).mechanism)
        monkeypatch.setattr(look_time, "clock", lambda: counting.calls * TICK)
        spec = _spec("laplace_sum", seed=2, mechanism=counting)
        return run_sequential_audit(spec, 6000, time_limit=limit, seconds_per_run=TICK), counting

    free, _ = audit(None)
    assert free.stopped == "budget" and len(free.looks) == len(free.schedule) >= 2 and free.schedule[0].early
    # Before look 1: the runner's probe and the float-bit probe ran; look 1 would make all its planned runs.
    before = RUNNER_PROBE_CALLS + free.probe_runs
    first_ends = TICK * (before + free.schedule[0].planned_runs)
    with pytest.raises(FirstLookPastTimeLimit, match=r"argument 'time_limit' \(--time-limit\)") as caught:
        audit(first_ends - TICK / 2)
    assert caught.value.predicted == pytest.approx(first_ends)
    # Look 1 fits; look 2, the first ordinary look (once always run), is predicted at its runs not made yet.
    made = free.looks[0].runs
    second_ends = TICK * (before + made + max(made, free.schedule[1].planned_runs - made))
    assert second_ends > first_ends
    stopped, counting = audit(second_ends - TICK / 2)
    assert stopped.stopped == "time" and len(stopped.looks) == 1 and "time limit" in stopped.summary()
    assert counting.calls == before + made  # nothing spent on look 2
    # The verdict is look 1's, at the overall level α (look 2's α_2 and the rest unspent: the union bound holds).
    assert stopped.claim_verdict == free.looks[0].claim_verdict and stopped.alpha == pytest.approx(free.alpha)
    assert stopped.looks[0] == replace(free.looks[0], seconds=stopped.looks[0].seconds)
    assert len(audit(second_ends + TICK / 2)[0].looks) >= 2


@pytest.mark.slow
def test_type_one_error_at_the_boundary_is_at_most_alpha_over_1000_audits():
    # randomized response with ε = 1 is exactly at its 1-LDP claim (the exposing pair attains e^ε): 1,000 audits,
    # the size of issue 43's study. Every audit starts with the early look (audit.gating.early_look: 40 samples
    # choose the event, fresh runs certify it, at its share α_0 of α), then the ordinary looks.
    entry = get_entry("randomized_response")
    keep = math.e / (1 + math.e)  # P(report = bit) of 1-LDP randomized response (Dwork and Roth 2014, Section 3.2)
    assert entry.claimed.epsilon == 1.0 and entry.mechanism.truth_probability == pytest.approx(keep, rel=1e-12)
    audits, alpha = 1000, 0.05
    refuted = 0
    for seed in range(audits):
        audit = run_sequential_audit(_spec("randomized_response", seed=seed), 6000)
        assert audit.schedule[0].early and audit.looks[0].samples == audit.schedule[0].samples
        refuted += audit.refuted
    # ≤ α in truth; the count is consistent with that unless it exceeds the binomial's 99.9% point.
    assert refuted <= stats.binom.ppf(0.999, audits, alpha)


@pytest.mark.train  # a prior that is not a two-point prior gets neural critics
def test_a_prior_that_needs_selection_runs_gets_a_last_look_that_fits_them():
    from mechanisms.inputs.priors import ProductBernoulli

    spec = _spec("laplace_sum", seed=4)
    assert not event_selection_possible(spec)  # the entry's exposing two-point prior: events chosen on held-out draws
    general = replace(spec, priors=[ProductBernoulli(0.5, shape=get_entry("laplace_sum").record_shape)])
    assert event_selection_possible(general)
    # At most event_runs selection runs for each of the two event tests (the event test's and the float-bit one's)
    # and 2·min(event_runs, 2000) pilot runs besides the 5 per sample (the MI sample's, and the event test's and the
    # float-bit event test's certification runs of two inputs), and the probe of the 8 structured pairs, one run of
    # each database: 16.
    assert look_runs(general, 1000) == 5 * 1000 + 2 * 1000 + 2 * 1000 + 2 * 8
    assert look_runs(general, 4000) == 5 * 4000 + 2 * 4000 + 2 * 2000 + 2 * 8
    last = look_schedule(general, 7000)[-1]
    assert look_runs(general, last.samples) <= 7000 < look_runs(general, last.samples + 1)
    result = run_sequential_audit(general, 7000)
    assert len(result.looks) == len(result.schedule) and not result.notes  # every look completed
    assert result.runs <= 7000 and result.result.samples_by_purpose.get("event_selection", 0) > 0


def _exposed_sum(dbs, rng):
    return (dbs[:, :, 0].sum(axis=1) + rng.laplace(0.0, 1.0, len(dbs)))[:, None]


def _rounded_sum(dbs, rng):
    # + 0.0: integer outputs, no bit to read; np.round leaves −0.0 on [−½, 0), a sign the float-bit test reads.
    return np.round(_exposed_sum(dbs, rng)) + 0.0


@pytest.mark.parametrize("mechanism, float_runs", [(_rounded_sum, False), (_exposed_sum, True)])
def test_the_float_bit_tests_runs_are_planned_where_the_probe_shows_float_bits(mechanism, float_runs):
    from audit.gating.sequential import _look_runner, _planned_looks
    from mechanisms.inputs.neighbouring_pair import NeighbouringPair

    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    spec = AuditSpec(mechanism=mechanism, priors=(pair.prior(),), claim=parse_claim("dp:1"), records=(0,), seed=0)
    with _look_runner(spec) as runner:
        schedule, planned = _planned_looks(spec, runner, 30_000)
        # The runner's probe's two calls are not counted; where its output shows no fine bits, 64 more outputs are
        # looked at, counted, and the looks get what is left.
        spent = runner.calls
        assert planned == float_runs and spent == (0 if float_runs else FLOAT_PROBE_RUNS)
    # Per sample: one run of the pair's prior, event_runs / samples runs of each input for the event test, and as
    # many for the float-bit event test where the outputs have bits below the grid (Laplace noise as floats); an
    # integer release has none.
    per_sample = 1 + 2 * (2 if float_runs else 1) * spec.event_runs / spec.samples
    assert schedule[-1].samples == math.floor((30_000 - spent) / per_sample + 1e-9)
