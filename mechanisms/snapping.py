"""The catalog's noisy releases rounded onto a power-of-two grid, so that their low bits say nothing.

A value x plus Laplace or Gaussian noise computed in float64 is not ε-DP for any ε: the rounding
of x ⊕ L leaves bits that depend on x, and some outputs are possible from one input only
(Mironov 2012, Section 3; miaudit's float-bit statistics find them, :mod:`audit.statistics.float_bits`).
Mironov's snapping mechanism (Section 5.2) rounds the noisy value to a multiple of a power of two
Λ (and clamps it): the rounding of the real x + L to that grid, which the float sum reproduces
except within one ulp of a grid boundary. The catalog's mechanisms stand for the textbook real-valued
mechanisms their claims are proved for, so they release round_Λ(x ⊕ L) with Λ = 2^:data:`GRID_EXPONENT`:
far finer than any noise scale the catalog uses (the statistics' view of the value is unchanged to 10
significant digits) and coarse enough that every output below 2²⁰ in magnitude is an exact multiple of
Λ whatever x was. The clamp Mironov's proof also needs (against the sampler's sparse far tail, beyond
|L| ≈ 11.5 scales for the scales used here, probability e^(−11.5) ≈ 1e−5 per run) is left out: it is a
δ far below what an audit of the catalog can see, and outside the textbook mechanisms modelled.
"""

from __future__ import annotations

import numpy as np

#: Noisy releases are rounded to multiples of 2 ** GRID_EXPONENT.
GRID_EXPONENT = -32


def snap(values) -> np.ndarray:
    """``values`` rounded to the nearest multiple of 2^:data:`GRID_EXPONENT` (ties to even), exactly."""
    return np.ldexp(np.round(np.ldexp(np.asarray(values, dtype=np.float64), -GRID_EXPONENT)), GRID_EXPONENT)
