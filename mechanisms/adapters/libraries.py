"""OpenDP measurements and diffprivlib mechanisms as batched mechanisms, with the claims they bring.

A claim is stated for a neighbouring relation (:mod:`mechanisms.inputs.relation`): replace one record
(n fixed) or add/remove one record. A library states its guarantee in its own terms; this module
translates:

- an OpenDP ``Measurement`` states a privacy map ``d_in -> d_out`` for its input metric and
  output measure. Adding or removing one record is distance 1 in the symmetric and the
  insert-delete distance; replacing one is distance 2 there (a deletion and an insertion) and
  distance 1 in the change-one, Hamming and discrete distances, which are defined for datasets of
  one size only (replace-one; OpenDP documentation, "Dataset Metrics"). A measurement whose
  dataset metric is symmetric or insert-delete on a domain of unfixed size states its claim for
  add/remove (d_in = 1) unless replace-one is asked for (d_in = 2). A measurement on an aggregate (absolute, L1 or
  L2 distance) is fed ``query(db)``; the replace-one distance is then the query's
  sensitivity, which only the user can declare. The output measure gives the notion:
  max-divergence → pure DP, zero-concentrated divergence → zCDP, approximate
  max-divergence → (ε, δ)-DP, smoothed max-divergence → (ε, δ)-DP at a stated δ
  (OpenDP documentation, "Supporting Elements: Measures");
- a diffprivlib mechanism states ``epsilon`` and ``delta`` for a value of the declared
  ``sensitivity`` (diffprivlib documentation, ``diffprivlib.mechanisms``): (ε, δ)-DP of the
  released query when the query's replace-one sensitivity is at most that.

Both libraries are optional and imported only when used. Every failure of a wrapped library
is a :class:`~mechanisms.base.MechanismError` naming the library, the database index and the
likely fix.
"""

from __future__ import annotations

import copy
import importlib
import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from estimators.validation import InputError

from mechanisms.adapters.rows import _as_output_row, _stack_rows
from mechanisms.base import MechanismError
from mechanisms.inputs.relation import ADD_REMOVE, REPLACE_ONE, relation_distance, relation_kind, relation_words

__all__ = [
    "DiffprivlibMechanism",
    "LibraryClaim",
    "NEIGHBOURING_RELATION",
    "OpenDPMechanism",
    "REPLACE_ONE_DISTANCE",
    "SMOOTHED_DELTA",
    "column_sums",
    "import_diffprivlib",
    "import_opendp",
]

#: The neighbouring relation a library claim is read at unless said otherwise, in words.
NEIGHBOURING_RELATION = "replace one record, n fixed"

#: OpenDP dataset metrics whose distance 1 is adding or removing one record.
ADD_REMOVE_METRICS = ("SymmetricDistance", "InsertDeleteDistance")

#: OpenDP dataset metrics and the distance between two databases that differ by replacing one
#: record: symmetric and insert-delete distance count a deletion plus an insertion (2); the
#: change-one, Hamming and discrete distances count the changed record (1).
REPLACE_ONE_DISTANCE = {
    "SymmetricDistance": 2,
    "InsertDeleteDistance": 2,
    "ChangeOneDistance": 1,
    "HammingDistance": 1,
    "DiscreteDistance": 1,
}

#: OpenDP metrics on an aggregate: the replace-one distance is the query's declared sensitivity.
AGGREGATE_METRICS = ("AbsoluteDistance", "L1Distance", "L2Distance")

#: δ at which a smoothed max-divergence (a whole privacy profile) is read as one (ε, δ) claim
#: when the user names none.
SMOOTHED_DELTA = 1e-6

_INTEGER_TYPES = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize")


def import_opendp():
    """``opendp.prelude``, or an ImportError that says how to install it."""
    try:
        return importlib.import_module("opendp.prelude")
    except ImportError as exc:
        raise ImportError(f"OpenDP is needed for this mechanism but importing 'opendp.prelude' failed: {exc}. "
                          "Fix: pip install 'miaudit[opendp]' (or pip install opendp)") from exc


def import_diffprivlib():
    """``diffprivlib.mechanisms``, or an ImportError that says what actually fixes the install.

    diffprivlib 0.6.6 (the newest release) imports ``DOUBLE`` from ``sklearn.tree._tree``,
    which scikit-learn 1.9 removed, so ``import diffprivlib`` fails with scikit-learn >= 1.9
    even though its mechanisms do not need that name. The ``diffprivlib`` extra therefore
    pins ``scikit-learn<1.9`` (checked: 1.8.0 resolves and imports with numpy 2.4 and
    scipy 1.17 on Python 3.11).
    """
    try:
        return importlib.import_module("diffprivlib.mechanisms")
    except ImportError as exc:
        if "sklearn" in str(exc) or "DOUBLE" in str(exc):
            fix = ("diffprivlib 0.6.6 does not import with scikit-learn >= 1.9 (it imports DOUBLE from "
                   "sklearn.tree._tree, which 1.9 removed): pip install 'scikit-learn<1.9' (the "
                   "miaudit[diffprivlib] extra pins it)")
        else:
            fix = "pip install 'miaudit[diffprivlib]' (or pip install diffprivlib 'scikit-learn<1.9')"
        raise ImportError(f"diffprivlib is needed for this mechanism but importing 'diffprivlib.mechanisms' "
                          f"failed: {exc}. Fix: {fix}") from exc


@dataclass(frozen=True)
class LibraryClaim:
    """The guarantee a library states for a mechanism, translated to miaudit's neighbouring relation.

    Attributes
    ----------
    notion : str
        A claim notion of :mod:`mechanisms.claims.claim` (``"dp"``, ``"zcdp"``).
    parameters : tuple of float
        Its parameters (``(ε,)``, ``(ε, δ)``, ``(ρ,)``).
    source : str
        Where the claim comes from, for the report (library, map, distance used).
    """

    notion: str
    parameters: tuple
    source: str
    relation: str = REPLACE_ONE

    @property
    def text(self) -> str:
        """The claim as ``--claim`` takes it, e.g. ``"zcdp:0.5"``."""
        return ":".join([self.notion] + [repr(float(p)) for p in self.parameters])


def _runtime_name(runtime_type) -> str:
    """``"AbsoluteDistance"`` for OpenDP's ``AbsoluteDistance<f64>``."""
    return str(runtime_type).split("<", 1)[0]


def column_sums(db: np.ndarray) -> np.ndarray:
    """The default query of an aggregate mechanism: each attribute summed over the records, ``(k,)``.

    For a database of one record this is the record itself.
    """
    return db.sum(axis=0)


def _library_error(library: str, who: str, index: int, exc: BaseException, fix: str) -> MechanismError:
    return MechanismError(f"{library} {who} failed on database {index}: {type(exc).__name__}: {exc}. "
                          f"Likely fix: {fix}", mechanism=f"{library} {who}", database_index=index)


@dataclass(frozen=True, eq=False)
class OpenDPMechanism:
    """An OpenDP ``Measurement`` as a batched mechanism ``mech(dbs, rng) -> (m, d)``.

    Parameters
    ----------
    measurement : opendp.mod.Measurement
        Called once per database (OpenDP measurements take one input at a time).
    query : callable, optional
        ``query(db)`` for a database of shape ``(n, k)``: the measurement's input. Default:
        a dataset measurement (vector domain with a dataset metric) gets the column as a list
        (``k = 1``), converted to the domain's element type (integers and booleans only when
        the data hold such values); an aggregate measurement (absolute, L1 or L2 distance) gets
        :func:`column_sums` (a number for an atom domain, a list for a vector domain).
    sensitivity : float, optional
        Aggregate measurements: the replace-one sensitivity of ``query`` in the metric's norm,
        the ``d_in`` at which the privacy map gives the claim. Without it no claim is read.
    delta : float, optional
        Smoothed max-divergence: the δ at which the profile is read (default
        :data:`SMOOTHED_DELTA`).
    name : str
        Name used in messages.

    Notes
    -----
    OpenDP draws noise from its own cryptographically secure generator, which takes no seed:
    the generator passed in is ignored and the outputs differ between runs with the same
    seed (:attr:`seeded` is False).
    """

    measurement: object
    query: Callable | None = None
    sensitivity: float | None = None
    delta: float | None = None
    name: str = "measurement"

    seeded = False
    # Each process's CSPRNG is seeded by the operating system, so worker processes never repeat
    # one another's draws (the execution layer may run it on several workers).
    independent_across_processes = True
    library = "OpenDP"

    def __post_init__(self):
        import_opendp()
        from opendp.mod import Measurement

        if not isinstance(self.measurement, Measurement):
            raise InputError(f"argument 'measurement' must be an OpenDP Measurement, got "
                             f"{type(self.measurement).__name__}")
        if self.query is not None and not callable(self.query):
            raise InputError(f"argument 'query' must be callable, got {type(self.query).__name__}")
        if self.sensitivity is not None and not (isinstance(self.sensitivity, (int, float))
                                                 and math.isfinite(self.sensitivity) and self.sensitivity > 0):
            raise InputError(f"argument 'sensitivity' must be a finite number > 0, got {self.sensitivity!r}")
        # Read the measurement's types once: each attribute access crosses into OpenDP's library.
        carrier = self.measurement.input_carrier_type
        type_arguments = getattr(carrier, "args", None)
        object.__setattr__(self, "_carrier", str(carrier))
        object.__setattr__(self, "_element", str(type_arguments[0]) if type_arguments else str(carrier))
        object.__setattr__(self, "_vector", str(getattr(carrier, "origin", "")) == "Vec")
        object.__setattr__(self, "_metric", _runtime_name(self.measurement.input_metric.type))

    # -- what the measurement is ----------------------------------------------------------
    @property
    def metric(self) -> str:
        """The input metric's name, e.g. ``"SymmetricDistance"``."""
        return self._metric

    @property
    def measure(self) -> str:
        """The output measure, e.g. ``"MaxDivergence"`` or ``"Approximate<MaxDivergence>"``."""
        return str(self.measurement.output_measure.type)

    @property
    def aggregate(self) -> bool:
        """Whether the input is an aggregate of the database (absolute/L1/L2 metric)."""
        return self.metric in AGGREGATE_METRICS

    # -- running it -----------------------------------------------------------------------
    def _convert(self, value, index: int):
        """``value`` (a number or a 1-D array) as the domain's element type, refusing lossy conversions."""
        array = np.asarray(value, dtype=np.float64)
        element, carrier = self._element, self._carrier
        if element == "bool":
            if not np.all((array == 0) | (array == 1)):
                raise MechanismError(
                    f"OpenDP {self.name} takes {carrier} but database {index} holds values other than 0 and 1. "
                    "Likely fix (type conversion): draw 0/1 data (e.g. --prior builtin:bernoulli) or give "
                    "[mechanism] query mapping a database to booleans",
                    mechanism=f"OpenDP {self.name}", database_index=index)
            return array.astype(bool).tolist()
        if element in _INTEGER_TYPES:
            fractional = array[array != np.round(array)]
            if fractional.size:
                raise MechanismError(
                    f"OpenDP {self.name} takes {carrier} but database {index} holds non-integer values (e.g. "
                    f"{fractional.ravel()[0]:g}). Likely fix (type conversion): draw integer data (e.g. --prior "
                    "builtin:bernoulli), compose a cast in front of the measurement (dp.t.make_cast_default(..., "
                    "TOA=int) >> ...), or build it on floats (atom_domain(T=float))",
                    mechanism=f"OpenDP {self.name}", database_index=index)
            return array.astype(np.int64).tolist()
        return array.tolist()

    def _input(self, db: np.ndarray, index: int):
        if self.query is not None:
            try:
                return self.query(db)
            except Exception as exc:  # noqa: BLE001 - a user query may raise anything
                raise _library_error("OpenDP", f"query of {self.name}", index, exc,
                                     "make [mechanism] query return the measurement's input") from exc
        vector = self._vector
        if self.aggregate:
            value = column_sums(db)
            if not vector:
                if value.size != 1:
                    self._too_wide(db, index)
                value = value[0]
        elif vector:
            if db.shape[1] != 1:
                self._too_wide(db, index)
            value = db[:, 0]
        else:
            if db.size != 1:
                self._too_wide(db, index)
            value = db[0, 0]
        return self._convert(value, index)

    def _too_wide(self, db: np.ndarray, index: int):
        raise MechanismError(
            f"OpenDP {self.name} takes {self._carrier} but database {index} has shape {db.shape}; "
            "miaudit feeds a one-attribute database's column (or, for an atom-domain measurement, a one-record "
            "database's value). Likely fix: give [mechanism] query = \"FILE.py:NAME\", a function from a "
            "database (n, k) to the measurement's input", mechanism=f"OpenDP {self.name}", database_index=index)

    def __call__(self, dbs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        rows = []
        for index, db in enumerate(dbs):
            value = self._input(db, index)
            try:
                released = self.measurement(value)
            except Exception as exc:  # noqa: BLE001 - the library may raise anything
                raise _library_error("OpenDP", self.name, index, exc, self._fix(exc)) from exc
            rows.append(_as_output_row(released, f"OpenDP {self.name}", index))
        return _stack_rows(rows, f"OpenDP {self.name}")

    def _fix(self, exc: BaseException) -> str:
        text = str(exc)
        if "inferred type" in text:
            return (f"type conversion: the measurement takes {self._carrier}; give "
                    "[mechanism] query returning that type, or compose a cast (dp.t.make_cast_default) in front")
        return ("check that the measurement's input domain (type, bounds, size) matches the databases the prior "
                "draws; give [mechanism] query to convert a database")

    # -- the claim ------------------------------------------------------------------------
    @property
    def natural_relation(self) -> str:
        """add-remove for a symmetric or insert-delete metric on a domain of unfixed size, else replace-one."""
        if self.metric in ADD_REMOVE_METRICS and getattr(self.measurement.input_domain, "size", None) is None:
            return ADD_REMOVE
        return REPLACE_ONE

    def d_in(self, relation: str = REPLACE_ONE):
        """The input distance of one neighbouring step under ``relation``, or None where it has none
        (an aggregate metric without a declared sensitivity; add/remove on a fixed-size metric; the
        discrete metric at a distance above one record).

        At a user-level relation of K records (``add-remove:K``, ``replace:K``) the distance is K
        steps': K for add/remove, K times a replacement's for a dataset metric, and K times the declared
        sensitivity for an aggregate (a change of K records moves the query by at most K sensitivities,
        the triangle inequality of the metric)."""
        metric, records = self.metric, relation_distance(relation)
        if relation_kind(relation) == ADD_REMOVE:
            return records if metric in ADD_REMOVE_METRICS and self.natural_relation == ADD_REMOVE else None
        if metric == "DiscreteDistance" and records > 1:
            return None  # d = 1 for any two datasets that differ: its map says nothing of how far apart
        if metric in REPLACE_ONE_DISTANCE:
            return records * REPLACE_ONE_DISTANCE[metric]
        if metric in AGGREGATE_METRICS and self.sensitivity is not None:
            if str(self.measurement.input_distance_type) in _INTEGER_TYPES:
                if float(self.sensitivity) != round(self.sensitivity):
                    raise InputError(f"[mechanism] sensitivity must be an integer for OpenDP metric "
                                     f"{self.measurement.input_metric.type}, got {self.sensitivity!r}")
                return records * int(round(self.sensitivity))
            return records * float(self.sensitivity)
        return None

    def claim(self, relation: str | None = None) -> tuple[LibraryClaim | None, str]:
        """The measurement's privacy map at ``relation``'s distance, and a note saying where it came from.

        ``relation`` defaults to :attr:`natural_relation`. Returns ``(None, why)`` when no claim can
        be read (an aggregate metric without a declared sensitivity, add/remove on a metric of
        fixed-size datasets, a metric or measure with no counterpart in the claims).
        """
        relation = relation or self.natural_relation
        metric, measure = self.metric, self.measure
        d_in = self.d_in(relation)
        if d_in is None:
            if relation_distance(relation) > 1:
                return None, (f"OpenDP input metric {self.measurement.input_metric.type} has no distance for "
                              f"neighbours that {relation_words(relation)}; no claim read at that distance")
            if relation == ADD_REMOVE:
                return None, (f"OpenDP input metric {self.measurement.input_metric.type} on "
                              f"{self.measurement.input_domain} has no add/remove distance (a change-one or sized "
                              "metric is replace-one; an aggregate's sensitivity is the user's); no claim read for "
                              "add/remove (give --claim, or audit replace-one)")
            if metric in AGGREGATE_METRICS:
                return None, (f"OpenDP measurement on {self.measurement.input_metric.type}: no claim read, because the "
                              "distance of one replaced record is the query's sensitivity; give [mechanism] sensitivity "
                              "(or --claim)")
            return None, (f"OpenDP input metric {self.measurement.input_metric.type} has no fixed distance for "
                          f"'{NEIGHBOURING_RELATION}'; no claim read (give --claim)")
        try:
            d_out = self.measurement.map(d_in)
        except Exception as exc:  # noqa: BLE001 - the library's map may raise anything
            raise InputError(f"OpenDP {self.name}: its privacy map failed at d_in = {d_in!r}: {exc}. "
                             "Give --claim to state the guarantee yourself") from None
        where = (f"OpenDP privacy map at d_in = {d_in:g} ({metric}; neighbours: {relation_words(relation)}"
                 + (f"; declared sensitivity {d_in:g}" if metric in AGGREGATE_METRICS else "") + ")")
        return _measure_claim(measure, d_out, where, relation, self.delta)


def _measure_claim(measure: str, d_out, where: str, relation: str, delta_asked) -> tuple:
    """The claim an OpenDP output measure's ``d_out`` states (see the module docstring)."""
    if measure == "MaxDivergence":
        return LibraryClaim("dp", (float(d_out),), f"{where}, MaxDivergence -> pure DP", relation), ""
    if measure == "ZeroConcentratedDivergence":
        return LibraryClaim("zcdp", (float(d_out),), f"{where}, ZeroConcentratedDivergence -> zCDP", relation), ""
    if measure == "Approximate<MaxDivergence>":
        epsilon, delta = (float(v) for v in d_out)
        params = (epsilon,) if delta == 0 else (epsilon, delta)
        return LibraryClaim("dp", params, f"{where}, Approximate<MaxDivergence> -> (ε, δ)-DP", relation), ""
    if measure == "Approximate<ZeroConcentratedDivergence>":
        rho, delta = (float(v) for v in d_out)
        if delta == 0:
            return LibraryClaim("zcdp", (rho,), f"{where}, Approximate<ZeroConcentratedDivergence> with δ = 0 "
                                                "-> zCDP", relation), ""
        return None, (f"OpenDP measure {measure} with δ = {delta:g} (approximate zCDP) has no counterpart among "
                      "the claims; no claim read (give --claim)")
    if measure == "SmoothedMaxDivergence":
        delta = SMOOTHED_DELTA if delta_asked is None else float(delta_asked)
        epsilon = float(d_out.epsilon(delta))
        return LibraryClaim("dp", (epsilon, delta),
                            f"{where}, SmoothedMaxDivergence read at δ = {delta:g} -> (ε, δ)-DP", relation), ""
    return None, f"OpenDP output measure {measure} has no counterpart among the claims; no claim read (give --claim)"


@dataclass(frozen=True, eq=False)
class DiffprivlibMechanism:
    """A diffprivlib mechanism releasing ``query(db)`` with noise, as a batched mechanism.

    One diffprivlib mechanism serves a whole batch: a copy of the given object (or one
    instance of the given class with ``params``), its generator re-seeded from the audit's
    generator, randomises every value of every database in turn. So a seed reproduces the
    run, and the cost per database is the query plus ``d`` calls of ``randomise``.

    Parameters
    ----------
    mechanism : diffprivlib mechanism object or class
        Anything with ``randomise(value)``; a class is instantiated with ``params``.
    params : mapping, optional
        Keyword arguments of the class (``epsilon``, ``sensitivity``, ...); not with an object.
    query : callable, optional
        ``query(db) -> (d,)`` for a database of shape ``(n, k)``: the values released.
        Default :func:`column_sums` (the attributes summed over the records).
    name : str
        Name used in messages.
    """

    mechanism: object
    params: Mapping | None = None
    query: Callable | None = None
    name: str = "mechanism"

    library = "diffprivlib"

    def __post_init__(self):
        template = self.mechanism
        if isinstance(template, type):
            if "random_state" in (self.params or {}):
                raise InputError("argument 'params' ([mechanism] params) must not set 'random_state': miaudit seeds "
                                 "the mechanism from the audit's seed")
            template = self._instance(0)
        elif self.params:
            raise InputError("argument 'params' ([mechanism] params) applies to a diffprivlib mechanism class; this is "
                             "an object already built with its parameters")
        if not callable(getattr(template, "randomise", None)):
            raise InputError(f"argument 'mechanism' must have a randomise(value) method (a diffprivlib mechanism), "
                             f"got {type(template).__name__}")
        if self.query is not None and not callable(self.query):
            raise InputError(f"argument 'query' must be callable, got {type(self.query).__name__}")
        object.__setattr__(self, "_template", template)

    def _instance(self, seed: int):
        try:
            return self.mechanism(**dict(self.params or {}), random_state=seed)
        except (TypeError, ValueError) as exc:
            raise InputError(f"argument 'params' ([mechanism] params) rejected by "
                             f"{getattr(self.mechanism, '__name__', self.mechanism)}: {exc}. A class needs its keyword "
                             "arguments, e.g. --set mechanism.params.epsilon=1 --set mechanism.params.sensitivity=1"
                             ) from None

    @property
    def seeded(self) -> bool:
        """Whether the mechanism's randomness follows the audit's seed.

        A class is built with ``random_state``; an object's generator ``_rng`` (where diffprivlib's
        ``DPMechanism`` keeps it) is replaced on a copy.
        """
        return isinstance(self.mechanism, type) or hasattr(self._template, "_rng")

    def _seeded_copy(self, rng: np.random.Generator):
        seed = int(rng.integers(0, 2**32 - 1))
        if isinstance(self.mechanism, type):
            return self._instance(seed)
        mechanism = copy.copy(self._template)
        if hasattr(mechanism, "_rng"):
            # diffprivlib draws all noise from self._rng (DPMechanism.__init__: check_random_state).
            mechanism._rng = np.random.RandomState(seed)
            mechanism.random_state = seed
        return mechanism

    def __call__(self, dbs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        mechanism = self._seeded_copy(rng)
        query = self.query or column_sums
        who = f"diffprivlib {type(mechanism).__name__}"
        rows = []
        for index, db in enumerate(dbs):
            try:
                values = np.atleast_1d(np.asarray(query(db), dtype=np.float64)).ravel()
            except Exception as exc:  # noqa: BLE001 - a user query may raise anything
                raise _library_error("diffprivlib", f"query of {self.name}", index, exc,
                                     "make [mechanism] query return the numbers to release") from exc
            try:
                released = [mechanism.randomise(int(v) if float(v).is_integer() else float(v)) for v in values]
            except Exception as exc:  # noqa: BLE001 - the library may raise anything
                raise _library_error("diffprivlib", type(mechanism).__name__, index, exc,
                                     self._fix(exc)) from exc
            rows.append(_as_output_row(released, who, index))
        return _stack_rows(rows, who)

    @staticmethod
    def _fix(exc: BaseException) -> str:
        text = str(exc).lower()
        if "integer" in text:
            return ("type conversion: this mechanism randomises integers; give [mechanism] query returning integers "
                    "(e.g. counts) or use a real-valued mechanism such as Laplace")
        if "bounds" in text or "domain" in text:
            return "bounds: the released values must lie in the mechanism's bounds; set bounds to the query's range"
        return "check the mechanism's parameters against the values [mechanism] query releases"

    def claim(self, relation: str | None = None) -> tuple[LibraryClaim | None, str]:
        """(ε, δ)-DP from the mechanism's ``epsilon`` and ``delta``, at the query's declared sensitivity
        (replace-one: the sensitivity diffprivlib declares is the query's change when one record is replaced)."""
        if relation is not None and relation_kind(relation) == ADD_REMOVE:
            return None, (f"diffprivlib {type(self._template).__name__} states ε for a query of its declared "
                          "sensitivity under replace-one; no add/remove claim read (give --claim)")
        epsilon = getattr(self._template, "epsilon", None)
        delta = float(getattr(self._template, "delta", 0.0) or 0.0)
        if not isinstance(epsilon, (int, float)) or not epsilon > 0 or math.isinf(epsilon):
            return None, f"diffprivlib {type(self._template).__name__} states no finite epsilon; no claim read"
        sensitivity = getattr(self._template, "sensitivity", None)
        where = (f"diffprivlib {type(self._template).__name__}(epsilon={float(epsilon):g}"
                 + (f", delta={delta:g}" if delta else "")
                 + (f", sensitivity={sensitivity:g}" if isinstance(sensitivity, (int, float)) else "")
                 + f"): valid when the released query changes by at most the sensitivity under "
                   f"'{NEIGHBOURING_RELATION}'")
        params = (float(epsilon),) if delta == 0 else (float(epsilon), delta)
        return LibraryClaim("dp", params, where), ""
