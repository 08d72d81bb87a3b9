"""The cases of a scan: entry points discovered in a profile's modules, their parameter grid and their pairs.

A **case** is one (entry point, parameters, pair family): the entry point called with one point of
its family's grid (:meth:`audit.scan.profiles.base.Family.settings`), audited against the claim its
parameters state on one neighbouring pair of databases. Every case is listed before any run
(the count K fixes each case's share of α, :mod:`audit.scan.running`); an entry point or grid point
that cannot be built becomes a :class:`Skipped` row with its reason, never dropped.

**Bounded.** Listing and building run the library's code (its modules' imports, each public name read and
matched, a family's grid and each grid point's claim and pairs), in the scan's own process, where no hard kill
reaches, and in each worker: each such call is bounded by the scan's ``--listing-timeout``
(:func:`mechanisms.calls.user_call.call_user_code`; default max(``--timeout``, 60 s),
:func:`audit.scan.running.listing_timeout_default`), and one that does not return in time is a :class:`Skipped`
row naming it (:func:`discover`, :func:`build_cases`). In a worker, a call that ignores that bound (stuck in compiled
code) is also hard-killed, with its worker (:func:`audit.scan.isolation.list_in_worker`): ``hard_kill``.

Pairs come from :func:`pairs_for`, the one place that turns an entry point's declared domain into
pairs, so that the domain pair families of :mod:`audit.search` can replace it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from estimators.validation import InputError
from mechanisms.errors import MechanismError

from audit.scan.raised import wrapped
from audit.scan.profiles.base import FittedModel, NotScanned, Profile, UnknownSignature, _public_function

#: How far beyond the declared bounds the "beyond" pair puts its record, in widths of the range:
#: a tool that accepts any array must clamp it (a clamp after the noise does not).
BEYOND_WIDTHS = 10.0


@dataclass(frozen=True)
class EntryPoint:
    """A public entry point: where it lives, the object, and the family that calls it."""

    module: str
    name: str
    obj: object
    family: object
    source_file: str | None = None  # a user's FILE.py: the file its module was loaded from
    relation: str | None = None  # the relation its claim is stated at, where the profile names one for it

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(frozen=True)
class PairSpec:
    """A neighbouring pair of databases and the family that made it."""

    family: str
    first: np.ndarray
    second: np.ndarray
    why: str
    relation: str | None = None  # where the pair states its own: its relation and the claim at its distance
    claim: str | None = None     # (an OpenDP measurement's privacy map at the pair's d_in)
    unbuilt: str | None = None   # why no claim could be read at the pair's distance: its case is listed as skipped


@dataclass(frozen=True)
class Case:
    """One audited case (module docstring). ``claim`` is read from ``settings``; ``source`` is the call."""

    entry: EntryPoint
    settings: dict
    pair: PairSpec
    claim: str
    relation: str
    source: str
    setup: str = ""  # an expression built once per case into ``measurement``, which ``source`` calls (OpenDP)
    raised_as_output: bool = False  # its family's opt-in: a raise is a release (audit.scan.raised)

    @property
    def settings_text(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.settings.items())

    @property
    def id(self) -> str:
        return f"{self.entry.qualified}({self.settings_text}) / {self.pair.family}"

    def seed(self, scan_seed: int) -> int:
        """The case's own seed: from the scan's seed and the case's id, so it does not depend on the order run."""
        return int(np.random.SeedSequence([int(scan_seed), zlib.crc32(self.id.encode())]).generate_state(1)[0])

    def function(self):
        """The audited function ``f(db, rng)``, compiled from :attr:`source` (after the family's
        ``preamble``, with ``measurement`` built from :attr:`setup` where the case has one)."""
        namespace = {"entry": self.entry.obj, "np": np}
        if self.entry.family.preamble:
            exec(compile(self.entry.family.preamble, f"<scan preamble {self.id}>", "exec"), namespace)  # noqa: S102
        if self.raised_as_output:  # the source calls released(…) (audit.scan.raised)
            from audit.scan.raised import PREAMBLE

            exec(compile(PREAMBLE, f"<scan raised {self.id}>", "exec"), namespace)  # noqa: S102
        if self.setup:
            namespace["measurement"] = eval(compile(self.setup, f"<scan setup {self.id}>", "eval"),  # noqa: S307
                                            namespace)
        return eval(compile(f"lambda db, rng: {self.source}", f"<scan case {self.id}>", "eval"),  # noqa: S307
                    namespace)


@dataclass(frozen=True)
class Skipped:
    """An entry point or a case that was not audited, and why."""

    what: str
    reason: str


def pairs_for(entry: EntryPoint, settings: dict) -> list:
    """The neighbouring pairs a case of ``entry`` at ``settings`` is audited on.

    Today: the ends of the declared domain (:meth:`Family.domain`: the bounds given, else the
    profile's): all records at the low end, record 0 at the low vs the high end ("ends"); where
    bounds are given, record 0 far beyond them ("beyond", :data:`BEYOND_WIDTHS` widths past the high
    end: the entry point accepts any array and must clamp it); for a model fitted on (X, y), record
    0's label changed to one no other record has ("label"); and the pairs the family adds
    (:meth:`Family.extra_pairs`: a tuple randomizer's "one attribute"). The hook :mod:`audit.search`'s domain
    pair families will fill. A family with its own ``pairs(entry, settings)`` (OpenDP's: the pairs of each
    measurement's input domain, each with the claim its privacy map gives at the pair's distance) gives them.
    """
    family = entry.family
    if callable(getattr(family, "pairs", None)):
        return family.pairs(entry.obj, settings)
    low, high = (float(v) for v in family.domain(settings))
    values = np.full(family.rows, low)
    moved = values.copy()
    moved[0] = high
    pairs = [PairSpec("ends", family.database(values), family.database(moved),
                      f"record 0 at {low:g} vs {high:g}, the ends of the domain [{low:g}, {high:g}]")]
    if any(settings.get(name) is not None for name in family.bounds_names):
        far = values.copy()
        far[0] = high + BEYOND_WIDTHS * (high - low)
        pairs.append(PairSpec("beyond", family.database(values), family.database(far),
                              f"record 0 at {low:g} vs {far[0]:g}, beyond the bounds given: the entry point must "
                              "clamp it"))
    if isinstance(family, FittedModel):
        labels = np.arange(family.rows) % 2
        relabelled = labels.copy()
        relabelled[0] = 2
        pairs.append(PairSpec("label", family.database(values, labels), family.database(values, relabelled),
                              "record 0's label 0 vs 2, a label no other record has"))
    pairs += [PairSpec(*extra) for extra in family.extra_pairs(low, high)]
    return pairs


def load_module(target: str):
    """Import ``target``: a ``FILE.py`` path (loaded under its file's stem) or a dotted module name."""
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise InputError(f"argument 'target': no file {target}")
        name = path.stem
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    return importlib.import_module(target)


#: Ends the message of a listing's bound that fired: what bounds it, and what became of what it was listing.
LISTING_HINT = "(the scan's --listing-timeout); it was skipped"


def bounded_listing(fn, arguments: tuple, who: str, timeout: float | None, where: str, hard_kill=None):
    """``fn(*arguments)``, code of the scanned library that lists or builds a case, within ``timeout`` seconds (None:
    no bound); a :class:`~mechanisms.errors.MechanismError` naming ``who`` where it does not return in time. Where
    given (in a worker), ``hard_kill(who, timeout)`` is a context manager the call runs in: the worker's hard kill of a
    call that ignores the bound (:func:`audit.scan.isolation.list_in_worker`)."""
    from mechanisms.calls.user_call import call_user_code

    with contextlib.nullcontext() if hard_kill is None or timeout is None else hard_kill(who, timeout):
        return call_user_code(fn, arguments, who=who, timeout=timeout, where=where, hint=LISTING_HINT)


def _names(module) -> tuple:
    """The module's public names (``__all__`` where it declares one) and whether it declares them."""
    declared = getattr(module, "__all__", None)
    return (declared if declared is not None else [n for n in dir(module) if not n.startswith("_")]), \
        declared is not None


def _public(module, name: str, declared: bool):
    """The object ``name`` of ``module`` where it is a public entry point (a function or class of the module's
    library), else None. Reading it runs the module's code where it defines ``__getattr__`` (a lazy import)."""
    obj = getattr(module, name, None)
    home = getattr(obj, "__module__", None) or ""
    parts = home.split(".")
    # a private module's helpers imported here are not entry points, unless __all__ exports them
    private = not declared and home != module.__name__ and any(part.startswith("_") for part in parts[1:])
    # functions, compiled ones too (builtins, Numba's dispatchers), and classes
    if (_public_function(obj) or inspect.isclass(obj)) and parts[0] == module.__name__.split(".")[0] and not private:
        return obj
    return None


def _listed(module, name: str, declared: bool, profile: Profile, seen: set) -> tuple:
    """(obj, family, has ε) of the public name ``name`` (family None: no family matches it), or None where it is
    no entry point, an abstract class, excluded or seen before: the matching reads its signature (its code's)."""
    obj = _public(module, name, declared)
    if obj is None or name in profile.exclude or id(obj) in seen or inspect.isabstract(obj):
        return None
    seen.add(id(obj))
    family = profile.family_of(obj)
    return obj, family, family is None and any(f.takes_epsilon(obj) for f in profile.families)


def _import(module_name: str, source_file: str | None):
    with contextlib.redirect_stdout(sys.stderr):  # what it prints as it is imported is not the scan's output
        return load_module(source_file) if source_file else importlib.import_module(module_name)


def discover(profile: Profile, source_file: str | None = None, timeout: float | None = None, hard_kill=None) -> tuple:
    """(entry points, skipped) of ``profile``: the public functions and classes of its modules that a family
    matches; a module that cannot be imported, or a public callable with an ``epsilon`` parameter that no
    family matches, is skipped with its reason.

    Importing a module and reading each public name (and matching it to a family) run the library's code in the
    process that lists the cases, the scan's own, where no worker's hard kill reaches: each is bounded by
    ``timeout`` (the scan's ``--listing-timeout``; None: no bound, :func:`mechanisms.calls.user_call.call_user_code`;
    in a worker, within ``hard_kill`` too, :func:`bounded_listing`). A
    module whose import does not end in time is skipped, and so is a name whose reading does not (a module's
    ``__getattr__`` that hangs), each naming it, as a module that fails to import is: the rest of the library is
    still scanned, where stopping the scan would audit nothing of it.
    """
    entries, skipped, seen = [], [], set()
    for module_name in profile.modules:
        try:
            module = bounded_listing(_import, (module_name, source_file), f"module {module_name}", timeout,
                                     " as it was imported", hard_kill)
        except MechanismError as exc:
            skipped.append(Skipped(module_name, str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a library's import may raise anything
            skipped.append(Skipped(module_name, f"import error: {type(exc).__name__}: {exc}"))
            continue
        names, declared = _names(module)
        for name in names:
            try:
                listed = bounded_listing(_listed, (module, name, declared, profile, seen), f"{module_name}.{name}",
                                         timeout, " as the scan read it and its signature", hard_kill)
            except MechanismError as exc:
                skipped.append(Skipped(f"{module_name}.{name}", str(exc)))
                continue
            if listed is None:
                continue
            obj, family, has_epsilon = listed
            if family is not None:
                entries.append(EntryPoint(module_name, name, obj, family, source_file, profile.relations.get(name)))
            elif has_epsilon:
                skipped.append(Skipped(f"{module_name}.{name}", "unknown signature: no family of the profile "
                                       "matches it"))
    return entries, skipped


def _built(entry: EntryPoint, settings: dict) -> tuple:
    """(setup, call source, claim, pairs, raised-as-output) of one grid point: the family's code, which may call the
    library (OpenDP's builds the measurement and reads its privacy map)."""
    family, obj = entry.family, entry.obj
    setup = family.setup_source(obj, settings) if hasattr(family, "setup_source") else ""
    source = family.call_source(obj, settings)
    claim = family.claim(obj, settings)
    pairs = pairs_for(entry, settings)
    # The family's opt-in (audit.scan.raised): the call wrapped, its raise one of its outputs.
    raised = bool(getattr(family, "raises_as_output", None) and family.raises_as_output(obj, settings))
    return setup, wrapped(source) if raised else source, claim, pairs, raised


def build_cases(entries, epsilons, timeout: float | None = None, hard_kill=None) -> tuple:
    """(cases, skipped): every entry point at every grid point on every pair of :func:`pairs_for`.

    An entry point's grid, and each grid point's build, may call the library (OpenDP's calibration, its privacy
    maps): each is bounded by ``timeout`` and ``hard_kill`` (as :func:`discover`'s listing), and one that does not
    return in time is
    skipped naming the entry point (or its grid point)."""
    cases, skipped = [], []
    for entry in entries:
        family = entry.family
        try:
            grid = bounded_listing(family.settings, (entry.obj, epsilons), f"entry point {entry.qualified}",
                                   timeout, " as its parameter grid was built", hard_kill)
        except UnknownSignature as exc:
            skipped.append(Skipped(entry.qualified, f"unknown signature: {exc}"))
            continue
        except NotScanned as exc:
            skipped.append(Skipped(entry.qualified, str(exc)))
            continue
        except MechanismError as exc:
            skipped.append(Skipped(entry.qualified, str(exc)))
            continue
        for settings in grid:
            text = ", ".join(f"{k}={v!r}" for k, v in settings.items())
            try:
                setup, source, claim, pairs, raised = bounded_listing(_built, (entry, settings),
                                                               f"entry point {entry.qualified}({text})", timeout,
                                                               " as its case was built", hard_kill)
            except MechanismError as exc:
                skipped.append(Skipped(f"{entry.qualified}({text})", str(exc)[:400]))
                continue
            except Exception as exc:  # noqa: BLE001 - a constructor may raise anything at a grid point
                skipped.append(Skipped(f"{entry.qualified}({text})", f"could not be built at this grid point: "
                                       f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400]))
                continue
            for pair in pairs:
                if pair.unbuilt:
                    skipped.append(Skipped(f"{entry.qualified}({text}) / {pair.family}", pair.unbuilt))
                    continue
                cases.append(Case(entry, settings, pair, pair.claim or claim,
                                  pair.relation or entry.relation or family.relation, source, setup, raised))
    return cases, skipped
