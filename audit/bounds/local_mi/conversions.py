"""Local MI privacy (LMIP) ⇔ LDP and ⇔ LIP conversions, **in bits**.

Ngo, Östman and Graell i Amat, Local Mutual-Information Differential Privacy
(arXiv:2405.07596v1, 2024): Theorem 1 (CI-LMIP vs. LDP), Theorem 2
(CD-LMIP vs. LIP) and Lemma 1 (KL divergence as an integral of hockey-stick divergences).
μ is in bits throughout, as in the paper; ε is the usual (natural-log) privacy parameter.
Every function accepts scalars or broadcastable arrays of μ and ε, so whole curves
δ_μ(ε) over a grid of ε come out of one call.
"""

from __future__ import annotations

import math
import sys
from typing import Callable

import numpy as np
from scipy import optimize

from estimators.units import LN2
from estimators.validation import InputError, as_positive_array, check_choice, plain, scalar_or_array
from mechanisms.claims.dp_curves import PrivacyCurve

from audit.bounds.local_mi.binary import bac_capacity_bits, bernoulli_kl_bits

__all__ = [
    "ldp_delta_from_lmip_bits",
    "ldp_floor_bits",
    "lip_delta_from_lmip_bits",
    "lip_floor_bits",
    "lmip_from_privacy_curve_bits",
]

LOG2_E = 1.0 / LN2
_BISECTION_STEPS = 64  # halves [0, 1] to below 1e-19: far finer than the 1e-6 asked of δ
_ZOOM_POINTS = 65
_ZOOM_ROUNDS = 7  # each round shrinks the bracket 32-fold: 32^7 ≈ 3e10
# e^ε enters the objectives as a slope; beyond ε = 700 (e^ε ≈ 1e304, near the float limit)
# it is held there. That changes nothing computed: already for e^ε > 1e14 every grid point
# p0 > 0 (the finest is ~1e-11) loses to p0 = 0, so the maximum is the p0 = 0 value (the
# floor of the curve) for both slopes, and it differs from the exact δ(ε) by at most the
# gain from p0 < e^-700.
_LARGEST_EXPONENT = 700.0


# --------------------------------------------------------------------------------------------
# The optimisation over (p0, p1) behind Eq. (6) and Eq. (9)
# --------------------------------------------------------------------------------------------

def _feasible_edge(divergence: Callable, p0: np.ndarray, mu: float, end: float) -> np.ndarray:
    """The p1 farthest from p0 towards ``end`` (0 or 1) with divergence(p0, p1) ≤ μ.

    Both constraints of the paper (C_BAC of Eq. (7) and the Bernoulli KL of Eq. (9)) are
    convex in (p0, p1) and vanish at p1 = p0, so along the segment from p0 to ``end`` they
    are nondecreasing and bisection finds the edge. The returned p1 is always feasible.
    """
    reach_end = divergence(p0, np.full_like(p0, end)) <= mu
    feasible, infeasible = np.zeros_like(p0), np.ones_like(p0)  # fractions of the way to end
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (feasible + infeasible)
        ok = divergence(p0, p0 + mid * (end - p0)) <= mu
        feasible = np.where(ok, mid, feasible)
        infeasible = np.where(ok, infeasible, mid)
    fraction = np.where(reach_end, 1.0, feasible)
    return p0 + fraction * (end - p0)


def _maximize_concave(objective: Callable, n_problems: int) -> np.ndarray:
    """Maximise ``n_problems`` concave functions of p0 ∈ [0, 1] at once.

    ``objective(p0)`` takes an array of shape (n_problems, points) and returns the values.
    The feasible sets of Eqs. (6) and (9) are convex, so each objective (a linear function
    of the edge of a convex set) is concave: the maximiser lies within one grid step of the
    best grid point, and zooming there repeatedly brackets it to ~1e-10 in p0.
    """
    lo, hi = np.zeros(n_problems), np.ones(n_problems)
    best = np.full(n_problems, -np.inf)
    steps = np.linspace(0.0, 1.0, _ZOOM_POINTS)
    rows = np.arange(n_problems)
    for _ in range(_ZOOM_ROUNDS):
        p0 = lo[:, None] + (hi - lo)[:, None] * steps[None, :]
        values = objective(p0)
        k = np.argmax(values, axis=1)
        best = np.maximum(best, values[rows, k])
        lo = p0[rows, np.maximum(k - 1, 0)]
        hi = p0[rows, np.minimum(k + 1, _ZOOM_POINTS - 1)]
    return best


def _solve_per_mu(mu_bits, epsilon, best: Callable):
    """Broadcast μ and ε, and call ``best(mu, e^ε column)`` once per distinct μ (floored at 0).

    The feasible set depends on μ only, so all ε sharing a μ are optimised in one batch.
    """
    mu, eps = np.broadcast_arrays(as_positive_array(mu_bits, "mu", allow_zero=True), as_positive_array(epsilon, "epsilon"))
    out = np.empty(mu.shape)
    for m in np.unique(mu):
        where = mu == m
        out[where] = np.maximum(best(float(m), np.exp(np.minimum(eps[where], _LARGEST_EXPONENT))[:, None]), 0.0)
    return scalar_or_array(out)


def _bac_constraint(p0, p1):
    # Theorem 1(a): the channel A → B has P[B=1|A=0] = p0 and P[B=1|A=1] = p1,
    # i.e. crossover probabilities (p0, 1 − p1).
    return bac_capacity_bits(p0, 1.0 - p1)


def _kl_constraint(p0, p1):
    # Theorem 2(a): KL(Ber(p1) ‖ Ber(p0)), p0 = P[M(X) ∈ E], p1 = P[M(x) ∈ E].
    return bernoulli_kl_bits(p1, p0)


def ldp_delta_from_lmip_bits(mu_bits, epsilon):
    """δ^LDP_μ(ε): the LDP curve guaranteed by μ-CI-LMIP (μ in bits).

    Local-MI paper, Theorem 1(a), Eq. (6):
    δ^LDP_μ(ε) = max over p0, p1 ∈ [0, 1] of max{0, p0 − e^ε p1, p1 − e^ε p0}
    subject to C_BAC(p0, 1 − p1) ≤ μ. The bound is tight (a binary mechanism attains it).
    By the p0 ↔ p1 symmetry of the constraint only p1 − e^ε p0 with p1 ≥ p0 is searched:
    for each p0 the largest feasible p1 is found by bisection, and the concave objective
    in p0 by grid zooming; the maximum is accurate to far better than 1e-6.
    Equals 1 for μ ≥ 1 bit and 0 for μ = 0.

    Parameters
    ----------
    mu_bits : float or array_like
        CI-LMIP parameter μ ≥ 0, in bits.
    epsilon : float or array_like
        ε > 0; broadcast against ``mu_bits``.

    Returns
    -------
    float or ndarray
        δ^LDP_μ(ε), with the broadcast shape of the inputs.
    """
    def best(mu, scale):
        return _maximize_concave(lambda p0: _feasible_edge(_bac_constraint, p0, mu, 1.0) - scale * p0, scale.shape[0])

    return _solve_per_mu(mu_bits, epsilon, best)


def lip_delta_from_lmip_bits(mu_bits, epsilon):
    """δ^LIP_μ(ε): the LIP curve guaranteed by μ-CD-LMIP (μ in bits).

    Local-MI paper, Theorem 2(a), Eq. (9):
    δ^LIP_μ(ε) = max over p0, p1 ∈ [0, 1] of max{0, p0 − e^ε p1, e^{−ε} p1 − p0}
    subject to KL(Ber(p1) ‖ Ber(p0)) ≤ μ. The two nonzero branches are maximised
    separately (p1 below p0 for the first, above for the second), each by bisection for
    the edge of the convex feasible set and grid zooming over p0.

    Parameters
    ----------
    mu_bits : float or array_like
        CD-LMIP parameter μ ≥ 0, in bits.
    epsilon : float or array_like
        ε > 0; broadcast against ``mu_bits``.

    Returns
    -------
    float or ndarray
        δ^LIP_μ(ε), with the broadcast shape of the inputs.
    """
    def best(mu, scale):
        def posterior_high(p0):  # p0 − e^ε p1, with p1 ≤ p0
            return p0 - scale * _feasible_edge(_kl_constraint, p0, mu, 0.0)

        def posterior_low(p0):  # e^{−ε} p1 − p0, with p1 ≥ p0
            return _feasible_edge(_kl_constraint, p0, mu, 1.0) / scale - p0

        count = scale.shape[0]
        return np.maximum(_maximize_concave(posterior_high, count), _maximize_concave(posterior_low, count))

    return _solve_per_mu(mu_bits, epsilon, best)


def ldp_floor_bits(mu_bits):
    """p̄_μ: the value δ^LDP_μ(ε) decreases to as ε → ∞ (μ in bits).

    Local-MI paper, remarks after Theorem 1: for μ < 1 bit, p̄_μ is the unique p ∈ [0, 1]
    with H_b(p)/p = −log(2^μ − 1); δ^LDP_μ(ε) ≥ p̄_μ for every ε. Returns 0 for μ = 0 and
    1 for μ ≥ 1 bit (where δ^LDP_μ ≡ 1, the limit of p̄_μ as μ → 1).

    The root is found in u = −log₂ p, where H_b(p)/p = u + (2^u − 1)(−log₂(1 − 2^−u)), so a
    tiny μ (p̄_μ near 2^−1000) is as accurate as a large one. A p̄_μ below the smallest normal
    float (μ below about 2^−1020 bits) is an :class:`InputError` naming ``mu``.
    """
    mu = as_positive_array(mu_bits, "mu", allow_zero=True)
    out = np.empty(mu.shape)
    for index, m in np.ndenumerate(mu):
        if m == 0.0:
            out[index] = 0.0
        elif m >= 1.0:
            out[index] = 1.0
        else:
            out[index] = _ldp_floor_one(float(m))
    return scalar_or_array(out)


def _entropy_ratio_bits(u: float) -> float:
    """H_b(p)/p in bits at p = 2^−u, u > 0 (decreasing in p, so increasing in u)."""
    if u < 1.0:  # p near 1: (1 − p)/p = 2^u − 1 and 1 − p = −expm1(−u ln 2) keep their digits
        return u + math.expm1(u * LN2) * -math.log2(-math.expm1(-u * LN2))
    p = 2.0 ** -u
    ratio = 1.0 if p < 1e-300 else -math.log1p(-p) / p  # −log(1 − p)/p → 1 as p → 0
    return u + LOG2_E * (1.0 - p) * ratio


def _ldp_floor_one(mu: float) -> float:
    target = -math.log2(math.expm1(mu * LN2))  # > 0 for 0 < μ < 1
    # f(u) = H_b/p − target is < 0 as u → 0 (H_b/p → 0) and > 0 at u = target + 2 (the
    # second term of H_b/p is positive); the root is unique.
    root = optimize.brentq(lambda u: _entropy_ratio_bits(u) - target, 1e-300, target + 2.0,
                           xtol=1e-14, rtol=4 * np.finfo(float).eps)
    if root > -math.log2(sys.float_info.min):
        raise InputError(f"argument 'mu': the floor p̄_mu = 2^-{root:.6g} is below the smallest normal float "
                         f"for mu = {plain(mu)} bits")
    return 2.0 ** -root


def lip_floor_bits(mu_bits):
    """1 − 2^{−μ}: the value δ^LIP_μ(ε) decreases to as ε → ∞ (μ in bits).

    Local-MI paper, discussion of Fig. 3 (Theorem 2(a)): the branch p0 − e^ε p1 with p1 = 0
    is feasible iff KL(Ber(0) ‖ Ber(p0)) = −log(1 − p0) ≤ μ, i.e. p0 ≤ 1 − 2^{−μ}.
    """
    return scalar_or_array(-np.expm1(-as_positive_array(mu_bits, "mu", allow_zero=True) * LN2))


# --------------------------------------------------------------------------------------------
# From a δ(ε) curve back to μ: Theorem 1(b) and Theorem 2(b) via Lemma 1
# --------------------------------------------------------------------------------------------

def _gauss_legendre(function: Callable, lo: float, hi: float, panels: int, nodes, weights) -> float:
    edges = np.linspace(lo, hi, panels + 1)
    half = 0.5 * np.diff(edges)
    points = (edges[:-1] + half)[:, None] + half[:, None] * nodes[None, :]
    return float(np.sum(half[:, None] * weights[None, :] * function(points)))


def _integrate_segment(function: Callable, lo: float, hi: float) -> float:
    """Composite 16-point Gauss–Legendre, doubling the panels until two agree to 1e-10.

    ``function`` is vectorised, so each refinement is one call (privacy curves computed on
    an output grid are far cheaper per point that way than under scalar adaptive quadrature).
    """
    nodes, weights = np.polynomial.legendre.leggauss(16)
    panels = 8
    previous = _gauss_legendre(function, lo, hi, panels, nodes, weights)
    while panels < 4096:
        panels *= 2
        current = _gauss_legendre(function, lo, hi, panels, nodes, weights)
        if abs(current - previous) <= 1e-10 * abs(current) + 1e-15:
            return current
        previous = current
    return current


def _tail_end(function: Callable, start: float) -> float:
    """An ε beyond which the (nonincreasing-δ) integrand is below 1e-18 of its running peak."""
    end = max(start, 1.0)
    peak = float(np.max(function(np.linspace(0.0, end, 65))))
    while end < 1e5:
        tail = float(np.max(function(np.linspace(end, 2.0 * end, 65))))
        if tail <= 1e-18 * max(peak, 1e-300):
            return end
        peak, end = max(peak, tail), 2.0 * end
    return end


def _integrate_from_zero(function: Callable, breakpoints, end: float) -> float:
    if not np.isfinite(end):
        end = _tail_end(function, max(breakpoints, default=0.0))
    edges = [0.0] + sorted(b for b in breakpoints if 0.0 < b < end) + [end]
    return sum(_integrate_segment(function, lo, hi) for lo, hi in zip(edges, edges[1:]))


def lmip_from_privacy_curve_bits(curve: PrivacyCurve) -> float:
    """μ implied by a privacy curve δ(ε), in bits.

    - LDP curve (Theorem 1(b), Eq. (8)): μ^CI = log(e) ∫₀^∞ (1 + e^{−ε}) δ(ε) dε bits of
      CI-LMIP;
    - LIP curve (Theorem 2(b), Eq. (10)): μ^CD = log(e) ∫₀^∞ (e^ε + e^{−ε}) δ(ε) dε bits of
      CD-LMIP.

    Both come from Lemma 1, KL(P‖Q) = log(e) ∫₀^∞ (H_{e^ε}(P‖Q) + e^{−ε} H_{e^ε}(Q‖P)) dε.
    The integral is evaluated by composite Gauss–Legendre quadrature, split at the curve's
    kinks and stopped where δ vanishes (or where the integrand has decayed by 1e-18).
    """
    if not isinstance(curve, PrivacyCurve):
        raise InputError(f"argument 'curve' must be a PrivacyCurve, got {type(curve).__name__}")
    check_choice(curve.notion, "curve.notion", ("ldp", "lip"))

    def weighted(eps):
        d = np.asarray(curve(eps), dtype=np.float64)
        if curve.notion == "ldp":
            return (1.0 + np.exp(-eps)) * d
        # e^ε δ(ε) as exp(ε + log δ): a tiny δ times a huge e^ε stays finite.
        with np.errstate(divide="ignore"):
            return np.exp(eps + np.log(d)) + np.exp(-eps) * d

    return LOG2_E * _integrate_from_zero(weighted, curve.breakpoints, curve.vanishes_after)
