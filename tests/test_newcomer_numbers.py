"""The numbers a newcomer reads twice read alike, and say what they are: the α split of a claim audited under both
relations (how α is divided between the relations, then between each relation's tests). Results built by hand
(tests/serialisation_cases.py); each expected string is written out here, its numbers computed in the test."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import serialisation_cases  # noqa: E402
from audit.cli.audit_command import _text  # noqa: E402
from audit.report.content import facts, mi_part  # noqa: E402
from audit.result import CrossCheck  # noqa: E402

ALPHA = 0.05


def _both(add_remove_shares: dict, refuted_under=("replace-one",)):
    """A claim audited under both relations at α/2 each: replace-one's MI and event tests at a quarter of α each,
    add-remove's tests at ``add_remove_shares``; the MI test refutes under the relations in ``refuted_under``."""
    half = ALPHA / 2
    replace_one = {"mi": half / 2, "event": half / 2}
    checks = []
    for relation, shares in (("replace-one", replace_one), ("add-remove", add_remove_shares)):
        for test, share in shares.items():
            refutes = test == "mi" and relation in refuted_under
            checks.append(CrossCheck(f"1-DP ({relation})", 0.5, refutes, refutes, ["Theorem 1"],
                                     f"{test} under {relation}", test=test, statistic=0.6 if refutes else 0.1,
                                     threshold=0.5, alpha_spent=share, relation=relation))
    claim_alpha = {**replace_one, **{f"{t} (add-remove)": a for t, a in add_remove_shares.items()}}
    results = [{"relation": r, "alpha": half, "claim_alpha": shares}
               for r, shares in (("replace-one", replace_one), ("add-remove", add_remove_shares))]
    relations = {"tested": ["replace-one", "add-remove"], "alpha_each": {"replace-one": half, "add-remove": half},
                 "split": "bonferroni", "refuted_under": list(refuted_under),
                 "relation": refuted_under[0] if refuted_under else None, "results": results}
    base = serialisation_cases._audit_result()
    return dataclasses.replace(base, alpha=ALPHA, cross_checks=checks, claim_alpha=claim_alpha, relations=relations,
                               claim_verdict="refuted" if refuted_under else "not-refuted",
                               claim={**base.claim, "origin": None, "profile_source": None})


def test_the_alpha_split_under_both_relations_is_said_once_when_both_split_alike():
    result = _both({"mi": ALPHA / 4, "event": ALPHA / 4})
    quarter = f"{ALPHA / 4:.3g}"  # 0.0125: half of a relation's α/2
    expected = (f"α = {ALPHA:g} was split between the two relations (Bonferroni), α = {ALPHA / 2:.3g} each, and each "
                f"relation's α between the tests that can refute the claim under it: MI test {quarter}, event test "
                f"{quarter}.")
    assert expected in result.claim_explanation()
    assert expected in _text(result)
    # The reports' fact names each relation's level and shares.
    split = dict(facts(result))["α split between the claim's tests"]
    assert split == (f"replace-one (α = {ALPHA / 2:.3g}): mi {quarter}, event {quarter}; "
                     f"add-remove (α = {ALPHA / 2:.3g}): mi {quarter}, event {quarter}")
    assert dict(facts(result))["refuted by"] == f"mi test under replace-one (α = {quarter})"


def test_the_alpha_split_under_both_relations_names_each_relation_when_they_differ():
    # Under add-remove only the event test can refute, at the whole α/2.
    result = _both({"event": ALPHA / 2})
    expected = (f"α = {ALPHA:g} was split between the two relations (Bonferroni), α = {ALPHA / 2:.3g} each, and each "
                f"relation's α between the tests that can refute the claim under it: under replace-one, MI test "
                f"{ALPHA / 4:.3g}, event test {ALPHA / 4:.3g}; under add-remove, event test {ALPHA / 2:.3g}.")
    assert expected in result.claim_explanation()


def test_the_mi_line_under_both_relations_is_the_shown_relations_mi_test():
    # The MI notion's verdict is the refuting relation's audit's: its MI test alone, at its share, under its name.
    result = _both({"mi": ALPHA / 4, "event": ALPHA / 4})
    heading, role = mi_part(result)
    assert heading == f"Also tested: MI-DP at ε = {result.epsilon:g} nats under replace-one"
    assert f"one of the claim's tests under replace-one, at α = {ALPHA / 4:.3g} of {ALPHA:g}: it refutes the claim" in role
    # The other relation's MI test is listed with the claim's other tests, the shown one's is not listed again.
    text = _text(result)
    assert "- MI test of 1-DP (add-remove)" in text and "- MI test of 1-DP (replace-one)" not in text
