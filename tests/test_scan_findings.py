"""A scan's finding: within a look the tests after the first that refutes are not run, and the finding reports the
certificate of the test that refuted (:func:`audit.engine._run_audit`'s ``stop_at_refutation``,
:func:`audit.scan.case_audit.refuting_test`).

The module scanned here releases a clamped mean with Laplace noise of scale Δ/(c·ε), Δ = 10/n: c times too little
noise, so it is c·ε-DP and not ε-DP. Its cases are audited as the scan audits them (:func:`audit.scan.case_audit.audit_case`).
"""

from __future__ import annotations

import importlib
import math
import sys

import pytest
from scipy.stats import beta

MODULE = '''
import numpy as np

CALLS = [0]


def _noisy_mean(array, epsilon, factor, random_state):
    CALLS[0] += 1
    values = np.clip(np.asarray(array, dtype=float), 0.0, 10.0)
    return float(values.mean() + np.random.default_rng(random_state).laplace(scale=10.0 / len(values) / (factor * epsilon)))


def mean_short_2_2(array, epsilon=1.0, bounds=None, random_state=None):
    return _noisy_mean(array, epsilon, 2.2, random_state)


def mean_short_1_5(array, epsilon=1.0, bounds=None, random_state=None):
    return _noisy_mean(array, epsilon, 1.5, random_state)
'''

#: The float-bit event test's part of the event test's share of α (the claim tests' plan, docs/explanation).
FLOAT_SHARE = 0.2


@pytest.fixture
def short_noise(plant):
    """(the module, its cases by entry-point name) at ε = 1 on the "ends" pair with bounds given."""
    from audit.scan.case_audit import list_cases

    path = plant("short_noise", MODULE)
    sys.modules.pop("short_noise", None)
    _, cases = list_cases(str(path), (1.0,))
    module = importlib.import_module("short_noise")  # the module the cases call (listing imported it)
    chosen = {c.entry.name: c for c in cases if "bounds=" in c.settings_text and c.pair.family == "ends"}
    yield module, chosen
    sys.modules.pop("short_noise", None)


def _audited(module, case, monkeypatch, stop: bool | None = None, seed: int = 0):
    """(outcome, mechanism calls, the sequential audit, calls made by each float-bit event test's search) of
    ``case`` audited as a scan does with ``seed``; ``stop=False`` forces every test of a look to run (the engine's
    default)."""
    import audit.engine as engine
    import audit.gating.sequential as sequential
    from audit.scan.case_audit import audit_case
    from audit.statistics.arithmetic import is_float_bit_candidate

    audits, float_calls = [], []
    run, search = sequential.run_sequential_audit, engine._search

    def recorded(*args, **kwargs):
        if stop is not None:
            kwargs["stop_at_refutation"] = stop
        audits.append(run(*args, **kwargs))
        return audits[-1]

    def counted(spec, pairs, *args, **kwargs):
        before = module.CALLS[0]
        found = search(spec, pairs, *args, **kwargs)
        if is_float_bit_candidate(pairs[0]):
            float_calls.append(module.CALLS[0] - before)
        return found

    with monkeypatch.context() as patched:
        patched.setattr(sequential, "run_sequential_audit", recorded)
        patched.setattr(engine, "_search", counted)
        module.CALLS[0] = 0
        outcome = audit_case(case, alpha=0.05, max_runs=6000, timeout=60, seed=seed)
    return outcome, module.CALLS[0], audits[0], float_calls


def test_a_refuted_scan_case_does_not_run_the_float_bit_test_after_the_event_test_refuted(short_noise, monkeypatch):
    """The event test refutes at look 2 (not the early look, which runs no float-bit test): the scan's case makes
    exactly the calls of the audit that runs every test less the calls of that look's float-bit test, counted on
    the mechanism; the same look refutes with the same evidence."""
    module, cases = short_noise
    case = cases["mean_short_2_2"]
    full, full_calls, full_audit, float_calls = _audited(module, case, monkeypatch, stop=False)
    scanned, calls, audit, scanned_float_calls = _audited(module, case, monkeypatch)
    assert full["status"] == scanned["status"] == "finding"
    assert scanned["refuting_test"] == full["refuting_test"] == "event"
    assert scanned["looks"] == full["looks"] >= 2 and not audit.schedule[scanned["looks"] - 1].early
    assert "float" in {r["test"] for r in full_audit.result.refuted_by}  # the float-bit test ran and refuted too
    assert float_calls and float_calls[-1] > 0 and len(scanned_float_calls) == len(float_calls) - 1
    assert calls == full_calls - float_calls[-1]
    assert scanned["runs"] == full["runs"] - float_calls[-1]
    assert (scanned["hits"], scanned["runs_per_input"], scanned["epsilon_lower_bound"]) == \
        (full["hits"], full["runs_per_input"], full["epsilon_lower_bound"])
    assert audit.result.float_event_test is None
    assert any("float-bit event test was not run" in n for n in audit.result.notes)
    assert "float" in audit.result.claim_alpha  # its share of α was fixed before sampling and stays in the split


@pytest.mark.parametrize("entry, test, share, seed", [("mean_short_2_2", "event", 1 - FLOAT_SHARE, 0),
                                                      ("mean_short_1_5", "float", FLOAT_SHARE, 1)])
def test_a_finding_reports_the_certificate_of_the_test_that_refuted_it(short_noise, monkeypatch, entry, test, share,
                                                                       seed):
    """The finding names the refuting test, its share of the look's α (the event test's and the float-bit test's
    split of it, no MI test: its critics are the event test's classifiers), and that test's certified ε, recomputed
    here from the finding's counts: the rate-ratio certificate's exact conditional test (Przyborowski and
    Wilenski 1940), X₁ | X₁ + X₂ = s ~ Binomial(s, θ), θ̲ its one-sided Clopper–Pearson lower bound at the
    share, ε ≥ log(θ̲/(1 − θ̲)). Which test refutes first at look 2 is the seed's draw: with seed 1 the event
    test misses mean_short_1_5 there and the float-bit test refutes it."""
    from audit.scan.report import _finding_items

    module, cases = short_noise
    outcome, _, audit, _ = _audited(module, cases[entry], monkeypatch, seed=seed)
    assert outcome["status"] == "finding" and outcome["refuting_test"] == test
    look_alpha = audit.looks[-1].alpha
    assert outcome["refuting_alpha"] == pytest.approx(share * look_alpha, rel=1e-12)
    assert outcome["certificate"] == "rate-ratio"
    (first, second), alpha = outcome["hits"], outcome["refuting_alpha"]
    theta = beta.ppf(alpha, first, second + 1)
    assert outcome["epsilon_lower_bound"] == pytest.approx(math.log(theta / (1 - theta)), rel=1e-9)
    assert outcome["epsilon_lower_bound"] > 1.0
    words = {"event": "of the event test,", "float": "of the float-bit event test,"}[test]
    line = _finding_items(outcome, "findings/01", 6000)[2]
    assert f"certificate rate-ratio {words} ε ≥ {outcome['epsilon_lower_bound']:.3g} at α = {alpha:.3g}" in line


@pytest.mark.train
def test_an_audit_that_stops_at_the_mi_test_runs_no_event_test_and_reports_the_mi_bound():
    """A record read almost without noise under a Bernoulli prior (neural critics: the MI test tests the claim
    at its share): the MI test refutes 0.1-DP first, and with ``stop_at_refutation`` neither event test runs.
    The calls saved, counted on the mechanism, are the audit's that runs them all less its MI sample's; the α
    split is the same, and a scan's finding shows the MI bound as its certificate."""
    import dataclasses
    from types import SimpleNamespace

    import numpy as np

    from audit.engine import _run_audit, audit_runner
    from audit.gating.assertions import claim_spec
    from audit.scan.case_audit import _evidence
    from audit.scan.report import _refuting
    from mechanisms.inputs.priors import ProductBernoulli

    calls = [0]

    def leak(db, rng):
        calls[0] += 1
        return float(db[0, 0] + rng.normal(0, 0.05))

    spec = claim_spec(leak, "dp:0.1", prior=ProductBernoulli(np.full((3, 1), 0.5)), per_database=True, seed=1)
    spec = dataclasses.replace(spec, samples=1000, event_runs=300)
    made, results = [], []
    for stop in (False, True):
        calls[0] = 0
        with audit_runner(spec) as runner:
            results.append(_run_audit(spec, runner, stop_at_refutation=stop))
        made.append(calls[0])
    full, stopped = results
    assert {r["test"] for r in full.refuted_by} == {"mi", "event", "float"}
    assert [r["test"] for r in stopped.refuted_by] == ["mi"] and stopped.refuted
    assert stopped.claim_alpha == full.claim_alpha and set(full.claim_alpha) == {"mi", "event", "float"}
    assert stopped.event_test is None and stopped.float_event_test is None
    assert stopped.lower_bound == full.lower_bound
    assert made[0] - made[1] == sum(n for purpose, n in full.samples_by_purpose.items() if purpose != "mi") > 0
    assert any("event tests were not run" in n for n in stopped.notes)
    audit = SimpleNamespace(result=stopped, runs=made[1], looks=[1], schedule=[1], runs_to_refute=None)
    outcome = {**_evidence(audit), "alpha": spec.alpha}
    assert (outcome["refuting_test"], outcome["refuting_alpha"]) == ("mi", full.claim_alpha["mi"])
    assert outcome["certificate"] == "MI lower bound" and outcome["mi_lower_bound"] == stopped.lower_bound
    assert "hits" not in outcome
    assert _refuting(outcome).startswith(f" of the MI test, I ≥ {stopped.lower_bound:.3g} nats at α = ")
