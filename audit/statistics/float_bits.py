"""Statistics on the bits of floating-point outputs: the binary exponent, the grid an output lies
on, its lowest significand bits and its residue on a neighbour's float grid.

A mechanism computed in floating point releases a double, not a real number: ``x + Lap(1/ε)`` in
float64 takes only the values that rounding ``x`` plus a sampled double lands on, and which
doubles those are depends on ``x``. Mironov (2012, Section 3) shows that the textbook Laplace
mechanism is then not ε-DP for any ε: some outputs are possible from one input and impossible
from its neighbour. The critics and the logistic statistics standardize outputs in float64
(:class:`audit.statistics.classifier.OutputFeatures`), where those low bits are lost; the
statistics here code each output by exact integer features of its bits instead and compare the
two inputs' empirical laws of the codes, add-½ smoothed
(:class:`audit.statistics.classifier.EmpiricalLogRatio`: the Neyman–Pearson statistic of a
discrete output, Neyman and Pearson 1933):

- **grid exponent** γ(y): the largest k with y a multiple of 2ᵏ (the position of the lowest set
  bit), "is y a multiple of 2⁻ᵏ" for every k at once. For x + L with |x| ≥ 1 and |y| < 1, the
  sum's rounding leaves y on the grid of x's neighbourhood (γ ≥ −53 for x = 1), while x = 0 gives
  y = L itself with its full precision (γ < −53 for most |L| < ½): the event {γ(y) < −53} has
  probability 0 from one input and about P(|L| < ½) from the other (Mironov 2012, Section 3.2);
- **binary exponent** e(y): y = m·2ᵉ with ½ ≤ |m| < 1 (``numpy.frexp``);
- **low significand bits**: the lowest :data:`LOW_BITS` bits of the 53-bit significand;
- **neighbour-grid residue**: whether y survives the round trip y ⊖ c ⊕ c in float64, with c the
  shift between the two inputs' outputs read from their medians and rounded to a power of two:
  outputs x ⊕ L of an input at shift c from the other lie on that input's grid ("the neighbours'
  float grid"), the other input's need not.

Each family is offered to the event search as a candidate statistic like the logistic ones
(:data:`FLOAT_STATISTICS`, :mod:`audit.engine`, :mod:`audit.statistics.classifier_critic`): it is fitted on
the MI sample's training draws, the choice among all candidates is made on held-out draws or on
selection runs, and the chosen event is certified on fresh runs, so the families cost no α beyond
what the event test already spends (:mod:`audit.search.event_search`).

They are offered only for outputs with bits finer than the coarse grid 2^:data:`COARSE_GRID_EXPONENT`
(:func:`has_fine_bits`): an output that is a multiple of 2⁻³² (every integer, every value snapped to
that grid as the catalog's releases are, :mod:`mechanisms.snapping`, and every double of
magnitude ≥ 2²⁰, whose spacing is already that coarse) holds no bit below 2⁻³², and the rounding of
x ⊕ L leaves its trace in the last bits of the result, below 2⁻³² wherever |y| < 2²⁰. The gate saves the statistics' fitting
and the structured pair's pilot runs (:mod:`audit.engine`) on mechanisms costing microseconds per run.
Its limits: a mechanism whose outputs are all on coarse grids but whose *choice* of grid depends on the
input (say multiples of 2⁻³² from one input, of 2⁻³⁰ from the other), and rounding traces of outputs
all of magnitude ≥ 2²⁰, are not searched through the bits; their values are, by the other statistics.
"""

from __future__ import annotations

import numpy as np

from mechanisms.snapping import GRID_EXPONENT as SNAPPING_GRID_EXPONENT

from audit.statistics.classifier import MAX_EMPIRICAL_VALUES, EmpiricalLogRatio

#: Bits of the significand in float64 (numpy.finfo(float64).nmant + 1).
SIGNIFICAND_BITS = 53

#: The low significand bits read by :func:`low_significand_bits`.
LOW_BITS = 2

#: Outputs that are all multiples of 2 ** COARSE_GRID_EXPONENT get no bit statistic (:func:`has_fine_bits`):
#: the grid the catalog snaps its noisy releases to.
COARSE_GRID_EXPONENT = SNAPPING_GRID_EXPONENT

#: Codes of an output with no finite bits: 0 and the non-finite values (never an exponent of a double).
ZERO_CODE = 4096
NONFINITE_CODE = 8192


def has_fine_bits(outputs, grid_exponent: int = COARSE_GRID_EXPONENT) -> bool:
    """Whether some finite value of ``outputs`` is not a multiple of 2^``grid_exponent``: the gate of
    the bit statistics (module docstring).

    y is a multiple of 2ᵏ exactly when y·2⁻ᵏ is an integer; ``numpy.ldexp`` scales a double by a power
    of two exactly (a double of magnitude ≥ 2⁵² is an integer, and an overflow to ±inf is one too).
    Non-finite values have no bits to read and are ignored.
    """
    y = np.asarray(outputs, dtype=np.float64)
    y = y[np.isfinite(y)]
    with np.errstate(over="ignore"):
        scaled = np.ldexp(y, -grid_exponent)
    return bool(np.any(scaled != np.round(scaled)))


def _finite_parts(outputs: np.ndarray):
    """(float64 outputs, which are finite and non-zero, their frexp significands and exponents)."""
    y = np.asarray(outputs, dtype=np.float64)
    regular = np.isfinite(y) & (y != 0)
    mantissa, exponent = np.frexp(np.where(regular, y, 1.0))
    return y, regular, mantissa, exponent.astype(np.int64)


def _special(y: np.ndarray, regular: np.ndarray, codes: np.ndarray) -> np.ndarray:
    codes = np.where(regular, codes, np.where(y == 0, ZERO_CODE, NONFINITE_CODE))
    return codes.astype(np.int64)


def significand(outputs) -> np.ndarray:
    """|y| = s·2^(e − 53) with s an integer in [2⁵², 2⁵³) (e from ``numpy.frexp``): s, exactly, as int64.

    frexp gives |y| = m·2ᵉ with ½ ≤ m < 1 exactly, also for subnormals (C99 ``frexp``), and
    m·2⁵³ is an integer below 2⁵³ (a double has 53 significant bits). 0 and non-finite values give 0.
    """
    y, regular, mantissa, _ = _finite_parts(outputs)
    return np.where(regular, np.ldexp(np.abs(mantissa), SIGNIFICAND_BITS), 0.0).astype(np.int64)


def binary_exponent(outputs) -> np.ndarray:
    """e with y = m·2ᵉ, ½ ≤ |m| < 1 (``numpy.frexp``); :data:`ZERO_CODE` for 0, :data:`NONFINITE_CODE` for ±inf, nan."""
    y, regular, _, exponent = _finite_parts(outputs)
    return _special(y, regular, exponent)


def grid_exponent(outputs) -> np.ndarray:
    """The largest integer k with y a multiple of 2ᵏ (the lowest set bit of y), exactly.

    With y = s·2^(e − 53) (:func:`significand`), k = e − 53 + t, t the trailing zero bits of s
    (s & −s is 2ᵗ, and frexp of 2ᵗ is ½·2^(t + 1)). :data:`ZERO_CODE` for 0 (a multiple of every
    2ᵏ), :data:`NONFINITE_CODE` for ±inf and nan.
    """
    y, regular, _, exponent = _finite_parts(outputs)
    s = significand(y)
    lowest = np.where(regular, s & -s, 1)
    trailing = np.frexp(lowest.astype(np.float64))[1].astype(np.int64) - 1
    return _special(y, regular, exponent - SIGNIFICAND_BITS + trailing)


def low_significand_bits(outputs, bits: int = LOW_BITS) -> np.ndarray:
    """The lowest ``bits`` bits of y's 53-bit significand (:func:`significand`), as 0 … 2^bits − 1."""
    y, regular, _, _ = _finite_parts(outputs)
    return _special(y, regular, significand(y) & ((1 << bits) - 1))


def off_shifted_grid(outputs, shift) -> np.ndarray:
    """1 where y differs from (y ⊖ c) ⊕ c in float64 (c = ``shift``, per column), else 0.

    An output y = c ⊕ z (the float sum of c and some double z) with the sum exact is a fixed point
    of the round trip; one holding bits finer than the grid of y ⊖ c is not. Non-finite outputs
    give :data:`NONFINITE_CODE`.
    """
    y = np.asarray(outputs, dtype=np.float64)
    c = np.asarray(shift, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        back = (y - c) + c
    return np.where(np.isfinite(y), (back != y).astype(np.int64), NONFINITE_CODE)


def power_of_two_shift(first_outputs: np.ndarray, second_outputs: np.ndarray) -> np.ndarray:
    """Per column, the difference of the two inputs' output medians rounded to a signed power of two
    (nearest in log scale); 1 where the medians agree (no shift to read)."""
    difference = np.median(second_outputs, axis=0) - np.median(first_outputs, axis=0)
    magnitude = np.where(np.isfinite(difference) & (difference != 0), np.abs(difference), 1.0)
    return np.where(difference < 0, -1.0, 1.0) * np.exp2(np.round(np.log2(magnitude)))


class _BitsLogRatio:
    """The empirical log-ratio (:class:`~audit.statistics.classifier.EmpiricalLogRatio`) of an integer
    code of each output's bits; subclasses say which code (:meth:`_codes`).

    The codes of an output with several columns are its columns' codes, one per column; where they
    make more than :data:`~audit.statistics.classifier.MAX_EMPIRICAL_VALUES` distinct rows on the
    training outputs, the smallest code over the columns (for the grid exponent: the finest grid
    any column lies on) is the one code. Use :meth:`fit`: None where the outputs have no bit below
    the coarse grid (:func:`has_fine_bits`) or the codes still take too many values.
    """

    #: What the code is, for the event's description.
    what = ""

    def __init__(self, ratio: EmpiricalLogRatio, reduce: bool, shift: np.ndarray | None = None):
        self.ratio, self.reduce, self.shift = ratio, reduce, shift

    @classmethod
    def _codes(cls, outputs: np.ndarray, shift) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def _shift(first: np.ndarray, second: np.ndarray):
        return None

    @classmethod
    def fit(cls, first_outputs, second_outputs, max_values: int = MAX_EMPIRICAL_VALUES):
        first = _columns(first_outputs)
        second = _columns(second_outputs)
        if len(first) == 0 or len(second) == 0:
            return None
        if not (has_fine_bits(first) or has_fine_bits(second)):
            return None  # integers, values snapped to a coarse grid: no rounding to read
        shift = cls._shift(first, second)
        for reduce in (False, True):
            codes_first, codes_second = (cls._code_rows(x, shift, reduce) for x in (first, second))
            ratio = EmpiricalLogRatio.fit(codes_first, codes_second, max_values)
            if ratio is not None:
                return cls(ratio, reduce, shift)
        return None

    @classmethod
    def _code_rows(cls, outputs: np.ndarray, shift, reduce: bool) -> np.ndarray:
        codes = cls._codes(outputs, shift).astype(np.float64)
        return codes.min(axis=1, keepdims=True) if reduce else codes

    def __call__(self, outputs) -> np.ndarray:
        return self.ratio(self._code_rows(_columns(outputs), self.shift, self.reduce))


def _columns(outputs) -> np.ndarray:
    outputs = np.asarray(outputs, dtype=np.float64)
    return outputs.reshape(len(outputs), -1)


class GridExponentLogRatio(_BitsLogRatio):
    """:class:`_BitsLogRatio` of :func:`grid_exponent`: "y is a multiple of 2ᵏ" for every k."""

    what = "the grid exponent (largest k with y a multiple of 2^k)"

    @classmethod
    def _codes(cls, outputs, shift):
        return grid_exponent(outputs)


class BinaryExponentLogRatio(_BitsLogRatio):
    """:class:`_BitsLogRatio` of :func:`binary_exponent`."""

    what = "the binary exponent"

    @classmethod
    def _codes(cls, outputs, shift):
        return binary_exponent(outputs)


class LowBitsLogRatio(_BitsLogRatio):
    """:class:`_BitsLogRatio` of :func:`low_significand_bits`."""

    what = f"the lowest {LOW_BITS} significand bits"

    @classmethod
    def _codes(cls, outputs, shift):
        return low_significand_bits(outputs)


class ShiftedGridLogRatio(_BitsLogRatio):
    """:class:`_BitsLogRatio` of :func:`off_shifted_grid` at the shift :func:`power_of_two_shift` reads
    from the training outputs (the residue on the neighbour's float grid)."""

    what = "the residue on the neighbour's float grid (y ⊖ c ⊕ c ≠ y)"

    @staticmethod
    def _shift(first, second):
        return power_of_two_shift(first, second)

    @classmethod
    def _codes(cls, outputs, shift):
        return off_shifted_grid(outputs, shift)


#: The bit statistics offered to the event search beside
#: :data:`audit.statistics.classifier.PAIR_STATISTICS`, in the same form: (class, name, label of its
#: scores, what it is).
FLOAT_STATISTICS = tuple(
    (kind, name, f"empirical log-ratio of {name}(y)", f"the empirical log-ratio of {kind.what}, counted")
    for kind, name in ((GridExponentLogRatio, "grid exponent"), (BinaryExponentLogRatio, "binary exponent"),
                       (LowBitsLogRatio, "low significand bits"), (ShiftedGridLogRatio, "neighbour-grid residue")))
