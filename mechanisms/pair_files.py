"""Neighbouring pairs of databases from ``.npy`` files: ``--pair A.npy,B.npy`` and ``[[pairs]]``.

A pair is two databases of shape ``(n, k)`` that differ in one record (miaudit's neighbouring
relation: replace one record, n fixed). Under DP, Θ is all distributions, so the two-point
prior on such a pair is a member of Θ, and pairs alone make a complete DP audit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from estimators.validation import InputError

from .catalog.neighbouring_pair import NeighbouringPair

__all__ = ["load_database", "pair_from_files", "split_pair_flag"]


def load_database(path, label: str) -> np.ndarray:
    """A database of shape ``(n, k)`` from a ``.npy`` file, or one error naming ``label`` and the fix."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{label}: no such file {str(path)!r}")
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"{label}: cannot read {str(path)!r} as .npy (save it with numpy.save): {exc}") from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biuf":
        raise InputError(f"{label}: {str(path)!r} must hold a numeric array, got dtype {array.dtype}")
    if array.ndim != 2 or 0 in array.shape:
        hint = " (one attribute per record: save a.reshape(-1, 1))" if array.ndim == 1 else ""
        raise InputError(f"{label}: {str(path)!r} must hold one database of shape (n, k), got shape "
                         f"{array.shape}{hint}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{label}: {str(path)!r} contains NaN or inf")
    return array.astype(np.float64)


def pair_from_files(first, second, label: str) -> NeighbouringPair:
    """The neighbouring pair stored in two ``.npy`` files.

    Raises
    ------
    InputError
        Naming ``label`` when a file cannot be read, the shapes differ, the databases differ in
        more than one record, or they are equal (nothing to tell apart).
    """
    a, b = load_database(first, label), load_database(second, label)
    if a.shape != b.shape:
        raise InputError(f"{label}: the two databases must have the same shape (n, k), got {a.shape} and {b.shape}")
    differing = np.flatnonzero(np.any(a != b, axis=1))
    if len(differing) == 0:
        raise InputError(f"{label}: the two databases are equal; a neighbouring pair differs in one record")
    if len(differing) > 1:
        raise InputError(f"{label}: the databases differ in records {differing.tolist()}; miaudit's neighbours "
                         "differ in exactly one record (replace one record, n fixed)")
    return NeighbouringPair(a, b, why=f"given as {first}, {second} (record {int(differing[0])} replaced)")


def split_pair_flag(text: str, label: str = "--pair") -> tuple[str, str]:
    """The two file names in ``A.npy,B.npy``."""
    parts = text.split(",") if isinstance(text, str) else []
    if len(parts) != 2 or not all(part.strip() for part in parts):
        raise InputError(f"argument '{label}' must be A.npy,B.npy (two database files), got {text!r}")
    return parts[0].strip(), parts[1].strip()
