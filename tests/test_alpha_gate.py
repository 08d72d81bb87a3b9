"""The α accounting of the verdicts that gate and of the statements that pick among certificates: which tests'
rejections set ``--fail-on-violation``'s exit status, and which bounds the statement's "It is not ε-DP for any
ε < …" takes the largest of, at which levels they were certified, summed and compared with the level stated.

The levels are read from the certificates themselves (the engine's calls of ``certify``, the MI test, and of
``event_search``, the event tests), never from the plan the code reports, and α is the audit's ``--alpha``.
A test "gates" when its rejection alone makes the audit exit with status 1; the gate's type-I error is then
at most the sum of the gating tests' levels (union bound), which must be at most α.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from audit.cli.main import main

ALPHA = 0.05

MECHANISM = '''
import numpy as np


def laplace_sum(dbs, rng):
    """The records' sum plus Laplace noise of scale 1: 1-DP for records in {0, 1} (sensitivity 1)."""
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(scale=1.0, size=(len(dbs), 1))
'''


def _pair_files(tmp_path) -> str:
    """``--pair``'s value: two databases of 3 records, 0s against a 1 in the first record, saved in ``tmp_path``."""
    first = np.zeros((3, 1))
    second = first.copy()
    second[0, 0] = 1.0
    np.save(tmp_path / "a.npy", first)
    np.save(tmp_path / "b.npy", second)
    return f"{tmp_path / 'a.npy'},{tmp_path / 'b.npy'}"


@pytest.fixture
def pair_audit(tmp_path):
    """The flags of a fast audit of a 1-DP mechanism on one neighbouring pair, claim dp:1 (true), real arithmetic:
    classifier critics, so the MI test does not test the claim (its bound is a separate statement)."""
    (tmp_path / "mech.py").write_text(MECHANISM, encoding="utf-8")
    return ["audit", "--mechanism", f"{tmp_path / 'mech.py'}:laplace_sum", "--pair",
            _pair_files(tmp_path), "--claim", "dp:1", "--samples", "1000",
            "--arithmetic", "ideal", "--alpha", str(ALPHA), "--quiet", "--json", "--fail-on-violation"]


LEAKY = '''
import numpy as np


def leaky_sum(dbs, rng):
    """The records' sum plus Laplace noise of scale 0.3: far from 1-DP, so every DP bound has something to certify."""
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(scale=0.3, size=(len(dbs), 1))
'''


def _levels(monkeypatch, force_mi_rejection: bool) -> dict:
    """Wrap the engine's certificates, recording each call's level; with ``force_mi_rejection`` the MI test's
    certified bound is replaced by one far above any MI budget: the outcome a false MI rejection has (probability at
    most its level whatever the mechanism)."""
    import audit.engine as engine

    levels = {"mi": [], "event": []}
    certify, search = engine.certify, engine.event_search

    def recorded_certify(fits, *, alpha, **rest):
        levels["mi"].append(alpha)
        found = certify(fits, alpha=alpha, **rest)
        return dataclasses.replace(found, lower_bound=1e3) if force_mi_rejection else found

    def recorded_search(candidates, *, alpha, **rest):
        levels["event"].append(alpha)
        return search(candidates, alpha=alpha, **rest)

    monkeypatch.setattr(engine, "certify", recorded_certify)
    monkeypatch.setattr(engine, "event_search", recorded_search)
    return levels


def test_fail_on_violation_spends_at_most_alpha(pair_audit, monkeypatch, capsys):
    # The mechanism meets the claim; the MI certificate is made to reject, as it may by chance.
    levels = _levels(monkeypatch, force_mi_rejection=True)
    status = main(pair_audit)
    capsys.readouterr()
    assert len(levels["mi"]) == 1 and levels["event"]
    mi_gates = status == 1  # the event tests did not refute a true claim (checked without the forcing below)
    gate = (levels["mi"][0] if mi_gates else 0.0) + sum(levels["event"])
    # By hand: the event tests spend the claim's α (0.05 here, the float-bit test being off under ideal arithmetic);
    # the MI certificate, a separate statement, is made at α too; only the event tests may gate.
    assert sum(levels["event"]) == pytest.approx(ALPHA)
    assert gate <= ALPHA * (1 + 1e-12), (f"--fail-on-violation exits 1 on tests certified at {levels} together: a type-I "
                                         f"error up to {gate:g} > α = {ALPHA:g}")


def test_fail_on_violation_unforced_true_claim_passes(pair_audit, monkeypatch, capsys):
    levels = _levels(monkeypatch, force_mi_rejection=False)
    assert main(pair_audit) == 0
    capsys.readouterr()
    assert levels["mi"] == [pytest.approx(ALPHA)]  # the MI bound's level: a separate statement at α


@pytest.mark.train
def test_the_largest_dp_bound_is_stated_at_the_levels_of_the_bounds_it_was_chosen_among(tmp_path, monkeypatch, capsys):
    # No claim: the MI test, the event test and the float-bit event test each certify a DP ε lower bound, and the
    # statement quotes the largest. Which one is largest depends on the data, so the quoted bound is false when any of
    # them is (union bound): its level is the sum of theirs.
    (tmp_path / "leak.py").write_text(LEAKY, encoding="utf-8")
    levels = _levels(monkeypatch, force_mi_rejection=False)
    main(["audit", "--mechanism", f"{tmp_path / 'leak.py'}:leaky_sum", "--pair", _pair_files(tmp_path),
          "--notion", "mi-dp", "--epsilon", "0.5", "--samples", "1000", "--alpha", str(ALPHA), "--quiet", "--json"])
    text = capsys.readouterr().out
    payload = json.loads(text)
    statement = payload["statement"]
    match = re.search(r"It is not ε-DP for any ε < [^(]*\((.*)\)\.$", statement)
    assert match, statement
    confidence = float(re.search(r"certified at ([0-9.]+)%", match[1])[1]) / 100
    # The bounds compared: each one computed (the MI test's, the event tests' in the order they ran), at the level
    # its certificate was called with.
    compared = [level for bound, level in zip(
        [payload["dp_epsilon_lower_bound_mi"], (payload["event_test"] or {}).get("epsilon_lower_bound"),
         (payload["float_event_test"] or {}).get("epsilon_lower_bound")], levels["mi"] + levels["event"])
        if bound is not None]
    assert len(compared) == 3  # by hand: 0.05 each, 0.15 together
    assert 1 - confidence >= sum(compared) * (1 - 1e-9), (f"the statement quotes the largest of bounds certified at "
                                                          f"{compared} as certified at {confidence:.4g}")


@pytest.mark.parametrize("claim, arithmetic", [("dp:1", "float"), ("dp:1", "ideal"), ("gdp:1", "float"),
                                               ("zcdp:0.5", "float")])
def test_claim_alpha_is_what_the_certificates_were_called_with(pair_audit, monkeypatch, capsys, claim, arithmetic):
    # Each test's share in claim_alpha against the level its certificate was called with (the event tests' levels and
    # the μ certificate's, read from the calls of event_search), and the shares' sum against α.
    import audit.engine as engine

    calls = []
    search = engine.event_search

    def recorded_search(candidates, *, alpha, gdp_alpha=None, **rest):
        calls.append((alpha, gdp_alpha))
        return search(candidates, alpha=alpha, gdp_alpha=gdp_alpha, **rest)

    monkeypatch.setattr(engine, "event_search", recorded_search)
    flags = list(pair_audit)
    flags[flags.index("--claim") + 1] = claim
    flags[flags.index("--arithmetic") + 1] = arithmetic
    main(flags)
    payload = json.loads(capsys.readouterr().out)
    shares = payload["claim_alpha"]
    assert sum(shares.values()) == pytest.approx(ALPHA)
    assert calls[0][0] == pytest.approx(shares["event"]) == pytest.approx(payload["event_test"]["alpha"])
    if "gdp" in shares:  # the μ certificate of the event's runs at its own share
        assert calls[0][1] == pytest.approx(shares["gdp"])
    if "float" in shares:
        assert len(calls) == 2 and calls[1][0] == pytest.approx(shares["float"])
    else:  # no float-bit test, or none that may refute: the event test holds the whole of the event tests' share
        assert all(alpha == pytest.approx(shares["event"]) for alpha, _ in calls[:1])
    assert {check["test"]: check["alpha_spent"] for check in payload["cross_checks"]
            if check["alpha_spent"] is not None} == pytest.approx(shares)


def _shown_level(result) -> float:
    """1 − the confidence the statement's last sentence states for its DP ε lower bound."""
    return 1 - float(re.search(r"It is not ε-DP for any ε < .*certified at ([0-9.]+)%", result.statement())[1]) / 100


def _result(**changes):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    import serialisation_cases

    return dataclasses.replace(serialisation_cases._audit_result(), **changes)


def test_the_dp_bound_of_a_look_chosen_by_the_data_is_stated_at_the_looks_levels_together():
    # A sequential audit's result is its deciding look's (the first that refuted): which look's bounds are quoted
    # depends on the data, so a quoted bound is false when that bound of any look is. Two looks at 0.001 and 0.049
    # of α = 0.05, each splitting its level between the MI test and the event test as the deciding one does
    # (half each): the MI and event bounds of either look are false with probability at most 0.05 together.
    look = _result().event_test
    result = _result(alpha=0.05, claim_alpha={"mi": 0.0005, "event": 0.0005},
                     event_test=dataclasses.replace(look, alpha=0.0005),
                     sequential={"looks_run": 1, "schedule": [{"alpha": 0.001}, {"alpha": 0.049}]})
    assert _shown_level(result) == pytest.approx(0.05)
    # Under both relations the shown relation is the refuting one: its bounds at α/2 = 0.025 stand for either's.
    both = _result(alpha=0.05, claim_alpha={"mi": 0.0125, "event": 0.0125, "mi (add-remove)": 0.0125,
                                            "event (add-remove)": 0.0125},
                   event_test=dataclasses.replace(look, alpha=0.0125),
                   relations={"tested": ["replace-one", "add-remove"], "relation": "replace-one",
                              "refuted_under": ["replace-one"], "split": "bonferroni", "results": [],
                              "alpha_each": {"replace-one": 0.025, "add-remove": 0.025}})
    assert _shown_level(both) == pytest.approx(0.05)
    # A fixed audit of one relation: the levels of its bounds as they are (0.025 + 0.025).
    assert _shown_level(_result()) == pytest.approx(0.05)
