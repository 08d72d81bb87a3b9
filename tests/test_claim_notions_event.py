"""Claims of every profile notion (zCDP, GDP, RDP) against the event test, small and large (issue 32 A1).

The odds- and rate-ratio certificates bound pure ε-DP only. An audit of a zCDP, GDP or RDP claim
too large for its runs to refute used to choose them anyway (δ = 0, the event test untargeted)
and then fail after the whole audit. Known truths used here, independent of the code under test:
the Laplace sum of the catalog (``laplace_sum``, scale k/ε at ε = 1, ℓ₁ sensitivity k = 2) and
count + N(0, 1) with a binary record; a 0.005-zCDP or 0.05-GDP claim is false for both (each
distinguishes its two inputs far better: the Gaussian's trade-off is G₁ (Dong, Roth and Su 2022,
Theorem 2.7), and ρ-zCDP with ρ = 0.005 implies (ε, δ)-DP at ε = ρ + 2√(ρ log(1/δ)) (Bun and
Steinke 2016, Proposition 1.3), 0.30 at δ = 10⁻³, which the Laplace pair's tails exceed).
"""

from __future__ import annotations

import math

import pytest

from audit.cli.main import main
from audit.certificates.claim_tests import ClaimPlan, cross_checks
from audit.engine import run_audit
from audit.result import EventTest
from audit.spec import AuditSpec
from estimators.neural import CriticConfig
from experiments.audit_power import gaussian_count  # the column sums plus N(0, 1): 1-GDP, 0.5-zCDP
from mechanisms.catalog import get_entry
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import ProductBernoulli


def _mechanism(name):
    if name == "gaussian_count":
        return gaussian_count, ProductBernoulli(0.5, shape=(3, 1))
    entry = get_entry(name)
    return entry.mechanism, entry.prior


LARGE = ["zcdp:8", "gdp:8", "rdp:2:5"]
SMALL = ["zcdp:0.005", "gdp:0.05", "rdp:2:0.005"]


@pytest.mark.train
@pytest.mark.parametrize("mechanism", ["laplace_sum", "gaussian_count"])
@pytest.mark.parametrize("claim", LARGE + SMALL)
def test_profile_claims_large_and_small_get_a_verdict(mechanism, claim):
    function, prior = _mechanism(mechanism)
    result = run_audit(AuditSpec(mechanism=function, priors=[prior], claim=parse_claim(claim), records=(0,),
                                 samples=2000, slices=0, critic=CriticConfig(max_steps=100), seed=3))
    # The event's certificate is a Clopper–Pearson pair, comparable with the claim's profile.
    assert result.event_test is not None and result.event_test.certificate == "clopper-pearson"
    assert result.claim_verdict == ("not-refuted" if claim in LARGE else "refuted")


@pytest.mark.train
@pytest.mark.parametrize("argv", [
    ["--mechanism", "catalog:laplace_sum", "--claim", "gdp:8", "--samples", "20000"],
    ["--mechanism", "catalog:laplace_sum", "--claim", "rdp:2:5", "--samples", "400"],
])
def test_issue_cases_exit_zero(argv, capsys):
    assert main(["audit", *argv]) == 0
    captured = capsys.readouterr()
    # Said before any run (on stderr) and in the headline: no test of this budget can refute the claim.
    assert "it is reported as not refuted" in captured.err
    assert "CANNOT BE REFUTED AT THIS BUDGET" in captured.out


def _event(certificate, p_lower, p_upper):
    return EventTest("record 0", "E", 0.0, 1000, p_lower, p_upper, p_lower, p_upper, 0.0, math.log(p_lower / p_upper),
                     None, alpha=0.05, certificate=certificate, rate_ratio_lower=p_lower / p_upper,
                     odds_ratio_lower=p_lower / p_upper, runs_made=[1000, 1000])


@pytest.mark.parametrize("certificate", ["odds-ratio", "rate-ratio"])
def test_ratio_certified_event_checks_a_profile_claim_by_its_clopper_pearson_pair(certificate):
    plan = ClaimPlan({"event": 0.05}, 0.05, 0.05, 2)
    # 0.01-zCDP implies (0.535, 10⁻³)-DP (Bun and Steinke 2016, Proposition 1.3: ε = ρ + 2√(ρ log(1/δ))),
    # and 0.9 − e^0.535 · 0.01 = 0.883 > 10⁻³: the pair lies outside the claim's profile.
    refuting = cross_checks(parse_claim("zcdp:0.01"), "mi-dp", None, 0.0, _event(certificate, 0.9, 0.01), plan)
    assert refuting[-1].test == "event" and refuting[-1].certified_contradiction
    # The Gaussian mechanism of shift μ = √(2ρ) = 4 is 8-zCDP, so the claim's profile lies above its curve:
    # δ(0) ≥ 2Φ(μ/2) − 1 = 0.954 > 0.5 − 0.45, and p̲ − e^ε′ p̄ < 0.05 for every ε′ ≥ 0 (so is the complement's).
    kept = cross_checks(parse_claim("zcdp:8"), "mi-dp", None, 0.0, _event(certificate, 0.5, 0.45), plan)
    assert kept[-1].test == "event" and not kept[-1].certified_contradiction
