"""Distinct values per column from one sort, against np.unique column by column (audit.statistics.distinct_values)."""

import numpy as np
import pytest

from audit.statistics.distinct_values import (FIRST_ROWS, columns_up_to, distinct_counts, distinct_rows,
                                              surely_more_values, values_up_to)


def _columns(rng):
    rows = 3000
    return np.column_stack([
        rng.normal(size=rows),                                   # continuous: every value distinct
        rng.integers(0, 3, rows).astype(float),                  # three levels
        np.where(rng.random(rows) < 0.3, np.nan, rng.integers(0, 2, rows)),  # NaNs and two levels
        np.where(rng.random(rows) < 0.5, -0.0, 0.0),             # -0.0 and 0.0: one value
        np.full(rows, np.nan),                                   # NaN only
        np.r_[np.zeros(FIRST_ROWS), rng.normal(size=rows - FIRST_ROWS)],  # one value among the first rows only
        np.where(rng.random(rows) < 0.5, np.inf, -np.inf),       # two infinities
    ])


@pytest.mark.parametrize("seed", range(3))
def test_distinct_counts_are_np_unique_lengths(seed):
    outputs = _columns(np.random.default_rng(seed))
    for block in (outputs, outputs[:7], outputs[:1]):
        expected = [len(np.unique(column)) for column in block.T]
        assert distinct_counts(block).tolist() == expected
    integers = np.random.default_rng(seed).integers(0, 5, (50, 4))
    assert distinct_counts(integers).tolist() == [len(np.unique(c)) for c in integers.T]
    assert distinct_counts(np.zeros((0, 3))).tolist() == [0, 0, 0]


@pytest.mark.parametrize("limit", [1, 2, 3, 20])
def test_columns_up_to_is_values_up_to_of_each_column(limit):
    outputs = _columns(np.random.default_rng(7))
    for got, column in zip(columns_up_to(outputs, limit), outputs.T):
        expected = values_up_to(column, limit)
        assert (got is None) == (expected is None)
        if expected is not None:
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("limit", [1, 3, 20, 2000])
def test_surely_more_values_only_where_the_column_takes_more(limit):
    outputs = _columns(np.random.default_rng(3))
    surely = surely_more_values(outputs, limit)
    counts = [len(np.unique(column)) for column in outputs.T]
    assert all(count > limit for count, sure in zip(counts, surely) if sure)
    # A column all distinct among its first limit + 1 rows (the continuous one) is decided.
    assert surely[0] == (limit + 1 <= min(len(outputs), FIRST_ROWS))


@pytest.mark.parametrize("max_values", [2, 6, 30, 5000])
def test_distinct_rows_is_none_exactly_beyond_max_values(max_values):
    rng = np.random.default_rng(max_values)
    for outputs in (rng.integers(0, 3, (3000, 2)).astype(float), rng.normal(size=(1500, 3)),
                    np.c_[rng.integers(0, 2, 2000), np.zeros(2000)]):
        got = distinct_rows(outputs, max_values)
        rows = np.unique(outputs, axis=0)
        assert (got is None) == (len(rows) > max_values)
        if got is not None:
            distinct, inverse = got
            np.testing.assert_array_equal(distinct[inverse], outputs)
            assert len(distinct) == len(rows)

