"""The ε a neighbouring pair attains: the largest log-likelihood ratio between its two output laws.

For two output laws P and Q of one mechanism on a neighbouring pair, the pure-DP ε the pair
attains is ``sup_E |log P(E)/Q(E)|`` over events E, which equals the essential supremum of
``|log p(o)/q(o)|`` over outputs o (a ratio of sums never exceeds the largest ratio of its
terms; Dwork and Roth 2014, Section 2.3). It is a lower bound on the mechanism's true ε and
the most that any audit of this pair can certify.

The helpers here integrate Laplace-noise laws on a fixed grid in log space (a trapezoid rule on
a uniform grid refined at the kinks of the integrand), which the catalog's tests check against
:func:`scipy.integrate.quad` at independent points.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

__all__ = ["GRID_POINTS", "integration_grid", "laplace_log_cdf", "laplace_log_pdf", "laplace_log_sf",
           "log_integral", "log_ratio_extremes", "max_abs_log_ratio"]

GRID_POINTS = 20001  # uniform points per grid; the kinks are added on top
_SPAN = 60.0         # the grid covers ±60 noise scales around the kinks: e^-60 of the mass is left out


def laplace_log_pdf(x, scale: float) -> np.ndarray:
    """log of the Laplace(0, b) density, −log(2b) − |x|/b."""
    return -math.log(2.0 * scale) - np.abs(x) / scale


def laplace_log_cdf(x, scale: float) -> np.ndarray:
    """log P(L ≤ x) for L ~ Laplace(0, b), stable in both tails.

    F(x) = e^(x/b)/2 for x < 0 and 1 − e^(−x/b)/2 for x ≥ 0 (Laplace's first law).
    """
    x = np.asarray(x, dtype=np.float64)
    z = x / scale
    return np.where(z < 0, z - math.log(2.0), np.log1p(-0.5 * np.exp(-np.abs(z))))


def laplace_log_sf(x, scale: float) -> np.ndarray:
    """log P(L > x) for L ~ Laplace(0, b): by symmetry log F(−x)."""
    return laplace_log_cdf(-np.asarray(x, dtype=np.float64), scale)


def integration_grid(kinks, scale: float, points: int = GRID_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Grid and log trapezoid weights covering ±60·``scale`` around the ``kinks``.

    Returns
    -------
    x : ndarray
        Sorted grid points, the kinks included (the integrands are smooth between kinks, so
        the trapezoid rule converges at rate h² on each piece).
    log_weights : ndarray
        log of the trapezoid weights; ``log_integral(log f(x), log_weights)`` ≈ log ∫ f.
    """
    kinks = np.atleast_1d(np.asarray(kinks, dtype=np.float64))
    low, high = kinks.min() - _SPAN * scale, kinks.max() + _SPAN * scale
    x = np.unique(np.concatenate([np.linspace(low, high, points), kinks]))
    gaps = np.diff(x)
    weights = np.zeros_like(x)
    weights[:-1] += gaps / 2.0
    weights[1:] += gaps / 2.0
    return x, np.log(weights)


def log_integral(log_values: np.ndarray, log_weights: np.ndarray, axis: int = -1) -> np.ndarray:
    """log Σ w·f from log f and log w (the trapezoid rule in log space)."""
    return logsumexp(log_values + log_weights, axis=axis)


def log_ratio_extremes(log_p: np.ndarray, log_q: np.ndarray) -> tuple[float, float]:
    """(sup log p/q, sup log q/p) over outputs where either law has mass; ``inf`` where only one has.

    Outputs where both laws are zero (both logs −inf) are left out.
    """
    log_p, log_q = np.asarray(log_p, dtype=np.float64), np.asarray(log_q, dtype=np.float64)
    keep = np.isfinite(log_p) | np.isfinite(log_q)
    log_p, log_q = log_p[keep], log_q[keep]
    with np.errstate(invalid="ignore"):
        forward = np.where(np.isfinite(log_p), log_p - log_q, -np.inf)
        backward = np.where(np.isfinite(log_q), log_q - log_p, -np.inf)
    return float(np.max(forward)), float(np.max(backward))


def max_abs_log_ratio(log_p, log_q) -> float:
    """The pure-DP ε two output laws attain: max over outputs of |log p/q| (see the module docstring)."""
    return max(log_ratio_extremes(log_p, log_q))
