"""The arithmetic an audit judges: the mechanism's real-arithmetic behaviour, or its float64 outputs too.

A mechanism written with real-valued noise (``x + rng.laplace(0, b)``) and run in float64 releases
doubles whose lowest bits depend on the input (Mironov 2012, Section 3): the float-bit statistics
(:mod:`audit.statistics.float_bits`) refute such a mechanism at any claimed ε, whatever its noise
scale. That is a true refutation of the program, and a different finding from a noise scale that
is too small. ``arithmetic`` (:attr:`audit.spec.AuditSpec.arithmetic`, ``--arithmetic``) keeps the
two apart:

- ``"ideal"``: the mechanism's outputs are rounded to :data:`IDEAL_SIGNIFICANT_BITS` significant
  bits before any statistic sees them (:func:`round_significand`, :class:`RoundedRunner`) and no
  float-bit statistic is offered. The float64 rounding error of a computed output is at most a few
  units in its 53rd bit, so the rounded output of the float program equals the rounded output of
  the same program in real arithmetic except when that real output lies within a few 2⁻⁵³ relative
  of a rounding boundary of the 32-bit grid: a chance of about 2⁻²⁰ per run, far below what any
  audit's runs resolve. Rounding is post-processing (Dwork and Roth 2014, Proposition 2.1), so a
  refutation of the rounded outputs refutes the mechanism itself.
- ``"float"`` (the default): both. The event test whose statistics do not read bits (the *ideal*
  test, its statistics composed with the same rounding: :func:`rounded_candidate`) and the
  float-bit test (:func:`is_float_bit_candidate`) are two tests, each certified on its own fresh
  runs at its own share of the event test's α, fixed before sampling
  (:data:`audit.certificates.claim_tests.FLOAT_TEST_SHARE`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from estimators.device import to_device

from audit.statistics.float_bits import DEVICE_CHUNK_ELEMENTS, FLOAT_STATISTICS, on_device
from estimators.resident import keep_made, resident_block

#: The significant bits an output keeps under ``arithmetic = "ideal"`` (:func:`round_significand`).
IDEAL_SIGNIFICANT_BITS = 32

#: The labels of the float-bit statistics' scores (:data:`audit.statistics.float_bits.FLOAT_STATISTICS`).
FLOAT_STATISTIC_LABELS = frozenset(label for _, _, label, _ in FLOAT_STATISTICS)


def round_significand(outputs, bits: int = IDEAL_SIGNIFICANT_BITS, device=None) -> np.ndarray:
    """Each value rounded to ``bits`` significant bits (round half to even), exactly; 0 and non-finite values kept.

    With y = m·2ᵉ, ½ ≤ |m| < 1 (``numpy.frexp``, exact), m·2^bits is a double computed exactly, its
    rounding to an integer q is exact, and the result q·2^(e − bits) is exact by ``numpy.ldexp`` (down to
    the subnormal range). A relative grid, not an absolute one, so that outputs of any magnitude keep
    the same precision (IEEE 754-2008, Section 3.4: a double's 53-bit significand).

    ``device``: a torch device off the CPU computes the same doubles there (:func:`device_round_significand`); None or
    the CPU: NumPy.
    """
    if on_device(device):
        return device_round_significand(outputs, bits, device)
    y = np.asarray(outputs, dtype=np.float64)
    regular = np.isfinite(y) & (y != 0)
    mantissa, exponent = np.frexp(np.where(regular, y, 1.0))
    rounded = np.ldexp(np.round(np.ldexp(mantissa, bits)), exponent - bits)
    return np.where(regular, rounded, y)


def device_round_significand(outputs, bits: int, device) -> np.ndarray:
    """:func:`round_significand` on the torch ``device``, on each double's bit pattern, in chunks of
    :data:`audit.statistics.float_bits.DEVICE_CHUNK_ELEMENTS` values.

    The magnitude's bit pattern M (biased exponent and fraction, IEEE 754-2008, Section 3.4) of a normal double
    holds its 53-bit significand in its low 52 bits and an implicit one; keeping ``bits`` significant bits
    drops its k = 53 − ``bits`` lowest bits, rounded half to even: M − r, plus 2ᵏ where r > 2ᵏ⁻¹, or r = 2ᵏ⁻¹
    and the kept part is odd (r = M mod 2ᵏ). A carry out of the fraction raises the exponent field by one
    with a zero fraction, the next binade's double (or ±inf past the largest), as NumPy's q·2^(e − bits) gives.
    A subnormal f·2⁻¹⁰⁷⁴ with f of bit length L has L significant bits: k = max(L − ``bits``, 0), and a carry
    to 2⁵² is the smallest normal double. 0 and non-finite values are kept. The outputs are read from the device
    copy the store entered keeps (:func:`estimators.resident.resident_block`): the rounding is then made whole on the
    device, brought back in one copy, and kept in the store as the returned array's copy
    (:func:`estimators.resident.keep_made`), which a reader of the rounded outputs through the store (the critic
    scorer, :func:`estimators.resident.device_columns`) reads instead of copying them back (issue 42). Without the store's copy the outputs are copied chunk by chunk and each chunk's
    result is copied from the device into its place in the returned array (no host copy of its own).
    """
    import torch

    y = np.ascontiguousarray(outputs, dtype=np.float64)
    flat = y.reshape(-1)
    block = resident_block(y, device)  # the store's copy, read by the bit statistics too (None: copied by chunks)
    # With the outputs kept, the rounding is kept beside them: made on the device and brought back in one copy, it is
    # the copy the critic scorer reads the rounded outputs from (keep_made), not copied back to the device.
    out = torch.empty(len(flat), dtype=torch.float64, device="cpu" if block is None else block.device)
    for start in range(0, len(flat), DEVICE_CHUNK_ELEMENTS):
        chunk = (to_device(flat[start:start + DEVICE_CHUNK_ELEMENTS], device) if block is None
                 else block.reshape(-1)[start:start + DEVICE_CHUNK_ELEMENTS])
        pattern = chunk.view(torch.int64)
        sign = pattern & torch.iinfo(torch.int64).min
        magnitude = pattern & torch.iinfo(torch.int64).max
        biased = magnitude >> 52
        length = (magnitude.to(torch.float64).view(torch.int64) >> 52) - 1022  # bit length of f (subnormals)
        dropped = torch.where(biased > 0, torch.full_like(magnitude, 53 - bits), torch.clamp(length - bits, min=0))
        unit = torch.ones_like(magnitude) << dropped
        rest = magnitude & (unit - 1)
        half = unit >> 1
        kept = magnitude - rest
        odd = (kept & unit) != 0
        up = (dropped > 0) & ((rest > half) | ((rest == half) & odd))
        rounded = (kept + torch.where(up, unit, torch.zeros_like(unit))) | sign
        regular = torch.isfinite(chunk) & (chunk != 0)
        out[start:start + len(chunk)].copy_(torch.where(regular, rounded.view(torch.float64), chunk))
    if block is None:
        return out.numpy().reshape(y.shape)
    host = torch.empty(len(flat), dtype=torch.float64)
    host.copy_(out)  # one copy from the device, as each chunk's above
    result = host.numpy().reshape(y.shape)
    keep_made(result, out.reshape(y.shape), device)  # kept while ``result`` lives
    return result


class RoundedRunner:
    """A mechanism runner whose outputs are rounded by :func:`round_significand` (``arithmetic = "ideal"``).

    Everything but :meth:`sample` is the wrapped runner's (its counts, notes, cache and backend).
    """

    def __init__(self, runner):
        self._runner = runner

    def sample(self, dbs, rng, **kwargs) -> np.ndarray:
        return round_significand(self._runner.sample(dbs, rng, **kwargs))

    def __getattr__(self, name):
        return getattr(self._runner, name)

    def __setattr__(self, name, value):
        if name == "_runner":
            object.__setattr__(self, name, value)
        else:  # the wrapped runner's settings (a call limit) are set on it
            setattr(self._runner, name, value)

    def __enter__(self):
        self._runner.__enter__()
        return self

    def __exit__(self, *exc):
        return self._runner.__exit__(*exc)


def is_float_bit_candidate(candidate) -> bool:
    """Whether an event-search candidate's statistic reads the bits of float outputs."""
    return candidate.statistic_label in FLOAT_STATISTIC_LABELS


#: The largest batch of outputs (bytes) :class:`RoundedOutputs` keeps rounded: beyond it each call rounds afresh, so
#: the event test's memory is what :func:`mechanisms.execution.memory.audit_memory_parts` counts (its outputs and
#: one copy) up to at most this much a kept batch.
ROUNDING_CACHE_BYTES = 16 * 2**20


class RoundedOutputs:
    """:func:`round_significand` of outputs (on ``device``), computed once for every statistic that reads the same
    outputs: the event search scores one batch of certification runs with the chosen statistic and again with
    the μ certificate's (:func:`audit.search.event_search.event_search`), through the candidates of
    :func:`rounded_candidate` that share this object.

    A batch is known by the identity of its array (the runs are not changed once made); the last ``keep``
    batches of at most :data:`ROUNDING_CACHE_BYTES` are kept, a larger one is rounded at each call. Each call
    returns a copy of the rounded values, as a fresh rounding would, so a statistic that writes into its
    input changes no other statistic's.
    """

    def __init__(self, device=None, keep: int = 2):
        self.device, self.keep = device, keep
        self._recent = []  # (outputs as given, their rounding), oldest first

    def __call__(self, outputs) -> np.ndarray:
        for given, rounded in self._recent:
            if given is outputs:
                return rounded.copy()
        rounded = round_significand(outputs, device=self.device)
        if not isinstance(outputs, np.ndarray) or outputs.nbytes > ROUNDING_CACHE_BYTES:
            return rounded
        self._recent = (self._recent + [(outputs, rounded)])[-self.keep:]
        return rounded.copy()


def rounded_candidate(candidate, device=None, rounding: RoundedOutputs | None = None):
    """``candidate`` with its statistic applied to the outputs rounded by :func:`round_significand` (on
    ``device``: the audit's torch device; by ``rounding``, shared by candidates that score the same runs,
    where given).

    Its held-out scores (on unrounded outputs) still choose the event: any choice made before the
    certification runs leaves the certificate valid (:mod:`audit.search.event_search`).
    """
    statistic = candidate.statistic
    rounding = RoundedOutputs(device) if rounding is None else rounding

    def on_rounded(a, b, dbs, outputs):
        return statistic(a, b, dbs, rounding(outputs))
    return replace(candidate, statistic=on_rounded)
