"""The profile of PipelineDP (0.3): ``DPEngine.aggregate`` over its metrics, noise kinds and partition choices.

PipelineDP is a query engine: a ``DPEngine`` built on a budget accountant aggregates a collection of
records (privacy unit, partition, value) with ``AggregateParams`` (the metrics, the noise kind, the
contribution bounds, the value bounds), over public partitions or partitions it selects privately.
The family :class:`EngineAggregate` calls it through one helper the profile's preamble defines,
``aggregate(db, …)``: each record of ``db`` (partition, value) is its own privacy unit contributing
once to one partition, the engine runs on the ``LocalBackend`` with a ``NaiveBudgetAccountant`` of
total (ε, δ), and the release is ``{partition: [metric values]}``.

**The claim** is the accountant's total budget, (ε, δ)-DP for one privacy unit added or removed
(PipelineDP's documented relation, with each unit's contributions bounded as the parameters say:
``max_partitions_contributed = max_contributions_per_partition = 1``). The scan audits the ``removed``
pair (record 0, alone in partition 1, present vs removed: with private partition selection, the δ part)
at that relation, and its replace-one pairs (``ends``; ``beyond`` the value bounds: the engine clamps)
at the claim's group-privacy form.

**The grid**: each metric (COUNT, PRIVACY_ID_COUNT, SUM, MEAN, VARIANCE, PERCENTILE(50)) with Laplace
noise on public partitions [0, 1]; COUNT and SUM also with Gaussian noise (δ = 10⁻⁶) and, like
PRIVACY_ID_COUNT, on privately selected partitions at δ in {10⁻⁶, 0.05} (the larger one a few thousand
runs can see exceeded); values bounded to [0, 10]. PipelineDP's noise comes from PyDP's secure
generator, which takes no seed.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

from mechanisms.inputs.relation import ADD_REMOVE

from audit.scan.profiles.base import EPSILONS, Family, Profile

#: The helper every call source uses (``entry`` is ``pipeline_dp.DPEngine``).
PRELUDE = '''import pipeline_dp


def aggregate(db, *, epsilon, delta, public_partitions=None, **params):
    """One DPEngine aggregation of db's records (partition, value), each its own privacy unit."""
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)
    engine = entry(accountant, pipeline_dp.LocalBackend())
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda row: row[0],
                                            partition_extractor=lambda row: row[1],
                                            value_extractor=lambda row: row[2])
    rows = [(unit, int(partition), float(value)) for unit, (partition, value) in enumerate(db)]
    params = pipeline_dp.AggregateParams(max_partitions_contributed=1, max_contributions_per_partition=1, **params)
    released = engine.aggregate(rows, params, extractors, public_partitions=public_partitions)
    accountant.compute_budgets()
    return {int(partition): [float(v) for v in values] for partition, values in released}'''

#: Runs per case: the Gaussian SUM's float leak (an event of probability about 0.085 on one input, none on the
#: other, against e^ε times it) is certified at the scan's α/K (K = 105) with about 4,000 float-bit runs per
#: input, which 6,000 runs per case do not leave (experiments/_scan_bug_sources.py, PIPELINE_DP_SUM).
LIBRARY_MAX_RUNS = 20_000
#: δ of the grid points that need one: 10⁻⁶, and 0.05 for private partition selection (a few thousand runs
#: can see a δ of a few hundredths exceeded; see :data:`audit.scan.profiles.opendp.DELTAS`).
DELTAS = (1e-6, 0.05)


class Source(str):
    """An argument given as source text (``pipeline_dp.Metrics.SUM``): its repr is the text."""

    def __repr__(self) -> str:
        return str(self)


_LAPLACE, _GAUSSIAN = Source("pipeline_dp.NoiseKind.LAPLACE"), Source("pipeline_dp.NoiseKind.GAUSSIAN")
_PUBLIC = [0, 1]


def _metric(name: str) -> Source:
    return Source(f"[pipeline_dp.Metrics.{name}]")


def _grid() -> tuple:
    """(metrics, noise kind, public partitions or None, value bounds?, deltas) of each recipe."""
    rows = []
    for name, bounded in (("COUNT", False), ("PRIVACY_ID_COUNT", False), ("SUM", True), ("MEAN", True),
                          ("VARIANCE", True), ("PERCENTILE(50)", True)):
        rows.append((_metric(name), _LAPLACE, _PUBLIC, bounded, (0.0,)))
        if name in ("COUNT", "SUM"):
            rows.append((_metric(name), _GAUSSIAN, _PUBLIC, bounded, (DELTAS[0],)))
        if name in ("COUNT", "PRIVACY_ID_COUNT", "SUM"):
            rows.append((_metric(name), _LAPLACE, None, bounded, DELTAS))
    return tuple(rows)


@dataclass(frozen=True)
class EngineAggregate(Family):
    """``DPEngine.aggregate`` through the preamble's ``aggregate(db, …)`` (module docstring)."""

    recipes: tuple = field(default_factory=_grid)
    bounds: tuple = (0.0, 10.0)
    relation: str = ADD_REMOVE
    kind = "query engine aggregation (DPEngine.aggregate)"
    preamble = PRELUDE
    seeded = False

    def matches(self, obj) -> bool:
        return inspect.isclass(obj) and obj.__name__ == "DPEngine" and callable(getattr(obj, "aggregate", None))

    def settings(self, obj, epsilons=EPSILONS) -> list:
        grid = []
        for metrics, noise, public, bounded, deltas in self.recipes:
            for epsilon in epsilons:
                for delta in deltas:
                    point = {"metrics": metrics, "noise_kind": noise}
                    if bounded:
                        point.update(min_value=float(self.bounds[0]), max_value=float(self.bounds[1]))
                    point.update(public_partitions=public, epsilon=float(epsilon), delta=float(delta))
                    grid.append(point)
        return grid

    def call_source(self, obj, settings: dict) -> str:
        return "aggregate(db, " + ", ".join(f"{k}={v!r}" for k, v in settings.items()) + ")"

    def database(self, values, labels=None) -> np.ndarray:
        """Records (partition, value); ``values`` as (partition, value) pairs."""
        return np.asarray(values, dtype=np.float64).reshape(-1, 2)

    def pairs(self, obj, settings: dict) -> list:
        from audit.scan.cases import BEYOND_WIDTHS, PairSpec

        low, high = (float(v) for v in self.bounds)
        base = [(0, low)] * self.rows
        out = [PairSpec("ends", self.database(base), self.database([(0, high)] + base[1:]),
                        f"record 0's value {low:g} vs {high:g}, the ends of [{low:g}, {high:g}] (partition 0)")]
        if settings.get("max_value") is not None:
            far = high + BEYOND_WIDTHS * (high - low)
            out.append(PairSpec("beyond", self.database(base), self.database([(0, far)] + base[1:]),
                                f"record 0's value {low:g} vs {far:g}, beyond max_value: the engine must clamp it"))
        out.append(PairSpec("removed", self.database([(1, high)] + base[1:]), self.database(base[1:]),
                            f"record 0 (value {high:g}, alone in partition 1) present vs removed", ADD_REMOVE))
        return out


PROFILE = Profile(
    name="pipeline-dp",
    modules=("pipeline_dp.dp_engine",),
    families=(EngineAggregate(),),
    distribution="pipeline-dp",
    max_runs=LIBRARY_MAX_RUNS,
)
