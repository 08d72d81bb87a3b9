"""Gaussian noise for (ε, δ) structured Pufferfish privacy under Gaussianity, and the
(ε, δ) attribute-privacy baseline it extends.

Reference: the Pufferfish/MI paper (Nuradha and Goldfeld, Pufferfish Privacy:
An Information-Theoretic Study (IEEE Transactions on Information Theory, 2023)): Section III-A
(the structured-PP Gaussian mechanism when f(X) | g(X), w(X) is Gaussian) and Section V-C
(Theorem 1 of reference [7], the (ε, δ)-AP Gaussian mechanism). Both subtract the query's own
conditional variance from the classical Gaussian variance 2 ln(1.25/δ) Δ²/ε².
"""

from __future__ import annotations

from estimators.validation import check_nonnegative

from mechanisms.calibration._inputs import attempt, noise_value, safe_log
from mechanisms.calibration.classical import classical_gaussian_formula, classical_inputs, log_classical_gaussian_variance
from mechanisms.calibration.result import Calibration, gaussian_calibration


_DRIVERS = ("epsilon", "delta", "mean_gap", "cond_var")


def _gaussianity_variance(epsilon, delta, mean_gap, cond_var):
    gap = check_nonnegative(mean_gap, "mean_gap")
    var = check_nonnegative(cond_var, "cond_var")
    eps, dlt, gap = classical_inputs(epsilon, delta, gap)
    classical = noise_value(attempt(lambda: classical_gaussian_formula(eps, dlt, gap)),
                            log_classical_gaussian_variance(eps, dlt, gap), "classical Gaussian variance", _DRIVERS)
    variance = max(classical - var, 0.0)
    return eps, dlt, variance, safe_log(variance)


def gaussian_structured_pp(epsilon, delta, mean_gap, cond_var) -> Calibration:
    """Gaussian σ for (ε, δ) structured PP when f(X) | g(X), w(X) is Gaussian (Section III-A).

    σ² = 2 (Δ_{f,g,w}/ε)² log(1.25/δ) − Var(f(X) | g(X) = a₀, w(X) = c₀), and 0 when negative.

    Parameters
    ----------
    epsilon : float
        ε in (0, 1].
    delta : float
        δ in (0, 1).
    mean_gap : float
        sup over P_X, g ∼ w, c of Δ_{f,g,w}(c) = sup_{a,b} |E[f | g=a, w=c] − E[f | g=b, w=c]|.
    cond_var : float
        The (constant) conditional variance Var(f(X) | g(X), w(X)) under Gaussianity.
    """
    eps, dlt, variance, log_variance = _gaussianity_variance(epsilon, delta, mean_gap, cond_var)
    return gaussian_calibration(variance, log_variance=log_variance, notion="approx-pp", epsilon=eps, delta=dlt, dim=1,
                                drivers=_DRIVERS,
                                rule="Section III-A: sigma^2 = max(2 (Delta_fgw/eps)^2 log(1.25/delta) - Var(f|g,w), 0)")


def gaussian_attribute_dp(epsilon, delta, mean_gap, cond_var) -> Calibration:
    """Gaussian σ for (ε, δ) attribute privacy, Theorem 1 of [7] as quoted in Section V-C.

    σ² = (C Δ_AP(f)/ε)² − Var(f(X) | g(X) = a), and 0 when negative, with C = √(2 log(1.25/δ))
    and Δ_AP(f) = max_{a,b} |E[f | g=a] − E[f | g=b]| (``mean_gap``).
    """
    eps, dlt, variance, log_variance = _gaussianity_variance(epsilon, delta, mean_gap, cond_var)
    return gaussian_calibration(variance, log_variance=log_variance, notion="approx-ap", epsilon=eps, delta=dlt, dim=1,
                                drivers=_DRIVERS,
                                rule="[7] Thm 1 (Section V-C): sigma^2 = max((C Delta_AP/eps)^2 - Var(f|g), 0), "
                                     "C = sqrt(2 log(1.25/delta))")
