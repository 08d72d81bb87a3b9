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

from audit.statistics.float_bits import FLOAT_STATISTICS

#: The significant bits an output keeps under ``arithmetic = "ideal"`` (:func:`round_significand`).
IDEAL_SIGNIFICANT_BITS = 32

#: The labels of the float-bit statistics' scores (:data:`audit.statistics.float_bits.FLOAT_STATISTICS`).
FLOAT_STATISTIC_LABELS = frozenset(label for _, _, label, _ in FLOAT_STATISTICS)


def round_significand(outputs, bits: int = IDEAL_SIGNIFICANT_BITS) -> np.ndarray:
    """Each value rounded to ``bits`` significant bits (round half to even), exactly; 0 and non-finite values kept.

    With y = m·2ᵉ, ½ ≤ |m| < 1 (``numpy.frexp``, exact), m·2^bits is a double computed exactly, its
    rounding to an integer q is exact, and the result q·2^(e − bits) is exact by ``numpy.ldexp`` (down to
    the subnormal range). A relative grid, not an absolute one, so that outputs of any magnitude keep
    the same precision (IEEE 754-2008, Section 3.4: a double's 53-bit significand).
    """
    y = np.asarray(outputs, dtype=np.float64)
    regular = np.isfinite(y) & (y != 0)
    mantissa, exponent = np.frexp(np.where(regular, y, 1.0))
    rounded = np.ldexp(np.round(np.ldexp(mantissa, bits)), exponent - bits)
    return np.where(regular, rounded, y)


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


def rounded_candidate(candidate):
    """``candidate`` with its statistic applied to the outputs rounded by :func:`round_significand`.

    Its held-out scores (on unrounded outputs) still choose the event: any choice made before the
    certification runs leaves the certificate valid (:mod:`audit.search.event_search`).
    """
    statistic = candidate.statistic

    def on_rounded(a, b, dbs, outputs):
        return statistic(a, b, dbs, round_significand(outputs))
    return replace(candidate, statistic=on_rounded)
