"""The PipelineDP scan profile: the grid, claims and pairs of ``DPEngine.aggregate`` (on a stand-in for the
engine's class), and the helper the calls go through, run on the installed library where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.inputs.relation import ADD_REMOVE

from audit.scan.cases import EntryPoint, build_cases
from audit.scan.profiles.pipeline_dp import DELTAS, PROFILE, EngineAggregate


class DPEngine:
    """Shaped like ``pipeline_dp.DPEngine``: built on a budget accountant and a backend, with ``aggregate``."""

    def __init__(self, budget_accountant, backend):
        pass

    def aggregate(self, col, params, data_extractors, public_partitions=None):
        return []


def _cases(epsilons=(1.0,)):
    family = EngineAggregate()
    assert family.matches(DPEngine)
    return build_cases([EntryPoint("pipeline_dp.dp_engine", "DPEngine", DPEngine, family)], epsilons)


def test_the_grid_covers_each_metric_and_the_claim_is_the_accountants_budget_at_add_remove():
    cases, unbuilt = _cases()
    assert not unbuilt
    metrics = {c.settings["metrics"] for c in cases}
    assert metrics == {f"[pipeline_dp.Metrics.{m}]" for m in ("COUNT", "PRIVACY_ID_COUNT", "SUM", "MEAN", "VARIANCE",
                                                               "PERCENTILE(50)")}
    for case in cases:
        delta = case.settings["delta"]
        assert case.claim == ("dp:1.0" if delta == 0 else f"dp:1.0:{delta!r}") and case.relation == ADD_REMOVE
        assert case.source.startswith("aggregate(db, metrics=[pipeline_dp.Metrics.")
        if "GAUSSIAN" in case.id:
            assert delta > 0  # PipelineDP's Gaussian noise needs a δ
        if case.settings["public_partitions"] is None:
            assert delta in DELTAS  # private partition selection: its δ part, small and visible
    # COUNT: Laplace and Gaussian on public partitions, Laplace on selected ones at two δ, 2 pairs each (8);
    # PRIVACY_ID_COUNT the same without Gaussian (6); SUM as COUNT with its beyond pair (12); MEAN, VARIANCE and
    # PERCENTILE with Laplace on public partitions, 3 pairs each (9)
    assert len(cases) == 8 + 6 + 12 + 9


def test_the_removed_pair_puts_one_unit_alone_in_a_partition_and_beyond_tests_the_clamp():
    cases, _ = _cases()
    by_pair = {}
    for case in cases:
        if "SUM" in case.id and "LAPLACE" in case.id and case.settings["public_partitions"] is not None:
            by_pair[case.pair.family] = case
    assert set(by_pair) == {"ends", "beyond", "removed"}
    np.testing.assert_array_equal(by_pair["removed"].pair.first, [[1, 10], [0, 0], [0, 0]])
    np.testing.assert_array_equal(by_pair["removed"].pair.second, [[0, 0], [0, 0]])
    np.testing.assert_array_equal(by_pair["beyond"].pair.second[0], [0, 110])
    assert by_pair["removed"].pair.relation == ADD_REMOVE


def test_the_helper_runs_the_installed_engine():
    pytest.importorskip("pipeline_dp")
    from audit.scan.cases import discover

    entries, _ = discover(PROFILE)
    cases, _ = build_cases(entries, (1.0,))
    case = next(c for c in cases if "SUM" in c.id and "GAUSSIAN" in c.id and c.pair.family == "removed")
    released = case.function()(case.pair.first, np.random.default_rng(0))
    assert set(released) == {0, 1} and all(len(v) == 1 for v in released.values())
