"""The numbers a newcomer reads twice read alike, and say what they are: the MI budget in the table, the MI line, the
reports' facts and the note before running; a negative MI point estimate, said to be noise beside the certified
bound that reads 0 (the JSON keeps the value); the α split of a claim audited under both relations (how α is divided
between the relations, then between each relation's tests). Results built by hand (tests/serialisation_cases.py);
each expected string is written out here, its numbers computed in the test."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import serialisation_cases  # noqa: E402
from audit.cli.audit_command import _text  # noqa: E402
from audit.report.content import facts, mi_part  # noqa: E402
from audit.certificates.claim_tests import plan_claim_tests  # noqa: E402
from audit.report import summary_table  # noqa: E402
from audit.result import CrossCheck  # noqa: E402
from audit.spec import AuditSpec  # noqa: E402
from mechanisms.adapters.callables import PerDatabaseMechanism  # noqa: E402
from mechanisms.claims.parsing import parse_claim  # noqa: E402
from mechanisms.inputs.priors import TwoPoint  # noqa: E402

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
                               claim={**base.claim, "origin": None, "profile_source": None, "text": "dp:1"})


def test_the_alpha_split_under_both_relations_is_said_once_when_both_split_alike():
    result = _both({"mi": ALPHA / 4, "event": ALPHA / 4})
    quarter = f"{ALPHA / 4:.3g}"  # 0.0125: half of a relation's α/2
    expected = (f"α = {ALPHA:g} was split between the two relations (Bonferroni), α = {ALPHA / 2:.3g} each, and each "
                f"relation's α between the tests that can refute the claim under that relation: MI test {quarter}, event test "
                f"{quarter}.")
    assert expected in result.claim_explanation()
    assert expected in _text(result)
    # The JSON's statement follows the claim's name, so it says "it" for the claim.
    assert "between the tests that can refute it under that relation: MI test" in result.to_dict()["statement"]
    # The reports' fact names each relation's level and shares.
    split = dict(facts(result))["α split between the claim's tests"]
    assert split == (f"replace-one (α = {ALPHA / 2:.3g}): MI test {quarter}, event test {quarter}; "
                     f"add-remove (α = {ALPHA / 2:.3g}): MI test {quarter}, event test {quarter}")
    assert dict(facts(result))["refuted by"] == f"MI test under replace-one (α = {quarter})"


def test_the_alpha_split_under_both_relations_names_each_relation_when_they_differ():
    # Under add-remove only the event test can refute, at the whole α/2.
    result = _both({"event": ALPHA / 2})
    expected = (f"α = {ALPHA:g} was split between the two relations (Bonferroni), α = {ALPHA / 2:.3g} each, and each "
                f"relation's α between the tests that can refute the claim under that relation: under replace-one, MI test "
                f"{ALPHA / 4:.3g}, event test {ALPHA / 4:.3g}; under add-remove, event test {ALPHA / 2:.3g}.")
    assert expected in result.claim_explanation()


def test_the_mi_line_under_both_relations_is_the_shown_relations_mi_test():
    # The MI notion's verdict is the refuting relation's audit's: its MI test alone, at its share, under its name.
    result = _both({"mi": ALPHA / 4, "event": ALPHA / 4})
    heading, role = mi_part(result)
    assert heading == f"Also tested: MI-DP at ε = {result.epsilon:g} nats under replace-one"
    assert f"one of the claim's tests under replace-one, at α = {ALPHA / 4:.3g} of {ALPHA:g}: it refutes the claim" in role
    # The other relation's MI test is listed with the tests that did not refute the claim, the shown one's is not again.
    text = _text(result)
    assert "- MI test of 1-DP (add-remove)" in text and "- MI test of 1-DP (replace-one)" not in text


def _count(db, rng):
    return float(db[:, 0].sum()) + rng.laplace()


def test_the_mi_budget_reads_alike_in_the_table_the_mi_line_the_facts_and_the_note():
    # (1, 1e-5)-DP on records of 2 values implies an MI budget of about 2.396 nats (Theorem 1, Part 1): a number with
    # more figures than 4, which the table wrote as 2.39594 and the note as 2.396.
    claim = parse_claim("dp:1:1e-5")
    value = claim.implied_mi_budget("mi-dp", 2).value
    assert 1 <= value < 10 and round(value, 3) != value
    shown = str(round(value, 3))  # 4 significant figures of a number in [1, 10): 3 decimals
    long = f"{value:g}"  # what the table wrote
    assert long != shown
    # The note before running, from the claim's plan on a two-point prior (records of 2 values).
    first = np.zeros((4, 1))
    second = first.copy()
    second[0, 0] = 1.0
    spec = AuditSpec(mechanism=PerDatabaseMechanism(_count, "count"), priors=[TwoPoint(first, second)], claim=claim,
                     samples=400, seed=0)
    note = next(n for n in plan_claim_tests(spec).notes if "budget" in n)
    assert f"log 2 = {math.log(2):.4f} nats, not above the claim's budget {shown} nats" in note
    # The audit's result at that budget: every place that shows it writes the same number.
    base = serialisation_cases._audit_result()
    result = dataclasses.replace(base, epsilon=value, verdict="no-violation-detected", lower_bound=-0.06,
                                 estimate=0.01, claim={**base.claim, "label": claim.label, "implied_mi_budget": value,
                                                       "origin": None, "profile_source": None},
                                 notes=(note,))
    table = summary_table(result).splitlines()
    headers, row = table[0], table[2]
    start = headers.index("MI budget (nats)")
    assert row[start:].split()[0] == shown
    assert mi_part(result)[0] == f"Also tested: MI-DP at ε = {shown} nats"
    assert f"No violation of {shown}-MI-DP" in result.mi_statement()
    said = dict(facts(result))
    assert said["MI budget ε"] == f"{shown} nats" and said["MI budget the claim implies"] == f"{shown} nats"
    text = _text(result)
    assert text.count(shown) >= 3 and long not in text


NOISE = " The point estimate is below 0 only through sampling noise: MI is never negative"


def test_a_negative_mi_estimate_is_said_to_be_noise_and_the_json_keeps_it():
    base = serialisation_cases._audit_result()
    estimate, bound = -0.004852, -0.0612
    result = dataclasses.replace(base, verdict="no-violation-detected", lower_bound=bound, estimate=estimate,
                                 claim={**base.claim, "origin": None, "profile_source": None, "text": "dp:1"})
    table = summary_table(result).splitlines()
    start = table[0].index("MI estimate (nats)")
    assert table[2][start:].startswith(f"{estimate} (below 0: noise)")
    assert dict(facts(result))["point estimate"] == f"{estimate} nats (below 0: noise)"
    statement = result.mi_statement()
    assert (f"point estimate {estimate} nats).{NOISE}, and the test reads the certified lower bound, not the "
            f"estimate. This is not a proof of privacy: at this sample budget a leakage above {result.epsilon} nats can "
            f"still leave the certified lower bound below {result.epsilon}") in statement
    # Machines parse the JSON: its numbers are the raw values.
    document = result.to_dict()
    assert document["estimate"] == estimate and document["lower_bound"] == bound
    assert NOISE in document["statement"]
    # A positive estimate reads as it is, with no such sentence.
    positive = dataclasses.replace(result, estimate=0.003)
    assert NOISE not in positive.mi_statement() and "(below 0" not in summary_table(positive)
    # Whatever the estimate's sign, what can go undetected is a leakage above ε, not one "up to the estimate".
    assert "a leakage above 0.5 nats can still leave the certified lower bound below 0.5" in positive.mi_statement()


def test_the_tests_that_did_not_refute_are_headed_as_such():
    # A claim that stands: the headline shows a test's bound, and the list under the run count holds that test too,
    # so its head says what the list is, not "other tests".
    lines = _text(_both({"mi": ALPHA / 4, "event": ALPHA / 4}, refuted_under=())).splitlines()
    at = lines.index("tests that did not refute the claim:")
    assert lines[at + 1].startswith("- event test of 1-DP (replace-one)")
    assert not any("other tests" in line for line in lines)
