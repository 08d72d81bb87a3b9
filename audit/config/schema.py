"""The typed schema of audit configurations: one :class:`Key` per configuration value.

A key says where it lives (``[table] name``), what it holds (:data:`KINDS`), its allowed
range or choices, which notions and which priors it applies to, and its command-line flag.
:func:`validate_table` checks a table against its keys in one place, so that every value
of a configuration (TOML file, ``--set`` override or flag) is type-checked the same way and
every error names the key as the user wrote it (``[secret] independent``) and its flag.

Types are strict, because a value read loosely can break the audit's guarantee (a string
``"false"`` is truthy in Python): a boolean is a TOML boolean (``true``/``false``), an
integer is a TOML integer, a number is a TOML integer or float (never a boolean), and
anything else is an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


from estimators.validation import InputError, closest_word, plain_toml

__all__ = ["KINDS", "Key", "validate_table"]

#: What a key may hold: ``bool`` (a TOML boolean), ``int`` (a TOML integer), ``number`` (a
#: finite TOML integer or float), ``string``, ``choice`` (one of ``Key.choices``), ``spec``
#: (a non-empty string such as ``FILE.py:NAME``), ``records`` (``"all"``, an index, a list of
#: indices or ``"0,3"``), ``numbers`` (an array of finite numbers, of ``Key.length`` if set),
#: ``list`` (a TOML array), ``any`` (checked by the code that uses it).
KINDS = ("bool", "int", "number", "string", "choice", "spec", "records", "numbers", "list", "any")


# What a TOML value is, in words (bool before int: True is an int in Python).
_TYPE_NAMES = ((bool, "a boolean"), (str, "a string"), (int, "an integer"), (float, "a number"),
               (list, "an array"), (dict, "a table"))


def _type_name(value) -> str:
    return next((name for kind, name in _TYPE_NAMES if isinstance(value, kind)), type(value).__name__)


@dataclass(frozen=True)
class Key:
    """One configuration key.

    Parameters
    ----------
    table : str
        The table it lives in (``"audit"``, ``"prior"``, ...; ``[[priors]]`` entries use the
        ``"prior"`` keys).
    name : str
        The key.
    kind : str
        One of :data:`KINDS`.
    choices : tuple
        The allowed values of a ``choice`` key.
    meant : tuple
        ``(typed, choice)`` pairs of a ``choice`` key: a value users type (``"gpu"``) and the choice it means
        (``"cuda"``), which its error names with the flag to type; a choice typed in another case (``"CPU"``) is
        named so too.
    above, at_least, below, at_most : float, optional
        Range of an ``int`` or ``number`` key (strict ``above``/``below``, inclusive
        ``at_least``/``at_most``).
    length : int, optional
        How many entries a ``numbers`` key holds.
    notions : tuple, optional
        The notions the key applies to (default: every notion). Giving it for another notion
        is an error, never silently ignored.
    priors : tuple, optional
        ``[prior]`` keys: the prior kinds it applies to (``"bernoulli"``, ``"gaussian"``,
        ``"uniform"`` for the builtins, ``"user"`` for a ``FILE.py`` sampler, ``"catalog"``).
    flag : str, optional
        The command-line flag that sets it (e.g. ``"--std"``).
    flag_added_elsewhere : bool
        The flag exists for every sub-command (``--seed``): the audit command reads it but
        does not add it.
    flag_dest : str, optional
        The ``argparse`` attribute when the flag's own name is taken (``--command``: the
        sub-command's name is ``args.command``).
    metavar, help : str
        For the flag's help.
    """

    table: str
    name: str
    kind: str
    choices: tuple = ()
    meant: tuple = ()
    above: float | None = None
    at_least: float | None = None
    below: float | None = None
    at_most: float | None = None
    length: int | None = None
    notions: tuple | None = None
    priors: tuple | None = None
    flag: str | None = None
    flag_added_elsewhere: bool = False
    flag_dest: str | None = None
    metavar: str | None = None
    help: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Key {self.table}.{self.name}: kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def label(self) -> str:
        """How messages name the key: ``[prior] std (--std)``."""
        where = f"[{self.table}] {self.name}" if self.table else self.name
        return where + (f" ({self.flag})" if self.flag else "")

    @property
    def dest(self) -> str | None:
        """The ``argparse`` attribute of the flag (``flag_dest`` where the flag's own name is taken)."""
        if self.flag is None:
            return None
        return self.flag_dest or self.flag.lstrip("-").replace("-", "_")

    def flag_options(self) -> dict:
        """``argparse.add_argument`` keyword arguments for the flag (default None: not given)."""
        options = {"help": self.help, "default": None, "dest": self.dest}
        if self.kind == "bool":
            return {**options, "action": "store_true"}
        from audit.config.flag_values import StoreOnce, integer, number  # plain ASCII decimals: "1_0" is no 10

        options["action"] = StoreOnce  # a repeated flag is an error, not the last value silently
        if self.kind == "choice":  # checked by check() (no argparse choices): one line naming the key, no usage block
            return {**options, "metavar": "{" + ",".join(self.choices) + "}"}
        options["type"] = {"int": integer, "number": number}.get(self.kind, str)
        if self.metavar:
            options["metavar"] = self.metavar
        return options

    def check(self, value, label: str | None = None):
        """Return ``value`` (numbers as float, records as a tuple) or raise naming the key."""
        label = label or self.label
        got = f"got {_type_name(value)} {plain_toml(value)}"
        kind = self.kind
        if kind == "bool":
            if not isinstance(value, bool):
                raise InputError(f"{label} must be true or false (a TOML boolean, unquoted), {got}")
            return value
        if kind in ("int", "number"):
            integer = isinstance(value, int) and not isinstance(value, bool)
            if kind == "int" and not integer:
                raise InputError(f"{label} must be an integer, {got}")
            if not integer and not (isinstance(value, float) and not isinstance(value, bool)):
                raise InputError(f"{label} must be a number, {got}")
            if not integer and not math.isfinite(value):
                raise InputError(f"{label} must be finite, got {plain_toml(value)}")
            self._check_range(value, label)
            return value if integer else float(value)
        if kind in ("string", "spec", "choice"):
            if not isinstance(value, str):
                raise InputError(f"{label} must be a string, {got}")
            if kind == "spec" and not value.strip():
                # The key's own form where it has one (a command is "PROGRAM ARGS", not a file's function).
                example = self.metavar if self.metavar and self.metavar != "SPEC" else "FILE.py:NAME"
                example = example if example.startswith('"') else f'"{example}"'
                raise InputError(f"{label} must be a non-empty string such as {example}")
            if kind == "choice" and value not in self.choices:
                raise InputError(f"{label} must be one of {', '.join(self.choices)}, got {plain_toml(value)}"
                                 + self._meant_words(value))
            return value
        if kind == "records":
            return _records(value, label)
        if kind == "numbers":
            if (not isinstance(value, (list, tuple))
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
                raise InputError(f"{label} must be an array of numbers, {got}")
            if not all(math.isfinite(v) for v in value):
                raise InputError(f"{label} must hold finite numbers, got {plain_toml(value)}")
            if self.length is not None and len(value) != self.length:
                raise InputError(f"{label} must hold {self.length} numbers, got {len(value)}: {plain_toml(value)}")
            return tuple(float(v) for v in value)
        if kind == "list":
            if not isinstance(value, (list, tuple)):
                raise InputError(f"{label} must be an array, {got}")
            return value
        return value

    def _meant_words(self, value: str) -> str:
        """What a refused choice means, where :attr:`meant` or the choices in another case say: ``; for gpu type
        cuda: here --device cuda``; else ``""``."""
        folded = value.strip().lower()
        choice = dict(self.meant).get(folded) or (folded if folded in self.choices else None)
        if choice is None:
            return ""
        return f"; for {value} type {choice}" + (f": here {self.flag} {choice}" if self.flag else "")

    def _check_range(self, value, label: str) -> None:
        bounds = ((self.above, lambda v, b: v > b, ">"), (self.at_least, lambda v, b: v >= b, ">="),
                  (self.below, lambda v, b: v < b, "<"), (self.at_most, lambda v, b: v <= b, "<="))
        for bound, holds, sign in bounds:
            if bound is not None and not holds(value, bound):
                raise InputError(f"{label} must be {sign} {plain_toml(bound)}, got {plain_toml(value)}")


def _records(value, label: str):
    """``None`` for all records, else a tuple of non-negative indices."""
    if value == "all":
        return None
    if isinstance(value, str):
        try:
            value = [int(v) for v in value.split(",")]
        except ValueError:
            raise InputError(f"{label} must be \"all\" or comma-separated record indices, got {plain_toml(value)}") from None
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise InputError(f"{label} must name at least one record (or be \"all\")")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            raise InputError(f"{label} must be \"all\" or record indices >= 0, got {plain_toml(value)}")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise InputError(f"{label} names record{'s' if len(repeated) > 1 else ''} "
                         f"{', '.join(map(str, repeated))} more than once")
    return tuple(items)


def validate_table(values: dict, keys: dict, where: str, *, notion: str | None = None,
                   prior_kind: str | None = None) -> dict:
    """Check every entry of one configuration table; return the checked values.

    Parameters
    ----------
    values : dict
        The table as read (TOML, flags and ``--set`` merged).
    keys : dict
        ``name -> Key``: the keys this table may hold.
    where : str
        How messages name the table, e.g. ``"[prior]"`` or ``"[[priors]] entry 2"``.
    notion : str, optional
        The audit's notion; a key whose ``notions`` exclude it is an error.
    prior_kind : str, optional
        For prior tables: the prior's kind; a key whose ``priors`` exclude it is an error.

    Raises
    ------
    InputError
        Naming the key (and its flag) for an unknown key, a value of the wrong type or out of
        range, or a key that does not apply to the notion or the prior.
    """
    if not isinstance(values, dict):
        raise InputError(f"configuration entry {where} must be a table, got {_type_name(values)}")
    unknown = sorted(set(values) - set(keys))
    if unknown:
        close = closest_word(str(unknown[0]), keys)  # a typo: samples for sample
        meant = f" (did you mean {close}?)" if close else ""
        raise InputError(f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} in {where}"
                         f"{meant}; valid keys: {', '.join(keys)}")
    checked = {}
    for name, value in values.items():
        key = keys[name]
        label = f"{where} {name}" + (f" ({key.flag})" if key.flag else "")
        if notion is not None and key.notions is not None and notion not in key.notions:
            raise InputError(f"{label} applies to notion{'s' if len(key.notions) > 1 else ''} "
                             f"{', '.join(key.notions)} only; this audit's notion is {notion}")
        if prior_kind is not None and key.priors is not None and prior_kind not in key.priors:
            raise InputError(f"{label} applies to {_prior_kinds(key.priors)} only; this prior is "
                             f"{_prior_kinds((prior_kind,))}")
        checked[name] = key.check(value, label)
    return checked


def _prior_kinds(kinds) -> str:
    names = {"user": "a FILE.py prior (a sampling function)", "catalog": "a catalog prior"}
    shown = [names.get(k, f"builtin:{k}") for k in kinds]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
