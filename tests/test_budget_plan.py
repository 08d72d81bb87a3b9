"""Budget plans (audit.budget_plan): the excess scenario's event and the predicted runs, against
independent computations."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from audit.budget_plan import excess_claim, plan_budget, profile_event
from audit.event_test import clopper_pearson
from estimators.neural import CriticConfig
from estimators.validation import InputError
from experiments.audit_power import catalog_spec
from mechanisms.catalog import get_entry
from mechanisms.claims import parse_claim


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
    # A prediction beyond twice the pilot's runs (or none) says the pilot's event may be pessimistic for it.
    far = event.runs_at_pilot is None or event.runs_at_pilot > 2 * plan.pilot_runs
    assert far == ("chosen for its own" in event.note)


def test_plan_needs_a_claim_and_a_positive_excess():
    entry = get_entry("laplace_sum")
    spec = catalog_spec(entry, 2000, 0, CriticConfig(), 0, "cpu")
    with pytest.raises(InputError, match="excess"):
        plan_budget(spec, excess=0)
    with pytest.raises(InputError, match="claim"):
        plan_budget(replace(spec, claim=None, epsilon=0.1))
    assert np.isfinite(plan_budget(spec, pilot_runs=1500).seconds_per_run)
