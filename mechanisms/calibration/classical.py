"""Classical (sensitivity-based) Laplace and Gaussian noise for ε-DP and (ε, δ)-DP.

These are the baselines the Pufferfish/MI paper compares with (Remark 8, Remark 11):
Laplace ε-DP b = Δ₁/ε (Dwork et al. 2006), Laplace (ε, δ)-DP b = Δ₁/(ε − log(1 − δ))
(the paper's reference [10]), the classical Gaussian σ = Δ₂ √(2 ln(1.25/δ))/ε for ε ≤ 1
(Dwork and Roth 2014, Theorem A.1) and the analytic Gaussian mechanism (Balle and Wang 2018,
Theorem 8 and Algorithm 1: the smallest σ whose exact δ(ε) meets the target).
"""

from __future__ import annotations

import math

from scipy.optimize import brentq

from estimators.validation import InputError, check_choice, check_nonnegative, check_positive, check_probability, plain

from mechanisms.calibration._inputs import attempt, check_epsilon, noise_value, resolve_dim, safe_log
from mechanisms.claims.dp_curves import gaussian_dp_delta
from mechanisms.calibration.result import Calibration, gaussian_calibration, laplace_calibration

GAUSSIAN_METHODS = ("classical", "analytic")
# Relative accuracy of the analytic Gaussian σ (root of δ(ε; σ) = δ in log σ).
ANALYTIC_RTOL = 1e-12


def laplace_dp(epsilon, l1_sensitivity, *, dim=None) -> Calibration:
    """Laplace b = Δ₁/ε for ε-DP (Remark 8 of the Pufferfish/MI paper, citing Dwork et al.)."""
    eps = check_epsilon(epsilon)
    delta1 = check_positive(l1_sensitivity, "l1_sensitivity")
    return laplace_calibration(attempt(lambda: delta1 / eps), log_b=math.log(delta1) - math.log(eps), notion="dp",
                               epsilon=eps, delta=None,
                               dim=resolve_dim(dim), rule="Remark 8 (classic Laplace): b = Delta_1 / eps",
                               drivers=("epsilon", "l1_sensitivity"))


def laplace_approx_dp(epsilon, delta, l1_sensitivity, *, dim=None) -> Calibration:
    """Laplace b = Δ₁/(ε − log(1 − δ)) for (ε, δ)-DP (Remark 8, citing reference [10])."""
    eps = check_epsilon(epsilon)
    dlt = check_probability(delta, "delta")
    delta1 = check_positive(l1_sensitivity, "l1_sensitivity")
    denominator = eps - math.log1p(-dlt)
    return laplace_calibration(attempt(lambda: delta1 / denominator),
                               log_b=math.log(delta1) - math.log(denominator), notion="approx-dp", epsilon=eps,
                               delta=dlt, dim=resolve_dim(dim),
                               rule="Remark 8 (classic Laplace): b = Delta_1 / (eps - log(1 - delta))",
                               drivers=("epsilon", "delta", "l1_sensitivity"))


def classical_gaussian_variance(epsilon: float, delta: float, sensitivity: float) -> float:
    """σ² = 2 ln(1.25/δ) Δ² / ε², valid for ε ≤ 1 (Dwork and Roth 2014, Theorem A.1;
    Remark 11 of the Pufferfish/MI paper).

    Parameters
    ----------
    epsilon : float
        ε in (0, 1].
    delta : float
        δ in (0, 1).
    sensitivity : float
        Δ ≥ 0: the ℓ₂ sensitivity for DP, or the conditional-mean gap Δ_{f,g,w} of the
        structured rules (Section III-A of the Pufferfish/MI paper), where Δ = 0 (the secret
        does not move the query's mean) legitimately needs no noise.

    Returns
    -------
    float
        The noise variance σ².

    Raises
    ------
    InputError
        Naming ``epsilon`` (not in (0, 1]), ``delta`` (not in (0, 1)) or ``sensitivity``
        (negative), or any of them when NaN or inf.
    """
    eps, dlt, gap = classical_inputs(epsilon, delta, sensitivity)
    return noise_value(attempt(lambda: classical_gaussian_formula(eps, dlt, gap)),
                       log_classical_gaussian_variance(eps, dlt, gap), "classical Gaussian variance",
                       ("epsilon", "delta", "sensitivity"))


def classical_gaussian_formula(epsilon: float, delta: float, sensitivity: float) -> float:
    return 2.0 * math.log(1.25 / delta) * sensitivity ** 2 / epsilon ** 2


def classical_inputs(epsilon, delta, sensitivity):
    eps = check_epsilon(epsilon)
    if eps > 1.0:
        raise InputError(f"argument 'epsilon' must be <= 1 for the classical Gaussian mechanism "
                         f"(use the analytic Gaussian for larger epsilon), got {plain(epsilon)}")
    return eps, check_probability(delta, "delta"), check_nonnegative(sensitivity, "sensitivity")


def log_classical_gaussian_variance(epsilon: float, delta: float, sensitivity: float) -> float:
    """log of 2 ln(1.25/δ) Δ² / ε² for checked inputs (−inf when Δ = 0), without overflow."""
    return (math.log(2.0) + math.log(math.log(1.25 / delta)) + 2.0 * safe_log(sensitivity)
            - 2.0 * math.log(epsilon))


def analytic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """The smallest σ with δ(ε; σ) ≤ δ for the exact Balle–Wang profile (Theorem 8).

    δ(ε; σ) decreases strictly in σ, so the boundary is the unique root of
    δ(ε; σ) − δ, found by Brent's method in log σ to relative accuracy 1e-12.
    """
    def gap(log_sigma):
        # δ(ε; σ) depends on σ only through Δ/σ: evaluating it at Δ = 1, σ/Δ keeps a huge
        # or tiny Δ from overflowing Δ/σ.
        return gaussian_dp_delta(epsilon, math.exp(log_sigma), 1.0) - delta

    # Bracket σ/Δ: widen by factors of 2 until the sign changes (δ → 1 as σ → 0, → 0 as
    # σ → ∞); the float range of σ/Δ is crossed in under 2100 steps.
    step = math.log(2.0)
    lo = hi = 0.0
    for _ in range(2100):
        if gap(lo) > 0:
            break
        lo -= step
    for _ in range(2100):
        if gap(hi) <= 0:
            break
        hi += step
    if gap(lo) <= 0 or gap(hi) > 0:
        raise InputError("arguments 'epsilon', 'delta': no sigma/l2_sensitivity within the float range meets "
                         "delta(epsilon; sigma) = delta")
    root = brentq(gap, lo, hi, xtol=1e-300, rtol=ANALYTIC_RTOL, maxiter=500)
    return noise_value(attempt(lambda: math.exp(root) * l2_sensitivity), root + math.log(l2_sensitivity),
                       "analytic Gaussian sigma", ("epsilon", "delta", "l2_sensitivity"))


def gaussian_approx_dp(epsilon, delta, l2_sensitivity, *, dim=None, method="classical") -> Calibration:
    """Gaussian σ for (ε, δ)-DP: classical or analytic (Balle–Wang) calibration.

    Parameters
    ----------
    epsilon : float
        ε > 0 (≤ 1 for ``method="classical"``).
    delta : float
        δ in (0, 1).
    l2_sensitivity : float
        Δ₂(f) > 0.
    dim : int, optional
        Query dimension (noise is N(0, σ² I_d)); default 1. It does not change σ.
    method : {"classical", "analytic"}
        ``"classical"``: σ = Δ₂ √(2 ln(1.25/δ))/ε (Dwork and Roth, Theorem A.1).
        ``"analytic"``: the smallest σ whose exact δ(ε) (Balle and Wang 2018, Theorem 8;
        :func:`mechanisms.claims.dp_curves.gaussian_dp_delta`) equals δ, to 1e-12 relative.
    """
    eps = check_epsilon(epsilon)
    dlt = check_probability(delta, "delta")
    delta2 = check_positive(l2_sensitivity, "l2_sensitivity")
    method = check_choice(method, "method", GAUSSIAN_METHODS)
    if method == "classical":
        classical_inputs(eps, dlt, delta2)  # ε <= 1
        variance = attempt(lambda: classical_gaussian_formula(eps, dlt, delta2))
        log_variance = log_classical_gaussian_variance(eps, dlt, delta2)
        rule = "Dwork-Roth Thm A.1 (classic Gaussian): sigma = Delta_2 sqrt(2 ln(1.25/delta)) / eps"
    else:
        sigma = analytic_gaussian_sigma(eps, dlt, delta2)
        variance, log_variance = attempt(lambda: sigma ** 2), 2.0 * math.log(sigma)
        rule = "Balle-Wang 2018 Thm 8 (analytic Gaussian): smallest sigma with delta(eps; sigma) = delta"
    return gaussian_calibration(variance, log_variance=log_variance, notion="approx-dp", epsilon=eps, delta=dlt,
                                dim=resolve_dim(dim),
                                rule=rule, drivers=("epsilon", "delta", "l2_sensitivity"))
