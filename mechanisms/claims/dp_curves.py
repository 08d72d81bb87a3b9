"""Exact privacy profiles δ(ε) of the classic additive-noise mechanisms.

A privacy profile δ(ε) is the hockey-stick divergence sup over neighbours of
E_Q[(dP/dQ − e^ε)_+] between the output laws on neighbouring inputs; a mechanism is
(ε, δ)-DP iff δ(ε) ≤ δ. :class:`PrivacyCurve` carries such a profile (an LDP curve, or a
LIP curve of the local-MI paper) with its kinks, for the conversions of
:mod:`audit.bounds.local_mi.conversions`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.special import log_ndtr, ndtr

from estimators.validation import as_positive_array, check_positive, scalar_or_array

__all__ = ["PrivacyCurve", "gaussian_dp_delta", "gaussian_ldp_curve", "laplace_dp_delta", "laplace_ldp_curve",
           "pure_ldp_curve"]


def gaussian_dp_delta(epsilon, sigma: float, l2_sensitivity: float):
    """δ(ε) of the Gaussian mechanism f(x) + N(0, σ² I) with ℓ₂ sensitivity Δ.

    Balle and Wang (2018), "Improving the Gaussian mechanism for differential privacy",
    Theorem 8 (the analytic Gaussian mechanism):
    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).
    This is also the optimal LDP curve of the Gaussian mechanism used by the local-MI paper
    (with Δ the ℓ₂ distance between the two inputs). Accepts scalar or array ``epsilon`` ≥ 0.
    """
    eps = as_positive_array(epsilon, "epsilon", allow_zero=True)
    sigma = check_positive(sigma, "sigma")
    delta_l2 = check_positive(l2_sensitivity, "l2_sensitivity")
    mu = delta_l2 / sigma
    a = mu / 2.0 - eps / mu
    b = -mu / 2.0 - eps / mu
    out = ndtr(a) - np.exp(eps + log_ndtr(b))
    out = np.maximum(out, 0.0)  # only rounding can make it negative: the difference is ≥ 0 exactly
    return scalar_or_array(out)


def laplace_dp_delta(epsilon, scale: float, l1_sensitivity: float):
    """δ(ε) of the Laplace mechanism f(x) + Lap(b) with ℓ₁ sensitivity Δ (scalar output).

    With ε₀ = Δ/b the mechanism is ε₀-DP and for 0 ≤ ε < ε₀ its exact profile is
    δ(ε) = 1 − exp((ε − ε₀)/2) (hockey-stick divergence between Lap(0, b) and Lap(Δ, b),
    integrated in closed form over the region where the likelihood ratio exceeds e^ε;
    see e.g. Balle, Barthe and Gaboardi 2018, privacy profiles). δ(ε) = 0 for ε ≥ ε₀.
    """
    eps = as_positive_array(epsilon, "epsilon", allow_zero=True)
    scale = check_positive(scale, "scale")
    delta_l1 = check_positive(l1_sensitivity, "l1_sensitivity")
    eps0 = delta_l1 / scale
    out = np.where(eps < eps0, -np.expm1((eps - eps0) / 2.0), 0.0)
    return scalar_or_array(out)


@dataclass(frozen=True)
class PrivacyCurve:
    """A privacy curve ε ↦ δ(ε) (an LDP or a LIP curve), vectorised over ε ≥ 0.

    Attributes
    ----------
    name : str
        What the curve belongs to, e.g. ``"gaussian"``.
    delta : callable
        ``delta(epsilon_array) -> array`` of the same shape.
    notion : str
        ``"ldp"`` or ``"lip"``: which definition (Eq. (2) or Eq. (4)) the curve satisfies.
    breakpoints : tuple of float
        ε values where δ has a kink (integration splits there).
    vanishes_after : float
        δ(ε) = 0 for every ε at or beyond this value (``inf`` when it never vanishes).
    parameters : dict
        The parameters of the mechanism, for reports.
    """

    name: str
    delta: Callable
    notion: str
    breakpoints: tuple = ()
    vanishes_after: float = np.inf
    parameters: dict = field(default_factory=dict)

    def __call__(self, epsilon):
        return self.delta(epsilon)

    def to_dict(self) -> dict:
        # Not the field walk of estimators.result_forms: ``delta`` is a function, and the
        # parameters are flattened into the top level.
        return {"name": self.name, "notion": self.notion, "breakpoints": list(self.breakpoints),
                "vanishes_after": self.vanishes_after, **self.parameters}


def gaussian_ldp_curve(sigma: float, l2_sensitivity: float) -> PrivacyCurve:
    """Optimal LDP curve of the Gaussian mechanism X + N(0, σ² I).

    Local-MI paper, Section II (from Balle and Wang 2018, Thm 8): with ‖X‖ ≤ √d Δ the
    ℓ₂ sensitivity is 2√d Δ and δ̄_G(ε) = Φ(√dΔ/σ − εσ/(2√dΔ)) − e^ε Φ(−√dΔ/σ − εσ/(2√dΔ)).
    """
    sigma = check_positive(sigma, "sigma")
    l2_sensitivity = check_positive(l2_sensitivity, "l2_sensitivity")
    return PrivacyCurve("gaussian", lambda eps: gaussian_dp_delta(eps, sigma, l2_sensitivity), "ldp",
                        parameters={"sigma": sigma, "l2_sensitivity": l2_sensitivity})


def laplace_ldp_curve(scale: float, l1_sensitivity: float) -> PrivacyCurve:
    """Exact LDP curve of the scalar Laplace mechanism x + Lap(b), inputs Δ apart (ℓ₁).

    δ(ε) = 1 − exp((ε − Δ/b)/2) for ε < Δ/b, else 0 (``mechanisms.claims.dp_curves.laplace_dp_delta``).
    """
    scale = check_positive(scale, "scale")
    l1_sensitivity = check_positive(l1_sensitivity, "l1_sensitivity")
    return PrivacyCurve("laplace", lambda eps: laplace_dp_delta(eps, scale, l1_sensitivity), "ldp",
                        breakpoints=(l1_sensitivity / scale,), vanishes_after=l1_sensitivity / scale,
                        parameters={"scale": scale, "l1_sensitivity": l1_sensitivity})


def pure_ldp_curve(epsilon: float) -> PrivacyCurve:
    """The tightest LDP curve implied by pure ε₀-LDP alone.

    Every ε₀-LDP mechanism is a post-processing of binary randomized response with
    P[flip] = 1/(1 + e^{ε₀}) (Kairouz, Oh and Viswanath 2015, Thm 2.4), whose hockey-stick
    divergence gives δ(ε) = (e^{ε₀} − e^ε)/(1 + e^{ε₀}) for ε < ε₀, else 0.
    """
    eps0 = check_positive(epsilon, "epsilon")

    def delta(eps):
        # Checked like the Gaussian's and the Laplace's curves: a negative or NaN ε gave a number silently.
        eps = as_positive_array(eps, "epsilon", allow_zero=True)
        # (e^{ε₀} − e^ε)/(1 + e^{ε₀}) divided through by e^{ε₀}: no overflow for a large ε₀.
        out = np.where(eps < eps0, -np.expm1(np.minimum(eps, eps0) - eps0) / (1.0 + np.exp(-eps0)), 0.0)
        return scalar_or_array(out)

    return PrivacyCurve("pure", delta, "ldp", breakpoints=(eps0,), vanishes_after=eps0, parameters={"epsilon": eps0})
