"""How a family of a library's entry points is called: the declarative pieces of a scan profile.

A **profile** (:class:`Profile`) names the modules of a library to scan and the **families** of
entry points found in them. A family says how one kind of entry point is called on a database
``db`` of shape (n, k) and a generator ``rng``:

- :class:`ArrayTool`: a central-model tool on an array, ``tool(db[:, 0], epsilon=…, bounds=…)``
  (``diffprivlib.tools``);
- :class:`PerDatabase`: a function of the whole database, ``f(db, epsilon=…, rng=rng)``, as
  ``miaudit audit --per-database`` calls ``f(db, rng)`` (a user's module);
- :class:`FittedModel`: a model fitted on (X, y), ``Model(epsilon=…).fit(db[:, :-1], db[:, -1])``
  (``diffprivlib.models``); the fitted model is the release;
- :class:`LocalRandomizer`: a randomizer of one value, ``Mechanism(epsilon=…).randomise(db[0, 0])``
  or ``randomise(value, epsilon=…)`` (``diffprivlib.mechanisms``, a client of a local-DP protocol;
  the server's estimate is post-processing of the reports and cannot add a leak of one client);
- :class:`TupleRandomizer`: a randomizer of one client's tuple of values,
  ``randomize(tuple(int(v) for v in db[0]), lst_k=…, d=…, epsilon=…)`` (multi-freq-ldpy's
  multidimensional clients).

Each family gives, for an entry point, its parameter grid (:meth:`Family.settings`: ε in
:data:`EPSILONS`, each optional argument that changes the computation given or left out) and the
**call source**: one Python expression of ``entry``, ``db``, ``rng`` and ``np`` (:meth:`Family.call_source`).
The scan compiles that expression into the audited function, and writes the same text into the
finding's reproduction files, so what a maintainer runs is what was audited.

Families are small frozen dataclasses: a profile for a new library is a list of them with the
names that library uses (docs/how-to/scan-a-library.md).
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass, field

import numpy as np

from mechanisms.inputs.relation import REPLACE_ONE

#: The privacy parameters every entry point is scanned at (issue 40).
EPSILONS = (0.1, 1.0, 4.0)

#: The parameters given the audit's own ``numpy.random.Generator`` (not a seed) where a family names them
#: (:attr:`Family.generator_names`; a user's module's families): the generator ``miaudit audit --per-database`` passes
#: to ``f(db, rng)``, each chunk of runs its own, seeded from the case's seed, so the entry point draws from it as it
#: does in an audit. Where a family names them, other parameters are given it too where that is unambiguous
#: (:meth:`Family.generator_arguments`): one annotated ``numpy.random.Generator``, or the one named like a generator
#: (:data:`GENERATOR_WORDS`).
GENERATOR_NAMES = ("rng", "generator")
#: A parameter is named like a generator where the last word of its name (split at underscores, any case) is one of
#: these: ``gen``, ``prng``, ``random_generator``, ``noise_rng`` (not ``rng_key``, ``gen_count``).
GENERATOR_WORDS = ("rng", "prng", "gen", "generator")


@dataclass(frozen=True)
class PerRecord:
    """An optional per-record argument: an array of ``value`` for each record (``np.full(len(db), value)``).

    Its source text is computed from the database, so a pair's two databases get one each."""

    value: float

    def __repr__(self) -> str:
        return f"np.full(len(db), {self.value!r})"


@dataclass(frozen=True)
class Expression:
    """An argument given as Python source, evaluated at each call: a value no literal can write, built by the
    library itself (``Expression("__import__('pure_ldp.core').core.generate_hash_funcs(2, 4)")``: its hash
    functions). The source may use ``np`` and the builtins; it is written as it is into the call and the
    finding's reproduction files."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class OptionalArgument:
    """An optional argument that changes the computation, and the values the grid gives it
    (``None``: left out, the entry point's default)."""

    name: str
    values: tuple


def parameters(obj) -> dict:
    """The named parameters of a function, or of a class's ``__init__``; {} where Python cannot read them."""
    try:
        return dict(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return {}


def _named_like_generator(name: str) -> bool:
    """Whether the last underscore-separated word of ``name`` is one of :data:`GENERATOR_WORDS`."""
    return name.lower().rstrip("_").split("_")[-1] in GENERATOR_WORDS


def _resolved(text: str, namespace: dict):
    """The object a dotted name ``text`` names in ``namespace`` (``np.random.Generator``), else None: an annotation
    written as a string (``from __future__ import annotations``) is read without evaluating it."""
    head, *rest = text.strip().split(".")
    value = namespace.get(head)
    for part in rest:
        value = getattr(value, part, None)
    return value


def _annotated_generator(annotation, namespace: dict) -> bool:
    """Whether ``annotation`` is ``numpy.random.Generator``, alone or with ``None`` (``Generator | None``,
    ``Optional[Generator]``), as an object or as the text of one read in the module's ``namespace``."""
    import typing

    if annotation is np.random.Generator:
        return True
    if isinstance(annotation, str):
        text = annotation.replace(" ", "")
        for wrapper in ("Optional[", "typing.Optional["):
            if text.startswith(wrapper) and text.endswith("]"):
                text = text[len(wrapper):-1]
        return any(_resolved(part, namespace) is np.random.Generator for part in text.split("|") if part != "None")
    return np.random.Generator in typing.get_args(annotation)


def _namespace(obj) -> dict:
    """The global names ``obj``'s annotations are read in: its function's globals, else its module's."""
    import sys

    names = getattr(obj, "__globals__", None)
    if names is None:
        module = sys.modules.get(getattr(obj, "__module__", "") or "")
        names = vars(module) if module is not None else {}
    return names


def _required(params: dict, skip: tuple) -> list:
    return [name for name, p in params.items()
            if p.default is inspect.Parameter.empty and name not in skip
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


class UnknownSignature(Exception):
    """The entry point has a parameter the family cannot give a value to."""


class NotScanned(Exception):
    """The family does not audit this entry point; the message, the reason, is listed as it is."""


@dataclass(frozen=True)
class Family:
    """What every family holds: the argument names it fills in and the grid of the rest.

    Parameters
    ----------
    epsilon_name : str
        The privacy parameter's name.
    epsilon_names : tuple of str
        Where given, the names the privacy parameter may have, in place of ``epsilon_name``: the first the entry point
        takes is given the grid's ε and read into the claim (a user's module:
        :data:`audit.scan.profiles.user_module.EPSILON_NAMES`).
    delta_name : str
        The δ parameter's name, read into the claim when the entry point has it and it is > 0.
    delta_names : tuple of str
        Where given, the names the δ parameter may have, in place of ``delta_name`` (the first taken is read).
    bounds_names : tuple of str
        Names of the argument that declares the records' range; the grid gives it ``bounds``
        and leaves it out.
    bounds : tuple of float
        The range given, and the domain the pairs are drawn from.
    optional : tuple of OptionalArgument
        Further arguments that change the computation, each given its values where the entry
        point has it.
    fixed : dict
        Values for required parameters (no default) other than the data and ε (``{"quant": 0.5}``).
    seed_name : str
        The argument that takes a seed (``random_state``), where the entry point has it: an integer
        drawn from the audit's generator, so each run is seeded.
    generator_names : tuple of str
        Arguments given the audit's generator itself, where the entry point has them (:data:`GENERATOR_NAMES`);
        none by default, a library's profile names its own. Where it names any, a parameter annotated
        ``numpy.random.Generator``, or else the one parameter named like a generator, is given it too
        (:meth:`generator_arguments`).
    rows : int
        Records in a database: the smallest size that exercises the code.
    relation : str
        The neighbouring relation the library states its claims at.
    scaled : dict
        Arguments set to a multiple of the grid point's ε (``{"eps_perm": 2.0}``: a longitudinal protocol's
        bound over all reports at 2ε, where the claim is its single report's ``eps_1`` = ε).
    requires : tuple of str
        Parameters an entry point must take to be of this family (where a profile's families of one kind
        differ by their parameters' names); read by :class:`LocalRandomizer` and :class:`TupleRandomizer`.
    min_epsilon : float
        The grid keeps the scan's ε values at or above it (all of them where none is): for entry points whose ε
        only scales their noise, so that every ε runs the same code, and whose runs are slow (a model's fit).
    max_runs : int, optional
        Mechanism runs per case of this family when the scan is given no ``--max-runs``; None: the profile's
        (:attr:`Profile.max_runs`), else the scan's default. For a family whose violation needs more runs at the
        scan's α share than the library's other entry points (diffprivlib's ``Bingham``).
    """

    epsilon_name: str = "epsilon"
    epsilon_names: tuple = ()
    delta_name: str = "delta"
    delta_names: tuple = ()
    bounds_names: tuple = ("bounds", "range")
    bounds: tuple = (0.0, 10.0)
    optional: tuple = ()
    fixed: dict = field(default_factory=dict)
    seed_name: str = "random_state"
    generator_names: tuple = ()
    rows: int = 3
    relation: str = REPLACE_ONE
    scaled: dict = field(default_factory=dict)
    requires: tuple = ()
    min_epsilon: float = 0.0
    max_runs: int | None = None
    kind = "entry point"
    #: Python statements run before the call (imports a call source needs beyond ``entry`` and ``np``):
    #: the audited function's namespace and the top of the finding's reproduction files.
    preamble = ""
    #: False where the library draws from its own generator, which takes no seed (OpenDP's): the audit's
    #: runner then neither warns on every case nor refuses worker processes (each is seeded by the system).
    seeded = True

    def matches(self, obj) -> bool:  # pragma: no cover - each family says
        raise NotImplementedError

    def signature(self, obj) -> dict:
        """The parameters the grid and the call fill in (of the function or the constructor)."""
        return parameters(obj)

    def data_arguments(self) -> tuple:
        return ()

    def epsilon_parameter(self, params: dict) -> str:
        """The name of the privacy parameter among ``params``: the first of ``epsilon_names`` taken, else
        ``epsilon_name``."""
        return next((n for n in self.epsilon_names if n in params), self.epsilon_name)

    def delta_parameter(self, params: dict) -> str:
        """The name of the δ parameter among ``params``, as :meth:`epsilon_parameter`."""
        return next((n for n in self.delta_names if n in params), self.delta_name)

    def takes_epsilon(self, obj) -> bool:
        """Whether ``obj`` (a function, or a class's ``__init__``) has a privacy parameter of this family's names."""
        return self.epsilon_parameter(parameters(obj)) in parameters(obj)

    def generator_arguments(self, obj) -> tuple:
        """The parameters of ``obj`` given the audit's generator itself, where the family names any
        ``generator_names`` (a user's module's), by this rule:

        1. each parameter named one of ``generator_names`` (``rng``, ``generator``), and each annotated
           ``numpy.random.Generator`` (alone or ``| None``, ``Optional[…]``), whatever its name;
        2. where there is none, the parameter named like a generator (the last word of its name one of
           :data:`GENERATOR_WORDS`: ``gen``, ``random_generator``) that is required or defaults to None or to a
           generator, where it is the only one: of two such, neither (which takes the generator is not known;
           a required one is then skipped, its reason saying what to rename).

        ``miaudit audit --per-database`` passes its generator by position, ``f(db, rng)``; a scan passes it by name,
        so it gives it only where the name or the annotation says which parameter takes it."""
        if not self.generator_names:
            return ()
        params, namespace = self.signature(obj), _namespace(obj)
        chosen = tuple(n for n, p in params.items()
                       if n in self.generator_names or _annotated_generator(p.annotation, namespace))
        if chosen:
            return chosen
        filled = (self.seed_name, self.epsilon_parameter(params)) + tuple(self.data_arguments())
        like = [n for n, p in params.items() if n not in filled and _named_like_generator(n)
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and (p.default is inspect.Parameter.empty or p.default is None
                     or isinstance(p.default, np.random.Generator))]
        return tuple(like) if len(like) == 1 else ()

    def generator_parameters(self, obj) -> tuple:
        """The parameters of ``obj`` the call gives a seed or a generator (``seed_name``,
        :meth:`generator_arguments`)."""
        params = self.signature(obj)
        return tuple(n for n in (self.seed_name,) if n in params) + self.generator_arguments(obj)

    def _rename_hint(self, missing: list) -> str:
        """What to rename, said after a required parameter the family gives no value (``missing``), where the family
        gives the audit's generator (:meth:`generator_arguments`); "" where it gives none."""
        if not self.generator_names:
            return ""
        names = f"{' or '.join(self.generator_names)}, or annotate it numpy.random.Generator"
        like = [n for n in missing if _named_like_generator(n)]
        if len(like) > 1:
            return (f": {' and '.join(like)} are each named like a generator, so neither is given the audit's numpy "
                    f"Generator; rename the one that takes it to {names}")
        which = like[0] if like else (missing[0] if len(missing) == 1 else None)
        if which is None:
            return f": to give one of them the audit's numpy Generator, rename it {names}"
        return (f": if {which} takes a numpy Generator, rename it {names}; if it takes an integer seed, rename it "
                f"{self.seed_name}")

    def settings(self, obj, epsilons=EPSILONS) -> list:
        """The grid: one dict of keyword arguments per point (ε × bounds given or not × optional values)."""
        params = self.signature(obj)
        epsilon = self.epsilon_parameter(params)
        if epsilon not in params:
            raise UnknownSignature(f"no parameter {' or '.join(repr(n) for n in self.epsilon_names or (epsilon,))}")
        given = (epsilon, self.seed_name) + self.generator_arguments(obj) + self.data_arguments()
        missing = [n for n in _required(params, given)
                   if n not in self.fixed and n not in self.bounds_names and n not in self.scaled]
        if missing:
            raise UnknownSignature(f"required parameter(s) {', '.join(missing)} the profile gives no value"
                                   + self._rename_hint(missing))
        kept = [float(e) for e in epsilons if e >= self.min_epsilon]
        axes = [[(epsilon, e) for e in kept or [float(e) for e in epsilons]]]
        fixed = [(n, v) for n, v in self.fixed.items() if n in params and params[n].default is inspect.Parameter.empty]
        for name in self.bounds_names:
            if name in params:
                required = params[name].default is inspect.Parameter.empty
                axes.append([(name, tuple(self.bounds))] + ([] if required else [(name, None)]))
                break
        for option in self.optional:
            if option.name in params:
                axes.append([(option.name, v) for v in option.values])
        grid = [dict(fixed + [(n, v) for n, v in point if v is not None]) for point in itertools.product(*axes)]
        for point in grid:
            point.update({n: factor * point[epsilon] for n, factor in self.scaled.items() if n in params})
        return grid

    def arguments_source(self, obj, settings: dict) -> str:
        given = [f"{n}={v!r}" for n, v in settings.items()]
        for name in self.generator_parameters(obj):
            # A seed is an integer (what NumPy, scikit-learn and most libraries take); a generator, the audit's own.
            given.append(f"{name}=int(rng.integers(2**31))" if name == self.seed_name else f"{name}=rng")
        return ", ".join(given)

    def call_source(self, obj, settings: dict) -> str:  # pragma: no cover - each family says
        raise NotImplementedError

    def database(self, values, labels=None) -> np.ndarray:
        """A database of this family's layout from record values (and labels)."""
        return np.asarray(values, dtype=np.float64).reshape(-1, 1)

    def claim(self, obj, settings: dict) -> str:
        """The claim the entry point states through its own parameters: ``dp:ε`` or ``dp:ε:δ``."""
        params = self.signature(obj)
        epsilon = settings[self.epsilon_parameter(params)]
        delta_name = self.delta_parameter(params)
        delta = settings.get(delta_name)
        if delta is None:
            default = params.get(delta_name)
            delta = None if default is None or default.default is inspect.Parameter.empty else default.default
        return f"dp:{epsilon!r}" + (f":{float(delta)!r}" if isinstance(delta, (int, float)) and delta > 0 else "")

    def domain(self, settings: dict) -> tuple:
        """The records' range the pairs are drawn from: the bounds given, else the profile's."""
        for name in self.bounds_names:
            if settings.get(name) is not None:
                return tuple(settings[name])
        return tuple(self.bounds)

    def extra_pairs(self, low: float, high: float) -> list:
        """Pairs this family adds to :func:`audit.scan.cases.pairs_for`'s: (name, first, second, why) each."""
        return []

    def _takes_required(self, obj) -> bool:
        params = parameters(obj)
        return all(name in params for name in self.requires)


def _public_function(obj) -> bool:
    """A function, a builtin, or a compiled function that wraps one (Numba's ``@jit`` dispatcher: ``py_func``)."""
    return inspect.isfunction(obj) or inspect.isbuiltin(obj) or inspect.isfunction(getattr(obj, "py_func", None))


class _DataFirst:
    """A family of entry points whose first parameter is the data, named as one of its ``data_names``."""

    def matches(self, obj) -> bool:
        params = list(parameters(obj)) if _public_function(obj) else []
        return bool(params) and params[0] in self.data_names

    def data_arguments(self) -> tuple:
        return self.data_names


@dataclass(frozen=True)
class ArrayTool(_DataFirst, Family):
    """A central-model tool on a one-dimensional array: ``tool(db[:, 0], epsilon=…, bounds=…, …)``."""

    data_names: tuple = ("array", "a", "data", "values", "sample")
    #: Entry points whose bounds argument takes one (low, high) per dimension of the data (NumPy's ``histogramdd``
    #: and those shaped like it): given ``((low, high),)`` for the one column they are called on.
    per_dimension: tuple = ()
    kind = "central tool on an array"

    def settings(self, obj, epsilons=EPSILONS) -> list:
        grid = Family.settings(self, obj, epsilons)
        if getattr(obj, "__name__", "") in self.per_dimension:
            for point in grid:
                point.update({name: (point[name],) for name in self.bounds_names if point.get(name) is not None})
        return grid

    def domain(self, settings: dict) -> tuple:
        for name in self.bounds_names:
            bounds = settings.get(name)
            if bounds is not None:  # per dimension: the one column's
                return tuple(bounds[0]) if np.ndim(bounds) == 2 else tuple(bounds)
        return tuple(self.bounds)

    def call_source(self, obj, settings: dict) -> str:
        return f"entry(db[:, 0], {self.arguments_source(obj, settings)})"


@dataclass(frozen=True)
class PerDatabase(_DataFirst, Family):
    """A function of one database, written as ``miaudit audit --per-database`` calls it: ``f(db, rng, epsilon=…)``
    called as ``entry(db, epsilon=…, rng=rng)``, ``db`` the whole database of shape (rows, 1), for a function whose
    first parameter is one of ``data_names``. Its generator parameter (``rng``) is one of ``generator_names``: the
    audit's generator, as ``--per-database`` gives it."""

    data_names: tuple = ("db", "database")
    kind = "function of one database"

    def call_source(self, obj, settings: dict) -> str:
        return f"entry(db, {self.arguments_source(obj, settings)})"


@dataclass(frozen=True)
class FittedModel(Family):
    """A model fitted on (X, y): ``Model(epsilon=…, bounds=…).fit(db[:, :-1], db[:, -1])``; the fitted model is released.

    A database is ``rows`` records (x, label) with labels 0, 1, 0, 1, …; the label pair changes one
    record's label to a label no other record has."""

    fit_name: str = "fit"
    rows: int = 4
    kind = "model fitted on (X, y)"

    def matches(self, obj) -> bool:
        return inspect.isclass(obj) and callable(getattr(obj, self.fit_name, None)) and self.takes_epsilon(obj)

    def call_source(self, obj, settings: dict) -> str:
        return f"entry({self.arguments_source(obj, settings)}).{self.fit_name}(db[:, :-1], db[:, -1])"

    def database(self, values, labels=None) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        labels = np.arange(len(values)) % 2 if labels is None else np.asarray(labels, dtype=np.float64)
        return np.column_stack([values, labels])

    def domain(self, settings: dict) -> tuple:
        for name in self.bounds_names:
            bounds = settings.get(name)
            if bounds is not None:  # scikit-learn style bounds: (lower per feature, upper per feature)
                return float(np.min(bounds[0])), float(np.max(bounds[1]))
        return tuple(self.bounds)


@dataclass(frozen=True)
class LocalRandomizer(Family):
    """A randomizer of one value: ``Mechanism(epsilon=…).randomise(db[0, 0])`` for a class with one of
    ``method_names``, or ``randomise(value, epsilon=…)`` for a function whose first parameter is one of
    ``value_names``. A database holds one record; the pair is the two ends of the value's range.

    The value is passed as ``float(db[0, 0])``, as ``int(db[0, 0])`` to ``integer_entry_points``, or as
    ``value_source`` where it is given (the source of the value from ``db``: ``"int(db[0, 0])"`` for a
    library of integer items, ``"format(int(db[0, 0]), '04b')"`` for one of bit strings)."""

    method_names: tuple = ("randomise", "randomize", "privatise", "privatize", "perturb")
    value_names: tuple = ("value", "item", "record")
    integer_entry_points: tuple = ()
    value_source: str = ""
    bounds: tuple = (0.0, 1.0)
    rows: int = 1
    kind = "local randomizer on one value"

    def _method(self, obj):
        return next((m for m in self.method_names if callable(getattr(obj, m, None))), None)

    def matches(self, obj) -> bool:
        if not self._takes_required(obj):
            return False
        if inspect.isclass(obj):
            return self._method(obj) is not None and self.takes_epsilon(obj)
        params = list(parameters(obj)) if _public_function(obj) else []
        return bool(params) and params[0] in self.value_names

    def data_arguments(self) -> tuple:
        return self.value_names

    def call_source(self, obj, settings: dict) -> str:
        arguments = self.arguments_source(obj, settings)
        value = self.value_source or (
            "int(db[0, 0])" if getattr(obj, "__name__", "") in self.integer_entry_points else "float(db[0, 0])")
        if inspect.isclass(obj):
            return f"entry({arguments}).{self._method(obj)}({value})"
        return f"entry({value}, {arguments})"


@dataclass(frozen=True)
class TupleRandomizer(Family):
    """A randomizer of one client's tuple of values: ``randomize(tuple(int(v) for v in db[0]), epsilon=…)`` for a
    function whose first parameter is one of ``value_names``.

    A database holds one record of ``width`` attributes. The pairs: every attribute at the low end vs every one
    at the high end ("ends": two tuples of one client, local DP's any two inputs), and attribute 0 alone moved
    ("one attribute")."""

    value_names: tuple = ("input_tuple", "tuple_", "record_tuple")
    width: int = 2
    integer: bool = True
    bounds: tuple = (0.0, 1.0)
    rows: int = 1
    kind = "local randomizer on one tuple"

    def matches(self, obj) -> bool:
        params = list(parameters(obj)) if _public_function(obj) else []
        return bool(params) and params[0] in self.value_names and self._takes_required(obj)

    def data_arguments(self) -> tuple:
        return self.value_names

    def call_source(self, obj, settings: dict) -> str:
        value = "tuple(int(v) for v in db[0])" if self.integer else "tuple(float(v) for v in db[0])"
        return f"entry({value}, {self.arguments_source(obj, settings)})"

    def database(self, values, labels=None) -> np.ndarray:
        """Each record value repeated over the ``width`` attributes."""
        return np.repeat(np.asarray(values, dtype=np.float64).reshape(-1, 1), self.width, axis=1)

    def extra_pairs(self, low: float, high: float) -> list:
        first = self.database(np.full(self.rows, low))
        second = first.copy()
        second[0, 0] = high
        return [("one attribute", first, second, f"attribute 0 of record 0 at {low:g} vs {high:g}, the others at {low:g}")]


@dataclass(frozen=True)
class Profile:
    """A library to scan: its modules, the families of its entry points, and how to install it.

    Parameters
    ----------
    name : str
        The library's name (the scan's TARGET).
    modules : tuple of str
        Modules whose public names are the entry points (``__all__`` where a module has one).
    families : tuple of Family
        Tried in order; the first that matches an entry point calls it.
    distribution : str
        The pip distribution that provides it (the reproduction script's install line and the
        version read).
    exclude : tuple of str
        Public names that are not DP entry points (base classes, helpers).
    relations : dict
        Entry point name → the relation its claim is stated at, where it is not its family's. A
        claim at add/remove is audited on the replace-one pairs as its group-privacy form
        (:func:`mechanisms.claims.conversion.convert_claim`: 2ε for ε-DP).
    max_runs : int, optional
        Mechanism runs per case when the user gives no ``--max-runs``; None: the scan's default
        (:data:`audit.scan.running.MAX_RUNS`). A library whose violations need more runs at the scan's
        α/K to be certified (an ε a fraction above its claim, a float leak at a claim's e^ε) says so here.
    """

    name: str
    modules: tuple
    families: tuple
    distribution: str = ""
    exclude: tuple = ()
    relations: dict = field(default_factory=dict)
    max_runs: int | None = None

    def family_of(self, obj):
        return next((f for f in self.families if f.matches(obj)), None)
