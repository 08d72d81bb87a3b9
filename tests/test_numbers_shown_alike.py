"""A number the terminal and the reports show in two places reads the same in both, and reads as a person reads it.

A certified DP ε lower bound is written to 4 significant figures in the summary table as in the headline and the MI
line; a negative MI bound or estimate is said to be sampling noise wherever a sentence or a cell gives it (MI is
never negative), the JSON keeping the raw value; the input-domain warning prints the audited span to the fewest
figures that tell it apart from the domain's ends, ``domain_reach`` keeping it exact. Expected texts are written
out here by hand.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from audit.certificates.claim_tests import cross_checks
from audit.cli.audit_command import _text
from audit.report.content import dp_bounds_text
from audit.report.evidence import evidence_tables
from audit.result import AuditResult, CrossCheck, EventTest, SecretEvidence
from audit.search.input_domain import domain_check, domain_from_ranges, domain_reach, reach_and_note, read_number
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import TwoPoint


def _refuted(bound: float) -> AuditResult:
    """A 1-DP claim refuted by the event test and the float-bit event test, each certifying ε ≥ ``bound``."""
    event = EventTest("record 0", "E", 0.0, 1000, 0.9, 0.01, 0.89, 0.011, 0.0, bound, None, alpha=0.02)
    checks = [CrossCheck("1-DP", None, True, None, [], "event evidence", test=test, statistic=bound, threshold=1.0,
                         alpha_spent=share) for test, share in (("event", 0.02), ("float", 0.005))]
    return AuditResult("no-violation-detected", "mi-dp", 0.5, 0.05, 0.01, 0.02, None, 0.0, bound, [], checks, 2000,
                       1.0, 0, mechanism="m", claim=parse_claim("dp:1").to_dict("mi-dp", 2), claim_verdict="refuted",
                       claim_alpha={"mi": 0.025, "event": 0.02, "float": 0.005}, event_test=event,
                       float_event_test=replace(event, alpha=0.005))


def test_a_certified_epsilon_reads_alike_in_the_table_and_the_headline():
    result = _refuted(4.97812)
    assert dp_bounds_text(result) == "MI 0 / event 4.978 / float bits 4.978"
    text = _text(result)
    assert "certified ε ≥ 4.978 > the claimed ε = 1" in text.splitlines()[0]
    assert "4.98 " not in text and "4.98\n" not in text
    # Without a claim the MI line ends with the largest bound, to 4 figures too.
    alone = replace(result, claim=None, claim_verdict=None, claim_alpha={}, cross_checks=[])
    assert "It is not ε-DP for any ε < 4.978 (" in alone.mi_statement()


def test_a_negative_mi_bound_in_the_mi_tests_detail_is_said_to_be_noise():
    (check,) = cross_checks(parse_claim("dp:1"), "mi-dp", -0.02292, -0.004852)
    assert check.detail.startswith("the claim 1-DP implies at most ")
    assert ("; certified lower bound 0 nats: no evidence (raw bound -0.02292, below 0 through sampling noise: MI is "
            "never negative), estimate -0.004852 nats (below 0: noise)") in check.detail
    assert check.statistic == -0.02292  # the JSON keeps the raw bound
    (positive,) = cross_checks(parse_claim("dp:1"), "mi-dp", 0.1234, 0.2)
    assert "; certified lower bound 0.1234 nats, estimate 0.2 nats" in positive.detail


def test_the_per_secret_table_reads_a_negative_bound_and_estimate_as_the_summary_does():
    evidence = [SecretEvidence("record 0", 0, "Bernoulli(0.5)", "certify", -0.0125, -0.0731),
                SecretEvidence("record 1", 1, "Bernoulli(0.5)", "certify", 0.25, 0.125)]
    result = AuditResult("no-violation-detected", "mi-dp", 0.5, 0.05, -0.0731, -0.0125, None, None, None, evidence,
                         [], 400, 0.2, 0)
    (table,) = evidence_tables(result)
    assert table.rows[0][4:] == ("-0.0125 (below 0: noise)", "0 (no evidence)", "no")
    assert table.rows[1][4:] == ("0.25", "0.125", "no")
    assert result.to_dict()["per_record"][0]["lower_bound"] == -0.0731


def test_the_input_domain_warning_prints_the_span_as_a_person_reads_it():
    low, high = 0.007938861796163987, 99.99967667212489
    prior = TwoPoint(np.full((3, 1), low), np.full((3, 1), high), p=np.full(3, 0.5))
    domain = domain_from_ranges((0, 100), "--domain 0,100")
    _, note = domain_check(lambda dbs, rng: dbs.sum(axis=1), [prior], (), (3, 1), user_domain=domain)
    # 99.9997 at 6 figures: at 4 and 5 it would read 100, the domain's end.
    assert note.startswith("the audited records span [0.007939, 99.9997] but the mechanism declares records in "
                           "[0, 100]"), note
    assert "; the pair at the domain's ends (record 0 at 0 vs 100," in note
    assert domain_reach(domain, [prior], (), 1)["audited"] == f"[{low!r}, {high!r}]"  # the JSON's words stay exact
    # Values %g writes exactly stay short; one that only its full digits tell from the end is written in full.
    assert read_number(0.5, 0.0) == "0.5" and read_number(100.0, 100.0) == "100"
    assert read_number(2.0**50 + 0.25, 2.0**50 + 0.5) == repr(2.0**50 + 0.25)


def test_the_note_of_an_unreached_domain_prints_the_span_as_the_warning_does():
    low, high = 0.007938861796163987, 99.99967667212489
    prior = TwoPoint(np.full((3, 1), low), np.full((3, 1), high), p=np.full(3, 0.5))
    domain = domain_from_ranges((0, 100), "--domain 0,100")
    reach, note = reach_and_note(domain, [prior], (), 1)
    assert note == ("the audited pairs did not reach the declared domain: records span [0.007939, 99.9997], the domain "
                    "is [0, 100] (--domain 0,100); a leak at the domain's ends was not tested")
    # The JSON's domain_reach keeps the span exact, and is what domain_reach gives.
    assert reach == {"domain": "[0, 100]", "source": "--domain 0,100", "audited": f"[{low!r}, {high!r}]",
                     "reached": False}
    assert reach == domain_reach(domain, [prior], (), 1)


def test_the_event_a_claim_that_is_not_pure_dp_certifies_is_said_in_words_where_first_named():
    from audit.report.plain_words import explain_symbols

    lines = ["  refuted by the event test (α = 0.04): δ ≥ 0.25 > the claimed δ = 1e-05; its δ-optimal event: x",
             "- event test of (1, 1e-05)-DP (δ-optimal event): not refuted (y)"]
    out = explain_symbols(lines)
    assert out[1] == ("    where the δ-optimal event is the event, among those tried on runs set aside, whose "
                      "probabilities exceeded what the claim allows by the most (chosen where those runs showed the "
                      "claim violated)")
    assert out[2:] == lines[1:]  # said once
    assert "the ε-optimal event is the event, among those tried on runs set aside, that certifies the largest ε" in (
        explain_symbols(["- event test of zCDP (ε-optimal event): not refuted"])[1])


def test_a_test_without_a_certificate_form_is_named_once_on_its_line():
    from audit.report.plain_words import claim_test_form

    assert claim_test_form("event test", "event test: certified p̲ = 0, p̄ = 0.01288; at ε′ = 1") == (
        "", "certified p̲ = 0, p̄ = 0.01288; at ε′ = 1")
    assert claim_test_form("event test", "δ ≥ 0.2 > the claimed δ = 1e-05 at the claimed ε = 1; event test: certified "
                                         "p̲ = 0.3") == ("", "δ ≥ 0.2 > the claimed δ = 1e-05 at the claimed ε = 1; "
                                                             "certified p̲ = 0.3")
    # A detail of another test, or one naming the test elsewhere, is kept as it is.
    assert claim_test_form("event test", "float-bit event test: certified p̲ = 0.3") == (
        "", "float-bit event test: certified p̲ = 0.3")


def test_the_reports_facts_name_the_tests_as_the_terminal_does():
    from audit.report.content import facts

    said = dict(facts(_refuted(4.97812)))
    assert said["refuted by"] == "event test (α = 0.02); float-bit event test (α = 0.005)"
    assert said["α split between the claim's tests"] == "MI test 0.025, event test 0.02, float-bit event test 0.005"


def test_the_event_table_gives_the_bound_at_delta_only_where_delta_is_above_0():
    event = _refuted(4.97812).event_test
    rows = dict(evidence_tables(replace(_refuted(4.97812), float_event_test=None, cross_checks=[]))[0].rows)
    assert rows["certified ε lower bound (δ = 0)"] == "4.978"
    assert not any(label.startswith("certified ε lower bound at δ") for label in rows)
    at_delta = dict(evidence_tables(replace(_refuted(4.97812), cross_checks=[], float_event_test=None,
                                            event_test=replace(event, delta=1e-05,
                                                               epsilon_lower_bound_at_delta=4.5)))[0].rows)
    assert at_delta["certified ε lower bound at δ = 1e-05"] == "4.5"


def test_the_event_table_names_the_first_and_second_input_a_or_b():
    event = _refuted(4.97812).event_test
    for first, second in (("a", "b"), ("b", "a")):
        form = dict(event.event or {}, first_input=first)
        rows = dict(evidence_tables(replace(_refuted(4.97812), float_event_test=None, cross_checks=[],
                                            event_test=replace(event, event=form)))[0].rows)
        assert f"P(E) under first input ({first})" in rows and f"P(E) under second input ({second})" in rows
    # An event built by hand, with no form: the rows say first and second input alone.
    rows = dict(evidence_tables(replace(_refuted(4.97812), float_event_test=None, cross_checks=[],
                                        event_test=replace(event, event=None)))[0].rows)
    assert "P(E) under first input" in rows and "P(E) under second input" in rows
