"""Float-bit statistics (audit/statistics/float_bits.py): each feature against an independent reading of the
double (exact rationals from fractions.Fraction, float.hex, grids enumerated with numpy.nextafter), and
the textbook float Laplace of Mironov (2012) refuted through them."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from audit.engine import run_audit
from audit.statistics.float_bits import (FLOAT_STATISTICS, NEGATIVE_ZERO_CODE, NONFINITE_CODE, ZERO_CODE, BinaryExponentLogRatio, GridExponentLogRatio, ShiftedGridLogRatio, binary_exponent, grid_exponent, has_fine_bits, low_significand_bits, off_shifted_grid, power_of_two_shift)
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import TwoPoint


def _doubles(seed: int = 0) -> np.ndarray:
    """Doubles of many binades, signs and precisions: random, subnormal, powers of two, short binary fractions."""
    rng = np.random.default_rng(seed)
    parts = [rng.laplace(0, 10, 300), rng.normal(0, 1e-3, 100), np.ldexp(rng.integers(1, 2**20, 50), -30),
             np.array([5e-324, 2.5e-320, -1e-310, 2.0**-1074 * 3, 1.0, -0.5, 2.0**60, 3.0, 1e300, -7.25])]
    return np.concatenate(parts)


def _two_adic_valuation(y: float) -> int:
    """The largest k with y a multiple of 2^k, from the exact rational of y (Fraction reads the double exactly)."""
    q = Fraction(y)
    if q.denominator > 1:
        return -(q.denominator.bit_length() - 1)  # a double's denominator is a power of two
    n, k = abs(q.numerator), 0
    while n % 2 == 0:
        n //= 2
        k += 1
    return k


def test_grid_exponent_is_the_two_adic_valuation_of_the_exact_rational():
    y = _doubles()
    expected = [_two_adic_valuation(float(v)) for v in y]
    np.testing.assert_array_equal(grid_exponent(y), expected)


def test_binary_exponent_and_low_bits_read_from_float_hex():
    y = _doubles(1)
    y = y[np.abs(y) >= np.finfo(float).tiny]  # normal doubles: hex is 0x1.<52 bits>p<e>
    exponents, low = [], []
    for v in y:
        mantissa, power = float(v).hex().lstrip("-").split("p")
        fraction = int(mantissa.split(".")[1].ljust(13, "0"), 16)  # the 52 stored bits
        exponents.append(int(power) + 1)  # 1.f·2^p = (0.1f)·2^(p + 1)
        low.append(fraction & 3)
    np.testing.assert_array_equal(binary_exponent(y), exponents)
    np.testing.assert_array_equal(low_significand_bits(y), low)


def test_zero_and_non_finite_get_their_own_codes():
    y = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    for feature in (grid_exponent, binary_exponent, low_significand_bits):
        np.testing.assert_array_equal(feature(y), [ZERO_CODE, NEGATIVE_ZERO_CODE] + [NONFINITE_CODE] * 3)


def test_off_shifted_grid_on_an_enumerated_grid():
    # Consecutive doubles from 0.3 (ulp 2^-54 in [0.25, 0.5)): y − 1 lies in [−0.75, −0.5), whose grid is 2^-53,
    # so y survives the round trip through y − 1 exactly when it is a multiple of 2^-53: every other double.
    grid = [0.3]
    for _ in range(63):
        grid.append(float(np.nextafter(grid[-1], 1.0)))
    y = np.array(grid)
    expected = [(Fraction(v) * 2**53).denominator != 1 for v in grid]
    assert 0 < sum(expected) < len(expected)
    np.testing.assert_array_equal(off_shifted_grid(y, 1.0), np.array(expected, dtype=int))


def test_power_of_two_shift_rounds_the_median_gap_in_log_scale():
    first = np.zeros((5, 2))
    second = np.array([[1.3, -0.2]] * 5)
    # log2(1.3) = 0.38 rounds to 0: 1; log2(0.2) = −2.32 rounds to −2: −0.25.
    np.testing.assert_array_equal(power_of_two_shift(first, second), [[1.0, -0.25]][0])


def test_integer_outputs_get_no_bit_statistic():
    counts = np.arange(40, dtype=np.float64)[:, None]
    assert GridExponentLogRatio.fit(counts, counts + 1) is None
    assert BinaryExponentLogRatio.fit(counts, counts + 1) is None


def test_the_gate_reads_bits_below_two_to_the_minus_32_on_enumerated_grids():
    # y = m·2^k with m odd is a multiple of 2^-32 exactly when k ≥ −32; the gate must say "fine bits" for k < −32 only.
    for k in range(-70, 40):
        for m in (1, -3, 5, 2**20 + 1):
            y = math.ldexp(m, k)
            assert has_fine_bits(np.array([0.0, 2.0, y])) == (k < -32), (m, k)
    # Every double of magnitude ≥ 2^20 is a multiple of 2^-32 (its spacing is ≥ 2^-32), read from its exact rational.
    y = 2.0**20
    for _ in range(50):
        y = np.nextafter(y, -np.inf)
        assert has_fine_bits(np.array([y])) == ((Fraction(float(y)) * 2**32).denominator != 1)
    walk = np.nextafter(np.float64(2.0**20), np.inf)
    assert not has_fine_bits(np.array([walk, -walk, 1e300, np.inf, np.nan]))
    assert not has_fine_bits(np.arange(-5, 5) / 2**32) and has_fine_bits(np.arange(-5, 5) / 2**33)


def test_outputs_snapped_to_the_coarse_grid_get_no_bit_statistic():
    # The catalog's snapping (round to 2^-32) of the textbook Laplace: every statistic declines, while the unsnapped
    # outputs of the same draws get the grid exponent's.
    from mechanisms.snapping import snap

    rng = np.random.default_rng(5)
    raw = [(x + rng.laplace(0, 10.0, 3000))[:, None] for x in (0.0, 1.0)]
    snapped = [snap(r) for r in raw]
    assert all((Fraction(float(v)) * 2**32).denominator == 1 for v in snapped[0][:200, 0])  # independent check
    assert all(kind.fit(*snapped) is None for kind, *_ in FLOAT_STATISTICS)
    assert GridExponentLogRatio.fit(*raw) is not None


def _textbook_laplace(scale):
    """Mironov (2012)'s target: the float sum plus numpy's float Laplace noise."""
    def mechanism(dbs, rng):
        return dbs.sum(axis=1) + rng.laplace(0.0, scale, (len(dbs), dbs.shape[2]))
    return mechanism


def test_grid_statistic_separates_the_textbook_laplace_as_the_exact_rationals_do():
    # From input 1 every output fl(1 + L) lies on the grid 2^-53 (|y| < ½ needs L ≤ −½, whose grid is ≥ 2^-53;
    # larger |y| have coarser grids); from input 0, y = L keeps all its bits. The statistic's top scores are
    # exactly the outputs that the rationals say are off the 2^-53 grid.
    rng = np.random.default_rng(3)
    mechanism = _textbook_laplace(10.0)
    zero, one = np.zeros((4000, 1, 1)), np.ones((4000, 1, 1))
    fitted = GridExponentLogRatio.fit(mechanism(zero, rng), mechanism(one, rng))
    fresh_zero, fresh_one = mechanism(zero, rng), mechanism(one, rng)
    off_grid_one = [(Fraction(float(v)) * 2**53).denominator != 1 for v in fresh_one[:, 0]]
    assert not any(off_grid_one)
    off_grid_zero = np.array([(Fraction(float(v)) * 2**53).denominator != 1 for v in fresh_zero[:, 0]])
    assert 0.01 < off_grid_zero.mean() < 0.06  # about P(|L| < ½) = 1 − e^(−0.05) = 0.049, less the on-grid L
    scores_zero = fitted(fresh_zero)
    top = scores_zero > fitted(fresh_one).max()
    # Every output scored above anything input 1 gave is off the grid, and (codes seen in training) most off-grid ones are.
    assert np.all(off_grid_zero[top]) and top.sum() >= 0.9 * off_grid_zero.sum()


def test_shifted_grid_statistic_reads_the_neighbours_shift():
    rng = np.random.default_rng(4)
    mechanism = _textbook_laplace(1.0)
    fitted = ShiftedGridLogRatio.fit(mechanism(np.zeros((3000, 1, 1)), rng), mechanism(np.ones((3000, 1, 1)), rng))
    assert fitted.shift.tolist() == [1.0]


def test_the_residue_statistic_says_what_c_is():
    what = next(words for kind, _, _, words in FLOAT_STATISTICS if kind is ShiftedGridLogRatio)
    assert ("(y ⊖ c ⊕ c ≠ y in float64, c the difference of the two databases' median outputs rounded to a power of "
            "two)") in what
    # The words are what power_of_two_shift computes: medians 0 and 3, log2 3 = 1.58 rounds to 2, so c = 4.
    assert power_of_two_shift(np.zeros((3, 1)), np.full((3, 1), 3.0)).tolist() == [4.0]


def test_textbook_float_laplace_is_refuted_through_its_bits():
    # Mironov (2012): x + Lap(1/ε) in float64 is not ε-DP for any ε. At claimed ε = 0.1 (DP-Sniper's setting) the
    # event "y off input 1's float grid" has probability 0 from input 1 and several percent from input 0.
    # Classifier critics only: not marked `train`.
    first, second = np.zeros((1, 1)), np.ones((1, 1))
    result = run_audit(AuditSpec(mechanism=_textbook_laplace(10.0), priors=[TwoPoint(first, second)],
                                 claim=parse_claim("dp:0.1"), samples=6000, event_runs=6000, seed=0))
    assert result.claim_verdict == "refuted" and result.refuted_through_float_only
    event = result.float_event_test  # the float-bit test, at its own share of α
    assert event.p_second == 0.0 or event.p_first == 0.0
    assert event.epsilon_lower_bound > 2.5
    assert "float grid" in event.description or "grid exponent" in event.description


@pytest.mark.parametrize("scale", [10.0])
def test_a_float_safe_noise_is_not_refuted_by_the_bits(scale):
    # Noise on the grid 2^-10 added to values on that grid: every sum is exact and the output's law is the
    # noise's shifted by 1, with a ratio bounded by e^(1/scale) at every point (a discrete Laplace on the grid
    # scaled, Ghosh et al. 2009's geometric mechanism). The bit statistics must find nothing beyond 1/scale.
    def snapped(dbs, rng):
        p = math.exp(-1.0 / (scale * 1024))
        noise = rng.geometric(1 - p, (len(dbs), 1)) - rng.geometric(1 - p, (len(dbs), 1))
        return dbs.sum(axis=1) + np.ldexp(noise.astype(np.float64), -10)
    first, second = np.zeros((1, 1)), np.ones((1, 1))
    result = run_audit(AuditSpec(mechanism=snapped, priors=[TwoPoint(first, second)],
                                 claim=parse_claim(f"dp:{1 / scale}"), samples=6000, event_runs=6000, seed=1))
    assert result.claim_verdict == "not-refuted"


@pytest.mark.train
def test_under_a_bernoulli_prior_the_structured_pair_gets_the_bit_statistics(small_critic):
    # No --pair: the first structured pair (record 0 at 0 vs 1, the others 0: sums 0 vs 1, Mironov's inputs) gets
    # the float-bit statistics fitted on pilot runs, counted in the result's runs.
    from mechanisms.inputs.priors import ProductBernoulli

    result = run_audit(AuditSpec(mechanism=_textbook_laplace(10.0), priors=[ProductBernoulli(0.5, shape=(3, 1))],
                                 claim=parse_claim("dp:0.1"), samples=4000, event_runs=4000, critic=small_critic,
                                 records=(0,), slices=0, seed=0))
    assert result.samples_by_purpose["event_statistics"] == 2 * 2000
    assert result.claim_verdict == "refuted" and result.float_event_test.epsilon_lower_bound > 2.5
    assert "pilot runs" in result.float_event_test.description
    # The same noise snapped to 2^-32 (the real-valued mechanism, 0.1-DP up to the sampler's far tail): the MI
    # sample's outputs have no bit below the grid, so no pilot run is spent.
    from mechanisms.snapping import snap

    def snapped(dbs, rng):
        return snap(_textbook_laplace(10.0)(dbs, rng))
    result = run_audit(AuditSpec(mechanism=snapped, priors=[ProductBernoulli(0.5, shape=(3, 1))],
                                 claim=parse_claim("dp:0.1"), samples=4000, event_runs=4000, critic=small_critic,
                                 records=(0,), slices=0, seed=0))
    assert "event_statistics" not in result.samples_by_purpose and result.claim_verdict == "not-refuted"
