"""A user's prior that returns PyTorch tensors (mechanisms/inputs/user_priors.py): a sampler's draws and a resampled
table are read as a mechanism's outputs are (mechanisms.base.read_tensors: detached, dense, on the CPU, a bfloat16
as the float64 it equals), or refused in one line naming the argument.

Each expected value is written here by hand: a bfloat16's from its bits (IEEE 754-2008 Section 3.6: 8 significand
bits), the others as the literals the sampler was given, or read back by torch's own ``tolist``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.errors import MechanismError
from mechanisms.inputs.user_priors import EmpiricalResample, UserPrior

torch = pytest.importorskip("torch")

#: 1/3 in bfloat16: 1.0101010|1010…₂ × 2**-2 rounds up to 1.0101011₂ × 2**-2 = 171/128 / 4 (8 significand bits).
THIRD_IN_BFLOAT16 = 171 / 512
ROUNDED = 2**53 + 1  # the smallest positive integer float64 does not hold: float(2**53 + 1) == 2**53
assert float(ROUNDED) == float(ROUNDED - 1)


def test_a_bernoulli_tensor_prior_is_drawn_as_the_values_it_returned():
    returned = []

    def draw(m, rng):
        generator = torch.Generator().manual_seed(int(rng.integers(2**62)))
        returned.append(torch.bernoulli(torch.full((m, 4, 2), 0.5), generator=generator))
        return returned[-1]

    prior = UserPrior(draw, label="coins", discrete=True)
    assert prior.shape == (4, 2)
    drawn = prior(5, np.random.default_rng(1))
    assert drawn.dtype == np.float64 and drawn.shape == (5, 4, 2)
    assert drawn.tolist() == returned[-1].tolist()  # torch's own reading of its values
    assert set(drawn.ravel().tolist()) <= {0.0, 1.0}


def test_a_prior_whose_tensor_requires_grad_is_read_detached():
    prior = UserPrior(lambda m, rng: torch.full((m, 3, 1), 0.25, requires_grad=True) * 2, label="grad")
    assert prior(2, 0).tolist() == [[[0.5]] * 3] * 2


def test_a_bfloat16_prior_is_read_as_the_float64_each_value_equals():
    prior = UserPrior(lambda m, rng: torch.full((m, 2, 1), 1 / 3).to(torch.bfloat16), label="bf16")
    assert prior(3, 0).tolist() == [[[THIRD_IN_BFLOAT16]] * 2] * 3


def test_a_list_of_tensors_and_a_sparse_tensor_are_read_as_arrays():
    rows = UserPrior(lambda m, rng: [torch.tensor([[1.5], [-2.0]], requires_grad=True) for _ in range(m)])
    assert rows(2, 0).tolist() == [[[1.5], [-2.0]]] * 2
    sparse = UserPrior(lambda m, rng: torch.tensor([[[0.0], [7.0]]] * m).to_sparse())
    assert sparse(2, 0).tolist() == [[[0.0], [7.0]]] * 2


def test_an_int64_tensor_beyond_2_53_is_refused_and_2_53_itself_drawn():
    with pytest.raises(MechanismError) as raised:
        UserPrior(lambda m, rng: torch.full((m, 3, 1), ROUNDED, dtype=torch.int64), label="big")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("argument 'sample' of prior 'big' returned an integer that float64 does not hold "
                              "exactly at [0, 0, 0]: 9007199254740993 is beyond 2**53")
    exact = UserPrior(lambda m, rng: torch.full((m, 3, 1), 2**53, dtype=torch.int64))
    assert exact(2, 0).ravel().tolist() == [9007199254740992.0] * 6


def test_a_tensor_with_no_values_to_read_is_one_line_naming_the_argument():
    with pytest.raises(MechanismError) as raised:
        UserPrior(lambda m, rng: torch.zeros((m, 2, 1), device="meta"), label="meta")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("argument 'sample' of prior 'meta' returned a tensor that could not be read "
                              "(a Tensor): NotImplementedError: ")


def test_a_complex_tensor_prior_is_refused_as_complex():
    with pytest.raises(MechanismError, match=r"^prior 'z' output holds complex numbers"):
        UserPrior(lambda m, rng: torch.zeros((m, 2, 1), dtype=torch.complex64), label="z")


def test_a_resampled_tensor_table_is_read_as_its_values():
    grad = EmpiricalResample(torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True), 2)
    assert grad.data.dtype == np.float64 and grad.data.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    bf16 = EmpiricalResample(torch.tensor([1 / 3, 2.0]).to(torch.bfloat16), 1)
    assert bf16.data.tolist() == [[THIRD_IN_BFLOAT16], [2.0]]
    assert set(bf16(50, 0).ravel().tolist()) == {THIRD_IN_BFLOAT16, 2.0}


def test_a_resampled_tensor_table_beyond_2_53_or_unreadable_is_one_error_naming_data():
    with pytest.raises(InputError, match=r"^argument 'data' holds an integer that float64 does not hold exactly at "
                                         r"\[1, 0\]: 9007199254740993 is beyond 2\*\*53"):
        EmpiricalResample(torch.tensor([[1], [ROUNDED]]), 2)
    with pytest.raises(InputError) as raised:
        EmpiricalResample(torch.zeros((2, 1), device="meta"), 1)
    assert "\n" not in str(raised.value)
    assert str(raised.value).startswith("argument 'data' holds a tensor that could not be read (a Tensor): "
                                        "NotImplementedError: ")


@pytest.mark.train
def test_an_audit_through_the_cli_draws_from_a_prior_returning_a_requires_grad_tensor(tmp_path, capsys):
    from audit.cli.main import main

    source = tmp_path / "tensor_prior.py"
    source.write_text("import torch\n\n\ndef draw(m, rng):\n"
                      "    generator = torch.Generator().manual_seed(int(rng.integers(2**62)))\n"
                      "    return torch.bernoulli(torch.full((m, 3, 2), 0.5), generator=generator).requires_grad_(True)\n")
    status = main(["audit", "--mechanism", "catalog:laplace_sum", "--prior", f"{source}:draw", "--independent-rows",
                   "--seed", "0", "--samples", "400", "--event-runs", "1000", "--set", "critic.max_steps=300",
                   "--json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]
    payload = json.loads(captured.out)
    assert payload["priors"] == [f"{source}:draw on 3x2 databases (independent_rows)"]
    assert payload["verdict"] == "no-violation-detected"  # laplace_sum is 1-DP as claimed
