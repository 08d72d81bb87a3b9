"""The profile of IBM's diffprivlib (0.6): its tools on arrays, its models and its mechanisms.

diffprivlib states its guarantees at the replace-one relation: its tools calibrate to a known
number of records (``mean``'s sensitivity is (upper − lower)/n, ``sum``'s upper − lower). Its tools
and models take ``bounds`` (a model's as (lower, upper) per feature), ``epsilon`` and
``random_state``; its mechanisms take ``epsilon``, ``delta``, ``sensitivity`` and ``random_state`` and
release ``randomise(value)``. A tool or model left without ``bounds`` reads them from the data (it
warns with ``PrivacyLeakWarning``): the grid leaves them out too, as a user may.

Its models are the scan's slowest entry points (a fit takes milliseconds, a tool's call a fraction of
one), so they are scanned at the smallest sizes that run their code: a forest of two trees
(``n_estimators=2``: the ensemble's split of the data and its vote, at a fifth of the default ten
trees' cost) and trees of depth 2 (``max_depth=2``: a split and its leaves; the default 5 builds 32
leaves on 4 records), and at ε ≥ 1 only (``min_epsilon``): a model's ε scales its noise, so every ε
runs the same code, and ε = 0.1 would add a third to the scan's time without a code path of its own.

Its histograms add noise for sensitivity 1 to each bin (``GeometricTruncated(sensitivity=1)`` in
``diffprivlib/tools/histograms.py``): one record added or removed changes one bin by one, so their ε
is stated at the add/remove relation; a record replaced changes two bins, and the scan audits the
claim's group-privacy form, 2ε, on its replace-one pairs. ``histogramdd`` takes its ``range`` as one
(low, high) per dimension: the grid gives ``((0.0, 10.0),)`` for the one column it is called on. The
``Binary`` mechanism randomises one of the two labels it is given (``value0="0"``, ``value1="1"``): its
record is the label of the value 0 or 1. ``Exponential`` and ``PermuteAndFlip`` release one of three
candidates by the utilities they are built with (sensitivity 1): the record is candidate 0's utility, 0 vs 1,
and ``randomise(None)`` the release.

``Bingham`` releases a unit vector near the top eigenvector of a symmetric matrix ``A``: the rejection sampler of
Kent, Ganeiber and Mardia (2018) in ``diffprivlib/mechanisms/bingham.py`` draws u with density ∝ exp(ε uᵀAu / (4Δ))
on the sphere (``value_translated`` = ε(λ_max I − A)/(4Δ)), an exponential mechanism with utility uᵀAu: for two
matrices whose difference has spectral norm ≤ Δ (``sensitivity``, default 1: PCA's covariances of rows of norm ≤ 1,
``models/utils.py``) its numerator moves by e^(ε/4) at most and its normaliser by as much, so it is ε-DP (by a
factor 2 to spare). But 0.6.6's rejection step divides by (uᵀΩu)^(d/2) where Kent et al. multiply, so its draws
have density ∝ exp(−uᵀA′u)(uᵀΩu)^(−d) instead, which is not ε-DP from d = 3 on (1.20 ε found in d = 3, 2.87 ε in
d = 10; docs/benchmarks/bingham-sampler.md). The scan audits the claim, ε, as the mechanism states it, on a 4 × 4
record (:data:`BINGHAM_RECORD`): x ∈ [0, 1] is the matrix diag(100 + x, 100 − x, 0, 0), the covariance of 200 rows of
norm 1, 100 along each of the first two axes, with a share x of one row moved from the second axis to the first; the
ends differ by spectral norm 1 = Δ. A double top eigenvalue is where that report finds the loss large: on this pair
the draws' loss is 1.00 ε, 1.39 ε and 1.41 ε at ε = 0.1, 1 and 4 by quadrature (the stated density's 0.25-0.31 ε).
A loss a fraction above ε needs more runs at the scan's α share than the other mechanisms' findings: a Bingham case
runs up to :data:`BINGHAM_RUNS` (its family's ``max_runs``; the seed-0 scan refutes ε = 1 with 34,899 runs and
certifies ε ≥ 3.99 at ε = 4 with 58,207). On 2 × 2 records the largest loss found is 0.90 ε: no violation there.
``ExponentialCategorical`` releases a category o for the category v with probability
∝ exp(−ε u(v, o) / (b Δ)), Δ the largest utility, b = 1 where every category's normaliser is the same (a
"balanced" utility) and 2 otherwise: ε-DP for any two categories (McSherry and Talwar 2007). The scan gives it
three categories "0", "1", "2" at utility 1 from each other (balanced: its ratio at the release of the input is
e^ε, the claim's bound, met exactly); the record x is the category ``str(int(x))``, the ends "0" vs "2".
``ExponentialHierarchical`` is that mechanism with the utility of two leaves the hierarchy's height less the depth
of their common ancestor; the scan's hierarchy [["0", "1"], ["2", "3"]] (utilities 1 and 2, Δ = 2, balanced) puts
the ends "0" vs "3" at utility 2 = Δ: again e^ε exactly.

``histogram2d(array_x, array_y, …)`` takes two arrays: a record is a point (x, x) of both columns, its ``range``
((low, high), (low, high)), and it is stated, like ``histogram``, at add/remove (sensitivity 1 per bin).

``Vector`` is not audited (:data:`NOT_AUDITED`): it releases a function, the objective plus a random linear term
⟨b, w⟩/n whose noise b does not depend on the data. Its ε-DP is that of the minimiser of that objective
(objective perturbation, Chaudhuri, Monteleoni and Sarwate 2011, Algorithm 2), which the scan audits as
``LogisticRegression`` (its one user in diffprivlib); the function itself keeps the objective unchanged at w = 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mechanisms.inputs.relation import ADD_REMOVE

import numpy as np

from audit.scan.profiles.base import (EPSILONS, ArrayTool, Expression, Family, FittedModel, LocalRandomizer,
                                      NotScanned, OptionalArgument, Profile)

#: Values for the required arguments of diffprivlib's entry points (``data_norm``: given, not left to the data).
FIXED = {"quant": 0.5, "percent": 50.0, "sensitivity": 1.0, "delta": 1e-5, "lower": 0, "upper": 1,
         "data_norm": 10.0}
#: A budget accountant of the call's own, new at each call: left out, every call of a tool or model spends from
#: diffprivlib's default accountant, whose list of spends grows by one a call (over a million in a scan) and is
#: summed at each spend, and a forest deep-copies it into each tree (scikit-learn's ``clone``): the scan's forests,
#: after some hundred thousand calls, took about a second a fit instead of 2.4 ms.
FRESH_ACCOUNTANT = Expression("__import__('diffprivlib').BudgetAccountant()")
#: The utility of three candidates: candidate 0's is the record's value, the others' 0 (a pair moves it by the
#: sensitivity, 1: the ends of the domain [0, 1]).
UTILITY = Expression("[float(db[0, 0]), 0.0, 0.0]")
#: Mechanisms that randomise integers only.
INTEGER_MECHANISMS = ("Geometric", "GeometricFolded", "GeometricTruncated", "GaussianDiscrete")

#: Entry points of diffprivlib the profile lists as not audited, and why (module docstring).
NOT_AUDITED = {
    "Vector": "releases a function (the objective plus a data-independent random linear term ⟨b, w⟩/n), which the "
              "scan's encoders cannot take; its ε-DP is the minimiser's under objective perturbation (Chaudhuri, "
              "Monteleoni and Sarwate 2011, Algorithm 2), audited as diffprivlib.models.LogisticRegression, its user",
}
#: ExponentialCategorical's utilities: three categories at utility 1 from each other (a balanced utility).
CATEGORIES = [("0", "1", 1.0), ("0", "2", 1.0), ("1", "2", 1.0)]
#: Bingham's record x as a 4 × 4 covariance: diag(M + x, M - x, 0, 0), M = 100 (module docstring).
BINGHAM_RECORD = "np.diag([100.0 + float(db[0, 0]), 100.0 - float(db[0, 0]), 0.0, 0.0])"
#: Mechanism runs of a Bingham case (module docstring).
BINGHAM_RUNS = 60000
#: ExponentialHierarchical's hierarchy: leaves "0", "1" under one node, "2", "3" under the other.
HIERARCHY = [["0", "1"], ["2", "3"]]


@dataclass(frozen=True)
class NamedRandomizer(LocalRandomizer):
    """A :class:`LocalRandomizer` for the classes named in ``names`` only (whose parameters are no different from
    another family's: ``Bingham``'s are ``Laplace``'s)."""

    names: tuple = ()

    def matches(self, obj) -> bool:
        return getattr(obj, "__name__", "") in self.names and LocalRandomizer.matches(self, obj)


@dataclass(frozen=True)
class PairedArrayTool(ArrayTool):
    """A central tool on two arrays, ``tool(db[:, 0], db[:, 1], epsilon=…, range=…)`` (``histogram2d``): a record is
    the point (x, x), and a range given is the same (low, high) for both columns."""

    data_names: tuple = ("array_x", "array_y")
    per_dimension: tuple = ()

    def settings(self, obj, epsilons=EPSILONS) -> list:
        grid = ArrayTool.settings(self, obj, epsilons)
        for point in grid:
            point.update({name: (point[name], point[name])
                          for name in self.bounds_names if point.get(name) is not None})
        return grid

    def call_source(self, obj, settings: dict) -> str:
        return f"entry(db[:, 0], db[:, 1], {self.arguments_source(obj, settings)})"

    def database(self, values, labels=None) -> np.ndarray:
        return np.repeat(np.asarray(values, dtype=np.float64).reshape(-1, 1), 2, axis=1)


@dataclass(frozen=True)
class NotAudited(Family):
    """Entry points listed as skipped with the reason ``reasons`` gives (:data:`NOT_AUDITED`)."""

    reasons: dict = field(default_factory=lambda: NOT_AUDITED)

    def matches(self, obj) -> bool:
        return getattr(obj, "__name__", "") in self.reasons

    def settings(self, obj, epsilons=EPSILONS) -> list:
        raise NotScanned(self.reasons[obj.__name__])


PROFILE = Profile(
    name="diffprivlib",
    modules=("diffprivlib.tools", "diffprivlib.models", "diffprivlib.mechanisms"),
    families=(
        NotAudited(),
        PairedArrayTool(fixed={}, optional=(OptionalArgument("accountant", (FRESH_ACCOUNTANT,)),)),
        ArrayTool(fixed={k: FIXED[k] for k in ("quant", "percent")},
                  optional=(OptionalArgument("accountant", (FRESH_ACCOUNTANT,)),), per_dimension=("histogramdd",)),
        FittedModel(bounds_names=("bounds",), optional=(OptionalArgument("data_norm", (FIXED["data_norm"],)),
                                                         OptionalArgument("n_clusters", (2,)),
                                                         OptionalArgument("n_estimators", (2,)),
                                                         OptionalArgument("max_depth", (2,)),
                                                         OptionalArgument("accountant", (FRESH_ACCOUNTANT,))),
                    min_epsilon=1.0),
        # The exponential mechanisms and permute-and-flip release a candidate by its utility, a vector they are built
        # with, and randomise nothing (None): the record is candidate 0's utility, in [0, sensitivity]
        LocalRandomizer(fixed={"sensitivity": FIXED["sensitivity"], "utility": UTILITY}, requires=("utility",),
                        value_source="None"),
        # Bingham: a symmetric matrix in, a unit vector out; the record x is diag(M + x, M - x, 0, 0) (module
        # docstring), at BINGHAM_RUNS runs a case
        NamedRandomizer(names=("Bingham",), value_source=BINGHAM_RECORD, max_runs=BINGHAM_RUNS),
        # The categorical exponential mechanisms: the record x is the category str(int(x)), the ends at utility Δ
        LocalRandomizer(fixed={"utility_list": CATEGORIES}, requires=("utility_list",),
                        value_source="str(int(db[0, 0]))", bounds=(0.0, 2.0)),
        LocalRandomizer(fixed={"hierarchy": HIERARCHY}, requires=("hierarchy",), value_source="str(int(db[0, 0]))",
                        bounds=(0.0, 3.0)),
        # Binary randomises one of two labels it is given: "0" and "1", the record's value as that label
        LocalRandomizer(fixed={"value0": "0", "value1": "1"}, requires=("value0", "value1"),
                        value_source="str(int(db[0, 0]))"),
        LocalRandomizer(fixed={k: FIXED[k] for k in ("sensitivity", "delta", "lower", "upper")},
                        integer_entry_points=INTEGER_MECHANISMS),
    ),
    distribution="diffprivlib",
    relations={"histogram": ADD_REMOVE, "histogramdd": ADD_REMOVE, "histogram2d": ADD_REMOVE},
    exclude=("DPMechanism", "TruncationAndFoldingMixin", "DPMachine", "Budget", "BudgetAccountant"),
)
