"""The profile of OpenDP (0.16): its measurement constructors over domains and metrics, and its pipelines.

An OpenDP constructor takes an input domain and metric and a noise parameter
(``make_laplace(input_domain, input_metric, scale)``) and returns a ``Measurement``, whose privacy map
``map(d_in)`` states the guarantee at input distance ``d_in``. The family :class:`OpenDPMeasurement`
builds each constructor through **recipes** (:class:`Recipe`), one per input domain and metric it is
scanned over:

- :data:`MEASUREMENTS`: ``opendp.measurements``' constructors on their own inputs (a number, a
  vector, a bool, a category, a bit vector, a map of keys to values, a dataset);
- :data:`PIPELINES`: ``opendp.transformations``' aggregates (sum, count, mean, variance, count
  distinct, counts by category, counts by key, quantile scores), each chained to the noise
  measurement it is used with, behind a clamp (and a resize) where it needs bounded (sized) data:
  ``make_clamp(…) >> make_sum(…) >> then_laplace(scale)``.

**The grid.** For each ε of the scan's grid a recipe's noise parameter (``scale``, ``prob``, ``f``;
a threshold's ``threshold`` after its ``scale``) is found by binary search on the measurement's own
privacy map at the distance the user states a guarantee at (``d_in = 1``, one record added or
removed, for a dataset of unfixed size; the pair's distance for an aggregate), to the privacy
map's output ε (pure DP), ρ = ε²/2 (zCDP: what ε-DP implies), (ε, 10⁻⁶) (approximate DP), then
rounded to the fewest digits (3, 4, 6, 8, 10) that still meet it. ``make_canonical_noise`` takes
(ε, 10⁻⁶) itself. A grid point whose constructor raises is listed as skipped with the error.

**The claim** of a case is the measurement's privacy map at its pair's distance, read by
:class:`mechanisms.adapters.libraries.OpenDPMechanism` (the reader ``miaudit audit`` uses for an
OpenDP measurement): replace-one pairs of a dataset at d_in = 2 for the symmetric distance, its
add/remove pair (``removed``) at d_in = 1, an aggregate's pair at its distance (the recipe's
sensitivity), a value's (bool, category, bit vector) at the discrete distance 1. For the metrics
that reader has no distance for (``LInfDistance``, ``L01InfDistance``) the recipe gives ``d_in``.
Approximate zCDP (``make_gaussian_threshold``'s (ρ, δ)) is read as (ε, δ)-DP by
:func:`audit.scan.profiles.opendp_claims.approximate_zcdp_claim`.

**Pairs.** A dataset: three records at the low end vs record 0 at the high end (``ends``); where the
input takes any value (a clamp in front, categories with an "other" count, candidates' scores), record
0 ten widths beyond the high end (``beyond``); the high record removed (``removed``, add/remove).
An aggregate: its input at the low end vs one coordinate moved by the sensitivity (``ends``). A
recipe may list its pairs instead (``pairs``): the ends of a randomized response's categories and a
value that is none of them, the heaviest bit vectors, a key absent vs present.

OpenDP draws its noise from its own cryptographically secure generator, which takes no seed: the
audit's generator is not used and the outcomes of a case are not reproducible bit for bit (the
verdicts are, within the audit's α).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import numpy as np

from mechanisms.inputs.relation import ADD_REMOVE, REPLACE_ONE

from audit.scan.profiles.base import EPSILONS, Family, NotScanned, Profile
from audit.scan.profiles.opendp_claims import APPROXIMATE_ZCDP, approximate_zcdp_claim

#: What every call source runs first.
PRELUDE = 'import opendp.prelude as dp\ndp.enable_features("contrib")'
#: δ of the approximate-DP grid points (thresholds, canonical noise): 10⁻⁶, as users set it, and 0.05, large
#: enough for the δ part of a claim to show in a scan's runs. An audit bounds δ below by P₁(S) − e^ε·P₂(S)
#: with P₂(S) bounded above from the runs: with ~3,000 runs per database and a case's share of α that
#: bound is about 0.004 even for an event S that never happens on the second database, so only a δ of a
#: few hundredths can be seen exceeded (a key released more often than the privacy map allows).
DELTAS = (1e-6, 0.05)
#: δ at which a smoothed max-divergence is read (:data:`mechanisms.adapters.libraries.SMOOTHED_DELTA`'s role).
DELTA = DELTAS[0]
#: How far beyond the high end the ``beyond`` pair puts its record, in widths of the range.
BEYOND_WIDTHS = 10.0

AGGREGATE, DATASET, VALUE = "aggregate", "dataset", "value"

_FLOAT = "dp.atom_domain(T=float, nan=False)"
_INT = "dp.atom_domain(T=int)"
_VFLOAT = f"dp.vector_domain({_FLOAT})"
_VINT = f"dp.vector_domain({_INT})"
_MAP = f"dp.map_domain(dp.atom_domain(T=str), {_FLOAT})"
_FLOATS, _INTS = "db[:, 0].tolist()", "[int(v) for v in db[:, 0]]"
#: A vector aggregate is one record of k values (its pairs differ in that record).
_FLOAT_VECTOR, _INT_VECTOR = "db[0].tolist()", "[int(v) for v in db[0]]"
#: A map of keys k0, k1, … to the records' values; a negative value is a key absent.
_KEYS = '{f"k{i}": float(v) for i, v in enumerate(db[:, 0]) if v >= 0}'
_MAP_INT = f"dp.map_domain(dp.atom_domain(T=str), {_INT})"
_KEYS_INT = '{f"k{i}": int(v) for i, v in enumerate(db[:, 0]) if v >= 0}'


@dataclass(frozen=True)
class Recipe:
    """One way an OpenDP constructor is built into a measurement on miaudit's databases (module docstring).

    Parameters
    ----------
    label : str
        What the case's settings show (``input=LABEL``).
    build : str
        The measurement's source: an expression of ``entry`` (the constructor), ``dp`` (``opendp.prelude``)
        and, in braces, the calibrated parameters (``entry(…, scale={scale})``).
    to_input : str
        The measurement's input from a database ``db`` (n, 1): ``float(db[0, 0])``, ``db[:, 0].tolist()``.
    kind : str
        ``"dataset"``, ``"aggregate"`` (the input is a query's value; its pairs move it by the sensitivity)
        or ``"value"`` (the pairs are listed).
    parameters : tuple of str
        The parameters calibrated to ε, in order.
    start : tuple of (name, value)
        Values of the parameters calibrated later while an earlier one is (a threshold high enough that
        its δ is negligible).
    bounds : tuple of (name, (low, high))
        Where a parameter is searched (the default: any positive number).
    integers : tuple of str
        Parameters searched over the integers.
    values : (low, high)
        The records' range: a dataset's ends; an aggregate's start and start + sensitivity.
    rows : int
        Records in a database.
    width : int
        Values in a record (a vector aggregate's, a bit vector's: one record).
    any_value : bool
        The input takes any value of its type (a clamp in front, an "other" count): the ``beyond`` pair.
    pairs : tuple of (name, first, second, why)
        The pairs, where the recipe lists them (each database a list of ``rows`` record values).
    d_in : optional
        The input distance of the pairs, for a metric the claim reader has none for (LInf, L01Inf).
    output : str
        Post-processing of the release, ``{}`` standing for it (a bit vector's bytes unpacked).
    deltas : tuple
        The δ of each grid point at an ε (:data:`DELTAS` for an approximate-DP measurement; ``None``: pure
        DP or zCDP).
    """

    label: str
    build: str
    to_input: str
    kind: str = DATASET
    parameters: tuple = ("scale",)
    start: tuple = ()
    bounds: tuple = ()
    integers: tuple = ()
    values: tuple = (0.0, 10.0)
    rows: int = 3
    width: int = 1
    any_value: bool = False
    pairs: tuple = ()
    d_in: object = None
    output: str = "{}"
    deltas: tuple = (None,)

    def __repr__(self) -> str:
        return self.label

    @property
    def sensitivity(self):
        """An aggregate's pair distance: the width of its range."""
        return self.values[1] - self.values[0] if self.kind == AGGREGATE else None


def _aggregate(label, domain, metric, to_input, *, integer=False, width=1, **extra) -> Recipe:
    one = (0, 1) if integer else (0.0, 1.0)
    return Recipe(label, f"entry({domain}, {metric}, scale={{scale}})", to_input, AGGREGATE, values=one, rows=1,
                  width=width, **extra)


_SCORE_PAIRS = (("ends", ((0, 0, 0),), ((1, 0, 0),),
                 "scores (0, 0, 0) vs (1, 0, 0): one score moved by 1 (L∞ distance 1)"),
                ("swap", ((1, 0, 0),), ((0, 1, 0),), "scores (1, 0, 0) vs (0, 1, 0): two scores moved by 1 in opposite "
                                                      "directions (L∞ distance 1)"))

#: Recipes of ``opendp.measurements``' constructors (module docstring).
MEASUREMENTS = {
    "make_laplace": (
        _aggregate("atom_domain(T=float) · absolute_distance", _FLOAT, "dp.absolute_distance(T=float)",
                   "float(db[0, 0])"),
        _aggregate("atom_domain(T=int) · absolute_distance", _INT, "dp.absolute_distance(T=int)", "int(db[0, 0])",
                   integer=True),
        _aggregate("vector_domain(T=float) · l1_distance", _VFLOAT, "dp.l1_distance(T=float)", _FLOAT_VECTOR, width=3),
        _aggregate("vector_domain(T=int) · l1_distance", _VINT, "dp.l1_distance(T=int)", _INT_VECTOR, integer=True,
                   width=3),
    ),
    "make_gaussian": (
        _aggregate("atom_domain(T=float) · absolute_distance", _FLOAT, "dp.absolute_distance(T=float)",
                   "float(db[0, 0])"),
        _aggregate("atom_domain(T=int) · absolute_distance", _INT, "dp.absolute_distance(T=int)", "int(db[0, 0])",
                   integer=True),
        _aggregate("vector_domain(T=float) · l2_distance", _VFLOAT, "dp.l2_distance(T=float)", _FLOAT_VECTOR, width=3),
    ),
    "make_geometric": (
        _aggregate("atom_domain(T=int) · absolute_distance", _INT, "dp.absolute_distance(T=int)", "int(db[0, 0])",
                   integer=True),
        Recipe("atom_domain(T=int) · absolute_distance · bounds=(0, 10)",
               f"entry({_INT}, dp.absolute_distance(T=int), scale={{scale}}, bounds=(0, 10))", "int(db[0, 0])",
               AGGREGATE, values=(0, 1), rows=1,
               pairs=(("ends", (0,), (1,), "the count at 0 vs 1, the low end of the bounds (0, 10)"),
                      ("top", (9,), (10,), "the count at 9 vs 10, the high end of the bounds (0, 10)"))),
        _aggregate("vector_domain(T=int) · l1_distance", _VINT, "dp.l1_distance(T=int)", _INT_VECTOR, integer=True,
                   width=3),
    ),
    "make_noise": (
        Recipe("atom_domain(T=float) · absolute_distance · max_divergence",
               f"entry({_FLOAT}, dp.absolute_distance(T=float), dp.max_divergence(), scale={{scale}})",
               "float(db[0, 0])", AGGREGATE, values=(0.0, 1.0), rows=1),
        Recipe("atom_domain(T=float) · absolute_distance · zero_concentrated_divergence",
               f"entry({_FLOAT}, dp.absolute_distance(T=float), dp.zero_concentrated_divergence(), scale={{scale}})",
               "float(db[0, 0])", AGGREGATE, values=(0.0, 1.0), rows=1),
    ),
    "make_laplace_threshold": (
        Recipe("map_domain(str → float) · l01inf_distance(absolute_distance)",
               f"entry({_MAP}, dp.l01inf_distance(dp.absolute_distance(T=float)), scale={{scale}}, "
               "threshold={threshold})", _KEYS, VALUE, parameters=("scale", "threshold"),
               start=(("threshold", 1e6),), d_in=(1, 1.0, 1.0), deltas=DELTAS,
               pairs=(("ends", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), "key k0's value 0 vs 1"),
                      ("absent", (-1.0, 0.0, 0.0), (1.0, 0.0, 0.0), "key k0 absent vs present with value 1 "
                                                                    "(a negative record is an absent key)"))),
        Recipe("map_domain(str → int) · l01inf_distance(absolute_distance)",
               f"entry({_MAP_INT}, dp.l01inf_distance(dp.absolute_distance(T=int)), scale={{scale}}, "
               "threshold={threshold})", _KEYS_INT, VALUE, parameters=("scale", "threshold"),
               start=(("threshold", 10 ** 6),), integers=("threshold",), d_in=(1, 1, 1), deltas=DELTAS,
               pairs=(("absent", (-1, 0, 0), (1, 0, 0), "key k0 absent vs present with count 1 "
                                                        "(a negative record is an absent key)"),)),
    ),
    "make_noise_threshold": (
        Recipe("map_domain(str → float) · l01inf_distance(absolute_distance) · approximate(max_divergence)",
               f"entry({_MAP}, dp.l01inf_distance(dp.absolute_distance(T=float)), dp.approximate(dp.max_divergence()), "
               "scale={scale}, threshold={threshold})", _KEYS, VALUE, parameters=("scale", "threshold"),
               start=(("threshold", 1e6),), d_in=(1, 1.0, 1.0), deltas=DELTAS,
               pairs=(("absent", (-1.0, 0.0, 0.0), (1.0, 0.0, 0.0), "key k0 absent vs present with value 1 "
                                                                    "(a negative record is an absent key)"),)),
    ),
    "make_gaussian_threshold": (
        Recipe("map_domain(str → float) · l02inf_distance(absolute_distance)",
               f"entry({_MAP}, dp.l02inf_distance(dp.absolute_distance(T=float)), scale={{scale}}, "
               "threshold={threshold})", _KEYS, VALUE, parameters=("scale", "threshold"),
               start=(("threshold", 1e6),), d_in=(1, 1.0, 1.0), deltas=DELTAS,
               pairs=(("absent", (-1.0, 0.0, 0.0), (1.0, 0.0, 0.0), "key k0 absent vs present with value 1"),)),
    ),
    "make_randomized_response_bool": tuple(
        Recipe(f"bool · constant_time={flag}", f"entry(prob={{prob}}, constant_time={flag})", "bool(db[0, 0])", VALUE,
               parameters=("prob",), bounds=(("prob", (0.5, 1.0)),), rows=1,
               pairs=(("ends", (0,), (1,), "the bit False vs True"),))
        for flag in (False, True)),
    "make_randomized_response": (
        Recipe("categories=[0, 1, 2]", "entry(categories=[0, 1, 2], prob={prob})", "int(db[0, 0])", VALUE,
               parameters=("prob",), bounds=(("prob", (1 / 3, 1.0)),), rows=1,
               pairs=(("ends", (0,), (2,), "category 0 vs 2"),
                      ("outside", (0,), (3,), "category 0 vs 3, an integer that is none of the categories (the input "
                                              "domain is every i32)"))),
    ),
    "make_randomized_response_bitvec": (
        Recipe("bitvector_domain(max_weight=2) · discrete_distance",
               "entry(dp.bitvector_domain(max_weight=2), dp.discrete_distance(), f={f})",
               "np.packbits(db[0].astype(bool))", VALUE, parameters=("f",), bounds=(("f", (1e-9, 1.0)),), rows=1,
               width=8, output="np.unpackbits(np.frombuffer({}, dtype=np.uint8)).tolist()",
               pairs=(("ends", ((0,) * 8,), ((1,) + (0,) * 7,), "one record of 8 bits: all 0 vs bit 0 set"),
                      ("heaviest", ((1, 1) + (0,) * 6,), ((0, 0, 1, 1) + (0,) * 4,),
                       "one record of 8 bits: bits 0 and 1 set vs bits 2 and 3 set, two vectors of the largest weight "
                       "allowed, 4 bits apart"))),
    ),
    "make_report_noisy_max_gumbel": (
        Recipe("vector_domain(T=int) · linf_distance", f"entry({_VINT}, dp.linf_distance(T=int), scale={{scale}})",
               _INT_VECTOR, AGGREGATE, values=(0, 1), rows=1, width=3, d_in=1, pairs=_SCORE_PAIRS),
    ),
    "make_noisy_max": (
        Recipe("vector_domain(T=int) · linf_distance · max_divergence",
               f"entry({_VINT}, dp.linf_distance(T=int), dp.max_divergence(), scale={{scale}})", _INT_VECTOR,
               AGGREGATE, values=(0, 1), rows=1, width=3, d_in=1, pairs=_SCORE_PAIRS),
        Recipe("vector_domain(T=float) · linf_distance · zero_concentrated_divergence",
               f"entry({_VFLOAT}, dp.linf_distance(T=float), dp.zero_concentrated_divergence(), scale={{scale}})",
               _FLOAT_VECTOR, AGGREGATE, values=(0.0, 1.0), rows=1, width=3, d_in=1.0, pairs=_SCORE_PAIRS),
    ),
    "make_noisy_top_k": (
        Recipe("vector_domain(T=int) · linf_distance · max_divergence · k=2",
               f"entry({_VINT}, dp.linf_distance(T=int), dp.max_divergence(), k=2, scale={{scale}})", _INT_VECTOR,
               AGGREGATE, values=(0, 1), rows=1, width=3, d_in=1, pairs=_SCORE_PAIRS),
    ),
    "make_private_quantile": (
        Recipe("vector_domain(T=float) · symmetric_distance · max_divergence · median of candidates 0, 2.5, …, 10",
               f"entry({_VFLOAT}, dp.symmetric_distance(), dp.max_divergence(), candidates=[0.0, 2.5, 5.0, 7.5, 10.0], "
               "alpha=0.5, scale={scale})", _FLOATS, any_value=True),
    ),
    "make_canonical_noise": (
        Recipe("atom_domain(T=float) · absolute_distance · d_in=1.0",
               f"entry({_FLOAT}, dp.absolute_distance(T=float), d_in=1.0, d_out={{d_out}})", "float(db[0, 0])",
               AGGREGATE, parameters=("d_out",), values=(0.0, 1.0), rows=1, deltas=DELTAS),
    ),
}


def _clamped(domain, bounds, tail, *, entry_args="", resize=None) -> str:
    """``make_clamp(domain, symmetric_distance(), bounds) [>> then_resize] >> entry(its output …) >> tail``."""
    clamp = f"dp.t.make_clamp({domain}, dp.symmetric_distance(), bounds={bounds!r})"
    if resize is not None:
        clamp += f" >> dp.t.then_resize(size={resize[0]}, constant={resize[1]!r})"
    return f"(before := {clamp}) >> entry(before.output_domain, before.output_metric{entry_args}) >> {tail}"


_LAPLACE, _GAUSSIAN = "dp.m.then_laplace(scale={scale})", "dp.m.then_gaussian(scale={scale})"

#: Recipes of ``opendp.transformations``' aggregates: each chained to its noise measurement (module docstring).
PIPELINES = {
    "make_sum": (
        Recipe("clamp(0, 10) >> sum >> laplace (float)", _clamped(_VFLOAT, (0.0, 10.0), _LAPLACE), _FLOATS,
               any_value=True),
        Recipe("clamp(0, 10) >> sum >> laplace (int)", _clamped(_VINT, (0, 10), _LAPLACE), _INTS,
               values=(0, 10), any_value=True),
        Recipe("clamp(0, 10) >> sum >> gaussian (float)", _clamped(_VFLOAT, (0.0, 10.0), _GAUSSIAN), _FLOATS,
               any_value=True),
        Recipe("clamp(0, 10) >> resize(3) >> sum >> laplace (float)",
               _clamped(_VFLOAT, (0.0, 10.0), _LAPLACE, resize=(3, 5.0)), _FLOATS, any_value=True),
    ),
    "make_count": (
        Recipe("count >> laplace", f"entry({_VFLOAT}, dp.symmetric_distance()) >> {_LAPLACE}", _FLOATS),
        Recipe("count >> gaussian", f"entry({_VFLOAT}, dp.symmetric_distance()) >> {_GAUSSIAN}", _FLOATS),
    ),
    "make_mean": (
        Recipe("clamp(0, 10) >> resize(3) >> mean >> laplace",
               _clamped(_VFLOAT, (0.0, 10.0), _LAPLACE, resize=(3, 5.0)), _FLOATS, any_value=True),
    ),
    "make_variance": (
        Recipe("clamp(0, 10) >> resize(3) >> variance >> laplace",
               _clamped(_VFLOAT, (0.0, 10.0), _LAPLACE, resize=(3, 5.0)), _FLOATS, any_value=True),
    ),
    "make_count_distinct": (
        Recipe("count_distinct >> laplace (int)", f"entry({_VINT}, dp.symmetric_distance()) >> {_LAPLACE}", _INTS,
               values=(0, 10)),
    ),
    "make_count_by_categories": (
        Recipe("count_by_categories([0, 1, 2]) >> laplace",
               f"entry({_VINT}, dp.symmetric_distance(), categories=[0, 1, 2]) >> {_LAPLACE}", _INTS,
               values=(0, 2), any_value=True),
        Recipe("count_by_categories([0, 1, 2]; MO=L2Distance[int]) >> gaussian",  # the Gaussian needs L2 counts
               f"entry({_VINT}, dp.symmetric_distance(), categories=[0, 1, 2], MO=dp.L2Distance[int]) >> {_GAUSSIAN}",
               _INTS, values=(0, 2), any_value=True),
    ),
    # calibrated at d_in = 1 (its ``removed`` pair), and at d_in = 2, a replaced record: a threshold at least its L∞
    # distance 2, so that the ``ends`` pair has a claim at every grid point (at d_in = 1, ε = 4, δ = 0.05 it is 1)
    "make_count_by": tuple(
        Recipe(label, f"entry({_VINT}, dp.symmetric_distance()) >> dp.m.then_laplace_threshold(scale={{scale}}, "
               "threshold={threshold})", _INTS, parameters=("scale", "threshold"), start=(("threshold", 10 ** 6),),
               integers=("threshold",), values=(0, 1), deltas=DELTAS, d_in=d_in)
        for label, d_in in (("count_by >> laplace_threshold", None),
                            ("count_by >> laplace_threshold (calibrated at d_in = 2)", 2))),
    "make_quantile_score_candidates": (
        Recipe("quantile_score_candidates(0, 2.5, …, 10; alpha=0.5) >> noisy_max",
               f"entry({_VFLOAT}, dp.symmetric_distance(), candidates=[0.0, 2.5, 5.0, 7.5, 10.0], alpha=0.5) >> "
               "dp.m.then_noisy_max(dp.max_divergence(), scale={scale}, negate=True)", _FLOATS, any_value=True),
    ),
}

#: Constructors of ``opendp.measurements`` the profile does not audit, and why.
NOT_SCANNED = {
    "make_alp_queryable": "releases a queryable (an object that answers later queries), not a value: auditing it "
                          "needs a sequence of queries, which this profile does not choose",
    "make_private_expr": "a Polars expression's measurement (OpenDP's query engine on LazyFrames), not one of the "
                         "core measurements this profile scans",
    "make_private_lazyframe": "a Polars LazyFrame's measurement (OpenDP's query engine), not one of the core "
                              "measurements this profile scans",
    "make_user_measurement": "wraps a user's own function and privacy map: nothing of OpenDP's to audit",
}

_MODULES = ("opendp.measurements", "opendp.transformations")


def _within(d_out, target) -> bool:
    if isinstance(target, tuple):
        return all(float(a) <= float(b) for a, b in zip(d_out, target))
    return float(d_out) <= float(target)


def _target(measure: str, epsilon: float, delta):
    """The privacy map's output at ε: ε (pure DP), ε²/2 (zCDP), with ``delta`` where approximate."""
    if measure == "MaxDivergence":
        return epsilon
    if measure == "ZeroConcentratedDivergence":
        return epsilon ** 2 / 2
    if measure == "Approximate<MaxDivergence>":
        return (epsilon, delta or DELTA)
    if measure == "Approximate<ZeroConcentratedDivergence>":
        return (epsilon ** 2 / 2, delta or DELTA)
    raise NotScanned(f"output measure {measure}: the profile has no ε target for it")


@dataclass(frozen=True)
class OpenDPMeasurement(Family):
    """OpenDP's measurement constructors and aggregate transformations, built through recipes (module docstring).

    ``measurements`` and ``pipelines`` map a constructor's name to its recipes; ``not_scanned`` names the
    measurement constructors left out with the reason. A ``then_*`` constructor is the chainable form of
    its ``make_*`` (its domain and metric are those of the transformation before it): it is listed as
    skipped, audited as its ``make_*`` and inside the pipelines.
    """

    measurements: dict = field(default_factory=lambda: MEASUREMENTS)
    pipelines: dict = field(default_factory=lambda: PIPELINES)
    not_scanned: dict = field(default_factory=lambda: NOT_SCANNED)
    kind = "OpenDP measurement over a domain and metric"
    preamble = PRELUDE
    seeded = False

    def matches(self, obj) -> bool:
        if not inspect.isfunction(obj) or getattr(obj, "__module__", None) not in _MODULES:
            return False
        name = obj.__name__
        if obj.__module__ == "opendp.transformations":
            return name in self.pipelines
        return name.startswith(("make_", "then_"))

    def recipes(self, obj) -> tuple:
        name = obj.__name__
        if name in self.not_scanned:
            raise NotScanned(self.not_scanned[name])
        if name.startswith("then_"):
            made = f"make_{name[5:]}"
            piped = any(f"{name}(" in r.build for recipes in self.pipelines.values() for r in recipes)
            done = (f"{made} is not scanned either" if made in self.not_scanned else f"audited as {made}"
                    + (" and inside the pipelines of opendp.transformations" if piped else ""))
            raise NotScanned(f"the chainable form of {made} (its input domain and metric are those of the "
                             f"transformation before it): {done}")
        recipes = (self.pipelines if obj.__module__ == "opendp.transformations" else self.measurements).get(name)
        if not recipes:
            raise NotScanned("a measurement constructor with no recipe in the OpenDP profile (its input domain and "
                             "metric are not chosen): add a Recipe to audit/scan/profiles/opendp.py's MEASUREMENTS")
        return recipes

    # -- building ---------------------------------------------------------------------------------
    def setup_source(self, obj, settings: dict) -> str:
        recipe = settings["input"]
        params = {k: v for k, v in settings.items() if k != "input"}
        if not set(recipe.parameters) <= set(params):  # its calibration failed: run it again for the error
            params = _calibrate(obj, recipe, params["epsilon"], params.get("delta"))
        return recipe.build.format(**{k: repr(v) for k, v in params.items()})

    def call_source(self, obj, settings: dict) -> str:
        recipe = settings["input"]
        return recipe.output.format(f"measurement({recipe.to_input})")

    def settings(self, obj, epsilons=EPSILONS) -> list:
        grid = []
        for recipe in self.recipes(obj):
            for epsilon in epsilons:
                for delta in recipe.deltas:
                    try:
                        grid.append({"input": recipe, **_calibrate(obj, recipe, float(epsilon), delta)})
                    except Exception:  # noqa: BLE001 - listed as skipped with the error (setup_source raises it again)
                        grid.append({"input": recipe, "epsilon": float(epsilon),
                                     **({"delta": delta} if delta is not None else {})})
        return grid

    def claim(self, obj, settings: dict) -> str:
        """The claim of the grid point's first pair that has one (each pair carries its own)."""
        claims = [pair.claim for pair in self.pairs(obj, settings) if pair.claim is not None]
        if not claims:
            raise NotScanned(self.pairs(obj, settings)[0].unbuilt)
        return claims[0]

    def pairs(self, obj, settings: dict) -> list:
        """The recipe's pairs (module docstring), each with the privacy map's claim at its distance."""
        from audit.scan.cases import PairSpec

        recipe = settings["input"]
        measurement = _built(obj, self.setup_source(obj, settings))

        def spec(name, first, second, why, relation=REPLACE_ONE):
            try:
                claim, unbuilt = _claim(measurement, recipe, relation), None
            except Exception as exc:  # noqa: BLE001 - its map may fail at this distance: that case is skipped
                claim, unbuilt = None, f"no claim at the pair's distance: {' '.join(str(exc).split())}"[:400]
            return PairSpec(name, _column(first), _column(second), why, relation, claim, unbuilt)

        if recipe.pairs:
            return [spec(*pair) for pair in recipe.pairs]
        low, high = recipe.values
        values = [low] * recipe.rows
        if recipe.kind == AGGREGATE:  # one record of ``width`` values
            record = [low] * recipe.width
            return [spec("ends", [record], [[high] + record[1:]],
                         f"value 0 of the input at {low:g} vs {high:g}: distance {recipe.sensitivity:g}")]
        out = [spec("ends", values, [high] + values[1:], f"record 0 at {low:g} vs {high:g}, the ends of the range "
                                                         f"[{low:g}, {high:g}]")]
        if recipe.any_value:
            far = high + BEYOND_WIDTHS * (high - low)
            far = int(far) if isinstance(high, int) else far
            out.append(spec("beyond", values, [far] + values[1:], f"record 0 at {low:g} vs {far:g}, beyond the range: "
                                                                  "the input domain takes it"))
        if _read_claim(measurement, recipe, ADD_REMOVE)[0] is not None:
            out.append(spec("removed", [high] + values[1:], values[1:], f"record 0 at {high:g} present vs removed",
                            ADD_REMOVE))
        return out


def _column(values) -> np.ndarray:
    """A database from its records (numbers: one value each; tuples: one record of several values)."""
    array = np.asarray(values, dtype=np.float64)
    return array.reshape(-1, 1) if array.ndim == 1 else array


_BUILT = {}


def _namespace(obj) -> dict:
    namespace = {"entry": obj, "np": np}
    exec(PRELUDE, namespace)  # noqa: S102 - the profile's own import lines
    return namespace


def _built(obj, setup: str):
    """The measurement ``setup`` builds (cached: the grid, the claims and the pairs read it)."""
    key = (obj.__module__, obj.__name__, setup)
    if key not in _BUILT:
        _BUILT[key] = eval(setup, _namespace(obj))  # noqa: S307 - the recipe's source
    return _BUILT[key]


def _reader(measurement, recipe):
    from mechanisms.adapters.libraries import OpenDPMechanism

    return OpenDPMechanism(measurement, sensitivity=recipe.sensitivity if recipe.d_in is None else None)


def _read_claim(measurement, recipe, relation) -> tuple:
    """(LibraryClaim or None, why): the privacy map at ``relation``'s distance, read as ``miaudit audit`` reads it."""
    from mechanisms.adapters.libraries import _measure_claim

    if recipe.d_in is None:
        return _reader(measurement, recipe).claim(relation)
    if relation != REPLACE_ONE:
        return None, f"the recipe states its distance d_in = {recipe.d_in!r} for replace-one pairs only"
    measure, d_out = str(measurement.output_measure.type), measurement.map(recipe.d_in)
    where = f"OpenDP privacy map at d_in = {recipe.d_in!r}"
    if measure == APPROXIMATE_ZCDP and float(d_out[1]) > 0:  # a Gaussian threshold: as (ε, δ)-DP (opendp_claims)
        return approximate_zcdp_claim(d_out, where, relation)
    return _measure_claim(measure, d_out, where, relation, DELTA)


def _claim(measurement, recipe, relation) -> str:
    claim, why = _read_claim(measurement, recipe, relation)
    if claim is None:
        raise NotScanned(why)
    return claim.text


def _calibration_distance(measurement, recipe):
    if recipe.d_in is not None:
        return recipe.d_in
    reader = _reader(measurement, recipe)
    return reader.d_in(reader.natural_relation)


def _rounded(value: float, digits: int) -> list:
    """``value`` to ``digits`` significant digits: nearest, up, down."""
    if value <= 0 or not math.isfinite(value):
        return [value]
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(value)))
    return [float(f"{value:.{digits}g}"), math.ceil(value * scale) / scale, math.floor(value * scale) / scale]


def _calibrate(obj, recipe: Recipe, epsilon: float, delta=None) -> dict:
    """The recipe's parameters at ε (and δ) (module docstring): {name: value}."""
    import opendp.prelude as dp

    if recipe.parameters == ("d_out",):
        return {"d_out": (epsilon, delta or DELTA)}
    params = dict(recipe.start)
    bounds = dict(recipe.bounds)
    namespace = _namespace(obj)
    failed = []
    for name in recipe.parameters:
        def meets(value, name=name):
            source = recipe.build.format(**{k: repr(v) for k, v in {**params, name: value}.items()})
            try:
                measurement = eval(source, namespace)  # noqa: S307 - the recipe's source
                d_out = measurement.map(_calibration_distance(measurement, recipe))
            except Exception as exc:  # noqa: BLE001 - outside the constructor's range, or it never builds
                failed[:] = [exc]
                return False
            return _within(d_out, _target(str(measurement.output_measure.type), epsilon, delta))

        integer = name in recipe.integers
        try:
            value = dp.binary_search(meets, bounds=bounds.get(name, (None, None)), T=int if integer else float)
        except NotScanned:
            raise
        except Exception as exc:  # noqa: BLE001 - say why: the constructor's own error where it raised one
            raise (failed[0] if failed else exc) from None
        if not integer:
            value = next((v for d in (3, 4, 6, 8, 10) for v in _rounded(value, d) if meets(v)), value)
        if not meets(value):
            raise ValueError(f"no {name} meets ε = {epsilon:g} by the privacy map")
        params[name] = value
    return {name: params[name] for name in recipe.parameters}


PROFILE = Profile(
    name="opendp",
    modules=_MODULES,
    families=(OpenDPMeasurement(),),
    distribution="opendp",
)
