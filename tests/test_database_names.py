"""The databases of the event's pair are named a and b wherever the audit's terminal, its reports and the pytest
failure message count runs on them, as the pair line names them (``a = [0.], b = [1.]``): the event's "first input"
(the one E is more likely on) may be b, so "the first database" would read two ways. Expected texts are written out."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np

import serialisation_cases
from audit.gating.assertions import failure_message
from mechanisms.outputs.unbounded import UNBOUNDED, never_varied, unbounded_differences


def test_unbounded_facts_name_the_databases_a_and_b():
    a = np.zeros((30, 1))
    b = np.arange(1.0, 31.0)[:, None]
    assert unbounded_differences(a, b) == [
        f"value y[0] = 0 in 30 of 30 runs of a, never in the 30 runs of b: {UNBOUNDED}"]
    assert unbounded_differences(b[:1].repeat(30, axis=0), a) == [
        f"value y[0] = 1 in 30 of 30 runs of a, never in the 30 runs of b: {UNBOUNDED}",
        f"value y[0] = 0 in 30 of 30 runs of b, never in the 30 runs of a: {UNBOUNDED}"]


def test_an_output_that_never_varied_is_read_from_either_wording():
    words = ("y never varied: y = 0 in all 30 runs on a and 1 in all 30 on b; the function adds no noise to it (it is "
             "deterministic), so no ε can hold (the privacy loss on this pair is unbounded); add random noise drawn "
             "from rng, scaled to how far one record can move the output (its sensitivity), e.g. "
             "rng.laplace(0, sensitivity / ε)")
    now = [f"value y = 0 in 30 of 30 runs of a, never in the 30 runs of b: {UNBOUNDED}",
           f"value y = 1 in 30 of 30 runs of b, never in the 30 runs of a: {UNBOUNDED}"]
    # A JSON written before (a scan's state file) says "of the first database" and "of the second".
    before = [f"value y = 0 in 30 of 30 runs of the first database, never in the 30 runs of the second: {UNBOUNDED}",
              f"value y = 1 in 30 of 30 runs of the second, never in the 30 runs of the first database: {UNBOUNDED}"]
    expected = (words.replace("y never varied", "the output never varied"), {("y", "0"), ("y", "1")})
    assert never_varied(now) == expected and never_varied(before) == expected


def _refuted(first_input):
    """An audit whose claim the event test refuted (p₁ = 0.52, p₂ = 0.21 on 4000 runs each), its event's first input
    ``first_input`` (None: an event without its form as data)."""
    base = serialisation_cases._audit_result()
    checks = [dataclasses.replace(c, certified_contradiction=c.test == "event") for c in base.cross_checks]
    event = dataclasses.replace(base.event_test, event=None if first_input is None else {"first_input": first_input})
    result = dataclasses.replace(base, event_test=event, cross_checks=checks)
    return SimpleNamespace(result=result, alpha=0.05, looks=[None], runs=12000)


def test_the_failure_message_counts_runs_on_a_and_b_in_the_events_roles():
    # 0.52 × 4000 = 2080 runs of the event's first input, 0.21 × 4000 = 840 of its second.
    def counts(first_input):
        lines = failure_message(_refuted(first_input), "assert_claim(...)").splitlines()
        return next(line for line in lines if line.startswith("  counts: "))

    assert counts("b") == "  counts: E held in 2080 of 4000 runs on b, 840 of 4000 on a"
    assert counts("a") == "  counts: E held in 2080 of 4000 runs on a, 840 of 4000 on b"
    assert counts(None) == "  counts: E held in 2080 of 4000 runs on its first input, 840 of 4000 on its second"
