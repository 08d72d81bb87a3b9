"""The foundation: validation errors name the argument; units convert; results serialize; CLI runs."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from audit.cli.main import main
from estimators.results import MIEstimate
from estimators.units import convert
from estimators.validation import (
    InputError,
    as_generator,
    as_samples,
    check_positive,
    check_probability,
    check_same_length,
)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf"), "0.5", None, True])
def test_probability_rejects_outside_open_interval(bad):
    with pytest.raises(InputError, match="'alpha'"):
        check_probability(bad, "alpha")


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("-inf"), float("inf")])
def test_positive_rejects(bad):
    with pytest.raises(InputError, match="'epsilon'"):
        check_positive(bad, "epsilon")


def test_as_samples_shapes_and_errors():
    assert as_samples(np.arange(5), "x").shape == (5, 1)
    assert as_samples(np.ones((4, 3)), "x").shape == (4, 3)
    with pytest.raises(InputError, match="'x'.*shape"):
        as_samples(np.ones((2, 2, 2)), "x")
    with pytest.raises(InputError, match="'x'.*at least"):
        as_samples(np.ones((0, 2)), "x")
    with pytest.raises(InputError, match="'y'.*NaN or inf.*row 1"):
        as_samples([1.0, np.nan], "y")
    with pytest.raises(InputError, match="'x'.*numeric"):
        as_samples(["a", "b"], "x")


def test_same_length_names_both():
    with pytest.raises(InputError, match="'x' has 3.*'y' has 2"):
        check_same_length(x=np.ones(3), y=np.ones(2))


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=20))
def test_as_samples_accepts_any_finite_vector(values):
    out = as_samples(values, "x")
    assert out.shape == (len(values), 1)
    assert np.array_equal(out[:, 0], np.asarray(values, dtype=np.float64))


def test_generator_from_seed_is_reproducible_and_validated():
    assert as_generator(3).random() == np.random.default_rng(3).random()
    with pytest.raises(InputError, match="'seed'"):
        as_generator("x")
    with pytest.raises(InputError, match="'seed'"):
        as_generator(-1)


def test_units_round_trip():
    assert convert(1.0, "bits", "nats") == pytest.approx(math.log(2))
    assert convert(math.log(2), "nats", "bits") == pytest.approx(1.0)
    with pytest.raises(InputError, match="'to_unit'"):
        convert(1.0, "nats", "hartleys")


def test_result_to_bits_and_json():
    r = MIEstimate(estimator="dv", value=math.log(2), lower_bound=0.5 * math.log(2), confidence=0.95,
                   per_slice=np.array([math.log(2), 2 * math.log(2)]), n=10)
    b = r.to("bits")
    assert b.unit == "bits" and b.value == pytest.approx(1.0) and b.lower_bound == pytest.approx(0.5)
    assert np.allclose(b.per_slice, [1.0, 2.0])
    d = json.loads(json.dumps(b.to_dict()))
    assert d["per_slice"] == pytest.approx([1.0, 2.0]) and d["unit"] == "bits"


def test_cli_without_command_prints_help_and_fails(capsys):
    assert main([]) == 2
