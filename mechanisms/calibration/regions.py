"""Where the MI mechanisms beat the classical ones: Remark 11's region and Remark 14's
free-privacy condition.

Reference: the Pufferfish/MI paper (Nuradha and Goldfeld, Pufferfish Privacy:
An Information-Theoretic Study (IEEE Transactions on Information Theory, 2023)), Remark 11
(Fig. 3b) and Remark 14 (proof in Section VIII-K). ε in nats.
"""

from __future__ import annotations

import math

import numpy as np

from estimators.validation import InputError, as_float64, check_int, scalar_or_array

from mechanisms.calibration._inputs import safe_log
from mechanisms.calibration.dependence import log_entropy_power_term


def _array(values, name, *, positive=True):
    arr = as_float64(values, f"argument '{name}'")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"argument '{name}' contains NaN or inf")
    if positive and np.any(arr <= 0):
        raise InputError(f"argument '{name}' must be > 0 everywhere")
    return arr


def remark11_threshold(epsilon, dim):
    """ε′* = 2 √(d (e^{2ε/d} − 1) log(1.25/√(2ε))) (Remark 11).

    The Corollary 3 MI-DP Gaussian, σ² = Δ₂²/(2d(e^{2ε/d} − 1)), is also (ε′, √(2ε))-DP
    (Theorem 1); it adds less noise than the classical Gaussian for (ε′, √(2ε))-DP,
    σ² = 2 log(1.25/√(2ε)) Δ₂²/ε′², exactly when ε′ < ε′*. Vectorized over ``epsilon``;
    needs 0 < ε < 1/2 so that δ = √(2ε) lies in (0, 1).
    """
    eps = _array(epsilon, "epsilon")
    d = check_int(dim, "dim", minimum=1)
    if np.any(eps >= 0.5):
        raise InputError("argument 'epsilon' must be < 0.5 so that delta = sqrt(2 eps) is in (0, 1)")
    out = 2.0 * np.sqrt(d * np.expm1(2.0 * eps / d) * np.log(1.25 / np.sqrt(2.0 * eps)))
    return scalar_or_array(out)


def remark11_mi_dp_is_quieter(epsilon_prime, epsilon, dim):
    """True where the MI-DP Gaussian needs less variance than the classical one (Remark 11).

    Broadcasts ``epsilon_prime`` (ε′, the classical mechanism's ε, in (0, 1] where the
    classical Gaussian applies) against ``epsilon`` (the MI-DP budget, in (0, 1/2)).
    The region of Fig. 3b at d = 30 is ``remark11_mi_dp_is_quieter(E′, E, 30)`` on a grid.
    """
    eps_prime = _array(epsilon_prime, "epsilon_prime")
    if np.any(eps_prime > 1.0):
        raise InputError("argument 'epsilon_prime' must be <= 1 (the classical Gaussian mechanism's range)")
    out = eps_prime < remark11_threshold(epsilon, dim)
    return bool(out) if np.ndim(out) == 0 else out


def remark14_free_privacy(epsilon, total_cond_var, cond_entropy_lower, dim) -> bool:
    """Whether A ≤ d e^{2ε/d} B, so that Theorem 6 needs no noise (Remark 14).

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    total_cond_var : float
        A = Σ_j E[Var(f_j | w)] (its supremum over the framework).
    cond_entropy_lower : float
        A lower bound on h(f(X) | g(X), w(X)) in nats, giving B = exp(2h/d − 1)/(2π).
    dim : int
        d.
    """
    eps = float(_array(epsilon, "epsilon"))
    a_term = float(_array(total_cond_var, "total_cond_var", positive=False))
    if a_term < 0:
        raise InputError("argument 'total_cond_var' must be >= 0")
    h_low = float(_array(cond_entropy_lower, "cond_entropy_lower", positive=False))
    d = check_int(dim, "dim", minimum=1)
    # A ≤ d e^{2ε/d} B compared in log space: neither e^{2ε/d} nor B can overflow.
    return bool(safe_log(a_term) <= math.log(d) + 2.0 * eps / d + log_entropy_power_term(h_low, d))


def remark14_correlation_threshold(epsilon):
    """ρ* = √((e^{2ε} − 1) e^{−2ε}) = √(1 − e^{−2ε}): for d = 1 and jointly Gaussian
    f, g, w, free ε-MI PP holds when |ρ(f, g | w)| ≤ ρ* (Remark 14). Vectorized."""
    eps = _array(epsilon, "epsilon")
    return scalar_or_array(np.sqrt(-np.expm1(-2.0 * eps)))
