"""The float-bit codes and the ideal test's rounding on a torch device (audit/statistics/float_bits.py,
:func:`device_code_rows`; audit/statistics/arithmetic.py, :func:`device_round_significand`): on the CPU device
against an independent reading of each double (exact rationals from fractions.Fraction, the round trip in
Python's own float arithmetic), against the NumPy route, and an audit through either route giving the same
events and bounds; on a GPU (marked ``cuda``, skipped without one) the same as the CPU's."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from audit.engine import run_audit
from audit.spec import AuditSpec
from audit.statistics import arithmetic, float_bits
from audit.statistics.arithmetic import device_round_significand, round_significand
from audit.statistics.float_bits import (FLOAT_STATISTICS, NEGATIVE_ZERO_CODE, NONFINITE_CODE, ZERO_CODE,
                                         device_code_rows, power_of_two_shift)
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import TwoPoint

CPU = torch.device("cpu")
KINDS = [kind for kind, *_ in FLOAT_STATISTICS]


def _doubles(seed: int = 0) -> np.ndarray:
    """Doubles of many binades and precisions, subnormals, zeros of both signs and non-finite values."""
    rng = np.random.default_rng(seed)
    parts = [rng.laplace(0, 10, 300), rng.normal(0, 1e-3, 100), np.ldexp(rng.integers(1, 2**20, 50), -30),
             rng.normal(size=100).astype(np.float32).astype(np.float64),  # float32 parameters (TorchDPSGD's)
             rng.laplace(0, 1e-310, 40),  # subnormals
             np.array([5e-324, 2.5e-320, -1e-310, 2.0**-1074 * 3, 2.0**-1022, 1.0, -0.5, 2.0**60, 3.0, 1e300,
                       -7.25, 0.0, -0.0, np.inf, -np.inf, np.nan])]
    return np.concatenate(parts)


def _shuffled(seed: int) -> np.ndarray:
    """:func:`_doubles` in a random order, so that rows of them mix the kinds (the special values included)."""
    y = _doubles(seed)
    return np.random.default_rng(seed).permutation(y)


def _grid(v: float) -> int:
    """The largest k with v a multiple of 2^k, from the exact rational (Fraction reads the double exactly)."""
    q = Fraction(v)
    if q.denominator > 1:
        return -(q.denominator.bit_length() - 1)
    n = abs(q.numerator)
    return (n & -n).bit_length() - 1


def _binary(v: float) -> int:
    """e with |v| = m·2^e, ½ ≤ m < 1, from the exact rational: 2^(e − 1) ≤ |v| < 2^e."""
    q = abs(Fraction(v))
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e + 1 if q >= Fraction(2) ** e else e


def _low_bits(v: float) -> int:
    """The lowest two bits of the 53-bit significand s = |v|·2^(53 − e), exactly."""
    s = abs(Fraction(v)) * Fraction(2) ** (53 - _binary(v))
    assert s.denominator == 1
    return s.numerator & 3


def _special_or(v: float, code) -> int:
    if v == 0:  # the sign of a zero is a bit of its own
        return NEGATIVE_ZERO_CODE if math.copysign(1.0, v) < 0 else ZERO_CODE
    return code(v) if math.isfinite(v) else NONFINITE_CODE


def test_device_codes_are_the_exact_rationals_codes_on_the_cpu_device():
    y = _doubles()
    for name, code in (("grid exponent", _grid), ("binary exponent", _binary), ("low significand bits", _low_bits)):
        expected = [_special_or(float(v), code) for v in y]
        np.testing.assert_array_equal(device_code_rows(name, y[:, None], None, False, CPU).ravel(), expected,
                                      err_msg=name)


def test_device_residue_is_pythons_float_round_trip():
    y = _doubles(1)
    shift = 0.75
    expected = [NEGATIVE_ZERO_CODE if v == 0 and math.copysign(1.0, v) < 0 else
                int((v - shift) + shift != v) if math.isfinite(v) else NONFINITE_CODE for v in map(float, y)]
    np.testing.assert_array_equal(device_code_rows("neighbour-grid residue", y[:, None], np.array([shift]), False,
                                                   CPU).ravel(), expected)


def test_reduced_rows_are_each_rows_smallest_code_over_chunks(monkeypatch):
    # Rows of 7 columns in chunks of 2 rows (14 values): the chunked device route against the exact rationals.
    monkeypatch.setattr(float_bits, "DEVICE_CHUNK_ELEMENTS", 14)
    y = _shuffled(2)[:7 * 86].reshape(86, 7)
    expected = [[min(_special_or(float(v), _grid) for v in row)] for row in y]
    np.testing.assert_array_equal(device_code_rows("grid exponent", y, None, True, CPU), expected)
    assert device_code_rows("grid exponent", y[:0], None, True, CPU).shape == (0, 1)


def test_device_route_equals_the_numpy_route_for_every_family():
    y = _shuffled(3)[:600].reshape(100, 6)
    shift = power_of_two_shift(y[:50], y[50:] + 1.0)
    for kind in KINDS:
        for reduce in (False, True):
            np.testing.assert_array_equal(kind._code_rows(y, shift, reduce, CPU),  # the CPU keeps NumPy
                                          device_code_rows(kind.code, y, shift, reduce, CPU),
                                          err_msg=f"{kind.__name__}, reduce={reduce}")


@pytest.mark.parametrize("repeats", [1, 40])
def test_more_rows_than_the_limit_only_where_the_exact_count_says_so(repeats):
    # 600 distinct rows (their sums differ: proven exactly where the count is above the limit), and 15 distinct
    # rows repeated 40 times: never proven unless np.unique counts more than the limit.
    rng = np.random.default_rng(repeats)
    y = rng.normal(size=(600 // repeats, 9))
    y = np.repeat(y, repeats, axis=0)[:600]
    first, second = y[:300], y[300:]
    for kind in KINDS[:3]:
        exact = len(np.unique(np.concatenate([kind._codes(x, None) for x in (first, second)]), axis=0))
        for limit in (4, 14, 256):
            proven = float_bits.surely_more_rows_than(kind.code, first, second, None, CPU, limit)
            assert not proven or exact > limit
            if repeats == 1:  # 600 distinct rows of 9 columns: their sums differ
                assert proven == (exact > limit)


def test_fits_through_either_route_are_the_same_statistic():
    rng = np.random.default_rng(6)
    first = rng.normal(size=(400, 30)).astype(np.float32).astype(np.float64)
    second = first[::-1] + rng.laplace(size=(400, 30))  # rows of many codes: only the reduced code suits
    fresh = rng.normal(size=(200, 30))
    for kind in KINDS:
        on_numpy, on_device = kind.fit(first, second), kind.fit(first, second, device=CPU)
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(float_bits, "on_device", lambda device: device is not None)
            forced = kind.fit(first, second, device=CPU)
            assert (on_numpy is None) == (forced is None), kind.__name__
            if on_numpy is not None:
                assert (forced.reduce, forced.ratio.unseen) == (on_numpy.reduce, on_numpy.ratio.unseen)
                np.testing.assert_array_equal(forced(fresh), on_numpy(fresh))
        assert (on_device is None) == (on_numpy is None)


def _rounded(v: float, bits: int) -> float:
    """v rounded to ``bits`` significant bits, half to even, on the exact rational (Python's round of a Fraction
    rounds half to even); beyond the largest double, ±inf."""
    if v == 0 or not math.isfinite(v):
        return v
    e = _binary(v)
    q = Fraction(round(abs(Fraction(v)) * Fraction(2) ** (bits - e))) * Fraction(2) ** (e - bits)
    try:
        return math.copysign(float(q), v)
    except OverflowError:
        return math.copysign(math.inf, v)


def _halfway(rng, count: int, dropped: int, binade: int) -> np.ndarray:
    """Doubles whose dropped bits are exactly half a unit (ties, both parities of the kept part)."""
    kept = rng.integers(2**31, 2**32, count)
    return np.ldexp(((kept << dropped) | (1 << (dropped - 1))).astype(np.float64), binade)


@pytest.mark.parametrize("bits", [32, 12])
def test_rounding_on_the_device_is_the_exact_rationals_rounding(bits):
    rng = np.random.default_rng(bits)
    y = np.concatenate([_doubles(5), _halfway(rng, 100, 21, -52), -_halfway(rng, 100, 21, 40),
                        _halfway(rng, 50, 10, -1074),  # subnormal ties
                        np.array([np.ldexp(float(2**53 - 1), -53), np.ldexp(float(2**53 - 1), 971),  # carries, to inf
                                  np.nextafter(2.0**-1022, 0), 2.0**-1022])])
    expected = np.array([_rounded(float(v), bits) for v in y])
    got = device_round_significand(y, bits, CPU)
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert same.all() and np.array_equal(np.signbit(got), np.signbit(expected))
    with np.errstate(over="ignore"):  # NumPy's route overflows to inf on the carry past the largest double
        np.testing.assert_array_equal(got.view(np.int64), round_significand(y, bits).view(np.int64))  # NumPy's bits


def test_only_a_device_off_the_cpu_takes_the_device_route():
    assert not float_bits.on_device(None) and not float_bits.on_device("cpu") and not float_bits.on_device(CPU)
    assert float_bits.on_device("cuda") and float_bits.on_device(torch.device("cuda", 0))


def _textbook_laplace(scale: float):
    def mechanism(dbs, rng):
        return dbs.reshape(len(dbs), -1).sum(axis=1, keepdims=True) + rng.laplace(0, scale, (len(dbs), 1))
    return mechanism


def _audit(device_route: bool, monkeypatch):
    """The textbook float Laplace (Mironov 2012) refuted through its bits, with the codes and the rounding on the
    NumPy route or, forced, the device route on the CPU device."""
    with monkeypatch.context() as patched:
        if device_route:
            patched.setattr(float_bits, "on_device", lambda device: device is not None)
            patched.setattr(arithmetic, "on_device", lambda device: device is not None)
        return run_audit(AuditSpec(mechanism=_textbook_laplace(10.0), priors=[TwoPoint(np.zeros((1, 1)), np.ones((1, 1)))],
                                   claim=parse_claim("dp:0.1"), samples=4000, event_runs=4000, seed=3, device="cpu"))


def _event(test) -> tuple:
    return (test.description, test.threshold, test.event, test.runs_per_input, test.p_first, test.p_second,
            test.epsilon_lower_bound)


def test_an_audit_through_the_device_route_gives_the_numpy_routes_events_and_bounds(monkeypatch):
    numpy_route, device_route = _audit(False, monkeypatch), _audit(True, monkeypatch)
    assert numpy_route.claim_verdict == "refuted" and numpy_route.refuted_through_float_only
    for result in (numpy_route, device_route):
        assert result.float_event_test is not None
    # The same event chosen (its statistic, threshold and form) and the same frequencies on the same fresh runs.
    for test in ("event_test", "float_event_test"):
        a, b = getattr(numpy_route, test), getattr(device_route, test)
        assert _event(a) == _event(b), test
    assert numpy_route.dp_epsilon_lower_bound_event == device_route.dp_epsilon_lower_bound_event
    assert numpy_route.lower_bound == device_route.lower_bound and numpy_route.verdict == device_route.verdict


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.cuda
@needs_cuda
def test_cuda_codes_and_rounding_equal_the_cpu_devices_and_numpys():
    rng = np.random.default_rng(5)
    y = np.concatenate([_shuffled(4)[:560].reshape(80, 7),
                        rng.normal(size=(3000, 7)).astype(np.float32).astype(np.float64)])
    shift = power_of_two_shift(y[:1500], y[1500:] + 0.5)
    for kind in KINDS:
        for reduce in (False, True):
            cuda = device_code_rows(kind.code, y, shift, reduce, torch.device("cuda"))
            np.testing.assert_array_equal(cuda, device_code_rows(kind.code, y, shift, reduce, CPU))
            np.testing.assert_array_equal(cuda, kind._code_rows(y, shift, reduce))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(device_round_significand(y, 32, torch.device("cuda")).view(np.int64),
                                      round_significand(y).view(np.int64))


@pytest.mark.cuda
@needs_cuda
def test_an_audit_on_cuda_gives_the_cpus_float_event():
    def audit(device):
        return run_audit(AuditSpec(mechanism=_textbook_laplace(10.0), priors=[TwoPoint(np.zeros((1, 1)), np.ones((1, 1)))],
                                   claim=parse_claim("dp:0.1"), samples=4000, event_runs=4000, seed=3, device=device,
                                   mi_critic="classifier"))
    cpu, cuda = audit("cpu"), audit("cuda")
    assert _event(cuda.float_event_test) == _event(cpu.float_event_test)
    assert _event(cuda.event_test) == _event(cpu.event_test)
