"""Contraction bounds for (ε, c)-PML kernels, and the LDP bounds the PML paper compares with.

Source: Grosse, Saeidian, Oechtering and Skoglund, Dobrushin Coefficients of Private
Mechanisms Beyond Local Differential Privacy (arXiv:2601.09498, 2026).

A kernel K is (ε, c)-PML when its PML is at most ε for every prior in
Q_X(c) = {P_X : min_x P_X(x) ≥ c}, 0 < c ≤ 1/N, N = |X| (Definition 2). The kernel-side
quantities (PML of a kernel, optimal kernels) live in :mod:`mechanisms.constructions.pml`.

Functions here broadcast over ``epsilon`` and ``tv`` (scalars in, float out; arrays in,
arrays out). Information (ε, KL) is in nats; TV and squared Hellinger are unitless.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from estimators.result_forms import fields_to_dict
from estimators.units import NATS
from estimators.validation import InputError, as_positive_array, check_int, check_positive, plain, scalar_or_array
from mechanisms.constructions.pml import check_min_mass

__all__ = [
    "MinimaxRiskBound",
    "divergence_bound",
    "eta_tv",
    "likelihood_ratio_bounds",
    "ldp_divergence_bound",
    "minimax_risk_bound",
]


def _check_tv(tv, c: float, n_inputs: int) -> np.ndarray:
    """TV between two priors in Q_X(c) is at most 1 − Nc, since Q_X(c) = c + (1 − Nc)·P(X)."""
    arr = np.asarray(tv, dtype=np.float64)
    largest = 1.0 - n_inputs * c
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > largest + 1e-12):
        raise InputError(f"argument 'tv' must be in [0, 1 - N c] = [0, {largest:.6g}] "
                         f"(the largest TV between two priors in Q_X(c)), got {plain(tv)}")
    return arr


def eta_tv(epsilon, c, n_inputs: int):
    """η_TV(ε, c): the largest Dobrushin coefficient of an (ε, c)-PML kernel on N inputs.

    Theorem 1 (from Theorems 2 and 3):
    η_TV(ε, c) = (e^ε − 1)/(e^ε(1 − Nc) + 1) for ε < log(2/(Nc)), and 1 for ε ≥ log(2/(Nc)).
    The fraction equals 1 at ε = log(2/(Nc)) and increases with ε, so this is the same as
    min{(e^ε − 1)/(e^ε(1 − Nc) + 1), 1} (DESIGN.md's summary) and as Ξ(ε, c) of
    Corollaries 1 and 2. The value is attained (Remark 2; see
    :func:`mechanisms.constructions.pml.optimal_binary_pml_kernel`). As c → 0 it recovers Kairouz et al.'s
    ε-LDP bound (e^ε − 1)/(e^ε + 1) (Remark 1).

    Parameters
    ----------
    epsilon : float or array_like
        PML level ε > 0 in nats.
    c : float
        Minimum mass, 0 < c ≤ 1/N.
    n_inputs : int
        N = |X| ≥ 1.
    """
    eps = as_positive_array(epsilon, "epsilon")
    n = check_int(n_inputs, "n_inputs", minimum=1)
    c = check_min_mass(c, n)
    switch = math.log(2.0 / (n * c))
    growth = np.exp(np.minimum(eps, switch))  # capped so the unused branch cannot overflow
    theorem3 = (growth - 1.0) / (growth * (1.0 - n * c) + 1.0)
    return scalar_or_array(np.where(eps >= switch, 1.0, theorem3))


def likelihood_ratio_bounds(epsilon, c, n_inputs: int):
    """(Γ_min, Γ_max): bounds on the output likelihood ratio (K∘P_X)(y)/(K∘Q_X)(y).

    Proposition 2: for any (ε, c)-PML kernel and P_X, Q_X ∈ Q_X(c),
    Γ_max ≤ (1 − Nc)e^ε + 1 and Γ_min ≥ ((1 − Nc)e^ε + 1)^{-1}. The proof (Appendix E)
    uses only Lemma 4, so the bounds hold for every ε > 0.

    Returns
    -------
    tuple of float or ndarray
        ``(gamma_min, gamma_max)``, broadcast over ``epsilon``.
    """
    eps = as_positive_array(epsilon, "epsilon")
    n = check_int(n_inputs, "n_inputs", minimum=1)
    c = check_min_mass(c, n)
    gamma_max = (1.0 - n * c) * np.exp(eps) + 1.0
    return scalar_or_array(1.0 / gamma_max), scalar_or_array(gamma_max)


def _binette_coefficient(f: Callable, gamma_min: np.ndarray, gamma_max: np.ndarray) -> np.ndarray:
    """f(Γ_min)/(1 − Γ_min) + f(Γ_max)/(Γ_max − 1) (Binette 2019, Thm. 1; paper Eq. (7)).

    When Γ_max = 1 (c = 1/N), Q_X(c) holds a single prior, TV must be 0 and the bound is 0.
    """
    degenerate = gamma_max <= 1.0
    lo = np.where(degenerate, 0.5, gamma_min)  # placeholders only where the result is replaced by 0
    hi = np.where(degenerate, 2.0, gamma_max)
    values = np.asarray(f(lo), dtype=np.float64) / (1.0 - lo) + np.asarray(f(hi), dtype=np.float64) / (hi - 1.0)
    return np.where(degenerate, 0.0, values)


def _kl(t):
    return t * np.log(t)


def _squared_hellinger(t):
    return (1.0 - np.sqrt(t)) ** 2


DIVERGENCES = ("tv", "kl", "hellinger")


def divergence_bound(divergence, epsilon, c, n_inputs: int, tv):
    """Upper bound on D_f(K∘P_X ‖ K∘Q_X) for (ε, c)-PML K and P_X, Q_X ∈ Q_X(c), TV(P_X‖Q_X) ≤ tv.

    - ``"tv"``: η_TV(ε, c)·tv (Theorem 1, with Lemma 2).
    - ``"kl"``: Corollary 1, Ξ(ε, c)·log((1 − Nc)e^ε + 1)·tv, in nats.
    - ``"hellinger"``: Corollary 2, Ξ(ε, c)·(2 − 4/(√((1 − Nc)e^ε + 1) + 1))·tv, for the
      squared Hellinger divergence with f(t) = (1 − √t)² (no factor 1/2).
    - a callable f (convex, f(1) = 0, accepting NumPy arrays): Eq. (7),
      [f(Γ_min)/(1 − Γ_min) + f(Γ_max)/(Γ_max − 1)]·η_TV(ε, c)·tv with Γ from Proposition 2
      (Binette's reverse-Pinsker inequality applied across the kernel). The two corollaries
      are Eq. (7) for f = t log t and f = (1 − √t)².

    Parameters
    ----------
    divergence : {"tv", "kl", "hellinger"} or callable
    epsilon : float or array_like
        PML level ε > 0 in nats.
    c : float
        Minimum mass, 0 < c ≤ 1/N.
    n_inputs : int
        N = |X|.
    tv : float or array_like
        TV(P_X‖Q_X), in [0, 1 − Nc] (the diameter of Q_X(c)).
    """
    eta = np.asarray(eta_tv(epsilon, c, n_inputs))
    n = int(n_inputs)
    c = check_min_mass(c, n)
    delta = _check_tv(tv, c, n)
    growth = (1.0 - n * c) * np.exp(as_positive_array(epsilon, "epsilon")) + 1.0  # Γ_max of Proposition 2
    if callable(divergence):
        coefficient = _binette_coefficient(divergence, 1.0 / growth, growth)
    else:
        if not isinstance(divergence, str) or divergence not in DIVERGENCES:
            raise InputError(f"argument 'divergence' must be one of {DIVERGENCES} or a callable f, got {plain(divergence)}")
        coefficient = {
            "tv": np.ones_like(growth),
            "kl": np.log(growth),
            "hellinger": 2.0 - 4.0 / (np.sqrt(growth) + 1.0),
        }[divergence]
    return scalar_or_array(coefficient * eta * delta)


LDP_METHODS = ("duchi", "asoodeh-zhang", "kairouz")


def ldp_divergence_bound(method, epsilon, tv, *, q_min=None):
    """The ε-LDP contraction bounds the PML paper compares with (Sec. II-C and Example 2).

    For an ε-LDP kernel K and TV(P_X‖Q_X) = tv:

    - ``"duchi"`` (Duchi et al. [6], as stated in Sec. II-C): KL bound
      min{4, e^ε}(e^ε − 1)²·tv².
    - ``"asoodeh-zhang"``: KL bound η_KL(K)·D(P_X‖Q_X) with η_KL(K) ≤ ((e^ε − 1)/(e^ε + 1))²
      (Asoodeh and Zhang [7], Sec. II-C) and the reverse Pinsker inequality of Sason and
      Verdú [37, Thm. 28], D(P‖Q) ≤ log(1 + 2 tv²/Q_min), with Q_min = ``q_min`` (the paper
      uses Q_min = c in Fig. 1(a)).
    - ``"kairouz"`` (Kairouz et al. [25], Eq. (4)): TV bound (e^ε − 1)/(e^ε + 1)·tv.

    KL values are in nats.
    """
    if method not in LDP_METHODS:
        raise InputError(f"argument 'method' must be one of {LDP_METHODS}, got {plain(method)}")
    eps = as_positive_array(epsilon, "epsilon")
    delta = np.asarray(tv, dtype=np.float64)
    if delta.size == 0 or not np.all(np.isfinite(delta)) or np.any(delta < 0) or np.any(delta > 1):
        raise InputError(f"argument 'tv' must be in [0, 1], got {plain(tv)}")
    growth = np.exp(eps)
    if method == "duchi":
        out = np.minimum(4.0, growth) * (growth - 1.0) ** 2 * delta**2
    elif method == "kairouz":
        out = (growth - 1.0) / (growth + 1.0) * delta
    else:
        if q_min is None:
            raise InputError("argument 'q_min' is required for method 'asoodeh-zhang'")
        q_min = check_positive(q_min, "q_min")
        if q_min > 0.5:
            raise InputError(f"argument 'q_min' must be in (0, 1/2] (smallest mass of a distribution on >= 2 points), got {plain(q_min)}")
        out = ((growth - 1.0) / (growth + 1.0)) ** 2 * np.log1p(2.0 * delta**2 / q_min)
    return scalar_or_array(out)


@dataclass(frozen=True)
class MinimaxRiskBound:
    """Example 3: Le Cam lower bound on the private minimax risk, and the sample size it implies.

    Attributes
    ----------
    epsilon, c, delta : float or ndarray
        PML level (nats), minimum mass of Q_X(c) (N = 4), and half the gap θ₁ − θ₀ = δ
        between the hypotheses' first two masses.
    n_samples : int
        Number of i.i.d. privatized observations.
    kl_per_sample : float or ndarray
        Corollary 1 bound on D(K∘P_θ₀‖K∘P_θ₁) in nats.
    risk_lower_bound : float or ndarray
        (δ/4)·exp(−n · kl_per_sample).
    samples_needed : float or ndarray or None
        The smallest n with risk_lower_bound ≤ target_risk (a necessary sample size);
        ``None`` when no target was given.
    target_risk : float or None
    """

    epsilon: object
    c: float
    delta: float
    n_samples: int
    kl_per_sample: object
    risk_lower_bound: object
    samples_needed: object = None
    target_risk: float | None = None
    unit: str = NATS

    def to_dict(self) -> dict:
        """A JSON-ready dict (arrays become lists)."""
        return fields_to_dict(self, null_nonfinite=False)


def minimax_risk_bound(epsilon, c, delta, n_samples: int, target_risk=None) -> MinimaxRiskBound:
    """Example 3: private minimax risk for P_θ₀ = [¼ − δ, ¼ + δ, ¼, ¼], P_θ₁ = [¼ + δ, ¼ − δ, ¼, ¼].

    With θ₁ − θ₀ = δ and absolute-error loss, Le Cam's two-point method gives
    R* ≥ (δ/2)(1 − TV) and the Bretagnolle–Huber inequality 1 − TV ≥ ½ exp(−D), so
    R* ≥ (δ/4) exp(−n D(K∘P_θ₀‖K∘P_θ₁)) by tensorization of KL; Corollary 1 (N = 4) bounds
    D(K∘P_θ₀‖K∘P_θ₁) ≤ Ξ(ε, c) log((1 − 4c)e^ε + 1)·TV(P_θ₀‖P_θ₁).
    Here TV(P_θ₀‖P_θ₁) = 2δ exactly; the paper's text writes δ in its place. Both hypotheses
    lie in Q_X(c) only when c ≤ ¼ − δ, which is required.
    Solving (δ/4)exp(−n D) ≤ r for n gives the sample size needed for risk r:
    n ≥ log(δ/(4r)) / D; the paper's "n ≳ 1/(Ξ(ε, c) log((1 − 4c)e^ε + 1) δ)" up to log terms.

    Parameters
    ----------
    epsilon : float or array_like
        PML level ε > 0 in nats.
    c : float
        Minimum mass, 0 < c ≤ ¼ − δ.
    delta : float
        δ ∈ (0, ¼).
    n_samples : int
        n ≥ 1.
    target_risk : float, optional
        Risk r > 0 for ``samples_needed``.
    """
    delta = check_positive(delta, "delta")
    if delta >= 0.25:
        raise InputError(f"argument 'delta' must be in (0, 1/4), got {plain(delta)}")
    c = check_min_mass(c, 4)
    if c > 0.25 - delta + 1e-12:
        raise InputError(f"argument 'c' must be <= 1/4 - delta = {0.25 - delta:.6g} so that both hypotheses lie in Q_X(c), got {plain(c)}")
    n = check_int(n_samples, "n_samples", minimum=1)
    kl = np.asarray(divergence_bound("kl", epsilon, c, 4, 2.0 * delta))
    risk = delta / 4.0 * np.exp(-n * kl)
    needed = None
    if target_risk is not None:
        target_risk = check_positive(target_risk, "target_risk")
        # log(δ/(4r)) ≤ 0 means the bound never exceeds r: one sample is not excluded.
        needed = np.maximum(np.ceil(np.log(delta / (4.0 * target_risk)) / kl), 1.0)
        needed = scalar_or_array(needed)
    return MinimaxRiskBound(epsilon=scalar_or_array(np.asarray(epsilon, dtype=np.float64)), c=c, delta=delta,
                            n_samples=n, kl_per_sample=scalar_or_array(kl), risk_lower_bound=scalar_or_array(risk),
                            samples_needed=needed, target_risk=target_risk)
