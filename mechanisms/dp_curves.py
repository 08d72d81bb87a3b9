"""Exact privacy profiles δ(ε) of the classic additive-noise mechanisms.

A privacy profile δ(ε) is the hockey-stick divergence sup over neighbours of
E_Q[(dP/dQ − e^ε)_+] between the output laws on neighbouring inputs; a mechanism is
(ε, δ)-DP iff δ(ε) ≤ δ.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, ndtr

from estimators.validation import InputError, check_positive


def _epsilons(epsilon, name="epsilon") -> np.ndarray:
    eps = np.asarray(epsilon, dtype=np.float64)
    if not np.all(np.isfinite(eps)) or np.any(eps < 0):
        raise InputError(f"argument '{name}' must be finite and >= 0, got {epsilon!r}")
    return eps


def gaussian_dp_delta(epsilon, sigma: float, l2_sensitivity: float):
    """δ(ε) of the Gaussian mechanism f(x) + N(0, σ² I) with ℓ₂ sensitivity Δ.

    Balle and Wang (2018), "Improving the Gaussian mechanism for differential privacy",
    Theorem 8 (the analytic Gaussian mechanism):
    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).
    This is also the optimal LDP curve of the Gaussian mechanism used by the local-MI paper
    (with Δ the ℓ₂ distance between the two inputs). Accepts scalar or array ``epsilon`` ≥ 0.
    """
    eps = _epsilons(epsilon)
    sigma = check_positive(sigma, "sigma")
    delta_l2 = check_positive(l2_sensitivity, "l2_sensitivity")
    mu = delta_l2 / sigma
    a = mu / 2.0 - eps / mu
    b = -mu / 2.0 - eps / mu
    out = ndtr(a) - np.exp(eps + log_ndtr(b))
    out = np.maximum(out, 0.0)  # only rounding can make it negative: the difference is ≥ 0 exactly
    return float(out) if np.ndim(out) == 0 else out


def laplace_dp_delta(epsilon, scale: float, l1_sensitivity: float):
    """δ(ε) of the Laplace mechanism f(x) + Lap(b) with ℓ₁ sensitivity Δ (scalar output).

    With ε₀ = Δ/b the mechanism is ε₀-DP and for 0 ≤ ε < ε₀ its exact profile is
    δ(ε) = 1 − exp((ε − ε₀)/2) (hockey-stick divergence between Lap(0, b) and Lap(Δ, b),
    integrated in closed form over the region where the likelihood ratio exceeds e^ε;
    see e.g. Balle, Barthe and Gaboardi 2018, privacy profiles). δ(ε) = 0 for ε ≥ ε₀.
    """
    eps = _epsilons(epsilon)
    scale = check_positive(scale, "scale")
    delta_l1 = check_positive(l1_sensitivity, "l1_sensitivity")
    eps0 = delta_l1 / scale
    out = np.where(eps < eps0, -np.expm1((eps - eps0) / 2.0), 0.0)
    return float(out) if np.ndim(out) == 0 else out
