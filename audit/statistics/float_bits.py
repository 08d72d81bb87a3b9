"""Statistics on the bits of floating-point outputs: the binary exponent, the grid an output lies
on, its lowest significand bits and its residue on a neighbour's float grid, each coding the sign of a zero.

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
  float grid"), the other input's need not;
- and in every family, the **sign of a zero**: −0.0 has a code of its own (:data:`NEGATIVE_ZERO_CODE`), apart
  from +0.0's (**Zeros** below).

Each family is offered to the event search as a candidate statistic like the logistic ones
(:data:`FLOAT_STATISTICS`, :mod:`audit.search.event_candidates`, :mod:`audit.statistics.classifier_critic`): it is fitted on
the MI sample's training draws, the choice among all candidates is made on held-out draws or on
selection runs, and the chosen event is certified on fresh runs, so the families cost no α beyond
what the event test already spends (:mod:`audit.search.event_search`).

**On a torch device.** Where the audit's device is not the CPU (a CUDA device: the audit's critics
train there), :func:`device_code_rows` computes the same codes on it from the IEEE 754 fields of each
double (its bit pattern read as an int64), in row chunks of at most :data:`DEVICE_CHUNK_ELEMENTS`
values, and brings back only the code rows: on a wide release (the DP-SGD grid's d = 8,257
parameters) the codes were the audit's largest CPU cost while the GPU waited. Every code is an exact
integer function of the bits, so both routes give the same codes, and the audit the same statistics,
events and bounds; on the CPU the NumPy route is kept.

They are offered only for outputs with bits finer than the coarse grid 2^:data:`COARSE_GRID_EXPONENT`
(:func:`has_fine_bits`): an output that is a multiple of 2⁻³² (every integer, every value snapped to
that grid as the catalog's releases are, :mod:`mechanisms.snapping`, and every double of
magnitude ≥ 2²⁰, whose spacing is already that coarse) holds no bit below 2⁻³², and the rounding of
x ⊕ L leaves its trace in the last bits of the result, below 2⁻³² wherever |y| < 2²⁰. The gate saves the statistics' fitting
and the structured pair's pilot runs (:mod:`audit.search.event_candidates`) on mechanisms costing microseconds per run.
Its limits: a mechanism whose outputs are all on coarse grids but whose *choice* of grid depends on the
input (say multiples of 2⁻³² from one input, of 2⁻³⁰ from the other), and rounding traces of outputs
all of magnitude ≥ 2²⁰, are not searched through the bits; their values are, by the other statistics.

**Zeros.** +0.0 and −0.0 compare equal (IEEE 754-2008, Section 5.11), so every statistic of values (the
critics, the counting statistic) sees one zero, as real arithmetic has; the sign of a zero is a bit a float
output releases (``-0.0 if x else 0.0`` releases x), read here alone: each code gives −0.0 a code of its own
(:data:`NEGATIVE_ZERO_CODE`, +0.0 keeping :data:`ZERO_CODE`, or the residue's 0 of an output that survives the
round trip), and a −0.0 counts as a bit below the coarse grid in the gate (:func:`has_fine_bits`), so the
float-bit test is offered wherever an output is a negative zero. Outputs without a negative zero get the codes
and the gate they had before the sign was read.
"""

from __future__ import annotations

import numpy as np

from estimators.device import to_device
from mechanisms.snapping import GRID_EXPONENT as SNAPPING_GRID_EXPONENT

from audit.statistics.classifier import MAX_EMPIRICAL_VALUES, EmpiricalLogRatio
from estimators.resident import keep_on_device, resident_block

#: Bits of the significand in float64 (numpy.finfo(float64).nmant + 1).
SIGNIFICAND_BITS = 53

#: The low significand bits read by :func:`low_significand_bits`.
LOW_BITS = 2

#: Outputs that are all multiples of 2 ** COARSE_GRID_EXPONENT get no bit statistic (:func:`has_fine_bits`):
#: the grid the catalog snaps its noisy releases to.
COARSE_GRID_EXPONENT = SNAPPING_GRID_EXPONENT

#: Codes of an output with no finite bits: +0.0, −0.0 and the non-finite values (never an exponent of a double, a
#: low-bit or residue code). The two zeros compare equal (IEEE 754-2008, Section 5.11) but are two bit patterns, and a
#: mechanism can release its input in the sign of a zero; they get codes of their own (module docstring).
ZERO_CODE = 4096
NEGATIVE_ZERO_CODE = 4097
NONFINITE_CODE = 8192

#: Values per chunk of rows in :func:`device_code_rows` (2^24 doubles: 128 MiB, a few times that with the
#: integer fields), so that the codes of a wide release fit any device's memory.
DEVICE_CHUNK_ELEMENTS = 2**24


def has_fine_bits(outputs, grid_exponent: int = COARSE_GRID_EXPONENT) -> bool:
    """Whether some finite value of ``outputs`` is not a multiple of 2^``grid_exponent``, or some value is a
    negative zero: the gate of the bit statistics (module docstring).

    y is a multiple of 2ᵏ exactly when y·2⁻ᵏ is an integer; ``numpy.ldexp`` scales a double by a power
    of two exactly (a double of magnitude ≥ 2⁵² is an integer, and an overflow to ±inf is one too).
    Non-finite values have no bits to read and are ignored. −0.0 is a multiple of every 2ᵏ, yet its sign
    bit is a bit released beside its value (the module docstring's zeros), so it opens the gate.
    """
    y = np.asarray(outputs, dtype=np.float64)
    if np.any(np.signbit(y) & (y == 0)):
        return True
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


def _zero_codes(y: np.ndarray) -> np.ndarray:
    """:data:`NEGATIVE_ZERO_CODE` where y is −0.0 (its sign bit set), else :data:`ZERO_CODE`."""
    return np.where(np.signbit(y), NEGATIVE_ZERO_CODE, ZERO_CODE)


def _special(y: np.ndarray, regular: np.ndarray, codes: np.ndarray) -> np.ndarray:
    codes = np.where(regular, codes, np.where(y == 0, _zero_codes(y), NONFINITE_CODE))
    return codes.astype(np.int64)


def significand(outputs) -> np.ndarray:
    """|y| = s·2^(e − 53) with s an integer in [2⁵², 2⁵³) (e from ``numpy.frexp``): s, exactly, as int64.

    frexp gives |y| = m·2ᵉ with ½ ≤ m < 1 exactly, also for subnormals (C99 ``frexp``), and
    m·2⁵³ is an integer below 2⁵³ (a double has 53 significant bits). 0 and non-finite values give 0.
    """
    y, regular, mantissa, _ = _finite_parts(outputs)
    return np.where(regular, np.ldexp(np.abs(mantissa), SIGNIFICAND_BITS), 0.0).astype(np.int64)


def binary_exponent(outputs) -> np.ndarray:
    """e with y = m·2ᵉ, ½ ≤ |m| < 1 (``numpy.frexp``); :data:`ZERO_CODE` for +0.0, :data:`NEGATIVE_ZERO_CODE` for
    −0.0, :data:`NONFINITE_CODE` for ±inf, nan."""
    y, regular, _, exponent = _finite_parts(outputs)
    return _special(y, regular, exponent)


def grid_exponent(outputs) -> np.ndarray:
    """The largest integer k with y a multiple of 2ᵏ (the lowest set bit of y), exactly.

    With y = s·2^(e − 53) (:func:`significand`), k = e − 53 + t, t the trailing zero bits of s
    (s & −s is 2ᵗ, and frexp of 2ᵗ is ½·2^(t + 1)). :data:`ZERO_CODE` for +0.0 and
    :data:`NEGATIVE_ZERO_CODE` for −0.0 (multiples of every 2ᵏ), :data:`NONFINITE_CODE` for ±inf and nan.
    """
    y, regular, _, exponent = _finite_parts(outputs)
    s = significand(y)
    lowest = np.where(regular, s & -s, 1)
    trailing = np.frexp(lowest.astype(np.float64))[1].astype(np.int64) - 1
    return _special(y, regular, exponent - SIGNIFICAND_BITS + trailing)


def low_significand_bits(outputs, bits: int = LOW_BITS) -> np.ndarray:
    """The lowest ``bits`` bits of y's 53-bit significand (:func:`significand`), as 0 … 2^bits − 1; the zeros and
    non-finite values get :func:`binary_exponent`'s codes."""
    y, regular, _, _ = _finite_parts(outputs)
    return _special(y, regular, significand(y) & ((1 << bits) - 1))


def off_shifted_grid(outputs, shift) -> np.ndarray:
    """1 where y differs from (y ⊖ c) ⊕ c in float64 (c = ``shift``, per column), else 0.

    An output y = c ⊕ z (the float sum of c and some double z) with the sum exact is a fixed point
    of the round trip; one holding bits finer than the grid of y ⊖ c is not. Non-finite outputs
    give :data:`NONFINITE_CODE`, and −0.0 gives :data:`NEGATIVE_ZERO_CODE`: its round trip (−c) ⊕ c is +0.0
    (IEEE 754-2008, Section 6.3), equal in value, so the comparison alone would code it as +0.0.
    """
    y = np.asarray(outputs, dtype=np.float64)
    c = np.asarray(shift, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        back = (y - c) + c
    codes = np.where(np.isfinite(y), (back != y).astype(np.int64), NONFINITE_CODE)
    return np.where((y == 0) & np.signbit(y), NEGATIVE_ZERO_CODE, codes)


def power_of_two_shift(first_outputs: np.ndarray, second_outputs: np.ndarray) -> np.ndarray:
    """Per column, the difference of the two inputs' output medians rounded to a signed power of two
    (nearest in log scale); 1 where the medians agree (no shift to read)."""
    difference = np.median(second_outputs, axis=0) - np.median(first_outputs, axis=0)
    magnitude = np.where(np.isfinite(difference) & (difference != 0), np.abs(difference), 1.0)
    return np.where(difference < 0, -1.0, 1.0) * np.exp2(np.round(np.log2(magnitude)))


def on_device(device) -> bool:
    """Whether the codes go to :func:`device_code_rows`: ``device`` (a torch device or its name) is given
    and is not the CPU, whose NumPy route is kept (module docstring)."""
    return device is not None and str(device).split(":")[0] != "cpu"


def _biased_exponent(y):
    """The 11-bit biased exponent field of each double of the float64 tensor ``y``, as int64."""
    import torch

    return (y.contiguous().view(torch.int64) >> 52) & 0x7FF


def _device_codes(code: str, y, shift):
    """The int64 codes ``code`` of the float64 tensor ``y`` (rows × columns) on its device, from its IEEE 754
    fields (IEEE 754-2008, Section 3.4: sign, 11-bit biased exponent b, 52-bit fraction f).

    A normal double (0 < b < 2047) is (2⁵² + f)·2^(b − 1075): significand s = 2⁵² + f, frexp exponent
    e = b − 1022. A subnormal (b = 0, f > 0) is f·2⁻¹⁰⁷⁴; with L the bit length of f it is
    (f·2^(53 − L))·2^(L − 1074 − 53): s = f·2^(53 − L), e = L − 1074. Bit lengths are read from the biased
    exponent of the integer as a double (exact below 2⁵³: a positive integer n has biased exponent
    1023 + ⌊log₂ n⌋), as are the trailing zero bits t of s from s & −s = 2ᵗ; no library frexp is
    needed. From s and e the codes are :func:`grid_exponent`'s,
    :func:`binary_exponent`'s and :func:`low_significand_bits`'s; the neighbour-grid residue is
    :func:`off_shifted_grid`'s round trip, two correctly rounded float64 operations on any device. The sign
    bit (the int64 view is negative) tells −0.0 from +0.0 (:data:`NEGATIVE_ZERO_CODE`).
    """
    import torch

    if code == "neighbour-grid residue":
        c = shift if torch.is_tensor(shift) else to_device(np.asarray(shift, dtype=np.float64), y.device)
        back = (y - c) + c
        codes = torch.where(torch.isfinite(y), (back != y).to(torch.int64), NONFINITE_CODE)
        return torch.where(_negative_zero(y), NEGATIVE_ZERO_CODE, codes)
    biased = _biased_exponent(y)
    fraction = y.view(torch.int64) & ((1 << 52) - 1)
    regular = (biased != 0x7FF) & ((biased != 0) | (fraction != 0))
    normal = biased != 0
    length = _biased_exponent(fraction.to(torch.float64)) - 1022  # bit length of f (read for subnormals)
    exponent = torch.where(normal, biased - 1022, length - 1074)
    s = torch.where(normal, fraction | (1 << 52), fraction << torch.clamp(SIGNIFICAND_BITS - length, 0, 63))
    if code == "binary exponent":
        codes = exponent
    elif code == "low significand bits":
        codes = s & ((1 << LOW_BITS) - 1)
    elif code == "grid exponent":
        lowest = torch.where(regular, s & -s, torch.ones_like(s))  # 2^t, t the trailing zero bits of s
        trailing = _biased_exponent(lowest.to(torch.float64)) - 1023
        codes = exponent - SIGNIFICAND_BITS + trailing
    else:
        raise ValueError(f"argument 'code' must name a float-bit code, got {code!r}")
    special = torch.where(y == 0, torch.where(_negative_zero(y), NEGATIVE_ZERO_CODE, ZERO_CODE), NONFINITE_CODE)
    return torch.where(regular, codes, special)


def _negative_zero(y):
    """Where the float64 tensor ``y`` is −0.0: its bit pattern as an int64 is 2⁶³'s, the sign bit alone."""
    import torch

    return y.contiguous().view(torch.int64) == torch.iinfo(torch.int64).min


def _device_rows(code: str, outputs: np.ndarray, shift, device, per_chunk) -> np.ndarray:
    """``per_chunk`` of :func:`_device_codes` of each chunk of rows of at most :data:`DEVICE_CHUNK_ELEMENTS` values,
    computed on the torch ``device``, brought back and stacked. The outputs are read from the device copy the store
    entered keeps (:func:`estimators.resident.resident_block`: one copy for every family and fold), else
    copied chunk by chunk."""
    import torch

    outputs = np.ascontiguousarray(outputs, dtype=np.float64)
    if outputs.ndim != 2:
        raise ValueError(f"argument 'outputs' must be rows × columns, got shape {outputs.shape}")
    rows = max(1, DEVICE_CHUNK_ELEMENTS // max(1, outputs.shape[1]))
    block = resident_block(outputs, device)  # kept on the device for every family and fold (None: copied by chunks)
    if code == "neighbour-grid residue":  # one copy of the shift for every chunk
        shift = to_device(np.asarray(shift, dtype=np.float64), device)
    parts = [per_chunk(_device_codes(code, to_device(outputs[start:start + rows], device) if block is None
                                     else block[start:start + rows], shift)).cpu().numpy()
             for start in range(0, len(outputs), rows)]
    return None if not parts else parts[0] if len(parts) == 1 else np.concatenate(parts)


def device_code_rows(code: str, outputs: np.ndarray, shift, reduce: bool, device) -> np.ndarray:
    """The code rows :meth:`_BitsLogRatio._code_rows` gives (float64; each row's smallest code where
    ``reduce``), computed on the torch ``device`` by :func:`_device_codes` in chunks of rows of at most
    :data:`DEVICE_CHUNK_ELEMENTS` values; only the code rows come back."""
    import torch

    if reduce:
        rows = _device_rows(code, outputs, shift, device, lambda c: c.min(dim=1, keepdim=True).values.to(torch.float64))
    else:
        rows = _device_rows(code, outputs, shift, device, lambda c: c.to(torch.float64))
    return np.zeros((0, 1 if reduce else np.shape(outputs)[1])) if rows is None else rows


#: Row hashes of :func:`surely_more_rows_than` stay exact below 2^63: codes below 2^14 in magnitude, weights
#: below 2^30, at most this many columns.
HASHED_COLUMNS = 2**18


def surely_more_rows_than(code: str, first: np.ndarray, second: np.ndarray, shift, device, limit: int) -> bool:
    """Whether the code rows of ``first`` and ``second`` together are certainly more than ``limit`` distinct
    rows, read on the torch ``device`` from one integer per row: Σⱼ wⱼ·codeⱼ with fixed random weights wⱼ.

    Equal rows have equal sums, so more than ``limit`` distinct sums proves more than ``limit`` distinct
    rows; False where that is not proven (two rows may share a sum), and then the exact count on the code
    rows decides (:meth:`audit.statistics.classifier.EmpiricalLogRatio.fit`): the answer never changes a fit,
    it saves bringing every code row of a wide output back to count them. The sums are exact in int64
    (:data:`HASHED_COLUMNS`).
    """
    columns = np.shape(first)[1]
    if columns > HASHED_COLUMNS:
        return False
    import torch

    weights = to_device(np.random.default_rng(0).integers(1, 2**30, columns), device)
    sums = [_device_rows(code, x, shift, device, lambda c: (c * weights).sum(dim=1)) for x in (first, second)]
    return len(np.unique(np.concatenate([s for s in sums if s is not None]))) > limit


#: Fewest draws of the MI sample with a record at its low end, and at its high end, for :func:`leaking_record` to
#: read that record's bits.
MIN_END_DRAWS = 20

#: Outputs wider than this are coded by each row's smallest grid exponent in :func:`leaking_record` (as
#: :class:`_BitsLogRatio` reduces rows whose codes take too many values).
LEAK_COLUMNS = 64

#: Values coded at a time by :func:`leaking_record` (2^22 doubles, 32 MiB, some times that with the codes' arrays).
LEAK_CHUNK_ELEMENTS = 2**22


def leaking_record(databases, outputs, records, chosen):
    """The record of ``records`` whose float bits the already drawn ``outputs`` (rows of ``databases``, an MI
    sample) tell apart plainly between the record at its low end and at its high end, where ``chosen``'s do not;
    else ``chosen``. A choice made on draws that certify nothing, so it costs no α.

    The event tests' record is chosen by its critic (:func:`audit.certificates.secret_bounds.event_critic`), which
    reads values: a record that only the bits release (the sign of a zero, ``-0.0 if db[0, 0] else 0.0``) is no
    likelier to be chosen than any other. Each column is
    coded by :func:`grid_exponent`, the columns of one code on every row left out (where more than
    :data:`LEAK_COLUMNS` are left, each row's smallest code is the one column). For record r and column j,
    s_j(r) is the total-variation distance between the codes of the rows with r at the low end of every column
    and those with r at the high end (the ends :func:`audit.search.prior_search.structured_pairs` pairs), on at
    least :data:`MIN_END_DRAWS` rows each (m₁, m₂). The empirical law of K values from m draws is off by
    E‖p̂ − p‖₁ ≤ √(K/m) (Cauchy–Schwarz over the K values), so two laws that agree give
    s_j ≤ ½(√(K/m₁) + √(K/m₂)) on average; r's excess is the largest s_j(r) − (√(K/m₁) + √(K/m₂)) over the
    columns, twice that, which codes that do not depend on r rarely exceed. The record of the largest positive
    excess replaces ``chosen`` where ``chosen``'s excess is not positive.
    """
    dbs = np.asarray(databases, dtype=np.float64)
    y = _columns(outputs)
    if dbs.ndim != 3 or len(dbs) != len(y) or not len(y):
        return chosen
    step = max(1, LEAK_CHUNK_ELEMENTS // len(y))  # columns coded at a time: a wide sample's codes in bounded memory
    codes = [grid_exponent(y[:, start:start + step]) for start in range(0, y.shape[1], step)]
    codes = np.concatenate([c[:, np.any(c != c[:1], axis=0)] for c in codes], axis=1)  # one code: tells nothing
    codes = codes.min(axis=1, keepdims=True) if codes.shape[1] > LEAK_COLUMNS else codes
    columns = [np.unique(column, return_inverse=True)[1].ravel() for column in codes.T]
    values = dbs.reshape(-1, dbs.shape[-1])
    low, high = np.fmin.reduce(values, axis=0), np.fmax.reduce(values, axis=0)
    if not columns or np.array_equal(low, high, equal_nan=True):
        return chosen
    excess = {}
    for record in records:
        ends = [np.all(dbs[:, record, :] == level, axis=1) for level in (low, high)]
        sizes = [int(end.sum()) for end in ends]
        if min(sizes) < MIN_END_DRAWS:
            continue
        excess[record] = -np.inf
        for column in columns:
            counts = [np.bincount(column[end], minlength=int(column.max()) + 1) / size for end, size in zip(ends, sizes)]
            distinct = int(np.count_nonzero(counts[0] + counts[1]))
            separation = 0.5 * float(np.abs(counts[0] - counts[1]).sum())
            excess[record] = max(excess[record], separation - sum(np.sqrt(distinct / size) for size in sizes))
    best = max(excess, key=excess.get, default=chosen)
    return best if excess.get(best, 0.0) > 0 and not excess.get(chosen, 0.0) > 0 else chosen


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

    #: Which code :func:`device_code_rows` computes for this family.
    code = ""

    def __init__(self, ratio: EmpiricalLogRatio, reduce: bool, shift: np.ndarray | None = None, device=None):
        self.ratio, self.reduce, self.shift, self.device = ratio, reduce, shift, device

    @classmethod
    def _codes(cls, outputs: np.ndarray, shift) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def _shift(first: np.ndarray, second: np.ndarray):
        return None

    @classmethod
    def fit(cls, first_outputs, second_outputs, max_values: int = MAX_EMPIRICAL_VALUES, device=None):
        """The statistic fitted on the two inputs' outputs, or None (class docstring). ``device``: where its
        codes are computed, now and when it is called (:func:`device_code_rows` where it is not the CPU;
        None or the CPU: NumPy)."""
        first = _columns(first_outputs)
        second = _columns(second_outputs)
        if len(first) == 0 or len(second) == 0:
            return None
        if not (has_fine_bits(first) or has_fine_bits(second)):
            return None  # integers, values snapped to a coarse grid: no rounding to read
        shift = cls._shift(first, second)
        with keep_on_device():  # the hash check and the code rows read one device copy of each input's outputs
            return cls._fit_codes(first, second, shift, max_values, device)

    @classmethod
    def _fit_codes(cls, first, second, shift, max_values, device):
        for reduce in (False, True):
            if not reduce and on_device(device) and surely_more_rows_than(cls.code, first, second, shift, device,
                                                                          max_values):
                continue  # as the exact count would decide, without bringing the wide code rows back
            codes_first, codes_second = (cls._code_rows(x, shift, reduce, device) for x in (first, second))
            ratio = EmpiricalLogRatio.fit(codes_first, codes_second, max_values)
            if ratio is not None:
                return cls(ratio, reduce, shift, device)
        return None

    @classmethod
    def _code_rows(cls, outputs: np.ndarray, shift, reduce: bool, device=None) -> np.ndarray:
        if on_device(device):
            return device_code_rows(cls.code, outputs, shift, reduce, device)
        codes = cls._codes(outputs, shift).astype(np.float64)
        return codes.min(axis=1, keepdims=True) if reduce else codes

    def __call__(self, outputs) -> np.ndarray:
        return self.ratio(self._code_rows(_columns(outputs), self.shift, self.reduce, self.device))

    def column_separation(self, first_outputs, second_outputs, columns: int) -> np.ndarray:
        """Per column of the first ``columns``, the total-variation distance between the two inputs' codes (on the
        CPU): which parts of the output carry the bits this statistic tells the inputs apart by (0 where a column's
        codes are distributed alike on both)."""
        first, second = (_columns(x)[:, :columns] for x in (first_outputs, second_outputs))
        shift = None if self.shift is None else np.asarray(self.shift)[:columns]
        codes_first, codes_second = self._codes(first, shift), self._codes(second, shift)
        separation = np.zeros(first.shape[1])
        for j in range(first.shape[1]):
            values, where = np.unique(np.concatenate([codes_first[:, j], codes_second[:, j]]), return_inverse=True)
            share_first = np.bincount(where[:len(first)], minlength=len(values)) / len(first)
            share_second = np.bincount(where[len(first):], minlength=len(values)) / len(second)
            separation[j] = 0.5 * np.abs(share_first - share_second).sum()
        return separation


def _columns(outputs) -> np.ndarray:
    outputs = np.asarray(outputs, dtype=np.float64)
    return outputs.reshape(len(outputs), -1)


class GridExponentLogRatio(_BitsLogRatio):
    """:class:`_BitsLogRatio` of :func:`grid_exponent`: "y is a multiple of 2ᵏ" for every k."""

    what = "the grid exponent (largest k with y a multiple of 2^k)"
    code = "grid exponent"

    @classmethod
    def _codes(cls, outputs, shift):
        return grid_exponent(outputs)


class BinaryExponentLogRatio(_BitsLogRatio):
    """:class:`_BitsLogRatio` of :func:`binary_exponent`."""

    what = "the binary exponent"
    code = "binary exponent"

    @classmethod
    def _codes(cls, outputs, shift):
        return binary_exponent(outputs)


class LowBitsLogRatio(_BitsLogRatio):
    """:class:`_BitsLogRatio` of :func:`low_significand_bits`."""

    what = f"the lowest {LOW_BITS} significand bits"
    code = "low significand bits"

    @classmethod
    def _codes(cls, outputs, shift):
        return low_significand_bits(outputs)


class ShiftedGridLogRatio(_BitsLogRatio):
    """:class:`_BitsLogRatio` of :func:`off_shifted_grid` at the shift :func:`power_of_two_shift` reads
    from the training outputs (the residue on the neighbour's float grid)."""

    # c is said where the symbol is shown: the event's line is read by users who never saw this module.
    what = ("the residue on the neighbour's float grid (y ⊖ c ⊕ c ≠ y in float64, c the difference of the two "
            "databases' median outputs rounded to a power of two)")
    code = "neighbour-grid residue"

    @staticmethod
    def _shift(first, second):
        return power_of_two_shift(first, second)

    @classmethod
    def _codes(cls, outputs, shift):
        return off_shifted_grid(outputs, shift)


#: What every bit statistic's code tells apart beside its family's code: the sign of a zero (module docstring).
ZERO_SIGN_WORDS = "−0.0 coded apart from +0.0"

#: The bit statistics offered to the event search beside
#: :data:`audit.statistics.classifier.PAIR_STATISTICS`, in the same form: (class, name, label of its
#: scores, what it is, the sign of a zero included).
FLOAT_STATISTICS = tuple(
    (kind, name, f"empirical log-ratio of {name}(y)",
     f"the empirical log-ratio of {kind.what}, {ZERO_SIGN_WORDS}, counted")
    for kind, name in ((GridExponentLogRatio, "grid exponent"), (BinaryExponentLogRatio, "binary exponent"),
                       (LowBitsLogRatio, "low significand bits"), (ShiftedGridLogRatio, "neighbour-grid residue")))

#: The classes of :data:`FLOAT_STATISTICS` (their ``fit`` takes the audit's ``device``).
FLOAT_STATISTIC_KINDS = frozenset(kind for kind, *_ in FLOAT_STATISTICS)
