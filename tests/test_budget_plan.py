"""Budget plans (audit.gating.budget_forecast): the excess scenario's event and the predicted runs, against
independent computations."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from audit.gating.budget_forecast import excess_claim, forecast_refutation, plan_budget, profile_event
from audit.certificates.event_bounds import clopper_pearson
from estimators.neural import CriticConfig
from experiments.audit_power import catalog_spec
from mechanisms.catalog import get_entry
from mechanisms.claims.parsing import parse_claim
from fake_runner import SamplingRunner


@pytest.mark.parametrize("text, p_second, expected", [
    ("dp:1", 0.1, math.e * 0.1),               # pure DP: p₁ = e^ε p₂
    ("dp:1:0.01", 0.1, math.e * 0.1 + 0.01),   # (ε, δ): p₁ = e^ε p₂ + δ
    ("dp:2", 0.3, 1.0),                         # capped at 1
])
def test_profile_event_is_the_closed_form_of_dp(text, p_second, expected):
    assert profile_event(parse_claim(text), p_second) == pytest.approx(expected, rel=1e-6)


def test_profile_event_of_gdp_is_its_tradeoff_curve():
    # μ-GDP: the largest P(E | D) given P(E | D′) = p₂ is 1 − T(p₂)... read as a test of level p₂:
    # power Φ(Φ⁻¹(p₂) + μ) (Dong, Roth and Su 2022, Definition 2.3), computed here from scipy.
    from scipy import stats

    mu, p_second = 1.0, 0.05
    expected = stats.norm.cdf(stats.norm.ppf(p_second) + mu)
    assert profile_event(parse_claim(f"gdp:{mu}"), p_second) == pytest.approx(expected, rel=2e-3)


def test_excess_claim_raises_the_privacy_parameter():
    assert excess_claim(parse_claim("dp:1:1e-5"), 0.2).epsilon == pytest.approx(1.2)
    assert excess_claim(parse_claim("zcdp:0.5"), 0.2).rho == pytest.approx(0.6)
    assert excess_claim(parse_claim("mi-dp:0.5"), 0.2) is None


def test_predicted_event_runs_match_a_direct_clopper_pearson_search():
    # An (ε, δ) claim: certified by the Clopper–Pearson pair only, so the prediction can be checked by a
    # direct search over n with the two bounds at α/2 at the expected counts.
    entry = get_entry("laplace_sum")
    spec = replace(catalog_spec(entry, 20000, 0, CriticConfig(), 0, "cpu"), claim=parse_claim("dp:1:1e-5"))
    plan = plan_budget(spec, pilot_runs=3000)
    event = next(t for t in plan.tests if t.test == "event")
    claim, alpha = spec.claim, event.alpha
    p_second = plan.pilot_event[1]
    p_first = min(1.0, math.exp(1.2) * p_second + 1e-5)

    def refutes(n):
        lower = clopper_pearson(round(p_first * n), n, alpha / 2)[0]
        upper = clopper_pearson(round(p_second * n), n, alpha / 2)[1]
        return claim.check_event(float(lower), float(upper)).refuted

    n = 16
    while not all(refutes(m) for m in range(n, n + 25)):
        n = int(n * 1.01) + 1
    runs_per_input_run = 3.0  # one two-point prior and two inputs per sample, event_runs = samples
    assert event.runs_at_excess == pytest.approx(n * runs_per_input_run, rel=0.05)
    assert event.refutable_at_budget and plan.refutable
    # laplace_sum's releases are snapped (no float-bit statistic suits them): the event test spends the float-bit
    # test's share too, as the audit does, and the MI test (log 2 < its budget here) none: all of α.
    assert alpha == pytest.approx(spec.alpha)
    # The forecast is said in the note; beyond twice the pilot's runs (or none) the note says it may err long.
    assert "forecast (16 audits simulated on the pilot's" in event.note
    far = event.runs_at_pilot is None or event.runs_at_pilot > 2 * plan.pilot_runs
    assert not far or "a larger --pilot-runs forecasts further" in event.note


#: Three clusters of event-statistic scores, 0, 1 and 2: the first input gives the rare cluster 2 with probability
#: 0.05 and cluster 1 with 0.30, the second 0.005 and 0.15. The frequent event {y ≥ 1} (0.35 against 0.155, a
#: ratio below e) never refutes the claim (1, 1e-6)-DP; the rare {y = 2} (ratio 10) does once there are runs enough.
CLUSTERS = (0.65, 0.30, 0.05), (0.845, 0.15, 0.005)
CLAIM, ALPHA, DELTA = "dp:1:1e-6", 0.05, 1e-6


def _cluster_scores(rng, which, count):
    """Scores of input ``which`` (0: first) in the three clusters, each with U(0, 0.5) jitter."""
    return rng.choice(3, size=count, p=CLUSTERS[which]) + 0.5 * rng.random(count)


def _pilot_scores(rng, chosen_on):
    """A pilot's kept scores: ``chosen_on`` draws of each input it chose on, twice that in certification runs
    (as a catalog audit: held-out draws are half its samples per input, certification runs one per sample)."""
    return {"chosen_on": tuple(_cluster_scores(rng, i, chosen_on) for i in (0, 1)),
            "certification": tuple(_cluster_scores(rng, i, 2 * chosen_on) for i in (0, 1))}


def _forecast(scores, claim, budget_runs=60000):
    return forecast_refutation(scores, claim, alpha=ALPHA, delta=DELTA, runs_per_input_run=3.0,
                               selection_per_run=(1 / 6, 1 / 6), smallest=1200, budget_runs=budget_runs, seed=0)


def test_forecast_finds_the_rare_event_a_larger_audit_refutes_with():
    # The need, independently: the fewest runs per input whose Clopper–Pearson bounds (α/2 each, from scipy's
    # beta quantiles, at the expected counts) on the rare event certify ε > 1 at δ = 1e-6; an audit makes 3 runs
    # per certification run of one input. An audit must also find the event on its own draws, so it needs
    # somewhat more (the slow test below measures it).
    from scipy import stats

    claim = parse_claim(CLAIM)

    def certifies(p_first, p_second, n):
        k1, k2 = round(p_first * n), round(p_second * n)
        lower = stats.beta.ppf(ALPHA / 2, k1, n - k1 + 1) if k1 else 0.0
        upper = stats.beta.ppf(1 - ALPHA / 2, k2 + 1, n - k2)
        return (lower - DELTA) / upper > math.e

    assert not any(certifies(0.35, 0.155, n) for n in (10**3, 10**4, 10**5, 10**6))
    need = next(n for n in range(16, 100000) if all(certifies(0.05, 0.005, m) for m in range(n, n + 20)))
    forecast = _forecast(_pilot_scores(np.random.default_rng(5), 6000), claim)
    assert forecast.runs is not None and 0.5 <= forecast.runs / (3 * need) <= 2.0
    assert forecast.p_first == pytest.approx(0.05, abs=0.015) and forecast.p_second < 0.015  # the rare event
    # Both inputs alike: no simulated audit refutes, up to 4 times the budget.
    rng = np.random.default_rng(6)
    alike = {k: (_cluster_scores(rng, 0, len(v[0])), _cluster_scores(rng, 0, len(v[0])))
             for k, v in _pilot_scores(rng, 500).items()}
    none = _forecast(alike, claim, budget_runs=6000)
    assert none.runs is None and none.reach == 24000 and "fewer than half" in none.note


@pytest.mark.slow
def test_forecast_from_a_pilot_matches_the_runs_event_searches_need():
    # The need, measured: audits' event tests (audit.search.event_search.event_search, the code the forecast does not
    # call) at R runs choose on R/6 fresh draws of each input and certify on R/3 fresh runs; the need is the
    # smallest R of a grid (×√2) at which at least half of 16 refute. A pilot of 3000 runs (500 draws chosen on,
    # 1000 certification runs per input) forecasts it within 2 times on most seeds (the pilot's rare-event counts,
    # about 8 under the second input, vary): here the need is 4,800 and the 6 seeds forecast 4,800 to 9,600.
    from audit.statistics.pair_candidates import PairCandidate
    from audit.search.event_search import event_search

    claim = parse_claim(CLAIM)

    class Runner(SamplingRunner):
        def sample(self, dbs, rng, what=""):
            return _cluster_scores(rng, 0 if dbs[0, 0, 0] > 0.5 else 1, len(dbs))[:, None]

    def value(a, b, dbs, outputs):
        return outputs[:, 0]

    first, second = np.ones((1, 1)), np.zeros((1, 1))
    need = None
    for k in range(12):
        runs = int(1200 * 2 ** (k / 2))
        refuted = 0
        for j in range(16):
            rng = np.random.default_rng([7, runs, j])
            candidate = PairCandidate(first, second, 0, value, held_out=tuple(_cluster_scores(rng, i, runs // 6)
                                                                              for i in (0, 1)))
            event = event_search([candidate], runner=Runner(), rng=rng, runs=runs // 3, alpha=ALPHA, delta=DELTA,
                                 claim=claim, pure_certificates=False)
            refuted += claim.check_event(event.p_first_lower, event.p_second_upper).refuted
        if 2 * refuted >= 16:
            need = runs
            break
    assert need is not None
    ratios = [_forecast(_pilot_scores(np.random.default_rng(seed), 500), claim).runs / need for seed in range(6)]
    assert sum(0.5 <= r <= 2.0 for r in ratios if r is not None) >= 5, ratios


def test_a_second_pilot_runs_only_when_the_first_event_exceeds_the_claim_beyond_the_forecast_reach():
    from types import SimpleNamespace

    from audit.gating.budget_forecast import PILOT_BUDGET_SHARE, _larger_pilot_runs

    claim = parse_claim("dp:1")

    def pilot(p_first, p_second):
        return SimpleNamespace(event_test=SimpleNamespace(p_first=p_first, p_second=p_second))

    def forecast(runs):  # the event test's budget (a float-bit event test's is checked below)
        return [SimpleNamespace(runs_at_pilot=runs)]

    # Frequencies 0.5 and 0.05: a ratio of 10 > e¹, so some fixed audit refutes them; no forecast within reach.
    assert PILOT_BUDGET_SHARE == 0.2
    assert _larger_pilot_runs(claim, pilot(0.5, 0.05), forecast(None), 0.05, 3000, 60000) == 12000 - 3000
    assert _larger_pilot_runs(claim, pilot(0.5, 0.05), forecast(20000), 0.05, 3000, 60000) == 9000
    # A forecast within twice the pilot's runs stands; so does an event whose ratio 2 is below e¹.
    assert _larger_pilot_runs(claim, pilot(0.5, 0.05), forecast(6000), 0.05, 3000, 60000) is None
    assert _larger_pilot_runs(claim, pilot(0.2, 0.1), forecast(None), 0.05, 3000, 60000) is None
    # A budget whose 20% leaves less than twice the first pilot for the second: one pilot.
    assert _larger_pilot_runs(claim, pilot(0.5, 0.05), forecast(None), 0.05, 3000, 40000) is None
    assert _larger_pilot_runs(claim, SimpleNamespace(event_test=None), forecast(None), 0.05, 3000, 60000) is None
    # A float-bit event test forecast within reach: the audit refutes there, whatever the event test's forecast.
    both = forecast(None) + [SimpleNamespace(runs_at_pilot=1200)]
    assert _larger_pilot_runs(claim, pilot(0.5, 0.05), both, 0.05, 3000, 60000) is None


@pytest.mark.slow
def test_a_second_pilot_forecasts_no_audit_within_the_first_pilots_reach():
    # catalog:svt4 (true ε above the claimed 1) on a seed whose 3,000-run pilot sees its event exceed the claim but
    # forecasts beyond twice its runs: the plan runs a second pilot and forecasts no fewer runs than the first
    # pilot's reach (audits that small train statistics like the first pilot's, which did not refute there).
    from experiments.sequential_audit import _seed, _spec
    from mechanisms.catalog import get_entry

    plan = plan_budget(_spec(get_entry("svt4"), 20000, _seed(4, 500, 1), "cpu"), budget_runs=60000)
    (note,) = [n for n in plan.notes if "second pilot" in n]
    first = int(note.split("times its ")[1].split(" runs")[0])
    assert 2000 < first <= 3000 and plan.pilot_runs > 4 * first  # the second pilot: the rest of 20% of 60,000
    event = next(t for t in plan.tests if t.test == "event")
    assert event.runs_at_pilot is None or event.runs_at_pilot > 2 * first


def test_a_plan_forecasts_the_float_bit_event_test_that_refutes_at_the_smallest_audit():
    # mean_true_count divides a sum snapped to the 2^-32 grid by the exact count, 2 or 3: its outputs' low bits tell
    # the counts apart (an event of frequency about 2/3 under one input and 0 under the other), while in real
    # arithmetic its leak is a tail effect that needs tens of thousands of runs. The float-bit event test, at its
    # share of α, refutes at the smallest audit, and the plan's prediction is the fewest over its tests.
    from scipy import stats

    from audit.engine import run_audit

    entry = get_entry("mean_true_count")
    plan = plan_budget(catalog_spec(entry, 20000, 3, CriticConfig(), 0, "cpu"), budget_runs=60000)
    # The smallest audit: 200 held-out draws at a test split of one half, 400 samples; a sample costs one MI run and,
    # per input, one run of the event test and one of the float-bit event test: 5 runs.
    smallest = 400 * 5
    float_bits = next(t for t in plan.tests if t.test == "float")
    event = next(t for t in plan.tests if t.test == "event")
    assert float_bits.alpha == pytest.approx(0.2 * 0.05) and event.alpha == pytest.approx(0.8 * 0.05)
    assert float_bits.runs_at_pilot == smallest == plan.runs_at_pilot
    assert event.runs_at_pilot is None or event.runs_at_pilot > 4 * smallest
    # Independently: an event of frequency 1/4 (far below 2/3) against 0 in 400 runs per input already refutes at
    # α/2 = 0.005 each way (Clopper–Pearson from scipy's beta quantiles: 0.19 against 0.013, a ratio above e)...
    lower = stats.beta.ppf(0.005, 100, 400 - 100 + 1)
    upper = stats.beta.ppf(1 - 0.005, 1, 400)
    assert lower > math.e * upper
    # ...and fixed audits of 400 samples refute, by the float-bit event test.
    for seed in range(3):
        result = run_audit(catalog_spec(entry, 400, 100 + seed, CriticConfig(), 0, "cpu"))
        assert result.refuted and any(r["test"] == "float" for r in result.refuted_by)
        assert result.samples <= smallest
