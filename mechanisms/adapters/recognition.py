"""Recognize what ``--mechanism`` / ``--command`` name and wrap it as a batched mechanism.

A user names a mechanism as ``FILE.py:NAME`` or ``package.module:NAME`` (``[mechanism] spec``)
or as an external program (``--command "PROGRAM ARGS"``, ``[mechanism] command``). The object
found may be

- a batched callable ``mech(dbs, rng) -> (m, d)`` — used as it is;
- an OpenDP ``Measurement`` — wrapped by :class:`~mechanisms.adapters.libraries.OpenDPMechanism`,
  bringing its privacy map as the claim;
- a diffprivlib mechanism object (anything with ``randomise``) or class — wrapped by
  :class:`~mechanisms.adapters.libraries.DiffprivlibMechanism`, bringing its ε and δ.

The user calls no adapter. :func:`load_mechanism` returns a :class:`RecognizedMechanism`: the
batched callable, the library, the claim the library states (if any) and the notes an audit
report must carry (where the claim came from; whether the library follows miaudit's seed).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Callable, Mapping

from estimators.validation import InputError

from mechanisms.adapters.callables import SEED_VARIABLE, WIRE_FORMATS, ExternalCommandMechanism, check_two_arguments
from mechanisms.adapters.libraries import DiffprivlibMechanism, LibraryClaim, OpenDPMechanism
from mechanisms.adapters.loading import load_object
from mechanisms.inputs.relation import relation_at, relation_distance, relation_kind

__all__ = ["MECHANISM_KEYS", "RecognizedMechanism", "load_mechanism", "per_database_mechanism", "recognize_mechanism"]

#: Keys of the ``[mechanism]`` table this module reads.
MECHANISM_KEYS = ("spec", "command", "name", "wire", "timeout", "query", "params", "sensitivity", "delta",
                  "per_database")

_LIBRARY_KEYS = ("query", "params", "sensitivity", "delta")
_COMMAND_KEYS = ("wire",)  # timeout bounds every mechanism (mechanisms.execution), a command per batch


@dataclass(frozen=True, eq=False)
class RecognizedMechanism:
    """A mechanism ready for an audit, with what its library says about it.

    Attributes
    ----------
    mechanism : callable
        The batched mechanism ``mech(dbs, rng) -> (m, d)``.
    name : str
        Display name.
    library : str or None
        ``"OpenDP"``, ``"diffprivlib"``, ``"external program"``, or None for a batched callable.
    claim : LibraryClaim or None
        The guarantee the library states, read at its natural relation (OpenDP: add/remove for a
        symmetric distance on unsized data, else replace-one; :meth:`claim_at` reads another).
    claim_note : str
        Where that claim came from, or why none was read ("" when the library states none).
    notes : tuple of str
        For the audit's notes: whether the mechanism's randomness follows the audit's seed.
    """

    mechanism: Callable
    name: str
    library: str | None = None
    claim: LibraryClaim | None = None
    claim_note: str = ""
    notes: tuple = ()

    def claim_at(self, relation: str) -> tuple:
        """(the library's claim read for ``relation``'s neighbours or None, where it came from or why not)."""
        if self.claim is not None and self.claim.relation == relation:
            return self.claim, self.claim_note
        reader = getattr(self.mechanism, "claim", None)
        if self.library not in ("OpenDP", "diffprivlib") or reader is None:
            return None, ""
        claim, why = reader(relation)
        if claim is None and relation_distance(relation) > 1:
            # No map at that distance: the claim per record, which the audit converts by group privacy.
            per_record, note = self.claim_at(relation_at(relation_kind(relation), 1))
            if per_record is not None:
                return per_record, f"{note} ({why}; converted by group privacy)"
        return claim, (f"claim {claim.text} from {claim.source}" if claim is not None else why)


def _unseeded_note(library: str) -> str:
    return (f"{library} draws its noise from its own generator and takes no seed: the mechanism's outputs differ "
            "between runs with the same seed, so the numbers of this audit do not reproduce exactly (miaudit's own "
            "randomness — prior draws, data splits, critics — is still seeded)")


def _is_opendp(obj, class_name: str) -> bool:
    cls = type(obj)
    return cls.__name__ == class_name and cls.__module__.split(".")[0] == "opendp"


def _library_result(wrapped, name: str) -> RecognizedMechanism:
    claim, why = wrapped.claim()
    claim_note = f"claim {claim.text} from {claim.source}" if claim is not None else why
    notes = () if wrapped.seeded else (_unseeded_note(wrapped.library),)
    return RecognizedMechanism(wrapped, name, wrapped.library, claim, claim_note, notes)


def recognize_mechanism(obj, name: str, *, query: Callable | None = None, params: Mapping | None = None,
                        sensitivity: float | None = None, delta: float | None = None,
                        what: str = "--mechanism") -> RecognizedMechanism:
    """Wrap ``obj`` as a batched mechanism according to what it is.

    Parameters
    ----------
    obj : object
        A batched callable, an OpenDP ``Measurement``, or a diffprivlib mechanism object or class.
    name : str
        Display name (the user's spec).
    query : callable, optional
        Libraries only: ``query(db)``, a database's input to the library mechanism.
    params : mapping, optional
        A diffprivlib class only: its keyword arguments.
    sensitivity, delta : float, optional
        An OpenDP measurement only: the replace-one sensitivity of an aggregate input; the δ at
        which a smoothed max-divergence is read.
    what : str
        How messages name the source (the flag).

    Raises
    ------
    InputError
        When ``obj`` is none of these, or a key is given that does not apply to it.
    """
    given = {key for key, value in (("query", query), ("params", params), ("sensitivity", sensitivity),
                                    ("delta", delta)) if value is not None}

    def refuse(keys, kind):
        extra = sorted(given & set(keys))
        if extra:
            raise InputError(f"[mechanism] {', '.join(extra)} do(es) not apply to {kind} ({what} {name!r})")

    if _is_opendp(obj, "Measurement"):
        refuse(("params",), "an OpenDP measurement")
        return _library_result(OpenDPMechanism(obj, query=query, sensitivity=sensitivity, delta=delta,
                                               name=name), name)
    if _is_opendp(obj, "Transformation"):
        raise InputError(f"{what} {name!r} is an OpenDP Transformation, which adds no noise: chain a measurement "
                         "(e.g. >> dp.m.then_laplace(scale)) and name that")
    if callable(getattr(obj, "randomise", None)):
        refuse(("sensitivity", "delta"), "a diffprivlib mechanism (its sensitivity and delta are its own parameters)")
        return _library_result(DiffprivlibMechanism(obj, params=params, query=query, name=name), name)
    refuse(_LIBRARY_KEYS, "a batched callable (they are for OpenDP measurements and diffprivlib mechanisms)")
    if isinstance(obj, type) or not callable(obj):
        raise InputError(f"{what} {name!r} is a {type(obj).__name__ if not isinstance(obj, type) else 'class'}: "
                         "expected a batched callable mech(dbs, rng) -> (m, d), an OpenDP Measurement, or a "
                         "diffprivlib mechanism (object or class with randomise)")
    check_two_arguments(obj, f"{what} {name!r}", "mech(dbs, rng) -> (m, d)")
    return RecognizedMechanism(obj, name)


def _command_mechanism(table: Mapping) -> RecognizedMechanism:
    text = table["command"]
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"[mechanism] command (--command) must be a non-empty string \"PROGRAM ARGS\", got {text!r}")
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise InputError(f"[mechanism] command (--command) {text!r} cannot be split into words: {exc}") from None
    wire = table.get("wire", "text")
    if wire not in WIRE_FORMATS:
        raise InputError(f"[mechanism] wire (--wire) must be one of {', '.join(WIRE_FORMATS)}, got {wire!r}")
    # Without --timeout a batch is bounded by the call it runs in: the probe's first-call bound, a chunk's
    # later_call_bound (ExternalCommandMechanism._bound).
    timeout = table.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
                                or timeout == float("inf")):
        raise InputError(f"[mechanism] timeout (--timeout) must be a finite number of seconds > 0, got {timeout!r}")
    name = table.get("name") or text
    mechanism = ExternalCommandMechanism(tuple(argv), timeout=None if timeout is None else float(timeout), wire=wire,
                                         name=name)
    note = (f"external program: its seed is the environment variable {SEED_VARIABLE} (drawn from the audit's seed); "
            "its outputs reproduce only if it seeds its randomness from that variable")
    return RecognizedMechanism(mechanism, name, "external program", notes=(note,))


def per_database_mechanism(function, name: str, *, what: str, option: str) -> RecognizedMechanism:
    """A function of one database ``f(db, rng) -> output`` as a batched mechanism whose outputs are encoded.

    Each output, of any structure, becomes one row of the output encoder
    (:mod:`mechanisms.outputs.encoding`). ``what`` and ``option`` name the source and the switch
    in the error (``--mechanism 'f.py:f'`` and ``--per-database``; ``argument 'mechanism'`` and
    ``per_database=True``).

    Raises
    ------
    InputError
        When ``function`` is a class or not callable.
    """
    if isinstance(function, type) or not callable(function):
        got = f"the class {function.__name__}" if isinstance(function, type) else type(function).__name__
        raise InputError(f"{what} is not a function: {option} needs f(db, rng) -> output, got {got}")
    from mechanisms.adapters.callables import PerDatabaseMechanism
    from mechanisms.outputs.encoding import OutputEncoder

    check_two_arguments(function, what, f"f(db, rng) ({option})")

    encoder = OutputEncoder()
    return RecognizedMechanism(PerDatabaseMechanism(function, name, encoder=encoder), name,
                               notes=(f"per-database function: each output is encoded as {2 * encoder.width} "
                                      "numbers (values and support counts of its named parts, "
                                      "mechanisms.outputs.encoding)",))


def load_mechanism(table: Mapping, base_dir: str | None = None) -> RecognizedMechanism:
    """The mechanism a ``[mechanism]`` table names (not a ``catalog:`` one), recognized and wrapped.

    Parameters
    ----------
    table : mapping
        ``spec`` (``FILE.py:NAME`` or ``package.module:NAME``) or ``command``; optional
        ``name``; ``per_database`` (a function of one database ``f(db, rng)`` whose outputs of
        any structure are encoded, :mod:`mechanisms.outputs.encoding`); for a command ``wire`` and
        ``timeout``; for a library mechanism ``query``
        (``FILE.py:NAME`` of ``query(db)``), ``params`` (a table), ``sensitivity``, ``delta``.
    base_dir : str, optional
        The folder a relative ``FILE.py`` is read from (a configuration file's); default the
        working directory.

    Raises
    ------
    InputError
        Naming the key for every bad value.
    """
    unknown = sorted(set(table) - set(MECHANISM_KEYS))
    if unknown:
        raise InputError(f"unknown key(s) in [mechanism]: {', '.join(unknown)}; known: {', '.join(MECHANISM_KEYS)}")
    has_spec, has_command = table.get("spec") is not None, table.get("command") is not None
    if has_spec == has_command:
        raise InputError("[mechanism] needs exactly one of spec (--mechanism FILE.py:NAME) and command "
                         "(--command \"PROGRAM ARGS\")")
    if has_command:
        extra = sorted(k for k in _LIBRARY_KEYS if table.get(k) is not None)
        if extra:
            raise InputError(f"[mechanism] {', '.join(extra)} do(es) not apply to an external program (--command)")
        return _command_mechanism(table)
    extra = sorted(k for k in _COMMAND_KEYS if table.get(k) is not None)
    if extra:
        verb = "applies" if len(extra) == 1 else "apply"
        raise InputError(f"[mechanism] {', '.join(extra)} (--{', --'.join(extra)}) {verb} to --command only")
    spec = table["spec"]
    if not isinstance(spec, str):
        raise InputError(f"[mechanism] spec must be a string \"FILE.py:NAME\", got {spec!r}")
    obj = load_object(spec, "--mechanism", require_callable=False, base_dir=base_dir)
    query = table.get("query")
    if query is not None:
        if not isinstance(query, str):
            raise InputError(f"[mechanism] query must be a string \"FILE.py:NAME\", got {query!r}")
        query = load_object(query, "[mechanism] query", base_dir=base_dir)
    params = table.get("params")
    if params is not None and not isinstance(params, Mapping):
        raise InputError(f"[mechanism] params must be a table of keyword arguments, got {params!r}")
    numbers = {}
    for key in ("sensitivity", "delta"):
        value = table.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise InputError(f"[mechanism] {key} must be a number, got {value!r}")
        numbers[key] = value
    if numbers["delta"] is not None and not 0 < numbers["delta"] < 1:
        raise InputError(f"[mechanism] delta must be in (0, 1), got {numbers['delta']!r}")
    name = table.get("name") or spec
    per_database = table.get("per_database", False)
    if not isinstance(per_database, bool):
        raise InputError(f"[mechanism] per_database (--per-database) must be true or false, got {per_database!r}")
    if per_database:
        extra = sorted(k for k in _LIBRARY_KEYS if table.get(k) is not None)
        if extra:
            raise InputError(f"[mechanism] {', '.join(extra)} do(es) not apply to a per-database function "
                             "(--per-database)")
        return per_database_mechanism(obj, name, what=f"--mechanism {name!r}", option="--per-database")
    return recognize_mechanism(obj, name, query=query, params=dict(params) if params is not None else None,
                               **numbers)
