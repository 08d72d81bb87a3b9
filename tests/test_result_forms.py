"""The JSON form (field walk) and the headline repr of result objects (estimators.result_forms)."""

from __future__ import annotations

import enum
import json
import math
import sys
from dataclasses import dataclass, field, fields, is_dataclass
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


def _restricted(value, golden):
    """``value`` with the dict keys that ``golden`` lacks removed (recursively), and those keys."""
    if isinstance(value, dict) and isinstance(golden, dict):
        new = [k for k in value if k not in golden]
        kept = {k: _restricted(v, golden[k])[0] for k, v in value.items() if k in golden}
        return kept, new
    if isinstance(value, list) and isinstance(golden, list) and len(value) == len(golden):
        return [_restricted(v, g)[0] for v, g in zip(value, golden)], []
    return value, []


def _assert_same_json(value, golden, where="$"):
    assert type(value) is type(golden) or {type(value), type(golden)} <= {int, float}, where
    if isinstance(golden, dict):
        assert list(value) == list(golden), where
        for key in golden:
            _assert_same_json(value[key], golden[key], f"{where}.{key}")
    elif isinstance(golden, list):
        assert len(value) == len(golden), where
        for i, (v, g) in enumerate(zip(value, golden)):
            _assert_same_json(v, g, f"{where}[{i}]")
    elif isinstance(golden, float):
        assert value == pytest.approx(golden, rel=1e-9, abs=1e-15), where
    else:
        assert value == golden, where


GOLDEN = json.loads(serialisation_cases.GOLDEN.read_text(encoding="utf-8"))
CASES = serialisation_cases.cases()


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_json_is_the_one_written_by_the_hand_written_methods(name):
    # The golden text was written by the hand-written to_dict methods this walk replaced. A field
    # added since (another engineer's) is allowed as a new key; every key of the contract keeps
    # its value and its place.
    obj, kwargs = CASES[name]
    out = obj.to_dict(**kwargs)
    golden = json.loads(GOLDEN[name])
    kept, new_keys = _restricted(out, golden)
    # The same keys in the same places and the same values; a float computed by a numerical routine
    # (the capacity's optimizer) may differ in its last bits between numpy/scipy builds, and a difference
    # of two such floats (a gap) in more.
    _assert_same_json(json.loads(json.dumps(kept, ensure_ascii=False)), golden)
    field_names = {f.name for f in fields(obj)} if is_dataclass(obj) else set()
    # schema_version: the JSON contract's version (docs/reference/json-output.md), a computed key
    assert set(new_keys) <= field_names | {"schema_version"}
    if name == "audit_result":
        assert list(out)[0] == "schema_version" and out["schema_version"] == 1


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
