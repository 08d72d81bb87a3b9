"""The profile of python-dp (PyDP 1.1, Google's differential-privacy library): its algorithms, mechanisms and
partition selection.

- ``pydp.algorithms.laplacian``: ``BoundedSum``, ``BoundedMean``, ``Count``, ``Max``, ``Percentile``, … take
  ``epsilon``, ``delta``, ``lower_bound``, ``upper_bound`` and ``dtype`` and release
  ``Algorithm(…).quick_result(values)`` (:class:`QuickResultAlgorithm`). Google's library states its
  guarantee for a privacy unit added or removed (each unit contributing to at most ``l0_sensitivity``
  partitions and ``linf_sensitivity`` values per partition, 1 here): the scan audits the ``removed``
  pair at that relation and its replace-one pairs (``ends``; ``beyond`` the bounds given: the algorithm
  clamps) at the claim's group-privacy form, 2ε. The grid gives the bounds and leaves them out, and each
  ``dtype`` (``"float"``, ``"int"``: different noise). Left out, the algorithm spends part of ε finding
  approximate bounds from a noisy histogram of the records, which refuses to run on fewer records than its
  threshold (``FAILED_PRECONDITION: Bin count threshold was too large``: a few hundred at ε = 0.1), and on
  records all equal finds bounds of width 0 (``LInf sensitivity must be finite and positive``): the grid
  points of those algorithms (:data:`FIND_BOUNDS`: ``Max``, ``Min`` and ``Median`` run on three records) that
  leave the bounds out hold :data:`ROWS_WITHOUT_BOUNDS` records alternating between the ends of the domain
  (:meth:`QuickResultAlgorithm.pairs`), record 0 the one that moves or is removed. The bounds search may also
  raise at random (``LInf sensitivity must be finite and positive``, the threshold's ``FAILED_PRECONDITION``),
  and a raise whose probability depends on the data breaks the claim by itself: where an algorithm searches its
  bounds the family opts in to audit a raise as one of the outputs (:meth:`QuickResultAlgorithm.raises_as_output`,
  :mod:`audit.scan.raised`). ``Percentile`` cannot be built without bounds (:data:`BOUNDS_REQUIRED`).
- ``pydp.algorithms.numerical_mechanisms``: ``LaplaceMechanism(epsilon, sensitivity)`` and
  ``GaussianMechanism(epsilon, delta, sensitivity)`` release ``add_noise(value)``, (ε, δ)-DP for a value
  of the declared sensitivity: a local randomizer on one value, its pair the two ends of [0, sensitivity].
- ``pydp.algorithms.partition_selection``: ``create_*_partition_strategy(epsilon, delta,
  max_partitions_contributed)`` returns a strategy whose ``should_keep(n)`` keeps a partition held by ``n``
  privacy units (:class:`PartitionSelection`); one unit added changes ``n`` by one, so the database is
  the one count and its pairs are 0 vs 1 (the partition exists or not: the δ part) and 1 vs 2. δ is
  scanned at 10⁻⁵ and at 0.05, large enough for the runs to see it.

PyDP's classes and factories are compiled (pybind11): their parameters are read from the signature line
pybind11 writes at the top of each docstring (:func:`pybind_parameters`). PyDP draws its noise from
its own secure generator, which takes no seed.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass

from mechanisms.inputs.relation import ADD_REMOVE

from audit.scan.profiles.base import Family, LocalRandomizer, NotScanned, OptionalArgument, Profile, parameters


def pybind_parameters(obj) -> dict:
    """A compiled function's or class's named parameters, from pybind11's signature line
    (``name(self: T, epsilon: float, sensitivity: float = 1.0) -> None``); {} where there is none."""
    found = parameters(obj)
    if any(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in found.values()):
        return found
    target = obj.__init__ if inspect.isclass(obj) else obj
    line = (getattr(target, "__doc__", None) or "").strip().split("\n", 1)[0]
    match = re.match(r"^\w+\((.*)\)\s*->", line)
    if not match:
        return {}
    parts, depth, current = [], 0, ""
    for char in match.group(1):
        depth += char in "([{" and 1 or 0
        depth -= char in ")]}" and 1 or 0
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    out = {}
    for part in parts:
        name, _, rest = part.partition(":")
        name = name.strip()
        if not name or name == "self":
            continue
        default = inspect.Parameter.empty
        if "=" in rest:
            try:
                default = ast.literal_eval(rest.split("=", 1)[1].strip())
            except (ValueError, SyntaxError):
                default = None
        out[name] = inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
    return out


#: Records of a database where the grid point leaves the bounds out (module docstring): enough for the approximate
#: bounds' threshold at ε = 0.1 (a tenth of it, 0.05, spent on the bounds), which refuses 300 records there.
ROWS_WITHOUT_BOUNDS = 1000
#: The algorithms that refuse to run on three records with the bounds left out (module docstring).
FIND_BOUNDS = ("BoundedMean", "BoundedSum", "BoundedStandardDeviation", "BoundedVariance")

#: The algorithms whose public class cannot be built with the bounds left out, and why: their grid points without
#: bounds are skipped rows with that reason (:meth:`QuickResultAlgorithm.call_source`).
BOUNDS_REQUIRED = {"Percentile": (
    "PyDP 1.1's Percentile cannot be built without bounds: its Python class passes `percentile` always (default 0.0) "
    "and drops the bounds left out, and its compiled class (PercentileDouble, PercentileInt) takes `percentile` only "
    "with `lower_bound` and `upper_bound` (its one overload without bounds takes no percentile), so the call raises "
    "TypeError: incompatible constructor arguments")}


@dataclass(frozen=True)
class QuickResultAlgorithm(Family):
    """An algorithm object fed a list of values: ``Algorithm(epsilon=…, lower_bound=…, upper_bound=…,
    dtype=…).quick_result(values)`` (module docstring)."""

    method_name: str = "quick_result"
    bounds_names: tuple = ("lower_bound",)
    relation: str = ADD_REMOVE
    optional: tuple = (OptionalArgument("dtype", ("float", "int")), OptionalArgument("percentile", (0.5,)))
    kind = "algorithm fed a list (quick_result)"
    seeded = False

    def matches(self, obj) -> bool:
        return inspect.isclass(obj) and callable(getattr(obj, self.method_name, None)) \
            and self.epsilon_name in parameters(obj)

    def settings(self, obj, epsilons=None) -> list:
        grid = []
        for point in Family.settings(self, obj, epsilons or (0.1, 1.0, 4.0)):
            bounds = point.pop("lower_bound", None)
            if bounds is not None:  # given: as the two arguments the algorithm takes, of its dtype
                kind = int if point.get("dtype") == "int" else float
                point.update(lower_bound=kind(bounds[0]), upper_bound=kind(bounds[1]))
            grid.append(point)
        return grid

    def domain(self, settings: dict) -> tuple:
        if settings.get("lower_bound") is not None:
            return settings["lower_bound"], settings["upper_bound"]
        return tuple(self.bounds)

    def raises_as_output(self, obj, settings: dict) -> bool:
        """Whether a raise is one of the case's outputs (:mod:`audit.scan.raised`): where the algorithm searches
        its bounds (it takes them and the grid point leaves them out), which raises at random (module docstring)."""
        return "lower_bound" in parameters(obj) and settings.get("lower_bound") is None

    def call_source(self, obj, settings: dict) -> str:
        name = getattr(obj, "__name__", "")
        if name in BOUNDS_REQUIRED and settings.get("lower_bound") is None:
            raise NotScanned(BOUNDS_REQUIRED[name])
        values = "[int(v) for v in db[:, 0]]" if settings.get("dtype") == "int" else "db[:, 0].tolist()"
        return f"entry({self.arguments_source(obj, settings)}).{self.method_name}({values})"

    def pairs(self, obj, settings: dict) -> list:
        """The replace-one pairs of the domain (``ends``, ``beyond`` the bounds given) and ``removed``: the high
        record present vs removed, at the add/remove relation the claim is stated at."""
        from audit.scan.cases import BEYOND_WIDTHS, PairSpec

        low, high = (float(v) for v in self.domain(settings))
        values = [low] * self.rows
        others = ""
        if settings.get("lower_bound") is None and getattr(obj, "__name__", "") in FIND_BOUNDS:  # records it finds
            values = [low if number % 2 == 0 else high for number in range(ROWS_WITHOUT_BOUNDS)]
            others = f", the other {len(values) - 1} records alternating between {high:g} and {low:g}"
        out = [PairSpec("ends", self.database(values), self.database([high] + values[1:]),
                        f"record 0 at {low:g} vs {high:g}, the ends of the domain [{low:g}, {high:g}]{others}")]
        if settings.get("lower_bound") is not None:
            far = high + BEYOND_WIDTHS * (high - low)
            out.append(PairSpec("beyond", self.database(values), self.database([far] + values[1:]),
                                f"record 0 at {low:g} vs {far:g}, beyond the bounds given: the algorithm must "
                                "clamp it"))
        out.append(PairSpec("removed", self.database([high] + values[1:]), self.database(values[1:]),
                            f"record 0 at {high:g} present vs removed{others}", ADD_REMOVE))
        return out


@dataclass(frozen=True)
class CompiledRandomizer(LocalRandomizer):
    """:class:`LocalRandomizer` for compiled classes (``LaplaceMechanism(epsilon, sensitivity).add_noise(value)``)."""

    seeded = False

    def matches(self, obj) -> bool:
        return inspect.isclass(obj) and self._method(obj) is not None and self.epsilon_name in pybind_parameters(obj)

    def signature(self, obj) -> dict:
        return pybind_parameters(obj)


@dataclass(frozen=True)
class PartitionSelection(Family):
    """A partition-selection factory: ``create_…_partition_strategy(epsilon=…, delta=…,
    max_partitions_contributed=1).should_keep(int(db[0, 0]))`` on a partition's count of privacy units
    (module docstring)."""

    method_name: str = "should_keep"
    prefix: str = "create_"
    bounds_names: tuple = ()
    rows: int = 1
    kind = "partition selection on a partition's count of privacy units"
    seeded = False

    def matches(self, obj) -> bool:
        name = getattr(obj, "__name__", "")
        return callable(obj) and not inspect.isclass(obj) and name.startswith(self.prefix) \
            and self.epsilon_name in pybind_parameters(obj)

    def signature(self, obj) -> dict:
        return pybind_parameters(obj)

    def call_source(self, obj, settings: dict) -> str:
        return f"entry({self.arguments_source(obj, settings)}).{self.method_name}(int(db[0, 0]))"

    def pairs(self, obj, settings: dict) -> list:
        from audit.scan.cases import PairSpec

        return [PairSpec("ends", self.database([0]), self.database([1]),
                         "the partition held by no privacy unit (absent) vs by one: the δ part of the claim"),
                PairSpec("one-more", self.database([1]), self.database([2]), "the partition held by one unit vs two")]


PROFILE = Profile(
    name="python-dp",
    modules=("pydp.algorithms.laplacian", "pydp.algorithms.numerical_mechanisms",
             "pydp.algorithms.partition_selection"),
    families=(
        QuickResultAlgorithm(),
        CompiledRandomizer(method_names=("add_noise",), fixed={"sensitivity": 1.0, "delta": 1e-5}),
        PartitionSelection(fixed={"delta": 1e-5, "max_partitions_contributed": 1},
                           optional=(OptionalArgument("delta", (1e-5, 0.05)),)),
    ),
    distribution="python-dp",
    exclude=("NumericalMechanism", "ConfidenceInterval", "PartitionSelectionStrategy", "PartitionSelectionStrategyType"),
)
