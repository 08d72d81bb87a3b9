"""A user's prior whose records hold integers beyond 2**53 (mechanisms/inputs/user_priors.py): float64 would round
them silently (2**53 + 1 read as 2**53), so a sampler's draws and a resampled table holding one are refused in one
error naming the argument, where the value is and the value, as a mechanism's outputs are
(mechanisms.outputs.limits.first_inexact_integer)."""

from __future__ import annotations

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.errors import MechanismError
from mechanisms.inputs.user_priors import EmpiricalResample, UserPrior

ROUNDED = 2**53 + 1  # the smallest positive integer float64 does not hold: float(2**53 + 1) == 2**53
assert float(ROUNDED) == float(ROUNDED - 1)


@pytest.mark.parametrize("sample", [lambda m, rng: np.full((m, 3, 1), ROUNDED, dtype=np.int64),
                                    lambda m, rng: [[[1], [2], [ROUNDED]]] * m,  # Python ints
                                    lambda m, rng: [[[1], [2], [2**64 + 5]]] * m])  # beyond int64 too
def test_a_sampler_drawing_an_integer_float64_would_round_is_one_error(sample):
    with pytest.raises(MechanismError) as raised:
        UserPrior(sample, label="big")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("argument 'sample' of prior 'big' returned an integer that float64 does not hold "
                              "exactly at [0, ")
    assert "9007199254740993" in message or "18446744073709551621" in message


def test_integers_float64_holds_are_drawn_as_they_were():
    exact = UserPrior(lambda m, rng: np.full((m, 3, 1), 2**53, dtype=np.int64))
    assert exact(2, np.random.default_rng(0)).ravel().tolist() == [2.0**53] * 6


def test_a_table_holding_an_integer_float64_would_round_is_one_error():
    with pytest.raises(InputError, match=r"^argument 'data' holds an integer that float64 does not hold exactly at "
                                         r"\[1, 0\]: 9007199254740993 is beyond 2\*\*53"):
        EmpiricalResample(np.array([[1], [ROUNDED]]), 2)
    assert EmpiricalResample(np.array([[1], [2**53]]), 2).data.tolist() == [[1.0], [2.0**53]]
