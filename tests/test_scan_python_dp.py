"""The python-dp (PyDP) scan profile: its families on stand-ins shaped like PyDP's classes, and the profile read
from the installed library where it is installed (``miaudit experiment scans`` scans it in its own venv)."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.inputs.relation import ADD_REMOVE, REPLACE_ONE

from audit.scan.cases import EntryPoint, build_cases
from audit.scan.profiles.python_dp import (
    PROFILE,
    CompiledRandomizer,
    PartitionSelection,
    QuickResultAlgorithm,
    pybind_parameters,
)


class BoundedSum:
    """Shaped like PyDP's ``pydp.algorithms.laplacian.BoundedSum`` (a Python class over a compiled one)."""

    def __init__(self, epsilon=1.0, delta=0, lower_bound=None, upper_bound=None, l0_sensitivity=1,
                 linf_sensitivity=1, dtype="int"):
        self.lower, self.upper, self.dtype = lower_bound, upper_bound, dtype

    def quick_result(self, data):
        return float(np.clip(data, self.lower, self.upper).sum()) if self.lower is not None else float(np.sum(data))


class CompiledLaplace:
    """Shaped like a pybind11 class: no Python signature, pybind11's signature line atop ``__init__``'s docstring."""

    def __init__(self, *args, **kwargs):
        """__init__(self: pydp.LaplaceMechanism, epsilon: typing.SupportsFloat, sensitivity: typing.SupportsFloat = 1.0) -> None
        """

    def add_noise(self, value):
        return value


def create_laplace_partition_strategy(*args, **kwargs):
    """create_laplace_partition_strategy(epsilon: typing.SupportsFloat, delta: typing.SupportsFloat, max_partitions_contributed: typing.SupportsInt) -> differential_privacy::PartitionSelectionStrategy
    """


def test_pybind_parameters_reads_the_signature_line_pybind11_writes():
    params = pybind_parameters(CompiledLaplace)
    assert list(params) == ["epsilon", "sensitivity"]
    assert params["sensitivity"].default == 1.0 and params["epsilon"].default is params["epsilon"].empty
    assert list(pybind_parameters(create_laplace_partition_strategy)) == ["epsilon", "delta",
                                                                         "max_partitions_contributed"]
    assert list(pybind_parameters(BoundedSum))[:2] == ["epsilon", "delta"]  # a Python signature is read as it is


def test_an_algorithm_fed_a_list_gets_both_dtypes_bounds_given_and_not_and_an_add_remove_pair():
    family = QuickResultAlgorithm()
    assert family.matches(BoundedSum)
    grid = family.settings(BoundedSum, (1.0,))
    assert {"epsilon": 1.0, "dtype": "int", "lower_bound": 0, "upper_bound": 10} in grid
    assert {"epsilon": 1.0, "dtype": "float"} in grid and len(grid) == 4
    cases, unbuilt = build_cases([EntryPoint("pydp.algorithms.laplacian", "BoundedSum", BoundedSum, family)], (1.0,))
    assert not unbuilt
    by_id = {c.id: c for c in cases}
    given = "pydp.algorithms.laplacian.BoundedSum(epsilon=1.0, dtype='float', lower_bound=0.0, upper_bound=10.0)"
    assert {c.pair.family for c in cases if c.id.startswith(given)} == {"ends", "beyond", "removed"}
    removed = by_id[given + " / removed"]
    assert removed.relation == ADD_REMOVE and removed.claim == "dp:1.0"
    np.testing.assert_array_equal(removed.pair.first[:, 0], [10.0, 0.0, 0.0])
    np.testing.assert_array_equal(removed.pair.second[:, 0], [0.0, 0.0])
    assert by_id[given + " / ends"].relation == ADD_REMOVE  # audited on replace-one pairs as 2ε (group privacy)
    assert by_id[given + " / beyond"].source == (
        "entry(epsilon=1.0, dtype='float', lower_bound=0.0, upper_bound=10.0).quick_result(db[:, 0].tolist())")
    function = by_id[given + " / beyond"].function()
    assert function(by_id[given + " / beyond"].pair.second, np.random.default_rng(0)) == 10.0
    assert "[int(v) for v in db[:, 0]]" in next(c.source for c in cases if "dtype='int'" in c.id)


def test_compiled_mechanisms_and_partition_selection_read_their_claims_from_their_parameters():
    randomizer = CompiledRandomizer(method_names=("add_noise",), fixed={"sensitivity": 1.0, "delta": 1e-5})
    assert randomizer.matches(CompiledLaplace)
    cases, _ = build_cases([EntryPoint("pydp", "LaplaceMechanism", CompiledLaplace, randomizer)], (0.1, 4.0))
    assert [(c.claim, c.relation, c.source) for c in cases] == [
        ("dp:0.1", REPLACE_ONE, "entry(epsilon=0.1).add_noise(float(db[0, 0]))"),
        ("dp:4.0", REPLACE_ONE, "entry(epsilon=4.0).add_noise(float(db[0, 0]))")]
    selection = next(f for f in PROFILE.families if isinstance(f, PartitionSelection))
    compiled = create_laplace_partition_strategy
    assert selection.matches(compiled)
    cases, _ = build_cases([EntryPoint("pydp.algorithms.partition_selection", compiled.__name__, compiled, selection)],
                           (1.0,))
    assert sorted({c.claim for c in cases}) == ["dp:1.0:0.05", "dp:1.0:1e-05"]
    ends = next(c for c in cases if c.pair.family == "ends")
    assert ends.source.endswith(".should_keep(int(db[0, 0]))")
    np.testing.assert_array_equal([ends.pair.first[0, 0], ends.pair.second[0, 0]], [0, 1])


def test_the_python_dp_profile_reads_the_installed_library():
    pytest.importorskip("pydp")
    from audit.scan.cases import discover

    entries, skipped = discover(PROFILE)
    names = {e.name: type(e.family).__name__ for e in entries}
    assert names["BoundedSum"] == "QuickResultAlgorithm" and names["LaplaceMechanism"] == "CompiledRandomizer"
    assert names["create_laplace_partition_strategy"] == "PartitionSelection"
    cases, unbuilt = build_cases(entries, (1.0,))
    assert any(c.id.startswith("pydp.algorithms.numerical_mechanisms.GaussianMechanism(") and c.claim == "dp:1.0:1e-05"
               for c in cases)
    assert any("required parameter(s) strategy" in s.reason for s in skipped + unbuilt)


class AutoBoundedSum(BoundedSum):
    """Shaped like PyDP's algorithms where the bounds are left out: they refuse to run on fewer records than the
    approximate bounds' threshold (FAILED_PRECONDITION) or on records all equal (bounds of width 0)."""

    def quick_result(self, data):
        if self.lower is None and (len(data) < 500 or len(set(data)) < 2):
            raise RuntimeError("FAILED_PRECONDITION: Bin count threshold was too large to find approximate bounds.")
        return super().quick_result(data)


def test_an_algorithm_left_to_find_its_bounds_is_audited_on_records_it_can_find_them_from():
    from audit.scan.case_audit import audit_case
    from audit.scan.profiles.python_dp import ROWS_WITHOUT_BOUNDS

    family = QuickResultAlgorithm()
    algorithm = type("BoundedSum", (AutoBoundedSum,), {})  # named as PyDP's (FIND_BOUNDS)
    cases, unbuilt = build_cases([EntryPoint("pydp.algorithms.laplacian", "BoundedSum", algorithm, family)], (1.0,))
    free = {c.pair.family: c for c in cases if c.id.startswith(
        "pydp.algorithms.laplacian.BoundedSum(epsilon=1.0, dtype='int') /")}
    assert not unbuilt and set(free) == {"ends", "removed"}
    ends, removed = free["ends"].pair, free["removed"].pair
    expected = np.array([0.0 if i % 2 == 0 else 10.0 for i in range(ROWS_WITHOUT_BOUNDS)])  # the ends, alternating
    np.testing.assert_array_equal(ends.first[:, 0], expected)
    np.testing.assert_array_equal(ends.second[:, 0], np.concatenate([[10.0], expected[1:]]))
    np.testing.assert_array_equal(removed.first[:, 0], np.concatenate([[10.0], expected[1:]]))
    np.testing.assert_array_equal(removed.second[:, 0], expected[1:])
    # given the bounds, the databases stay three records, and so do an algorithm's that runs on them without
    assert all(len(c.pair.first) == 3 for c in cases if "lower_bound" in c.id)
    plain, _ = build_cases([EntryPoint("pydp.algorithms.laplacian", "Max", type("Max", (BoundedSum,), {}), family)],
                           (1.0,))
    assert plain and all(len(c.pair.first) == 3 for c in plain)
    # the exact sum (no noise) is audited, and refuted, not skipped for the call's error
    outcome = audit_case(free["ends"], alpha=0.05, max_runs=1500, timeout=30, seed=0)
    assert outcome["status"] == "finding", outcome.get("reason")


def test_python_dp_algorithms_without_bounds_are_audited_not_skipped():
    pytest.importorskip("pydp")
    from audit.scan.running import scan

    result = scan("python-dp", epsilons=(1.0,), max_runs=2500, timeout=60, seed=0, in_process=True,
                  only=["BoundedSum(epsilon=1.0, dtype='int') / ends", "BoundedMean(epsilon=1.0, dtype='int') / ends"])
    assert result.cases == 2
    assert [o["status"] for o in result.outcomes] == ["control", "control"], [o.get("reason") for o in result.outcomes]


class Percentile(BoundedSum):
    """Shaped like PyDP's ``Percentile``: a ``percentile`` beside the bounds."""

    def __init__(self, epsilon=1.0, percentile=0.0, lower_bound=None, upper_bound=None, dtype="int"):
        super().__init__(epsilon, 0, lower_bound, upper_bound, dtype=dtype)


def test_the_bounds_search_audits_a_raise_as_an_output_and_percentile_without_bounds_is_skipped_saying_why():
    family = QuickResultAlgorithm()
    cases, unbuilt = build_cases([EntryPoint("pydp.algorithms.laplacian", "BoundedSum", BoundedSum, family),
                                  EntryPoint("pydp.algorithms.laplacian", "Percentile", Percentile, family)], (1.0,))
    searched = [c for c in cases if "lower_bound" not in c.settings]
    assert searched and all(c.raised_as_output and c.source.startswith("released(lambda: entry(") for c in searched)
    assert all(c.entry.name == "BoundedSum" for c in searched)
    given = [c for c in cases if "lower_bound" in c.settings]
    assert given and not any(c.raised_as_output or "released" in c.source for c in given)
    assert {s.what for s in unbuilt} == {"pydp.algorithms.laplacian.Percentile(epsilon=1.0, dtype='float', "
                                         "percentile=0.5)", "pydp.algorithms.laplacian.Percentile(epsilon=1.0, "
                                         "dtype='int', percentile=0.5)"}
    assert all("Percentile cannot be built without bounds" in s.reason for s in unbuilt)
