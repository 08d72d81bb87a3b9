"""The JSON form (field walk) and the headline repr of result objects (estimators.result_forms)."""

from __future__ import annotations

import enum
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from estimators.result_forms import fields_to_dict, headline_repr, to_jsonable

sys.path.insert(0, str(Path(__file__).parent))
import serialisation_cases  # noqa: E402 - the fixed objects of the golden file, next to this test


class Colour(enum.Enum):
    RED = "red"


@dataclass(frozen=True)
class Inner:
    value: float
    per_slice: np.ndarray


@dataclass(frozen=True)
class WithOwnDict:
    value: float

    def to_dict(self) -> dict:
        return {"own": self.value}


@dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner
    items: tuple = ()
    own: WithOwnDict | None = None
    colour: Colour = Colour.RED
    history: dict = field(default_factory=dict)


def test_walk_converts_numpy_nested_dataclasses_tuples_enums_and_non_finite_numbers():
    outer = Outer("a", Inner(np.float32(0.5), np.array([[1, 2], [3, 4]], dtype=np.int64)),
                  items=(np.int64(3), math.nan, (np.bool_(True), -math.inf)), own=WithOwnDict(np.float64(math.inf)),
                  history={"loss": np.array([0.25, np.nan]), 3: "int key kept"})
    out = fields_to_dict(outer)
    assert out == {"name": "a", "inner": {"value": 0.5, "per_slice": [[1, 2], [3, 4]]},
                   "items": [3, None, [True, None]], "own": {"own": None}, "colour": "red",
                   "history": {"loss": [0.25, None], 3: "int key kept"}}
    # Only plain Python types remain: the standard library's JSON writer takes it as it is.
    kinds = set()

    def collect(value):
        kinds.add(type(value))
        for child in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
            collect(child)

    collect(out)
    assert kinds <= {dict, list, str, int, float, bool, type(None)}
    json.dumps(out, allow_nan=False)


def test_walk_keeps_non_finite_numbers_when_asked():
    out = fields_to_dict(Inner(math.inf, np.array([math.nan, 1.0])), null_nonfinite=False)
    assert out["value"] == math.inf and math.isnan(out["per_slice"][0]) and out["per_slice"][1] == 1.0


def test_order_exclude_and_extra():
    outer = Outer("a", Inner(1.0, np.zeros(1)))
    out = fields_to_dict(outer, order=("colour", "computed", "name"), exclude=("history", "own"),
                         extra={"computed": (1, 2)})
    assert list(out) == ["colour", "computed", "name", "inner", "items"]
    assert out["computed"] == [1, 2]
    with pytest.raises(ValueError, match="history"):
        fields_to_dict(outer, order=("history",), exclude=("history",))


def test_to_jsonable_leaves_plain_values_alone():
    assert to_jsonable({"a": [1, "x", None, True, 0.5]}) == {"a": [1, "x", None, True, 0.5]}
    assert to_jsonable(np.float64(-math.inf)) is None


REGENERATE = ("if the change to the JSON contract is on purpose, rewrite the golden file with "
              "`PYTHONPATH=$PWD python3 tests/serialisation_cases.py`, add a line to docs/changelog.md and, "
              "where a key was removed or renamed or its meaning changed, raise audit.result.JSON_SCHEMA_VERSION "
              "and docs/reference/json-output.md")


def _first_difference(value, golden, where="$"):
    """Where the JSON ``value`` first differs from ``golden`` and how, in words; ``None`` when the same.

    The same keys in the same order, the same lengths, types and values. A float computed by a numerical
    routine (the capacity's optimizer) may differ in its last bits between numpy/scipy builds, so floats
    are compared to a relative 1e-9.
    """
    if not (type(value) is type(golden) or {type(value), type(golden)} <= {int, float}):
        return f"{where}: {type(value).__name__} {value!r}, golden {type(golden).__name__} {golden!r}"
    if isinstance(golden, dict):
        if list(value) != list(golden):
            added = [k for k in value if k not in golden]
            missing = [k for k in golden if k not in value]
            return (f"{where}: keys added {added}, missing {missing}" if added or missing
                    else f"{where}: keys in order {list(value)}, golden {list(golden)}")
        return next((d for key in golden if (d := _first_difference(value[key], golden[key], f"{where}.{key}"))),
                    None)
    if isinstance(golden, list):
        if len(value) != len(golden):
            return f"{where}: {len(value)} items, golden {len(golden)}"
        return next((d for i, (v, g) in enumerate(zip(value, golden))
                     if (d := _first_difference(v, g, f"{where}[{i}]"))), None)
    if isinstance(golden, float) and value == pytest.approx(golden, rel=1e-9, abs=1e-15, nan_ok=True):
        return None
    return None if value == golden and not isinstance(golden, float) else f"{where}: {value!r}, golden {golden!r}"


GOLDEN = json.loads(serialisation_cases.GOLDEN.read_text(encoding="utf-8"))
CASES = serialisation_cases.cases()


def test_the_golden_file_has_every_case():
    assert sorted(CASES) == sorted(GOLDEN), REGENERATE


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_is_the_golden_one(name):
    # The whole document is compared: a key added, removed, renamed or moved, or a value changed,
    # is a change to the JSON a machine parses (docs/reference/json-output.md) and must be made on purpose.
    obj, kwargs = CASES[name]
    out = json.loads(serialisation_cases.json_text(obj, **kwargs))
    difference = _first_difference(out, json.loads(GOLDEN[name]))
    assert difference is None, f"the JSON of case {name!r} differs from {serialisation_cases.GOLDEN.name}: " \
                               f"{difference}; {REGENERATE}"


def test_an_audit_document_starts_with_its_schema_version():
    from audit.result import JSON_SCHEMA_VERSION

    golden = json.loads(GOLDEN["audit_result"])
    assert list(golden)[0] == "schema_version" and golden["schema_version"] == JSON_SCHEMA_VERSION


def _changed(document, edit):
    copy = json.loads(json.dumps(document))
    edit(copy)
    return copy


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["event_test"].update(threshold=0.32), "$.event_test.threshold: 0.32, golden 0.31"),
    (lambda d: d["cross_checks"][0].update(relation="add-remove"), "$.cross_checks[0].relation: "),
    (lambda d: d.update(new_key=1), "$: keys added ['new_key'], missing []"),
    (lambda d: d.pop("arithmetic"), "$: keys added [], missing ['arithmetic']"),
    (lambda d: d.update(schema_version=2), "$.schema_version: 2, golden 1"),
    (lambda d: d["per_record"].pop(), "$.per_record: 1 items, golden 2"),
    (lambda d: d.update(samples=12000.5), "$.samples: 12000.5, golden 12000"),
    (lambda d: d.update(verdict=None), "$.verdict: NoneType None, golden str 'violation'"),
])
def test_the_golden_comparison_detects_a_changed_copy(edit, expected):
    golden = json.loads(GOLDEN["audit_result"])
    assert _first_difference(golden, golden) is None
    difference = _first_difference(_changed(golden, edit), golden)
    assert difference is not None and difference.startswith(expected)


def test_the_golden_comparison_detects_reordered_keys():
    golden = json.loads(GOLDEN["neighbouring_pair"])
    reordered = dict(reversed(list(golden.items())))
    assert _first_difference(reordered, golden).startswith("$: keys in order")


def test_reprs_are_one_line_headlines():
    reprs = {name: repr(CASES[name][0]) for name in ("audit_result", "mi_estimate", "calibration",
                                                      "calibration_laplace")}
    assert reprs == {
        "audit_result": ("AuditResult(mechanism='laplace_sum', notion='mi-dp', verdict='violation', epsilon=0.5, "
                         "lower_bound=0.6, estimate=0.7, alpha=0.05, claim='1-DP', claim_verdict='refuted', "
                         "samples=12000)"),
        "mi_estimate": ("MIEstimate(estimator='dv', value=0.4, unit='nats', lower_bound=0.2, confidence=0.95, "
                        "stderr=inf, n=500, slices=3)"),
        "calibration": "Calibration(noise='gaussian', notion='mi-dp', epsilon=0.5, dim=3, scale=0.649067)",
        "calibration_laplace": "Calibration(noise='laplace', notion='dp', epsilon=1.0, dim=2, scale=1.0)",
    }


def test_repr_of_an_unsliced_uncertified_estimate_and_an_audit_without_claim():
    from audit.result import AuditResult
    from estimators.results import MIEstimate

    estimate = MIEstimate("ksg", 1.0 / 3.0, n=100, per_slice=None)
    assert repr(estimate) == "MIEstimate(estimator='ksg', value=0.333333, unit='nats', n=100)"
    result = AuditResult(verdict=None, notion="mi-pp", epsilon=None, alpha=0.05, lower_bound=None, estimate=0.125,
                         paper_statistic=None, dp_epsilon_lower_bound_mi=None, dp_epsilon_lower_bound_event=None,
                         per_record=[], cross_checks=[], samples=10, seconds=0.0, seed=0,
                         training_history={"loss": np.arange(1000.0)})
    assert repr(result) == "AuditResult(notion='mi-pp', estimate=0.125, alpha=0.05, samples=10)"


def test_headline_repr_rounds_floats_and_unwraps_numpy_scalars():
    assert headline_repr(Inner(np.float64(2.0 / 3.0), np.zeros(3)), ("value",)) == "Inner(value=0.666667)"
    assert headline_repr(Inner(1e-12, np.zeros(3)), ("value",), extra={"n": np.int64(4), "x": None}) == \
        "Inner(value=1e-12, n=4)"
