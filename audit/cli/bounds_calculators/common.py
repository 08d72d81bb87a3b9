"""The calculator protocol behind ``miaudit bounds NAME``, and the one set of flag helpers.

Each calculator module (one per paper) exposes ``CALCULATORS``, a list of :class:`Calculator`.
``compute(args)`` receives the parsed ``argparse.Namespace`` (including ``args.bits``, which
switches information inputs and outputs to bits) and returns the JSON payload: a flat dict
whose fields are named in the bounds issue (``mi_epsilon``, ``delta``, ``mu``, ...), plus
``unit`` where an information value is involved and ``source`` naming the theorem used.
The maths lives in :mod:`audit.bounds` and :mod:`mechanisms`; nothing there reads flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from estimators.array_files import load_npy_array
from estimators.units import BITS, NATS, convert
from estimators.validation import InputError, check_finite_number, check_nonnegative, check_positive

from audit.config.flag_values import integer, number, number_list

__all__ = ["Calculator", "finite_flags", "info_in", "info_out", "integer", "number",
           "load_npy_array", "nonnegative_flags", "number_list", "positive_flags", "refuse_bits", "unit"]


@dataclass(frozen=True)
class Calculator:
    """One ``miaudit bounds`` sub-command."""

    name: str
    help: str
    configure: Callable  # (argparse.ArgumentParser) -> None
    compute: Callable  # (argparse.Namespace) -> dict
    # Fields whose exact value may be +inf (e.g. the LDP level of a kernel with a zero entry);
    # any other non-finite field is refused by ``miaudit bounds`` as beyond the float range.
    unbounded_fields: tuple = ()
    # Why the calculator reads and prints no information value (what its numbers are instead), or None: such a
    # calculator prints no ``unit`` and refuses ``--bits`` (:func:`refuse_bits`), which would convert nothing.
    no_information: str | None = None

    def describe(self, payload: dict) -> str:
        """Readable text for a payload: one ``field: value`` line each."""
        width = max((len(k) for k in payload), default=0)
        return "\n".join(f"{k.ljust(width)}  {_fmt(v)}" for k, v in payload.items())


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def unit(args) -> str:
    """The information unit the ``--bits`` flag selects (nats by default)."""
    return BITS if args.bits else NATS


def refuse_bits(calc: Calculator, args) -> None:
    """Refuse ``--bits`` for ``calc`` when it reads and prints no information value (``calc.no_information``):
    the flag would change nothing, and a user asking for bits would take its numbers for bits."""
    if calc.no_information and args.bits:
        raise InputError(f"argument '--bits': miaudit bounds {calc.name} reads and prints no information value "
                         f"({calc.no_information}), so nothing is in nats or bits; drop --bits")


def info_in(args, value):
    """An information value given on the command line, in nats (``None`` stays ``None``)."""
    return None if value is None else convert(value, unit(args), NATS)


def info_out(args, payload: dict, fields) -> dict:
    """Convert the information ``fields`` of a nats payload to the requested unit."""
    out = dict(payload)
    for name in fields:
        out[name] = convert(out[name], NATS, unit(args))
    out["unit"] = unit(args)
    return out


def _flag_values(args, flags, check) -> None:
    for flag in flags:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is not None:
            check(value, flag)


def positive_flags(args, *flags: str) -> None:
    """Check that each named flag that was given holds a finite value > 0, naming the flag as
    typed (``"--sigma"``); the library functions name their own parameters instead."""
    _flag_values(args, flags, check_positive)


def nonnegative_flags(args, *flags: str) -> None:
    """As :func:`positive_flags`, for values that must be finite and >= 0."""
    _flag_values(args, flags, check_nonnegative)


def finite_flags(args, *flags: str) -> None:
    """As :func:`positive_flags`, for values that must be finite."""
    _flag_values(args, flags, check_finite_number)
