"""Reading flag values that argparse leaves as text: number lists and ``.npy`` files.

Shared by ``miaudit bounds`` and ``miaudit calibrate``; every error is one
:class:`~estimators.validation.InputError` that names the flag.
"""

from __future__ import annotations

import math
import re

import numpy as np

from estimators.validation import InputError

__all__ = ["load_npy", "number_list", "with_flag_names"]


def number_list(text: str | None, flag: str) -> list | None:
    """A comma-separated flag value as a list of finite floats (``None`` when not given).

    Empty items (a trailing comma) are skipped; an item that is not a number, or is NaN or
    infinite, is an error naming ``flag``.
    """
    if text is None:
        return None
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"argument '{flag}' must be comma-separated numbers, got {text!r}") from None
    if not values:
        raise InputError(f"argument '{flag}' must hold at least one number, got {text!r}")
    if not all(math.isfinite(v) for v in values):
        raise InputError(f"argument '{flag}' must hold finite numbers, got {text!r}")
    return values


def load_npy(path: str, flag: str) -> np.ndarray:
    """A ``.npy`` file given by ``flag``, loaded without pickles."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"argument '{flag}': cannot read {path!r} as a .npy array: {exc}") from None


def with_flag_names(message: str, flags: dict) -> str:
    """``message`` with each quoted argument name (``'l1_sensitivity'``) replaced by the flag
    that carries it (``'--l1-sensitivity'``), so a library's error names what the user typed.
    Names not in ``flags`` (and flags already written as flags) are left as they are."""
    return re.sub(r"'([a-z_0-9]+)'", lambda m: f"'{flags.get(m.group(1), m.group(1))}'", message)
