"""Missing values (NaN) in the databases a user gives: pair files and priors, with ``--allow-nan``.

A database a user gives (``--pair`` files, ``[[pairs]]``, a prior's draws) holds numbers; a NaN in it is
a missing value. Without ``--allow-nan`` (``[audit] allow_nan``, ``AuditSpec(allow_nan=True)``) one
is refused with an error that names the argument and the flag; with it, the NaN reaches the mechanism
unchanged, so that how the mechanism handles missing values (drops them, counts them, treats them as
0) is audited like anything else. Infinities are refused either way (they are not missing values).

A NaN compares unequal to everything, itself included; two databases with a missing value in the same
place hold the same value there. :func:`rows_differ` and :func:`same_databases` compare so.
"""

from __future__ import annotations

import numpy as np

from estimators.validation import InputError

__all__ = ["ALLOW_NAN_HINT", "check_missing_values", "distinct_rows", "rows_differ", "same_databases"]

#: How a user lets databases hold missing values; every refusal of a NaN says it.
ALLOW_NAN_HINT = ("NaN (a missing value) is allowed with --allow-nan ([audit] allow_nan = true, "
                  "AuditSpec(allow_nan=True), assert_claim(..., allow_nan=True)); it then reaches the mechanism unchanged")


def check_missing_values(array: np.ndarray, label: str, allow_nan: bool) -> np.ndarray:
    """``array`` when its entries are finite, or NaN where ``allow_nan``; else one error naming ``label``.

    Raises
    ------
    InputError
        Naming ``label`` for an infinity, or for a NaN without ``allow_nan`` (with :data:`ALLOW_NAN_HINT`).
    """
    if np.isinf(array).any():
        raise InputError(f"{label} contains inf (only NaN, a missing value, is allowed, with --allow-nan)")
    if not allow_nan and np.isnan(array).any():
        raise InputError(f"{label} contains NaN; {ALLOW_NAN_HINT}")
    return array


def rows_differ(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """For each row (record) of two databases of one shape, whether its values differ; NaN equals NaN."""
    first, second = np.asarray(first), np.asarray(second)
    return np.any((first != second) & ~(np.isnan(first) & np.isnan(second)), axis=1)


def same_databases(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether two databases hold the same values in the same places (a NaN in both places counts as equal)."""
    return np.shape(first) == np.shape(second) and bool(np.array_equal(first, second, equal_nan=True))


def distinct_rows(rows: np.ndarray) -> np.ndarray:
    """The distinct rows of ``rows`` (2-D), sorted, a NaN equal to a NaN (as :func:`numpy.unique` with ``axis=0``
    otherwise, which keeps every row holding a NaN apart). A NaN is sorted as +inf would be: no record holds an
    infinity (:func:`check_missing_values` refuses it), so the two cannot be confused."""
    rows = np.asarray(rows, dtype=np.float64)
    distinct = np.unique(np.where(np.isnan(rows), np.inf, rows), axis=0)
    distinct[np.isinf(distinct)] = np.nan
    return distinct
