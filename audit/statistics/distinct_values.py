"""Distinct values of output columns and distinct output rows, counted without a sort per column where one
sort or one count does: which columns take few values (one-hot encoded by
:class:`~audit.statistics.classifier.OutputFeatures`), and which rows an output takes and how often
(:class:`~audit.statistics.classifier.EmpiricalLogRatio`, an aggregated
:class:`~audit.statistics.classifier.FeatureDesign`, :mod:`audit.statistics.support`)."""

from __future__ import annotations

import numpy as np

__all__ = ["FIRST_ROWS", "columns_up_to", "distinct_codes", "distinct_counts", "distinct_rows", "float_rows",
           "row_counts_per_input", "surely_more_values", "values_up_to"]

#: Rows whose distinct values are counted first: a column with more values than a limit among them
#: has more than the limit, whatever the rest hold.
FIRST_ROWS = 1024


def values_up_to(column: np.ndarray, limit: int) -> np.ndarray | None:
    """The distinct values of ``column`` (sorted), or None where it takes more than ``limit`` of them.

    More than ``limit`` values among its first :data:`FIRST_ROWS` entries already decide it, without
    sorting the whole column (what a wide or continuous output costs most).
    """
    if len(column) > FIRST_ROWS and len(np.unique(column[:FIRST_ROWS])) > limit:
        return None
    values = np.unique(column)
    return values if len(values) <= limit else None


def distinct_counts(block: np.ndarray) -> np.ndarray:
    """The number of distinct values in each column of the 2-D ``block``, as ``len(np.unique(column))`` counts
    them (NaNs one value, −0.0 and 0.0 one), from one sort of the block along its rows instead of one
    :func:`numpy.unique` call per column (what a wide output, such as a model's parameters, costs most)."""
    block = np.asarray(block)
    if len(block) == 0:
        return np.zeros(block.shape[1], dtype=np.int64)
    ordered = np.sort(block, axis=0)
    new = ordered[1:] != ordered[:-1]
    if np.issubdtype(ordered.dtype, np.inexact):
        missing = np.isnan(ordered)  # sorted last; NaN != NaN, yet np.unique counts them once
        new &= ~(missing[1:] & missing[:-1])
    return 1 + np.count_nonzero(new, axis=0)


def surely_more_values(outputs: np.ndarray, limit: int) -> np.ndarray:
    """Which columns of the 2-D ``outputs`` take more than ``limit`` values already among their first
    ``limit + 1`` rows (at most :data:`FIRST_ROWS`): all of them distinct, as a continuous output's are.
    One sort of so few rows decides a wide continuous output's columns at once (:func:`distinct_counts`),
    where a sort of each column's first rows costs tens of microseconds a column; False says nothing."""
    return distinct_counts(outputs[:min(limit + 1, FIRST_ROWS)]) > limit


def columns_up_to(outputs: np.ndarray, limit: int) -> list:
    """:func:`values_up_to` of each column of the 2-D ``outputs``, the columns :func:`surely_more_values` decides
    None without sorting more of them."""
    over = surely_more_values(outputs, limit)
    return [None if over[j] else values_up_to(outputs[:, j], limit) for j in range(outputs.shape[1])]


def distinct_rows(outputs: np.ndarray, max_values: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The distinct rows of ``outputs`` and each row's index among them, or None beyond ``max_values`` rows.

    Each row is coded as one integer in mixed radix, its digits its columns' value indices, so that
    one sort of integers finds the distinct rows (a sort of the rows as byte strings, which
    ``np.unique(axis=0)`` does, took 5 ms for 9,000 rows here), or, where the codes take at most
    max(4N, 2¹⁶) values, one count of them (ten times faster than their sort): the same distinct
    rows in the same order (increasing codes), each the first output that holds it. A column with more than
    ``max_values`` values already makes more rows, and is caught first.

    Parameters
    ----------
    outputs : ndarray
        (N, d) rows compared value by value (as :func:`float_rows` gives them: −0.0 and 0.0 one value).
    max_values : int
        Most distinct rows wanted.

    Returns
    -------
    tuple of ndarray, or None
        (the distinct rows, in increasing order of their codes; for each of the N rows, the index of its row
        among them), or None where ``outputs`` holds more than ``max_values`` distinct rows.
    """
    codes = np.zeros(len(outputs), dtype=np.int64)
    radix = 1
    # A column with too many values among the first rows makes too many rows (never where they hold fewer).
    if max_values < min(len(outputs), FIRST_ROWS) and any(
            values is None for values in columns_up_to(outputs[:FIRST_ROWS], max_values)):
        return None
    for column in outputs.T:
        values, index = np.unique(column, return_inverse=True)
        if len(values) > max_values:
            return None
        radix *= len(values)
        if radix >= 2**62:  # the code would overflow: sort the rows themselves
            rows, inverse = np.unique(outputs, axis=0, return_inverse=True)
            return (rows, inverse.ravel()) if len(rows) <= max_values else None
        codes = codes * len(values) + index.ravel()
    distinct = distinct_codes(codes, radix, max_values)
    if distinct is None:
        return None
    first, inverse = distinct
    return outputs[first], inverse


def distinct_codes(codes: np.ndarray, radix: int, max_values: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Where each distinct integer code first occurs and each code's index among them, or None beyond
    ``max_values`` distinct codes (the step of :func:`distinct_rows` after its rows are coded).

    Parameters
    ----------
    codes : ndarray of int64
        Integers in [0, ``radix``).
    radix : int
        The number of codes possible; where at most max(4N, 2¹⁶), the codes are counted, not sorted.
    max_values : int
        Most distinct codes wanted.

    Returns
    -------
    tuple of ndarray, or None
        (the index of each distinct code's first occurrence, in increasing order of the codes; for each code, its
        index among the distinct ones), or None where ``codes`` holds more than ``max_values`` distinct ones.
    """
    if radix <= max(4 * len(codes), 1 << 16):
        # Few possible codes: which occur, and where first, by counting (no sort of the codes).
        present = np.bincount(codes, minlength=radix) > 0
        keys = int(np.count_nonzero(present))
        if keys > max_values:
            return None
        inverse = (np.cumsum(present) - 1)[codes]
        first = np.full(keys, len(codes))
        np.minimum.at(first, inverse, np.arange(len(codes)))
        return first, inverse
    keys, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    if len(keys) > max_values:
        return None
    return first, inverse.ravel()


def row_counts_per_input(which: np.ndarray, is_first: np.ndarray, distinct: int) -> tuple[np.ndarray, np.ndarray]:
    """How many outputs of the first input, and how many of the second, take each of ``distinct`` rows.

    Parameters
    ----------
    which : ndarray of int
        For each output, the index of its row among the distinct rows (as :func:`distinct_rows` gives it).
    is_first : ndarray of bool
        For each output, whether the first input produced it (else the second).
    distinct : int
        The number of distinct rows (the counts' length, rows no output takes counted 0).

    Returns
    -------
    tuple of ndarray of int
        (the first input's outputs at each row, the second input's outputs at each row).
    """
    return (np.bincount(which[is_first], minlength=distinct), np.bincount(which[~is_first], minlength=distinct))


def float_rows(outputs) -> np.ndarray:
    """Outputs as (N, d) float64 rows, −0.0 made 0.0, so that equal rows are equal byte for byte.

    Parameters
    ----------
    outputs : array_like
        N outputs, each of any shape (flattened to its d values).

    Returns
    -------
    ndarray of float64
        Shape (N, d).
    """
    return np.asarray(outputs, dtype=np.float64).reshape(len(outputs), -1) + 0.0
