"""What a newcomer meets on `miaudit audit`'s terminal is said in words where first shown: the numbers the encoder
makes of how an output's neighbouring values relate (``(equal neighbours of y)``), the summary table's "DP ε lower
bounds" cell, and the ε′ of an (ε, δ) claim's headline. The JSON is unchanged. Expected texts are written out."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import serialisation_cases
from audit.cli.audit_command import _text
from audit.report.content import EPSILON_PRIME_WORDS
from audit.report.plain_words import dp_bounds_words, outputs_lines

EQUAL = ("where (equal neighbours of y) is a number the audit made from the output: how many pairs of neighbouring "
         "values of y are equal (an array's entries side by side, a dict's values at neighbouring keys in sorted key "
         "order)")
DIFFERENCE = ("(y{'b'} - y{'a'}) is y{'b'} minus y{'a'}, the audit's difference between two neighbouring values of "
              "the output (its sign is their order)")


def test_a_relation_between_neighbouring_values_is_said_in_words_under_the_line_that_first_names_it():
    seen = ["(equal neighbours of y) = 1 in 15 of 886 runs on b, never in the 812 on a",
            "(y{'b'} - y{'a'}) = 2 in 40 of 812 runs on a, never in the 886 on b"]
    unbounded = ["value (equal neighbours of y[0,:]) = 0 in 30 of 30 runs of a, never in the 30 runs of b: the privacy "
                 "loss on this pair is unbounded"]
    lines = outputs_lines(SimpleNamespace(support_differences=seen, unbounded_differences=unbounded))
    assert lines == ["  outputs seen on one database only, in the certification runs: " + "; ".join(seen),
                     f"    {EQUAL}; {DIFFERENCE}",
                     "  unbounded: " + unbounded[0]]  # each kind of name said once
    alone = outputs_lines(SimpleNamespace(support_differences=None, unbounded_differences=unbounded))
    assert alone[1] == ("    where (equal neighbours of y[0,:]) is a number the audit made from the output: how many "
                        "pairs of neighbouring values of y[0,:] are equal (an array's entries side by side, a dict's "
                        "values at neighbouring keys in sorted key order)")
    # Facts without relations get no such line.
    plain = ["key 'bob' released in 3 of 30 runs on b, never in the 30 on a"]
    assert outputs_lines(SimpleNamespace(support_differences=plain, unbounded_differences=None)) == [
        "  outputs seen on one database only, in the certification runs: " + plain[0]]


def _result(**changes):
    return dataclasses.replace(serialisation_cases._audit_result(), **changes)


def test_the_tables_dp_epsilon_lower_bounds_are_said_in_words_under_the_table():
    words = ("where the DP ε lower bounds are values of ε below which the mechanism is certified not to be ε-DP: MI "
             "from the certified MI lower bound (ε-DP keeps the MI at most min(ε, ε²/2) nats: Nuradha and Goldfeld "
             "2023, Theorem 1), event from the event test")
    result = _result()
    assert dp_bounds_words(result) == words
    lines = _text(result).splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("1  laplace_sum"))
    assert lines[row + 1] == f"  {words}" and lines[row + 2] == ""
    # Only the bounds the cell shows are said; a cell of dashes alone gets no line.
    assert dp_bounds_words(_result(dp_epsilon_lower_bound_mi=None)) == (
        "where the DP ε lower bounds are values of ε below which the mechanism is certified not to be ε-DP: event "
        "from the event test")
    bare = _result(dp_epsilon_lower_bound_mi=None, dp_epsilon_lower_bound_event=None)
    assert dp_bounds_words(bare) == "" and "where the DP ε lower bounds" not in _text(bare)
    # A table of several audits (miaudit demo): each kind of bound any row shows, said once, in the cell's order.
    event_only = _result(dp_epsilon_lower_bound_mi=None)
    assert dp_bounds_words([bare, event_only, result]) == words
    assert dp_bounds_words([bare, event_only]) == dp_bounds_words(event_only)
    assert dp_bounds_words([bare, bare]) == ""


def test_epsilon_prime_is_said_in_words_where_the_headline_first_shows_it():
    from audit.report.content import claim_headline
    from audit.result import CrossCheck

    check = CrossCheck("(1, 1e-05)-DP", None, True, None, ["event"], "event test: …", test="event", statistic=0.4147,
                       threshold=1e-05, alpha_spent=0.05, epsilon_prime=1.0)
    claim = {"label": "(1, 1e-05)-DP", "notion": "dp", "parameters": {"epsilon": 1.0, "delta": 1e-05},
             "implied_mi_budget": 2.396}
    result = _result(cross_checks=[check], claim=claim, claim_alpha={"event": 0.05})
    headline = claim_headline(result)
    assert ("certified δ ≥ 0.4147 > the δ = 1e-05 the claim allows at ε′ = 1 (ε′ is the ε, of all ε ≥ 0 at which the "
            "claim allows a δ, where the event's δ most exceeds the claim's or falls least short of it; the event's δ "
            "is its probability on one database minus e^ε′ times its probability on the other; event test, α = 0.05)"
            ) in headline, headline
    assert headline.index("ε′ is the ε") < headline.index("e^ε′")  # said where first shown
    assert EPSILON_PRIME_WORDS in headline
