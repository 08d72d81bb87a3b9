"""Binary-channel quantities of the local-MI paper, **in bits**.

Ngo, Östman and Graell i Amat, Local Mutual-Information Differential Privacy
(arXiv:2405.07596v1, 2024) measures information in bits (log is base 2),
so every function here works in bits and says so in its name. The worst-case
mechanisms behind Theorems 1(a) and 2(a) are binary: an event ``E`` turns the output
into a bit ``B = 1{M(X) ∈ E}``, and the conversions optimise over the two
probabilities ``(p0, p1)`` of ``B = 1``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import entr, rel_entr

from estimators.units import LN2
from estimators.validation import InputError, plain, scalar_or_array

__all__ = ["as_unit_interval", "bac_capacity_bits", "bernoulli_kl_bits", "binary_entropy_bits"]


def as_unit_interval(value, name: str) -> np.ndarray:
    """Return ``value`` as a float array with every entry in the closed interval [0, 1].

    Raises :class:`InputError` naming ``name`` for NaN, inf or entries outside [0, 1].
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"argument '{name}' must be numeric, got {plain(value)}") from None
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
        raise InputError(f"argument '{name}' must be a probability in [0, 1], got {plain(value)}")
    return arr


def binary_entropy_bits(p):
    """Binary entropy H_b(p) = −p log₂ p − (1−p) log₂(1−p) in bits (0 log 0 = 0).

    Defined in the notation paragraph of the local-MI paper, below Eq. (7).
    """
    p = as_unit_interval(p, "p")
    return scalar_or_array((entr(p) + entr(1.0 - p)) / LN2)


def bernoulli_kl_bits(p1, p0):
    """KL(Ber(p1) ‖ Ber(p0)) in bits; ``inf`` where Ber(p1) is not absolutely continuous.

    Local-MI paper, Theorem 2(a): KL = log((1−p1)/(1−p0)) + p1 log(p1(1−p0)/(p0(1−p1))),
    i.e. p1 log(p1/p0) + (1−p1) log((1−p1)/(1−p0)).
    """
    p1 = as_unit_interval(p1, "p1")
    p0 = as_unit_interval(p0, "p0")
    return scalar_or_array((rel_entr(p1, p0) + rel_entr(1.0 - p1, 1.0 - p0)) / LN2)


def _canonical_crossovers(e0: np.ndarray, e1: np.ndarray):
    """Map (ε0, ε1) into 0 ≤ ε0 ≤ min{ε1, 1−ε1, 1/2} with the same capacity.

    The symmetries listed after Eq. (7): C(ε0, ε1) = C(ε1, ε0) and C(ε0, ε1) = C(1−ε1, 1−ε0).
    After the first swap ε0 ≤ ε1; the second map keeps that order and gives ε0 ≤ 1−ε1,
    which together imply ε0 ≤ 1/2 (so the paper's third case never remains).
    """
    e0, e1 = np.minimum(e0, e1), np.maximum(e0, e1)
    flip = e0 > 1.0 - e1
    return np.where(flip, 1.0 - e1, e0), np.where(flip, 1.0 - e0, e1)


def bac_capacity_bits(e0, e1):
    """Capacity C_BAC(ε0, ε1) of the binary asymmetric channel, in bits.

    Local-MI paper, Eq. (7) (after Moser, Chen and Lin 2010): for
    0 ≤ ε0 ≤ min{ε1, 1−ε1, 1/2},

        C = ε0/(1−ε0−ε1) H_b(ε1) − (1−ε1)/(1−ε0−ε1) H_b(ε0)
            + log(1 + 2^{(H_b(ε0) − H_b(ε1))/(1−ε0−ε1)}),

    and the other cases reduce to this one by the symmetries stated after Eq. (7).
    ``ε0 = P[B=1 | A=0]`` and ``ε1 = P[B=0 | A=1]`` are the crossover probabilities; a
    channel with ε0 + ε1 = 1 is useless (capacity 0). Scalars or broadcastable arrays.
    """
    e0 = as_unit_interval(e0, "e0")
    e1 = as_unit_interval(e1, "e1")
    e0, e1 = _canonical_crossovers(*np.broadcast_arrays(e0, e1))
    gap = 1.0 - e0 - e1  # ≥ 0 after canonicalisation
    useful = gap > 1e-15
    safe_gap = np.where(useful, gap, 1.0)
    h0 = (entr(e0) + entr(1.0 - e0)) / LN2
    h1 = (entr(e1) + entr(1.0 - e1)) / LN2
    capacity = (e0 * h1 - (1.0 - e1) * h0) / safe_gap + np.log2(1.0 + np.exp2((h0 - h1) / safe_gap))
    # Only rounding can push the formula below 0 (a capacity is ≥ 0 exactly).
    capacity = np.where(useful, np.maximum(capacity, 0.0), 0.0)
    return scalar_or_array(capacity)
