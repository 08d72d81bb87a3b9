"""One rule decides where the odds- and rate-ratio certificates apply (audit.certificates.claim_tests.uses_ratio_certificates).

The rule's statement: they bound pure ε-DP only, so the event test may certify by them at δ = 0 with no claim or a
pure ε-DP claim (ε-LDP, which implies ε-DP, and ``dp:EPS:0`` included), never at δ > 0 nor for any other notion.
The event search's choice (``choice_settings``), the engine's event searches, the family pilot's choice and the
refutation-runs prediction all take that decision from it; each is checked here against the statement written out.
"""

from __future__ import annotations

import types

import pytest

from mechanisms.claims.parsing import parse_claim

from audit.certificates.claim_tests import uses_ratio_certificates

#: claim text (None: no claim) -> whether it is a pure ε-DP claim, from the claims' definitions.
PURE = {None: True, "dp:1": True, "dp:0.3:0": True, "ldp:2": True, "dp:1:1e-5": False, "gdp:1": False,
        "zcdp:0.5": False, "rdp:2:0.3": False, "mi-dp:0.1": False, "mi-pp:0.1": False}
DELTAS = (0.0, 1e-9, 1e-5, 0.01)
CASES = [(text, delta) for text in PURE for delta in DELTAS]


def _claim(text):
    return None if text is None else parse_claim(text)


def _expected(text, delta: float) -> bool:
    return delta == 0 and PURE[text]


@pytest.mark.parametrize("text, delta", CASES)
def test_the_rule_and_the_event_searchs_choice_give_the_statements_decision(text, delta):
    from audit.search.event_search import choice_settings

    claim = _claim(text)
    assert uses_ratio_certificates(claim, delta) is _expected(text, delta)
    assert choice_settings(100, 0.05, delta, claim)["pure_dp"] is _expected(text, delta)
    assert choice_settings(100, 0.05, delta, claim, pure_certificates=False)["pure_dp"] is False
    # The event test that does not test the claim (claim None) keeps the audit's claim's certificates.
    pure = uses_ratio_certificates(claim, delta)
    assert choice_settings(100, 0.05, delta, None, pure_certificates=pure)["pure_dp"] is _expected(text, delta)


@pytest.mark.parametrize("text, delta", CASES)
def test_the_engines_event_search_gets_the_statements_decision(monkeypatch, text, delta):
    import audit.engine as engine

    seen = {}
    monkeypatch.setattr(engine, "event_search", lambda pairs, **kw: seen.update(kw))
    spec = types.SimpleNamespace(claim=_claim(text), delta=delta, event_runs=100, pilot_for_runs=None)
    for target in (spec.claim, None):  # the event test testing the claim, or not
        engine._search(spec, [], None, None, 0.05, target, 0.05)
        assert seen["pure_certificates"] is _expected(text, delta)


@pytest.mark.parametrize("text", [t for t in PURE if t is not None and not t.startswith("mi-")])
def test_the_refutation_runs_prediction_is_a_fresh_audit_at_delta_zero(monkeypatch, text):
    import audit.gating.refutation_runs as refutation_runs

    seen = []
    monkeypatch.setattr(refutation_runs, "predicted_objective", lambda *a, pure_dp, **kw: seen.append(pure_dp) or 2.0)
    refutation_runs.runs_to_refute(parse_claim(text), 0.9, 0.1, 0.05)
    assert seen and all(p is _expected(text, 0.0) for p in seen)
