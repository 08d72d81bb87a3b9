"""Sequential audits (audit.sequential): the α-spending, the schedule, the stopping rule and the type-I error."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from audit.event_test import clopper_pearson
from audit.sequential import (SPENDING_POWER, power_alpha_spending, round_schedule, run_sequential_audit, runs_per_sample,
                              runs_to_refute)
from audit.spec import AuditSpec
from estimators.validation import InputError
from experiments.audit_power import catalog_spec
from mechanisms.catalog import get_entry
from mechanisms.claims import parse_claim


def _spec(name: str, seed: int = 0, **changes) -> AuditSpec:
    from dataclasses import replace

    from estimators.neural import CriticConfig

    return replace(catalog_spec(get_entry(name), 2000, seed, CriticConfig(), 0, "cpu"), **changes)


def test_power_spending_levels_follow_the_closed_form_cumulative_alpha():
    sizes = [400, 800, 1600, 17200]
    # ρ = 1 is linear spending: each level proportional to its round's size.
    assert power_alpha_spending(sizes, 0.05, 1.0) == pytest.approx([0.05 * n / 20000 for n in sizes], rel=1e-12)
    # Cumulative α after round k is α·t_k^ρ at the information fractions t = 0.02, 0.06, 0.14, 1 (Kim and DeMets 1987).
    for rho in (2.0, 3.0):
        levels = power_alpha_spending(sizes, 0.05, rho)
        assert list(itertools.accumulate(levels)) == pytest.approx([0.05 * t**rho for t in (0.02, 0.06, 0.14, 1.0)],
                                                                   rel=1e-12)
    # The default keeps 1 − 0.14² of α for the last round.
    assert power_alpha_spending(sizes, 0.05)[-1] == pytest.approx(0.05 * (1 - 0.14**SPENDING_POWER), rel=1e-12)
    with pytest.raises(InputError, match="sizes"):
        power_alpha_spending([0, 10], 0.05)
    with pytest.raises(InputError, match="rho"):
        power_alpha_spending([5, 10], 0.05, 0.0)


def _exact_type_one(sizes, levels, p0):
    """P(some round rejects H0: p ≤ p0 | p = p0) for the sequential one-sided binomial test that stops at the
    first rejection: round k draws n_k fresh Bernoulli(p0) and rejects when the Clopper–Pearson lower bound at
    level α_k exceeds p0. Enumerates every joint outcome (k₁, …, k_K) and adds the probability of those on
    which a round rejects (the first one stops the test, which changes no such path's rejecting)."""
    reject = [set(k for k in range(n + 1) if clopper_pearson(k, n, a)[0] > p0) for n, a in zip(sizes, levels)]
    total = 0.0
    for outcome in itertools.product(*(range(n + 1) for n in sizes)):
        if any(k in r for k, r in zip(outcome, reject)):
            total += math.prod(stats.binom.pmf(k, n, p0) for k, n in zip(outcome, sizes))
    return total


def test_spending_keeps_the_exact_overall_type_one_error_below_alpha():
    # A small Bernoulli case at the boundary p = p0, enumerated exactly.
    sizes, alpha, p0 = [4, 8, 16], 0.2, 0.3
    levels = power_alpha_spending(sizes, alpha)
    # The default spending's levels by the closed form α·(t_k² − t_{k−1}²) at t = 4/28, 12/28, 1.
    assert levels == pytest.approx([alpha * (b**2 - a**2) for a, b in ((0, 4 / 28), (4 / 28, 12 / 28), (12 / 28, 1))])
    exact = _exact_type_one(sizes, levels, p0)
    assert 0 < exact <= alpha
    # Independent rounds: the exact level is 1 − Π(1 − r_k), r_k each round's own exact level.
    own = [sum(stats.binom.pmf(k, n, p0) for k in range(n + 1) if clopper_pearson(k, n, a)[0] > p0)
           for n, a in zip(sizes, levels)]
    assert exact == pytest.approx(1 - math.prod(1 - r for r in own), rel=1e-9)
    # Spending all of α at every look would not keep it: the test can tell the two apart.
    assert _exact_type_one(sizes, [alpha] * 3, p0) > alpha


def test_schedule_doubles_early_rounds_within_the_look_fraction_and_puts_most_alpha_last():
    spec = _spec("laplace_sum")
    schedule = round_schedule(spec, 60000)
    cost = runs_per_sample(spec)
    assert cost == 3.0  # one two-point prior, two inputs of the event test at event_runs = samples
    early, last = schedule[:-1], schedule[-1]
    assert len(early) >= 2
    assert all(b.samples == 2 * a.samples for a, b in zip(early, early[1:]))
    assert sum(r.planned_runs for r in early) <= 0.2 * 60000
    assert sum(r.planned_runs for r in schedule) <= 60000
    assert last.samples == math.floor(60000 / cost) - sum(r.samples for r in early)
    assert math.fsum(r.alpha for r in schedule) == pytest.approx(spec.alpha)
    early_fraction = sum(r.samples for r in early) / sum(r.samples for r in schedule)
    assert last.alpha == pytest.approx(spec.alpha * (1 - early_fraction**2))  # α(t) = α t², t the runs done
    assert last.alpha > 0.97 * spec.alpha


def test_max_runs_too_small_for_one_round_is_named():
    with pytest.raises(InputError, match="max_runs"):
        round_schedule(_spec("laplace_sum"), 500)


def test_sequential_audit_stops_at_the_first_refutation_and_is_deterministic():
    first = run_sequential_audit(_spec("histogram_buggy", seed=3), 30000)
    again = run_sequential_audit(_spec("histogram_buggy", seed=3), 30000)
    assert first.stopped == "refuted" and first.refuted
    assert len(first.rounds) < len(first.schedule)
    assert first.runs == sum(r.runs for r in first.rounds) < 30000 / 2
    def without_time(result):
        return [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in result.rounds]

    assert without_time(first) == without_time(again)
    assert first.result.alpha == pytest.approx(0.05)  # stated at the overall level, not the round's
    assert first.to_dict()["sequential"]["rounds_run"] == len(first.rounds)


def test_unrefuted_audit_spends_the_budget_and_says_what_a_refutation_would_need():
    result = run_sequential_audit(_spec("laplace_sum", seed=1), 6000)
    assert result.stopped == "budget" and not result.refuted
    assert len(result.rounds) == len(result.schedule)
    assert result.runs <= 6000
    assert result.runs_to_refute_note


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


def test_time_limit_stops_before_a_round_that_would_not_fit():
    result = run_sequential_audit(_spec("laplace_sum", seed=2), 60000, time_limit=1e-6)
    assert result.stopped == "time"
    assert len(result.rounds) == 1  # the first round always runs


@pytest.mark.slow
def test_type_one_error_at_the_boundary_is_at_most_alpha_over_500_audits():
    # randomized response with ε = 1 is exactly at its 1-LDP claim (the exposing pair attains e^ε).
    audits, alpha = 500, 0.05
    refuted = sum(run_sequential_audit(_spec("randomized_response", seed=seed), 6000).refuted
                  for seed in range(audits))
    # ≤ α in truth; the count is consistent with that unless it exceeds the binomial's 99.9% point.
    assert refuted <= stats.binom.ppf(0.999, audits, alpha)
