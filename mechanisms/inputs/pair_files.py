"""Neighbouring pairs of databases from ``.npy`` files: ``--pair A.npy,B.npy`` and ``[[pairs]]``.

A pair is two databases of shape ``(n, k)`` that differ in one record (replace-one neighbours), or
of n and n − 1 rows, the smaller being the larger without one row (add/remove neighbours;
:mod:`mechanisms.inputs.relation`). Under DP, Θ is all distributions, so the two-point prior on such a
pair is a member of Θ, and pairs alone make a complete DP audit.
"""

from __future__ import annotations

import os

import numpy as np

from estimators.array_files import load_npy_array
from estimators.validation import InputError

from mechanisms.inputs.missing_values import check_missing_values
from mechanisms.inputs.neighbouring_pair import NeighbouringPair, checked_pair
from mechanisms.inputs.relation import ADD_REMOVE, relation_kind, relation_words

__all__ = ["check_pairs_agree", "load_database", "pair_from_files", "split_pair_flag"]


def load_database(path, argument: str, allow_nan: bool = False) -> np.ndarray:
    """A database of shape ``(n, k)`` from a ``.npy`` file, or one error naming ``argument`` and the fix.

    Reading and the file checks are :func:`estimators.array_files.load_npy_array`'s; a NaN (a missing value) is
    kept with ``allow_nan``, else refused with an error that names the file and ``--allow-nan``.
    """
    array = load_npy_array(path, argument, allow_nan=True)
    check_missing_values(array, f"argument '{argument}': {str(path)!r}", allow_nan)
    if array.ndim != 2:
        hint = " (one attribute per record: save a.reshape(-1, 1))" if array.ndim == 1 else ""
        raise InputError(f"argument '{argument}': {str(path)!r} must hold one database of shape (n, k), got shape "
                         f"{array.shape}{hint}")
    return array


def pair_from_files(first, second, argument: str, relation: str | None = None,
                    allow_nan: bool = False) -> NeighbouringPair:
    """The neighbouring pair stored in two ``.npy`` files; with ``allow_nan`` (``--allow-nan``) they may hold
    NaN, missing values, which reach the mechanism unchanged (:mod:`mechanisms.inputs.missing_values`).

    Raises
    ------
    InputError
        Naming ``argument`` when a file cannot be read, holds NaN without ``allow_nan`` (the error names
        ``--allow-nan``) or inf, the shapes are neither equal nor n and n − j rows, the databases differ
        in more records than ``relation``'s distance (default one;
        :func:`mechanisms.inputs.neighbouring_pair.checked_pair`), or they are equal (nothing to tell
        apart).
    """
    return checked_pair(load_database(first, argument, allow_nan), load_database(second, argument, allow_nan),
                        argument, f"given as {first}, {second}", relation, allow_nan=allow_nan)


def split_pair_flag(text: str, label: str = "--pair") -> tuple[str, str]:
    """The two file names in ``A.npy,B.npy``.

    A file name may hold a comma: with more than one comma, the split is the one place where both
    sides name existing files; where none or several do, the error lists the readings, never a
    guess. A text that names one existing file is told that a pair needs two.
    """
    usage = f"argument '{label}' must be A.npy,B.npy (two database files)"
    if not isinstance(text, str) or "," not in text:
        if isinstance(text, str) and os.path.isfile(text):
            raise InputError(f"{usage}, got {text!r}: one file; a pair needs two")
        raise InputError(f"{usage}, got {text!r}")
    readings = [(text[:i].strip(), text[i + 1:].strip()) for i, c in enumerate(text) if c == ","]
    readings = [r for r in readings if all(r)]
    if len(readings) == 1 and text.count(",") == 1:
        if os.path.isfile(text) and not all(os.path.isfile(name) for name in readings[0]):
            raise InputError(f"{usage}, got {text!r}: one file whose name holds a comma; a pair needs two")
        return readings[0]
    existing = [r for r in readings if all(os.path.isfile(name) for name in r)]
    if len(existing) == 1:
        return existing[0]
    if not readings:
        raise InputError(f"{usage}, got {text!r}")
    listed = "; ".join(f"{a!r} and {b!r}" for a, b in (existing or readings))
    said = "several" if existing else "none"
    raise InputError(f"{usage}; {text!r} holds {text.count(',')} commas and {said} of its readings name two existing "
                     f"files ({listed}): rename the files without commas")


def check_pairs_agree(pairs, label: str = "[[pairs]] (--pair)") -> None:
    """Refuse pairs that one audit cannot hold together: of different relations, or of different shapes.

    Shapes are the databases' as given (``database_shape``: the larger of an add/remove pair), never
    the presence column the audit adds.

    Raises
    ------
    InputError
        Naming ``label`` and the pairs (by their place, from 1) that disagree.
    """
    if not pairs:
        return
    first = pairs[0]
    for number, pair in enumerate(pairs[1:], start=2):
        if pair.relation != first.relation:
            def said(p):
                rows = "n and n − 1 rows" if p.relation == ADD_REMOVE else "n and n − j rows"
                return (rows if relation_kind(p.relation) == ADD_REMOVE else "two databases of n rows") + \
                    f": {relation_words(p.relation)}"
            raise InputError(f"{label}: pair 1 holds {said(first)}, pair {number} {said(pair)}; an audit has one "
                             "neighbouring relation: give pairs of one kind (one audit per relation)")
        if pair.database_shape != first.database_shape:
            raise InputError(f"{label}: every pair must hold databases of one shape (n, k), got "
                             f"{first.database_shape} in pair 1 and {pair.database_shape} in pair {number}")
