"""The shared array checks of estimators.validation and the places that now call them.

Expected values are written out here by hand (shapes, offending indices); every error must
name the argument and, for NaN/inf, the first offending index along the first axis.
"""

import numpy as np
import pytest

from audit.bounds.composition import as_finite_vector
from estimators.validation import (
    InputError,
    as_float64,
    as_float_array,
    as_sample_batch,
    first_nonfinite_index,
    paired_sample_batches,
    paired_samples,
)
from mechanisms.base import as_database_batch
from mechanisms.catalog.batch import as_database_batch as as_catalog_batch


def test_float_array_converts_and_keeps_values():
    out = as_float_array([[1, 2], [3, 4]], "v", ndim=2)
    assert out.dtype == np.float64
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_float64_converts_copies_on_request_and_names_what_is_not_numeric():
    already = np.array([0.5, 1.5])
    assert as_float64(already, "argument 'v'") is already
    copied = as_float64(already, "argument 'v'", copy=True)
    assert copied is not already and copied.tolist() == [0.5, 1.5]
    assert as_float64([[1, 2]], "argument 'v'").dtype == np.float64
    with pytest.raises(InputError, match="^argument 'v' must be numeric: "):
        as_float64([[1, 2], [3]], "argument 'v'")
    with pytest.raises(InputError, match="^pair 2 'first' must be numeric: could not convert string to float"):
        as_float64(["x"], "pair 2 'first'")


@pytest.mark.parametrize("bad, pattern", [
    (["a", "b"], "'v' must be a numeric array of shape \\(k,\\)"),
    ([[1.0], [1.0, 2.0]], "'v' must be a numeric array"),  # ragged
    (np.ones((2, 2)), "'v' must have shape \\(k,\\), got shape \\(2, 2\\)"),
    ([0.0, 1.0, np.inf, np.nan], "'v' contains NaN or inf \\(first in entry 2\\)"),
])
def test_float_array_errors_name_the_argument(bad, pattern):
    with pytest.raises(InputError, match=pattern):
        as_float_array(bad, "v", ndim=1, shape="(k,)", first_axis="entry")


def test_float_array_without_shape_text_lists_allowed_axes():
    with pytest.raises(InputError, match="'v' must have shape 1-D or 2-D, got shape \\(\\)"):
        as_float_array(3.0, "v", ndim=(1, 2))
    with pytest.raises(InputError, match="'v' contains NaN or inf$"):
        as_float_array(float("nan"), "v")


def test_first_nonfinite_index_is_along_the_first_axis():
    arr = np.zeros((4, 3, 2))
    assert first_nonfinite_index(arr) is None
    arr[2, 1, 0] = np.nan
    arr[3, 0, 0] = np.inf
    assert first_nonfinite_index(arr) == 2


def test_sample_batch_shapes_and_errors():
    assert as_sample_batch(np.zeros((2, 5, 3)), "x").shape == (2, 5, 3)
    with pytest.raises(InputError, match="'x' must have shape \\(p, n, d\\), got shape \\(5, 3\\)"):
        as_sample_batch(np.zeros((5, 3)), "x")
    with pytest.raises(InputError, match="'x' needs at least one slice and one column"):
        as_sample_batch(np.zeros((2, 5, 0)), "x")
    with pytest.raises(InputError, match="'x' needs at least 4 samples per slice, got 3"):
        as_sample_batch(np.zeros((2, 3, 1)), "x", min_rows=4)
    batch = np.zeros((3, 4, 1))
    batch[1, 2, 0] = np.nan
    with pytest.raises(InputError, match="'x' contains NaN or inf \\(first in slice 1\\)"):
        as_sample_batch(batch, "x")


def test_paired_validation_checks_lengths():
    x, y = paired_samples([1, 2, 3], [[1, 0], [0, 1], [1, 1]])
    assert x.shape == (3, 1) and y.shape == (3, 2)
    with pytest.raises(InputError, match="'x' has 3.*'y' has 2"):
        paired_samples([1, 2, 3], [1, 2])
    with pytest.raises(InputError, match="same \\(slices, samples\\), got \\(2, 3\\) and \\(2, 4\\)"):
        paired_sample_batches(np.zeros((2, 3, 1)), np.zeros((2, 4, 1)))


def test_database_batches_report_the_database():
    dbs = np.zeros((3, 2, 1))
    dbs[2, 1, 0] = np.inf
    with pytest.raises(InputError, match="'dbs' contains NaN or inf \\(first in database 2\\)"):
        as_database_batch(dbs)
    with pytest.raises(InputError, match="'dbs' must be non-empty, got shape \\(0, 2, 1\\)"):
        as_database_batch(np.zeros((0, 2, 1)))
    with pytest.raises(InputError, match="'dbs' contains NaN or inf \\(first in database 2\\)"):
        as_catalog_batch(dbs, records=2, attributes=1)
    with pytest.raises(InputError, match="'dbs' must have shape \\(m, 2, 1\\) with m >= 1, got shape \\(3, 2, 2\\)"):
        as_catalog_batch(np.zeros((3, 2, 2)), records=2, attributes=1)
    with pytest.raises(InputError, match="'dbs' must have every entry in \\[0, 1\\]"):
        as_catalog_batch(np.full((1, 2, 1), 2.0), records=2, attributes=1)


def test_finite_vector_accepts_scalars_and_checks_length():
    assert as_finite_vector(0.5, "eta").tolist() == [0.5]
    assert as_finite_vector([1, 2], "weights", length=2).tolist() == [1.0, 2.0]
    with pytest.raises(InputError, match="'weights' needs 3 values"):
        as_finite_vector([1, 2], "weights", length=3)
    with pytest.raises(InputError, match="'weights' must be a non-empty sequence"):
        as_finite_vector([], "weights")
    with pytest.raises(InputError, match="'weights' must have shape \\(k,\\) or a single number"):
        as_finite_vector([[1.0]], "weights")
    with pytest.raises(InputError, match="'weights' contains NaN or inf \\(first in entry 1\\)"):
        as_finite_vector([1.0, float("nan")], "weights")
