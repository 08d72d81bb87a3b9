"""Reading flag values that argparse leaves as text: integers, number lists, flag names in messages.

Shared by ``miaudit bounds`` and ``miaudit calibrate``; every error is one
:class:`~estimators.validation.InputError` that names the flag. ``.npy`` files are read by
:func:`estimators.array_files.load_npy_array`.
"""

from __future__ import annotations

import argparse
import math
import re

from estimators.validation import InputError, parse_decimal, parse_decimal_integer

__all__ = ["StoreOnce", "integer", "number", "number_list", "with_flag_names"]


class StoreOnce(argparse.Action):
    """An argparse action that stores a flag's value and refuses the flag a second time: a
    repeated ``--claim`` (or any single-valued flag) is a usage error, not the last one silently."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"argument {option_string}: given more than once ({getattr(namespace, self.dest)!r}, then "
                         f"{values!r}); give it once")
        setattr(namespace, self.dest, values)


def number_list(text: str | None, flag: str) -> list | None:
    """A comma-separated flag value as a list of finite floats (``None`` when not given).

    Empty items (a trailing comma) are skipped; an item that is not a number, or is NaN or
    infinite, is an error naming ``flag``.
    """
    if text is None:
        return None
    try:
        values = [parse_decimal(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"argument '{flag}' must be comma-separated numbers, got {text!r}") from None
    if not values:
        raise InputError(f"argument '{flag}' must hold at least one number, got {text!r}")
    if not all(math.isfinite(v) for v in values):
        raise InputError(f"argument '{flag}' must hold finite numbers, got {text!r}")
    return values


def number(text: str) -> float:
    """A number flag value (an argparse ``type``) in plain ASCII decimal notation
    (:func:`~estimators.validation.parse_decimal`: no underscores, no non-ASCII digits); anything
    else is argparse's "invalid number value" error."""
    return parse_decimal(text)


def integer(text: str) -> int:
    """An integer flag value (an argparse ``type``): ``1000000000`` or ``1e9`` alike, in ASCII
    digits (no underscores); a value that is not a whole finite number is argparse's "invalid
    integer value" error."""
    try:
        return parse_decimal_integer(text)
    except ValueError:
        value = parse_decimal(text)  # not a number: ValueError, reported by argparse
    if not math.isfinite(value) or value != math.floor(value):
        raise ValueError(f"not an integer: {text!r}")
    return int(value)


def with_flag_names(message: str, flags: dict) -> str:
    """``message`` with each quoted argument name (``'l1_sensitivity'``) replaced by the flag
    that carries it (``'--l1-sensitivity'``), so a library's error names what the user typed.
    Names not in ``flags`` (and flags already written as flags) are left as they are."""
    return re.sub(r"'([a-z_0-9]+)'", lambda m: f"'{flags.get(m.group(1), m.group(1))}'", message)
