"""Neighbouring pairs of databases from ``.npy`` files: ``--pair A.npy,B.npy`` and ``[[pairs]]``.

A pair is two databases of shape ``(n, k)`` that differ in one record (replace-one neighbours), or
of n and n − 1 rows, the smaller being the larger without one row (add/remove neighbours;
:mod:`mechanisms.inputs.relation`). Under DP, Θ is all distributions, so the two-point prior on such a
pair is a member of Θ, and pairs alone make a complete DP audit.
"""

from __future__ import annotations

import numpy as np

from estimators.array_files import load_npy_array
from estimators.validation import InputError

from mechanisms.inputs.neighbouring_pair import NeighbouringPair, checked_pair

__all__ = ["load_database", "pair_from_files", "split_pair_flag"]


def load_database(path, argument: str) -> np.ndarray:
    """A database of shape ``(n, k)`` from a ``.npy`` file, or one error naming ``argument`` and the fix.

    Reading and the file checks are :func:`estimators.array_files.load_npy_array`'s.
    """
    array = load_npy_array(path, argument)
    if array.ndim != 2:
        hint = " (one attribute per record: save a.reshape(-1, 1))" if array.ndim == 1 else ""
        raise InputError(f"argument '{argument}': {str(path)!r} must hold one database of shape (n, k), got shape "
                         f"{array.shape}{hint}")
    return array


def pair_from_files(first, second, argument: str) -> NeighbouringPair:
    """The neighbouring pair stored in two ``.npy`` files.

    Raises
    ------
    InputError
        Naming ``argument`` when a file cannot be read, the shapes are neither equal nor n and
        n − 1 rows, the databases differ in more than one record (or by more than one removed
        row), or they are equal (nothing to tell apart).
    """
    return checked_pair(load_database(first, argument), load_database(second, argument), argument,
                        given=f"given as {first}, {second}")


def split_pair_flag(text: str, label: str = "--pair") -> tuple[str, str]:
    """The two file names in ``A.npy,B.npy``."""
    parts = text.split(",") if isinstance(text, str) else []
    if len(parts) != 2 or not all(part.strip() for part in parts):
        raise InputError(f"argument '{label}' must be A.npy,B.npy (two database files), got {text!r}")
    return parts[0].strip(), parts[1].strip()
