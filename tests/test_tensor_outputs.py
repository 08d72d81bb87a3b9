"""PyTorch tensors (and other array-likes) released by a mechanism: read as their float64 NumPy equal, or refused in
one line.

Each tensor's expected NumPy equal is written here by hand: a bfloat16's, float16's and float8's values from their
bit patterns (IEEE 754-2008 Section 3.4: sign, biased exponent, significand), with ``math.ldexp``.
"""

import array
import math

import numpy as np
import pytest
import torch

from audit.cli.main import main
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.base import MechanismError, check_batch_output
from mechanisms.outputs.arrays import is_tensor, without_tensors
from mechanisms.outputs.encoding import OutputEncoder, output_features
from mechanisms.outputs.limits import ACCEPTED

RNG = np.random.default_rng(0)

# numpy.matrix is pending deprecation and CSR tensors are in beta: both are read all the same
pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore:Sparse CSR:UserWarning")


def _bits(patterns, dtype, through=torch.int16):
    """A tensor of ``dtype`` holding the given bit patterns."""
    return torch.tensor(patterns, dtype=through).view(dtype)


def _grad(values):
    """A tensor that requires grad, as a model's output is (a grad_fn: the product)."""
    return torch.tensor(values, dtype=torch.float64, requires_grad=True) * 1


# (the tensor, its float64 NumPy equal written independently)
READ_AS = {
    "requires grad": (lambda: _grad([1.5, -2.25]), np.array([1.5, -2.25])),
    "Parameter": (lambda: torch.nn.Parameter(torch.tensor([0.5, 4.0])), np.array([0.5, 4.0])),
    # 0x3FC9: exponent 127 - 127, significand 1 + 0x49/128; 0x0001: the least subnormal, 2**-126 * 2**-7;
    # 0xC049: sign 1, exponent 128 - 127, significand 1 + 0x49/128
    "bfloat16": (lambda: _bits([0x3FC9, 0x0001, 0xC049 - 0x10000], torch.bfloat16),
                 np.array([math.ldexp(128 + 0x49, -7), math.ldexp(1, -133), -math.ldexp(128 + 0x49, -6)])),
    # 0x2E66 (0.1 rounded): exponent 11 - 15, significand 1 + 0x266/1024
    "float16": (lambda: torch.tensor([0.1], dtype=torch.float16), np.array([math.ldexp(1024 + 0x266, -14)])),
    "0-d": (lambda: torch.tensor(2.5), np.array(2.5)),
    "0-d requires grad": (lambda: _grad(2.5), np.array(2.5)),
    "int64": (lambda: torch.tensor([7, -3, 2**53]), np.array([7.0, -3.0, 2.0**53])),
    "bool": (lambda: torch.tensor([True, False]), np.array([1.0, 0.0])),
    "sparse COO": (lambda: torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse(), np.array([[0.0, 1.0], [2.0, 0.0]])),
    "sparse CSR": (lambda: torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse_csr(), np.array([[0.0, 1.0], [2.0, 0.0]])),
    "list of 0-d with grad": (lambda: [_grad(1.0), _grad(-0.5)], np.array([1.0, -0.5])),
    "memoryview": (lambda: memoryview(np.array([1.25, 3.0])), np.array([1.25, 3.0])),
    "array.array": (lambda: array.array("d", [1.25, 3.0]), np.array([1.25, 3.0])),
    "numpy.matrix": (lambda: np.matrix([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 2.0], [3.0, 4.0]])),
}
if hasattr(torch, "float8_e4m3fn"):
    # 0x39: exponent 7 - 7, significand 1 + 1/8
    READ_AS["float8_e4m3fn"] = (lambda: _bits([0x39], torch.float8_e4m3fn, torch.uint8), np.array([math.ldexp(9, -3)]))


@pytest.mark.parametrize("kind", sorted(READ_AS))
def test_a_tensor_is_read_per_database_as_its_float64_numpy_equal(kind):
    make, equal = READ_AS[kind]
    assert equal.dtype == np.float64
    assert output_features(make()) == output_features(equal)
    encoder = OutputEncoder(width=8)
    assert np.array_equal(encoder(make()), encoder(equal))


def test_tensors_inside_mappings_tuples_and_lists_are_read_by_their_places():
    output = {"a": _grad([1.5]), "b": (_bits([0x3FC9], torch.bfloat16)[0], [torch.tensor(1.0), _grad(2.0)])}
    equal = {"a": np.array([1.5]), "b": (np.array(math.ldexp(201, -7)), np.array([1.0, 2.0]))}
    assert output_features(output) == output_features(equal)


def test_a_per_database_mechanism_with_grad_reads_its_tensor_with_or_without_an_encoder():
    mechanism = PerDatabaseMechanism(lambda db, rng: _grad([float(db.sum())]), "f")
    dbs = np.array([[[1.0], [2.0]], [[0.0], [0.5]]])
    assert mechanism(dbs, RNG).tolist() == [[3.0], [0.5]]
    encoded = PerDatabaseMechanism(lambda db, rng: _grad([float(db.sum())]), "f", encoder=OutputEncoder(width=4))
    assert np.array_equal(encoded(dbs, RNG), np.stack([OutputEncoder(width=4)(np.array([3.0])),
                                                       OutputEncoder(width=4)(np.array([0.5]))]))


BEYOND = ("9007199254740993 is beyond 2**53, where float64 holds only some integers: it would be read as "
          "9007199254740992, its last digits lost, and a change in them unseen by the audit; release it less an "
          "offset, or ")


def _refusal(output, encoder=True) -> str:
    mechanism = PerDatabaseMechanism(lambda db, rng: output, "f", encoder=OutputEncoder() if encoder else None)
    with pytest.raises(MechanismError) as raised:
        mechanism(np.zeros((1, 2, 1)), RNG)
    return str(raised.value)


def test_an_int64_tensor_beyond_2_53_is_kept_whole_with_an_encoder_and_refused_without():
    # 2**53 + 1 rounds to 2**53 in float64 (ties to even): the encoder keeps the remainder 1 beside it.
    features = output_features(torch.tensor([1, 2**53 + 1]))
    assert features["y[1]"] == 2.0**53 and features["y[1].rest"] == 1.0
    assert output_features({"k": torch.tensor([2**53 + 1])})["y{'k'}[0].rest"] == 1.0
    assert _refusal(torch.tensor([2**53 + 1]), encoder=False) == (
        "mechanism 'f' returned an integer that float64 does not hold exactly for database 0: " + BEYOND
        + "str(x) with an OutputEncoder (mechanisms.outputs.encoding), to keep every digit as a category")


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_a_complex_tensor_is_refused_per_database_as_complex(dtype):
    assert _refusal(torch.tensor([1 + 2j], dtype=dtype)) == (
        "mechanism 'f' returned an output that is not encodable on database 0: y is an array of dtype "
        f"{str(dtype).removeprefix('torch.')}: complex numbers are not accepted: release the real and imaginary "
        f"parts (z.real, z.imag); accepted: {ACCEPTED}")


def test_a_tensor_with_no_values_is_refused_in_one_line_naming_its_place():
    line = _refusal({"w": torch.empty(2, device="meta")})
    assert line.startswith("mechanism 'f' returned an output that is not encodable on database 0: y{'w'} is a "
                           "Tensor: reading it raised ")
    assert "\n" not in line


# Batched: a (m, d) tensor and its float64 NumPy equal
BATCHED = {
    "requires grad": (lambda: _grad([[1.5], [-2.0]]), [[1.5], [-2.0]]),
    "grad_fn of a product": (lambda: torch.tensor([[1.0, 2.0]], requires_grad=True) @ torch.eye(2),
                             [[1.0, 2.0]]),
    "Parameter": (lambda: torch.nn.Parameter(torch.tensor([[0.5], [4.0]])), [[0.5], [4.0]]),
    "bfloat16": (lambda: _bits([[0x3FC9], [0x0001]], torch.bfloat16), [[math.ldexp(201, -7)], [math.ldexp(1, -133)]]),
    "float16": (lambda: torch.tensor([[0.1], [2.0]], dtype=torch.float16), [[math.ldexp(1024 + 0x266, -14)], [2.0]]),
    "bool": (lambda: torch.tensor([[True], [False]]), [[1.0], [0.0]]),
    "sparse": (lambda: torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse(), [[0.0, 1.0], [2.0, 0.0]]),
    "list of rows": (lambda: [_grad([1.0, 2.0]), torch.tensor([3.0, 4.0], dtype=torch.bfloat16)],
                     [[1.0, 2.0], [3.0, 4.0]]),
    "tuple of 0-d rows": (lambda: ([_grad(1.0)], [_grad(2.0)]), [[1.0], [2.0]]),
    "numpy.matrix": (lambda: np.matrix([[1.0], [2.0]]), [[1.0], [2.0]]),
    "memoryview": (lambda: memoryview(np.array([[1.0], [2.0]])), [[1.0], [2.0]]),
}


@pytest.mark.parametrize("kind", sorted(BATCHED))
def test_a_batched_tensor_is_read_as_its_float64_numpy_equal(kind):
    make, rows = BATCHED[kind]
    read = check_batch_output(make(), len(rows), "mechanism 'f'")
    assert read.dtype == np.float64 and read.tolist() == rows


def test_a_batched_int64_tensor_beyond_2_53_and_a_complex_one_are_refused_by_their_lines():
    with pytest.raises(MechanismError) as raised:
        check_batch_output(torch.tensor([[0], [2**53 + 1]]), 2, "mechanism 'f'")
    assert str(raised.value) == (
        "mechanism 'f' returned an integer that float64 does not hold exactly for database 1: " + BEYOND
        + "str(x) from a function of one database (--per-database), to keep every digit as a category")
    with pytest.raises(MechanismError) as raised:
        check_batch_output(torch.tensor([[1j], [0j]]), 2, "mechanism 'f'")
    assert str(raised.value) == (
        "mechanism 'f' output holds complex numbers; miaudit works with real numbers (pass the real and imaginary "
        "parts as separate columns, e.g. numpy.column_stack([z.real, z.imag]))")
    with pytest.raises(MechanismError) as raised:
        check_batch_output(torch.empty((2, 1), device="meta"), 2, "mechanism 'f'")
    assert str(raised.value).startswith("mechanism 'f' returned a tensor that could not be read (a Tensor): ")


def test_a_0_d_output_of_a_batched_mechanism_says_to_give_per_database():
    for output in (torch.tensor(1.0), np.array(1.0)):
        with pytest.raises(MechanismError) as raised:
            check_batch_output(output, 1, "mechanism 'f'")
        assert str(raised.value) == (
            "mechanism 'f' returned shape () for a batch of 1 database; expected (1, d) with d >= 1; if it is a "
            "function of one database, f(db, rng) -> output, give --per-database ([mechanism] per_database = true; "
            "from Python, wrap it: PerDatabaseMechanism(f))")


def test_tensors_are_told_by_their_type_and_a_list_without_one_is_kept_as_it_is():
    class Mine(torch.Tensor):
        pass

    assert is_tensor(torch.tensor(1.0)) and is_tensor(torch.nn.Parameter(torch.ones(1)))
    assert is_tensor(torch.ones(1).as_subclass(Mine))
    assert not is_tensor(np.ones(1)) and not is_tensor([1.0]) and not is_tensor(torch.float32)
    rows = [[1.0, 2.0], (3, 4)]
    assert without_tensors(rows) is rows
    deep = [torch.tensor(1.0)]
    for _ in range(5000):  # deeper than Python's recursion limit: left to NumPy, which refuses it by its depth
        deep = [deep]
    assert without_tensors(deep) is deep


def test_a_list_of_rows_with_one_tensor_after_plain_numbers_is_read_whole():
    # The rows of plain numbers are passed over by their types; the last row holds a tensor that requires grad.
    rows = [[float(i), float(i) + 0.5] for i in range(300)]
    rows[-1][1] = torch.tensor(299.5, requires_grad=True) * 1
    expected = np.array([[i, i + 0.5] for i in range(300)], dtype=np.float64)
    assert np.array_equal(check_batch_output(rows, 300, "mechanism 'm'"), expected)
    plain = [[np.float32(0.25), np.int64(3), True, None], ("a", b"b", np.str_("c"), np.bytes_(b"d"))]
    assert without_tensors(plain) is plain


@pytest.mark.train
def test_an_audit_through_the_cli_reads_a_requires_grad_tensor_and_refutes_a_buggy_claim(tmp_path, capsys):
    source = tmp_path / "kinds.py"
    # Laplace noise of scale 0.1 on a sum of sensitivity 1: 10-DP, not 1-DP
    source.write_text("import torch\n\n\ndef laplace_tensor(db, rng):\n"
                      "    return torch.tensor([float(db.sum()) + rng.laplace(scale=0.1)], requires_grad=True) * 1\n")
    status = main(["audit", "--mechanism", f"{source}:laplace_tensor", "--per-database", "--claim", "dp:1",
                   "--prior", "builtin:bernoulli", "--n", "5", "--seed", "0", "--samples", "400",
                   "--event-runs", "1000", "--fail-on-violation"])
    printed = capsys.readouterr().out
    assert "claim 1-DP: REFUTED" in printed, printed[-2000:]
    assert status == 1
