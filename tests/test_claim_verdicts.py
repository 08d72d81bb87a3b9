"""One verdict about a claim: the α split, the tests that can refute it, and verdicts on mechanisms
whose true guarantee is known.

Known truths used here (independent of the code under test): the Gaussian mechanism
count + N(0, σ²) with a binary record is exactly (1/σ)-GDP (Dong, Roth and Su 2022, Theorem 2.7)
and exactly 1/(2σ²)-zCDP (Bun and Steinke 2016, Proposition 1.6); the catalog's correct entries
meet their claims and its buggy ones do not (tests/test_catalog.py checks those truths).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from audit.cli.main import main
from audit.certificates.claim_tests import (ClaimPlan, cross_checks, plan_claim_tests, record_support, smallest_refutable_runs)
from audit.engine import run_audit
from audit.result import EventTest
from audit.spec import AuditSpec
from audit.gating.assertions import ClaimRefuted
from estimators.neural import CriticConfig
from estimators.validation import InputError
# The column sums plus N(0, 1) on the 2^-32 grid: exactly 1-GDP and 0.5-zCDP for one changed binary record.
from experiments.audit_power import gaussian_count
from mechanisms.catalog import get_entry
from mechanisms.claims.notions import DifferentialPrivacy
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import Categorical, FixedRest, ProductBernoulli, ProductGaussian, TwoPoint

import separated_bounds as separated

FAST = CriticConfig(max_steps=200)
SMALL = dict(samples=2000, slices=0, critic=FAST)


BINARY = ProductBernoulli(0.5, shape=(3, 1))


def _spec(claim, **settings):
    return AuditSpec(mechanism=gaussian_count, priors=[BINARY], claim=parse_claim(claim), records=(0,),
                     **{**SMALL, **settings})


# ---------------------------------------------------------------------------------------------
# planning: which tests may refute, and α
# ---------------------------------------------------------------------------------------------

def test_record_support_from_the_prior_definitions():
    assert record_support([ProductBernoulli(0.5, shape=(3, 2))]) == 4
    assert record_support([Categorical(np.full((2, 1, 3), 1 / 3))]) == 3
    assert record_support([TwoPoint(np.zeros((2, 1)), np.ones((2, 1)))]) == 2
    assert record_support([FixedRest(np.zeros((3, 2)), 1, ProductBernoulli(0.5, shape=(1, 2)))]) == 4
    assert record_support([ProductGaussian.iid_rows([0.0], [[1.0]], 3)]) is None
    assert record_support([BINARY, ProductGaussian.iid_rows([0.0], [[1.0]], 3)]) is None


@pytest.mark.parametrize("eps, alpha", [(0.5, 0.05), (1.0, 0.025), (3.0, 0.01)])
def test_smallest_refutable_runs_for_pure_dp(eps, alpha):
    # The best outcome of n runs (all hits against none) refutes ε-DP iff some certificate the event test may use
    # certifies more than ε: the Clopper–Pearson pair at some split of α, or the odds or rate ratio
    # (tests/separated_bounds.py, from SciPy's Beta and Fisher noncentral hypergeometric laws), tried n by n.
    expected = separated.smallest(lambda n: separated.refutes_pure(n, alpha, eps))
    assert smallest_refutable_runs(DifferentialPrivacy(eps), alpha) == expected
    # The even split alone: n > log(α/2) / log(e^ε / (1 + e^ε)), more runs.
    bound = math.log(alpha / 2) / math.log(math.exp(eps) / (1 + math.exp(eps)))
    assert expected < math.floor(bound) + 1


def test_plan_splits_alpha_between_the_tests_that_can_refute():
    plan = plan_claim_tests(_spec("gdp:1"))
    # A GDP claim is also tested by the μ certificate of the event's trade-off curve (audit.certificates.gaussian_dp);
    # under float arithmetic (the default) the float-bit event test takes a fifth of the event test's share.
    assert plan.alpha_spent == pytest.approx({"mi": 0.05 / 3, "event": 0.8 * 0.05 / 3, "float": 0.2 * 0.05 / 3,
                                              "gdp": 0.05 / 3})
    assert plan.mi_alpha == plan.gdp_alpha == pytest.approx(0.05 / 3)
    assert plan.event_alpha == pytest.approx(0.8 * 0.05 / 3) and plan.float_alpha == pytest.approx(0.2 * 0.05 / 3)
    # ε-DP at ε = 2 implies 2 nats, above log 2: the MI of a binary record cannot exceed it.
    plan = plan_claim_tests(_spec("dp:2")).without_float_test()
    assert plan.alpha_spent == pytest.approx({"event": 0.05}) and plan.mi_alpha == 0.05
    assert any("cannot refute" in note and "log 2" in note for note in plan.notes)
    # An MI claim has no profile: the event test does not test it.
    plan = plan_claim_tests(_spec("mi-dp:0.1"))
    assert plan.alpha_spent == {"mi": 0.05}
    # Too few event runs to certify anything outside the profile (refuting 3-DP at α = 0.05 takes
    # 48, by the odds ratio; 10 can certify some ε > 0 but not ε > 3): said up front, no α spent.
    plan = plan_claim_tests(_spec("dp:3", event_runs=10))
    assert "event" not in plan.alpha_spent and any("cannot refute" in n for n in plan.notes)
    assert plan_claim_tests(_spec("zcdp:0.5", alpha=0.1)).without_float_test().alpha_spent == pytest.approx(
        {"mi": 0.05, "event": 0.05})
    # No claim: each test is its own statement at α.
    no_claim = AuditSpec(mechanism=gaussian_count, priors=[BINARY], notion="mi-dp", epsilon=0.1, **SMALL)
    assert plan_claim_tests(no_claim) == ClaimPlan({}, 0.05, 0.05, 2, (), 0.05)  # each a separate statement at α


def test_an_mi_pp_claim_keeps_its_mi_test_when_the_secret_takes_more_values_than_a_record():
    # The secret is column 0's sum over n = 3 binary records: 4 values, so I(g; Y) may reach log 4 = 1.386 nats,
    # above a record's log 2 = 0.693. A 1-nat MI-PP claim can be refuted by the MI test (its only test here).
    from audit.frameworks import attribute_privacy

    framework = attribute_privacy(3, 1, statistic=lambda column: column.sum(axis=1, keepdims=True))
    spec = AuditSpec(mechanism=gaussian_count, priors=[BINARY], notion="mi-pp", claim=parse_claim("mi-pp:1"),
                     framework=framework, **SMALL)
    assert record_support(spec.priors) == 2 and math.log(2) < 1.0 < math.log(3 + 1)
    plan = plan_claim_tests(spec)
    assert plan.alpha_spent == {"mi": 0.05}
    assert not any("cannot refute" in note for note in plan.notes)


def test_spec_defaults_follow_the_claim():
    spec = _spec("zcdp:0.3")
    assert spec.notion == "mi-dp" and spec.epsilon == pytest.approx(0.3)
    assert spec.event_runs == spec.samples and spec.delta == 0.0
    spec = _spec("dp:1:1e-3")
    assert spec.delta == 1e-3
    # (ε, δ) with a finite record support: Theorem 1, Part 1 (the budget itself is tested in test_claims).
    assert spec.epsilon == pytest.approx(DifferentialPrivacy(1.0, 1e-3).implied_mi_budget(record_support=2).value)
    gaussian_prior = ProductGaussian.iid_rows([0.0], [[1.0]], 3)
    spec = AuditSpec(mechanism=gaussian_count, priors=[gaussian_prior], claim=parse_claim("dp:1:1e-3"), **SMALL)
    assert spec.epsilon is None  # no MI budget: the MI-notion verdict is not given
    with pytest.raises(InputError, match="'notion'"):
        AuditSpec(mechanism=gaussian_count, priors=[BINARY], epsilon=0.1)
    with pytest.raises(InputError, match="'epsilon'"):
        AuditSpec(mechanism=gaussian_count, priors=[BINARY], notion="mi-dp")


def _event(p_lower, p_upper):
    return EventTest("record 0", "E", 0.0, 1000, p_lower, p_upper, p_lower, p_upper, 0.0, 0.0, None, alpha=0.025)


def test_cross_checks_refute_only_with_an_alpha_share():
    claim = DifferentialPrivacy(1.0)
    plan = ClaimPlan({"mi": 0.025, "event": 0.025}, 0.025, 0.025, 2)
    checks = cross_checks(claim, "mi-dp", 0.6, 0.7, _event(0.9, 0.1), plan)
    assert [c.test for c in checks] == ["mi", "event"]
    assert all(c.certified_contradiction for c in checks)  # 0.6 > 0.5 nats; 0.9 > e · 0.1
    assert checks[0].statistic == 0.6 and checks[0].threshold == 0.5 and checks[0].alpha_spent == 0.025
    unplanned = cross_checks(claim, "mi-dp", 0.6, 0.7, _event(0.9, 0.1), ClaimPlan({"event": 0.05}, 0.05, 0.05, 2))
    assert not unplanned[0].certified_contradiction and unplanned[1].certified_contradiction
    assert not cross_checks(claim, "mi-dp", 0.1, 0.2, _event(0.5, 0.3), plan)[1].certified_contradiction


# ---------------------------------------------------------------------------------------------
# verdicts on mechanisms with known guarantees (small budgets)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("claim", ["gdp:1", "zcdp:0.5"])
@pytest.mark.train
def test_true_claims_of_the_gaussian_mechanism_are_not_refuted(claim, seed):
    result = run_audit(_spec(claim, seed=seed))
    assert result.claim_verdict == "not-refuted" and result.refuted_by == []


@pytest.mark.parametrize("claim", ["gdp:0.3", "zcdp:0.05", "dp:1:0.01"])
@pytest.mark.train
def test_false_claims_of_the_gaussian_mechanism_are_refuted(claim):
    result = run_audit(_spec(claim, seed=1))
    assert result.claim_verdict == "refuted"
    evidence = result.refuted_by[0]
    assert evidence["test"] == "event" and evidence["statistic"] > evidence["threshold"]
    assert evidence["alpha_spent"] == result.claim_alpha["event"]
    assert sum(result.claim_alpha.values()) == pytest.approx(result.alpha)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", ["laplace_sum", "randomized_response"])
def test_correct_catalog_entries_are_not_refuted_at_their_claim(name, seed, assert_claim):
    entry = get_entry(name)
    assert_claim(entry.mechanism, entry.claimed, prior=entry.prior, max_runs=6000, seed=seed)


@pytest.mark.parametrize("name", ["histogram_buggy", "svt5"])
def test_buggy_catalog_entries_are_refuted(name, assert_claim):
    entry = get_entry(name)
    with pytest.raises(ClaimRefuted):
        assert_claim(entry.mechanism, entry.claimed, prior=entry.prior, max_runs=6000, seed=1)


@pytest.mark.train
def test_json_carries_the_claim_the_verdict_and_the_budget(capsys):
    argv = ["audit", "--mechanism", "catalog:histogram_buggy", "--samples", "2000", "--slices", "0",
            "--set", "critic.max_steps=200", "--json"]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["claim"]["notion"] == "dp" and payload["claim"]["parameters"] == {"epsilon": 0.5}
    assert payload["claim"]["implied_mi_budget"] == pytest.approx(0.125)
    assert "Kairouz" in payload["claim"]["profile_source"] and payload["claim"]["origin"] == "catalog entry histogram_buggy"
    assert payload["claim_verdict"] == "refuted" and payload["refuted_by"]
    assert {"test", "statistic", "threshold", "alpha_spent"} <= set(payload["refuted_by"][0])
    assert payload["epsilon"] == pytest.approx(0.125) and payload["notion"] == "mi-dp"
    assert payload["samples"] == sum(payload["samples_by_purpose"].values())
    assert payload["samples_by_purpose"]["mi"] == 2000
    assert payload["event_test"]["runs_per_input"] == 2000
    made = payload["event_test"]["runs_made"]  # a rate-ratio certificate's Poisson numbers of runs, within the budget
    assert payload["samples_by_purpose"]["event_certification"] == (4000 if made is None else sum(made))
    assert made is None or max(made) <= 2000
    assert payload["event_test"]["alpha"] == pytest.approx(payload["claim_alpha"]["event"])


@pytest.mark.train
def test_exit_codes_gate_ci(capsys):
    fast = ["--samples", "2000", "--slices", "0", "--set", "critic.max_steps=200", "--quiet"]
    assert main(["audit", "--mechanism", "catalog:histogram_buggy", *fast, "--fail-on-violation"]) == 1
    assert main(["audit", "--mechanism", "catalog:histogram_buggy", *fast]) == 0
    assert main(["audit", "--mechanism", "catalog:laplace_sum", *fast, "--fail-on-violation"]) == 0
    assert main(["audit", "--mechanism", "catalog:laplace_sum", "--claim", "zcdp:-1", "--fail-on-violation"]) == 2
    out = capsys.readouterr().out
    assert out.lstrip().startswith("claim 0.5-DP: REFUTED")  # the terminal summary leads with the claim


def test_early_errors_come_before_sampling(capsys, tmp_path):
    # A missing report folder fails at once (the audit would take minutes at this budget).
    assert main(["audit", "--mechanism", "catalog:laplace_sum", "--samples", "10000000",
                 "--report", str(tmp_path / "missing" / "r.html")]) == 2
    assert "--report" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.train
def test_refuted_rate_at_the_claims_boundary_stays_within_alpha():
    """A mechanism exactly at its claim: the Gaussian mechanism claimed 1-GDP, whose trade-off curve it
    attains exactly (every event of the likelihood-ratio test lies on the curve). Over repeated audits
    with independent seeds the rate of 'refuted' stays within α (binomial slack)."""
    from audit.certificates.event_bounds import clopper_pearson

    repeats = 30
    refuted = sum(run_audit(_spec("gdp:1", seed=100 + i, samples=1500)).refuted for i in range(repeats))
    # One-sided Clopper–Pearson at 99%: the true rate is at most α unless this fails.
    lower, _ = clopper_pearson(refuted, repeats, 0.01)
    assert float(lower) <= 0.05, f"{refuted}/{repeats} refuted"


@pytest.mark.train
def test_readme_zcdp_and_gdp_examples(tmp_path, capsys):
    """The claim grammar page's Gaussian-sum example (at a reduced budget): its true claims stand, the
    false one falls."""
    from docs_examples import DOCS, code_block

    block = code_block(DOCS / "reference" / "claims.md", "python", "gaussian_sum.py")
    (tmp_path / "gaussian_sum.py").write_text(block)
    base = ["audit", "--mechanism", f"{tmp_path / 'gaussian_sum.py'}:noisy_sum", "--prior", "builtin:bernoulli",
            "--n", "3", "--k", "1", "--records", "0", "--samples", "2000", "--slices", "0",
            "--set", "critic.max_steps=200", "--json", "--seed", "3"]
    verdicts = {}
    for claim in ("zcdp:0.5", "gdp:1", "gdp:0.5"):
        assert main([*base, "--claim", claim]) == 0
        verdicts[claim] = json.loads(capsys.readouterr().out)["claim_verdict"]
    assert verdicts == {"zcdp:0.5": "not-refuted", "gdp:1": "not-refuted", "gdp:0.5": "refuted"}
