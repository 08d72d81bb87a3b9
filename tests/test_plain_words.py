"""A newcomer's first audits read right (audit.report.plain_words): a function whose output never varied is told
to add noise, once; the certificates' symbols are said in words where first used; the runs are one line that says
why they exceed --samples; the event's critic is said without jargon; a dict or a tuple output says how it became
numbers; a function that raised on an audit sample is told what to do next, on its one line. The JSON is unchanged
(tests/test_result_forms.py)."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from audit.cli.audit_command import _text
from audit.engine import run_audit
from audit.report.content import CRITIC_STATISTIC, event_explanation, facts, runs_text
from audit.report.markdown import render_markdown
from audit.report.plain_words import (ENCODING_NOTE, cited_by_year, encoding_words, explain_symbols,
                                      failing_input_step, note_words, outputs_lines, runs_line, claim_test_form)
from audit.result import AuditResult
from mechanisms.outputs.unbounded import never_varied
from audit.spec import AuditSpec
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import TwoPoint
from mechanisms.outputs.encoding import OutputEncoder


def _count(db, rng):
    """No noise at all: the count of ones."""
    return float(db[:, 0].sum())


@pytest.fixture(scope="module")
def deterministic():
    first, second = np.zeros((4, 1)), np.zeros((4, 1))
    second[0, 0] = 1.0
    mechanism = PerDatabaseMechanism(_count, "count", encoder=OutputEncoder())
    return run_audit(AuditSpec(mechanism=mechanism, priors=[TwoPoint(first, second)], claim=parse_claim("dp:1"),
                               samples=400, event_runs=400, seed=0, name="count"))


def test_an_output_that_never_varied_is_said_plainly_once(deterministic):
    assert deterministic.refuted
    runs = deterministic.event_test.runs_per_input
    lines = _text(deterministic).splitlines()
    # Under the headline, in place of "the noise is too small": the values on each database, and what to do.
    assert lines[1] == (f"  the output never varied: y = 0 in all {runs} runs on a and 1 in all {runs} on b; the "
                        "function adds no noise to it (it is deterministic), so no ε can hold (the privacy loss on "
                        "this pair is unbounded); add random noise drawn from rng, scaled to how far one record can "
                        "move the output (its sensitivity), e.g. rng.laplace(0, sensitivity / ε)")
    # The same facts are not listed again as outputs seen on one database only, nor as unbounded.
    assert not any(line.startswith(("  outputs seen on one database only", "  unbounded: ")) for line in lines)
    # The JSON keeps both lists, and its statement says the same fact as the terminal, not "the noise is too small".
    event = deterministic.to_dict()["event_test"]
    assert event["support_differences"] and event["unbounded_differences"]
    statement = deterministic.to_dict()["statement"]
    assert "the noise is too small" not in statement
    assert (f"REFUTED. The output never varied: y = 0 in all {runs} runs on a and 1 in all {runs} on b; the function "
            "adds no noise to it (it is deterministic)") in statement
    # The reports say it under the headline too.
    assert "The output never varied: y = 0 in all" in render_markdown(deterministic, "t")


def test_a_value_constant_on_one_database_only_keeps_its_unbounded_line_and_says_each_fact_once():
    unbounded = ["value y = 0 in 30 of 30 runs of a, never in the 30 runs of b: the privacy loss on this pair is "
                 "unbounded"]
    seen = ["y = 0 in 30 of 30 runs on a, never in the 30 on b",
            "key 'bob' released in 3 of 30 runs on b, never in the 30 on a"]
    event = SimpleNamespace(unbounded_differences=unbounded, support_differences=seen)
    assert never_varied(event.unbounded_differences) == ("", set())
    assert outputs_lines(event) == [
        "  outputs seen on one database only, in the certification runs: key 'bob' released in 3 of 30 runs on b, "
        "never in the 30 on a",
        "  unbounded: " + unbounded[0]]


def test_each_symbol_is_said_in_words_under_the_line_that_first_uses_it():
    lines = ["  refuted by the event test (α = 0.02): ψ̲ = 7.1 on the event's odds ratio, so ε ≥ log(ψ̲)/2 = 0.98",
             "- float test of 1-DP: not refuted (ψ̲ = 2 on the event's odds ratio; ρ̲ = 3)"]
    said = set()
    out = explain_symbols(lines, said)
    assert out == [lines[0],
                   "    where ψ̲ is a lower bound, certified at the test's α, on the event's odds ratio, P/(1 − P) on one "
                   "database over the same on the other (ε-DP keeps it at most e^2ε)",
                   lines[1],
                   "    where ρ̲ is a lower bound, certified at the test's α, on how many times more often the event "
                   "occurs on one database than on the other (ε-DP keeps that ratio at most e^ε)"]
    assert said == {"ψ̲", "ρ̲"} and explain_symbols(lines, said) == lines
    # The (ε, δ) line: p̲, p̄ and δ(ε′) in words.
    words = explain_symbols(["certified p̲ = 0.9, p̄ = 0.1; at ε′ = 1, p̲ − e^ε′ p̄ = 0.6 > δ(ε′) = 1e-05"])[1]
    assert "at least p̲ on the event's first input, at most p̄ on its second" in words
    assert "δ(ε′) is the δ the claim allows at ε′" in words


def _result(by_purpose, probe_calls=0):
    return AuditResult("no-violation-detected", "mi-dp", 0.5, 0.05, 0.1, 0.2, None, None, None, [], [],
                       sum(by_purpose.values()), 1.0, 0, mechanism="m", samples_by_purpose=by_purpose,
                       probe_calls=probe_calls)


def test_the_runs_are_one_line_that_says_why_they_exceed_the_samples():
    by_purpose = {"mi": 2000, "pair_probe": 16, "event_statistics": 4000, "event_selection": 2000,
                  "event_certification": 4000, "float_selection": 2000, "float_certification": 4000}
    result = _result(by_purpose)
    event, floating = 16 + 2000 + 4000, 4000 + 2000 + 4000  # the runs each event test drew, added here
    assert runs_line(result) == (
        f"mechanism runs: 18016 = 2000 for the critics (the audit's samples) + {event} for the event test + {floating} for the "
        "float-bit event test: each event test chooses its pair and event on runs of its own and certifies it on "
        "fresh ones (each purpose's count: the report, or samples_by_purpose in --json)")
    # The breakdown by purpose stays in the reports' facts (and the JSON's samples_by_purpose).
    assert dict(facts(result))["mechanism runs"] == runs_text(result)
    assert "fitting the float-bit statistics 4000" in runs_text(result)
    assert runs_line(_result({"mi": 2000})) == "mechanism runs: 2000"


def test_the_runs_line_names_the_probes_calls_beside_the_runs():
    probe = "the probe, two calls on one database with one seed, which check that the seed alone fixes the output"
    where = "; each count: the report, or samples_by_purpose and probe_calls in --json"
    assert runs_line(_result({"mi": 20000, "event_certification": 60000}, probe_calls=2)) == (
        "mechanism calls: 80002 = 80000 runs (20000 for the critics (the audit's samples) + 60000 for the event test: "
        "an event test chooses its pair and event on runs of its own and certifies it on fresh ones) + 2 for "
        f"{probe}{where}")
    assert runs_line(_result({"mi": 2000}, probe_calls=2)) == f"mechanism calls: 2002 = 2000 runs + 2 for {probe}{where}"
    # Where the two differed, the third call and why.
    assert runs_line(_result({"mi": 2000}, probe_calls=3)) == (
        f"mechanism calls: 2003 = 2000 runs + 3 for {probe}, and a third seeded as the first, as the two differed, to "
        f"tell draws from numpy.random, random or torch (which miaudit seeds) from other randomness{where}")
    # The report's facts: the runs by purpose, then every call.
    said = dict(facts(_result({"mi": 2000}, probe_calls=2)))
    assert said["mechanism runs"] == "2000 (MI sample (trains and certifies the critics) 2000)"
    assert said["mechanism calls"] == f"2002 = 2000 runs + 2 for {probe}"
    assert "mechanism calls" not in dict(facts(_result({"mi": 2000})))


def test_the_critic_statistic_is_said_in_a_newcomers_words(deterministic):
    event = deterministic.event_test
    critic = replace(deterministic, event_test=replace(event, event={**event.event, "statistic": CRITIC_STATISTIC,
                                                                     "statistic_words": None}))
    words = event_explanation(critic)
    assert ("T is a model the MI test fitted on its own runs to tell the databases' outputs apart (its critic), and "
            "T(a, y) − T(b, y) estimates how much more likely y is on a than on b") in words
    assert "on the MI sample" not in words


def test_dict_and_tuple_outputs_say_how_they_became_numbers():
    encoder = OutputEncoder()
    encoder({"half": 1.0, "count": 2.0})
    words = encoding_words(encoder)
    assert words.startswith("outputs: each part became a named number, a dict's values (a set's keys) by their keys "
                            "(y{'count'}, y{'half'}), so the order of the keys does not matter, with the number of "
                            "keys (y.len) and the differences of the values at neighbouring keys in sorted key order")
    assert "hashed into 64 buckets" in words
    pairs = OutputEncoder()
    pairs((1.0, 2.0))
    assert "a tuple's parts by position (y.0, y.1, …)" in encoding_words(pairs)
    plain = OutputEncoder()
    plain(np.array([1.0, 2.0]))
    assert encoding_words(plain) == "" and encoding_words(None) == ""
    # The reports say the rule once, with the per-database function's note.
    note = f"{ENCODING_NOTE} 128 numbers (values and support counts of its named parts, mechanisms.outputs.encoding)"
    assert "so the order of its keys does not matter" in note_words(note) and note_words("other") == "other"
    result = replace(_result({"mi": 100}), notes=[note])
    assert "a tuple's parts by position (y.0, y.1)" in render_markdown(result, "t")
    assert result.to_dict()["notes"] == [note]


def test_the_next_step_for_a_function_that_raised_on_an_audit_sample():
    message = ("mechanism 'mine.py:f' raised ValueError on audit sample 41: scale < 0 (at mine.py line 6, in f) "
               "(on each of 3 attempts)")
    assert failing_input_step(message, "f", 0) == (
        "; next: audit sample 41 is the 42nd database the prior drew, and --seed 0 draws it again: print db in f just "
        "before the line that raised to see it, then make f accept every database the prior can draw, or narrow the "
        "prior (--prior, --low, --high) to the inputs it is written for")
    assert failing_input_step("mechanism 'f' raised on event-test run 3", "f", 0) == ""
    for index, ordinal in ((0, "1st"), (1, "2nd"), (2, "3rd"), (10, "11th"), (21, "22nd"), (111, "112th")):
        assert f"is the {ordinal} database" in failing_input_step(f" on audit sample {index}:", "f", 0)


def test_the_command_line_says_the_next_step_on_the_one_line(tmp_path, monkeypatch, capsys):
    from audit.cli.main import main

    (tmp_path / "raising.py").write_text(
        "def f(db, rng):\n"
        "    if db[:, 0].sum() > 7:\n"
        "        raise ValueError('too many ones')\n"
        "    return float(db[:, 0].sum() + rng.laplace(0.0, 1.0))\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    status = main(["audit", "--mechanism", "raising.py:f", "--per-database", "--prior", "builtin:bernoulli", "--n",
                   "10", "--claim", "dp:1", "--samples", "500", "--quiet", "--seed", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1 and len(err) == 1
    found = re.search(r"raised ValueError on audit sample (\d+): too many ones", err[0])
    assert found, err[0]
    index = int(found.group(1))
    assert f"; next: audit sample {index} is the " in err[0] and "--seed 0 draws it again" in err[0]
    assert err[0].endswith("or narrow the prior (--prior, --low, --high) to the inputs it is written for")
    sys.modules.pop("raising", None)


def test_a_shape_constant_on_each_database_is_no_output_that_never_varied():
    sentence = ("value y.coef_.shape[0] = {} in 30 of 30 runs of {}, never in the 30 runs of {}: the privacy loss on "
                "this pair is unbounded")
    unbounded = [sentence.format(3, "a", "b"), sentence.format(1, "b", "a")]
    event = SimpleNamespace(unbounded_differences=unbounded, support_differences=None)
    assert never_varied(event.unbounded_differences) == ("", set())
    assert outputs_lines(event) == ["  unbounded: " + "; ".join(unbounded)]


def test_poisson_numbers_of_runs_are_said_in_words_under_the_rate_ratio_line():
    line = ("  refuted by the event test (rate-ratio certificate, α = 0.05): ρ̲ = 7.04 on the ratio of the event's "
            "probabilities (Poisson numbers of runs: 4587 and 4565), so ε ≥ log ρ̲ = 1.952")
    out = explain_symbols([line])
    assert len(out) == 2 and out[1].startswith("    where ρ̲ is a lower bound")
    # Why the counts are random, and what it means for the reader: nothing was lost.
    assert ("Poisson numbers of runs: this certificate drew how many times to run each database at random (from a "
            "Poisson law, before any run, within the budget), which makes the event's two counts independent so that "
            "one exact test bounds their ratio; the two numbers are the runs it made, and fewer than the budget is by "
            "design, not runs lost") in out[1]


def test_the_pufferfish_paper_is_named_by_authors_and_year_in_the_terminals_notes(deterministic):
    note = ("The MI test does not test the claim (1, 1e-05)-DP: (ε, δ)-DP bounds the MI only under the finite-support "
            "condition of the Pufferfish paper's Theorem 1 (a record or the output takes finitely many values)")
    assert cited_by_year(note).endswith("condition of Theorem 1 of Nuradha and Goldfeld 2023 (a record or the output "
                                        "takes finitely many values)")
    assert cited_by_year("MI DP (Pufferfish paper, Theorem 1)") == "MI DP (Nuradha and Goldfeld 2023, Theorem 1)"
    text = _text(replace(deterministic, notes=[note]))
    assert "Pufferfish paper" not in text and "of Theorem 1 of Nuradha and Goldfeld 2023 (a record" in text
    # The MI line names the same paper the same way.
    assert "(Nuradha and Goldfeld 2023, Theorem 1)" in text
    # The reports name it by authors and title, the result before the paper ("Theorem 1 of Nuradha and Goldfeld, …").
    markdown = render_markdown(replace(deterministic, notes=[note]), "t")
    assert "Pufferfish paper" not in markdown and "condition of Theorem 1 of Nuradha and Goldfeld, Pufferfish" in markdown


def test_a_note_said_before_running_is_not_said_again(deterministic):
    note = "The MI test cannot refute the claim 1-DP: a record takes at most 2 values; it spends no α."
    noted = replace(deterministic, notes=[note])
    assert f"- {note}" in _text(noted)
    assert note not in _text(noted, printed_before=[note]) and "notes:" not in _text(noted, printed_before=[note])


def test_each_claim_test_is_named_once_with_its_certificate():
    assert claim_test_form("event test", "event test (rate-ratio certificate): ρ̲ = 2.2 on …") == (
        "rate-ratio certificate", "ρ̲ = 2.2 on …")
    assert claim_test_form("float-bit event test", "δ ≥ 0.02 > the claimed δ = 1e-05; float-bit event test (δ-optimal "
                                             "event): certified p̲ = 0.04") == (
        "", "δ ≥ 0.02 > the claimed δ = 1e-05; its δ-optimal event: certified p̲ = 0.04")
    assert claim_test_form("MI test", "the claim 1-DP implies at most 0.5 nats") == ("", "the claim 1-DP implies at most 0.5 nats")


def test_the_terminal_names_the_tests_as_the_headline_does(deterministic):
    lines = _text(deterministic).splitlines()
    refuted = next(line for line in lines if line.startswith("  refuted by the "))
    alpha = deterministic.claim_alpha["event"]
    assert re.match(rf"^  refuted by the event test \((odds|rate)-ratio certificate, α = {alpha:.3g}\): (ψ̲|ρ̲) = ",
                    refuted)
    assert "(event test" not in refuted
    # The α split names the MI test and the float-bit event test as every other line does, in the terminal and the
    # JSON's statement alike.
    split = replace(deterministic, claim_alpha={"mi": 0.025, "event": 0.02, "float": 0.005})
    words = ("α = 0.05 was split between the tests that can refute the claim: MI test at α = 0.025, event test at "
             "α = 0.02, float-bit event test at α = 0.005.")
    assert words in _text(split)
    assert words.replace("the claim:", "it:") in split.to_dict()["statement"]


def test_a_float_bit_statistic_on_a_dict_output_says_which_keys_value_carries_its_bits():
    from audit.search.event_candidates import bit_parts_words
    from audit.statistics.float_bits import ShiftedGridLogRatio

    encoder = OutputEncoder()
    rng = np.random.default_rng(0)
    # One record moves 'ones' by 1; 'zeros' has the same law on both databases.
    first, second = ([encoder({"zeros": 5.0 + rng.laplace(0.0, 2.0), "ones": ones + rng.laplace(0.0, 2.0)})
                      for _ in range(2000)] for ones in (0.0, 1.0))
    fitted = ShiftedGridLogRatio.fit(np.array(first), np.array(second))
    words = bit_parts_words(fitted, np.array(first), np.array(second), encoder)
    assert words.startswith(", read on the bits of y{'ones'}") and "y{'zeros'}," not in words
    assert words.endswith("(the output's parts whose bits differ most between the databases)")
    # An output of one number names no part, and no encoder names none.
    scalar = OutputEncoder()
    one_first = np.array([scalar(float(rng.laplace(0.0, 1.0))) for _ in range(500)])
    one_second = np.array([scalar(float(1.0 + rng.laplace(0.0, 1.0))) for _ in range(500)])
    one = ShiftedGridLogRatio.fit(one_first, one_second)
    assert bit_parts_words(one, one_first, one_second, scalar) == "" and bit_parts_words(one, one_first, one_second, None) == ""
