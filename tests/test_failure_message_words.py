"""assert_claim's failure message names each refuting test once, as the terminal does ("refuted by the event test
(odds-ratio certificate): ψ̲ = …", not "event test: event test (…)"), says what its symbols mean, and says that the
certificate's level is the look's share of the check's α. A result built by hand (tests/serialisation_cases.py)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).parent))

import serialisation_cases  # noqa: E402
from audit.gating.assertions import failure_message  # noqa: E402
from audit.result import CrossCheck  # noqa: E402


def test_each_refuting_test_is_named_once_with_its_symbols_in_words():
    base = serialisation_cases._audit_result()
    detail = ("event test (odds-ratio certificate): ψ̲ = 14.88 on the event's odds ratio, so ε ≥ log(ψ̲)/2 = 1.35 > "
              "the claimed ε = 1")
    check = CrossCheck("1-DP", 1.0, True, False, ["event"], detail, test="event", statistic=1.35, threshold=1.0,
                       alpha_spent=3.56e-08)
    event = dataclasses.replace(base.event_test, certificate="odds-ratio", epsilon_lower_bound=1.35, alpha=3.56e-08)
    result = dataclasses.replace(base, cross_checks=[check], event_test=event)
    audit = SimpleNamespace(result=result, alpha=0.005, looks=[object()], runs=224)
    lines = failure_message(audit, "pytest 'test_ages.py::test_buggy'").splitlines()
    assert "  certificate: odds-ratio, ε ≥ 1.35 at level 3.56e-08 (its share of α = 0.005 at this look)" in lines
    at = lines.index("  refuted by the event test (odds-ratio certificate): ψ̲ = 14.88 on the event's odds ratio, so "
                     "ε ≥ log(ψ̲)/2 = 1.35 > the claimed ε = 1")
    assert lines[at + 1].startswith("    where ψ̲ is a lower bound")
    assert not any("event test: event test" in line for line in lines)
    assert lines[-1] == "  reproduce: pytest 'test_ages.py::test_buggy'"
