"""Forecasts only on evidence (issue 41 §2): a not-refuted claim gets "would take N1 to N2 runs per input" only
when the event's frequencies exceed the claim by more than their standard error, else "no evidence against the
claim at this pair"; a refutation that clears its claim by less than 5% says so, with α as the chance that a
mechanism exactly at its claim is refuted."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from audit.cli.audit_command import _text
from audit.engine import run_audit
from audit.report.content import claim_outcome
from audit.result import AuditResult, CrossCheck, EventTest
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import TwoPoint
from mechanisms.snapping import snap


def _laplace(epsilon):
    """The Laplace mechanism on a sensitivity-1 sum, exactly ε-DP (snapped: no float-bit refutation)."""
    def mechanism(dbs, rng):
        return snap(dbs[:, :, 0].sum(axis=1, keepdims=True) + rng.laplace(0.0, 1.0 / epsilon, (len(dbs), 1)))
    return mechanism


def _audit(epsilon, samples, seed):
    return run_audit(AuditSpec(mechanism=_laplace(epsilon), priors=[TwoPoint(np.zeros((1, 1)), np.ones((1, 1)))],
                               claim=parse_claim("dp:1"), samples=samples, seed=seed))


@pytest.mark.parametrize("seed", [0, 3, 4, 5])
def test_a_mechanism_exactly_at_its_claim_gets_no_forecast(seed):
    # Exactly 1-DP: every tail event {y > t}, t ≥ 1, has probability ratio e exactly. (Under the rule, about one seed
    # in eight at 3,000 samples still shows a forecast: seed 2 does, its certification frequencies 1.2 standard
    # errors beyond the claim; issue 41 accepts the rule's one-standard-error threshold.)
    result = _audit(1.0, 3000, seed)
    assert result.claim_verdict == "not-refuted"
    assert claim_outcome(result) == ("not refuted", "no evidence against the claim at this pair")
    assert "would take" not in _text(result)


def test_an_underpowered_audit_of_a_leaky_mechanism_forecasts_a_range():
    # 1.3-DP audited for 1-DP with 600 runs: not refuted, and its event's frequencies lie beyond the claim.
    result = _audit(1.3, 600, 1)
    assert result.claim_verdict == "not-refuted"
    event = result.event_test
    # The evidence, computed here: both frequency pairs, moved one standard error towards the claim, still have a
    # ratio above e^1 (for a pure claim the profile's excess is positive exactly then, or for the complements).
    for (p1, p2), (n1, n2) in ((event.chosen_frequencies, event.chosen_runs),
                               ((event.p_first, event.p_second), (event.runs_per_input, event.runs_per_input))):
        low = p1 - math.sqrt(p1 * (1 - p1) / n1)
        high = p2 + math.sqrt(p2 * (1 - p2) / n2)
        assert low > math.e * high or (1 - high) > math.e * (1 - low)
    found = re.search(r"would take ([\d,]+) to ([\d,]+) runs per input", claim_outcome(result)[1])
    assert found and int(found.group(1).replace(",", "")) < int(found.group(2).replace(",", ""))
    assert "spends α again" in claim_outcome(result)[1]


def test_a_forecast_whose_ends_are_equal_gives_one_number(monkeypatch):
    import audit.report.content

    result = _audit(1.3, 600, 1)
    monkeypatch.setattr(audit.report.content, "forecast_runs", lambda claim, event, alpha: (1234, 1234))
    assert "refuting it would take about 1,234 runs per input (a forecast" in claim_outcome(result)[1]


def _refuted_at(epsilon_bound, claimed=1.0):
    event = EventTest("record 0", "E = {s > 0}, first input a, second b; neighbouring databases differ in record 0 "
                      "(a = [0.], b = [1.])", 0.0, 1000, 0.5, 0.1, 0.45, 0.12, 0.0, epsilon_bound, None)
    check = CrossCheck(f"{claimed:g}-DP", None, True, None, [], "event test", test="event", statistic=epsilon_bound,
                       threshold=claimed, alpha_spent=0.05, epsilon_prime=claimed)
    claim = parse_claim(f"dp:{claimed:g}").to_dict("mi-dp", 2)
    return AuditResult(None, "mi-dp", None, 0.05, None, 0.0, None, None, epsilon_bound, [], [check], 2000, 1.0, 0,
                       event_test=event, claim=claim, claim_verdict="refuted", claim_alpha={"event": 0.05})


def test_a_narrow_refutation_says_so_and_states_alpha():
    # python-dp's BoundedSum at exactly ε = 1 was refuted at ε ≥ 1.018 (issue 41): 1.8% above the claim.
    outcome, why = claim_outcome(_refuted_at(1.018))
    assert outcome == "refuted"
    assert f"clears the claim by only {100 * (1.018 - 1) / 1:.2g}%" in why and "less than 5%" in why
    assert "a mechanism exactly at its claim is refuted with probability at most α = 0.05" in why
    assert claim_outcome(_refuted_at(1.2)) == ("refuted", "")  # 20%: nothing to add
