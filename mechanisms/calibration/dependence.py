"""Gaussian ε-MI PP noise with explicit dependence on the secret (Theorem 6, Corollary 4).

Reference: the Pufferfish/MI paper (Nuradha and Goldfeld, Pufferfish Privacy:
An Information-Theoretic Study (IEEE Transactions on Information Theory, 2023)), Section V-C and
the proof in Section VIII-J. All ε and entropies are in nats.
"""

from __future__ import annotations

import math

from estimators.validation import InputError, check_finite_number, check_int, check_nonnegative, check_positive

from mechanisms.calibration._inputs import attempt, check_epsilon, log_expm1_ratio, normal_ratio, safe_log
from mechanisms.calibration.result import Calibration, gaussian_calibration


def entropy_power_term(cond_entropy_lower: float, dim: int) -> float:
    """B = (1/2π) exp((2/d) h − 1) for a lower bound h on h(f(X) | g(X), w(X)) in nats.

    Theorem 6 of the Pufferfish/MI paper. For a Gaussian f | g, w with covariance v I_d,
    h = (d/2) log(2πe v) and B = v.
    """
    value = attempt(lambda: math.exp(2.0 * cond_entropy_lower / dim - 1.0) / (2.0 * math.pi))
    if not math.isfinite(value):
        raise InputError(f"argument 'cond_entropy_lower': B = exp(2h/d - 1)/(2 pi) = "
                         f"e^{log_entropy_power_term(cond_entropy_lower, dim):.6g} is above the largest float")
    return value


def log_entropy_power_term(cond_entropy_lower: float, dim: int) -> float:
    """log B of :func:`entropy_power_term`, which does not overflow."""
    return 2.0 * cond_entropy_lower / dim - 1.0 - math.log(2.0 * math.pi)


def theorem6_variance(epsilon: float, total_cond_var: float, cond_entropy_lower: float,
                      dim: int) -> tuple[float, float]:
    """(σ², log σ²) of Theorem 6, σ² = (A − d e^{2ε/d} B) / (d (e^{2ε/d} − 1)) ∨ 0 with
    A = Σ_j E[Var(f_j | w)]: the formula as printed (NaN where it overflows) and the same in log
    space (−inf when σ² = 0): log(A − C) = log A + log(1 − C/A) with log C = log d + 2ε/d + log B,
    so neither e^{2ε/d} nor B can overflow there.
    """
    def direct():
        growth = math.exp(2.0 * epsilon / dim)
        b_term = math.exp(2.0 * cond_entropy_lower / dim - 1.0) / (2.0 * math.pi)
        return max((total_cond_var - dim * growth * b_term) / (dim * math.expm1(normal_ratio(2.0 * epsilon, dim))), 0.0)

    log_a = safe_log(total_cond_var)
    log_c = math.log(dim) + 2.0 * epsilon / dim + log_entropy_power_term(cond_entropy_lower, dim)
    if log_c >= log_a:
        return 0.0, -math.inf  # A ≤ d e^{2ε/d} B: free privacy (Remark 14)
    log_variance = log_a + math.log(-math.expm1(log_c - log_a)) - math.log(dim) - log_expm1_ratio(2.0 * epsilon, dim)
    return attempt(direct), log_variance


def gaussian_secret_mi_pp(epsilon, total_cond_var, cond_entropy_lower, dim) -> Calibration:
    """Gaussian σ for ε-MI PP using the secret's information about f (Theorem 6).

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    total_cond_var : float
        A: the summed conditional variances Σ_j E[Var(f_j(X) | w(X))] (the supremum over
        the framework, as in Theorem 4), ≥ 0.
    cond_entropy_lower : float
        A lower bound, in nats, on inf h(f(X) | g(X), w(X)) over g ∼ w and P_X ∈ Θ. Any lower
        bound keeps the guarantee (remark after Theorem 6), since σ² decreases in h.
    dim : int
        d, the query dimension.

    Returns
    -------
    Calibration
        σ may be 0: the free-privacy regime of Remark 14.
    """
    eps = check_epsilon(epsilon)
    a_term = check_nonnegative(total_cond_var, "total_cond_var")
    h_low = check_finite_number(cond_entropy_lower, "cond_entropy_lower")
    d = check_int(dim, "dim", minimum=1)
    variance, log_variance = theorem6_variance(eps, a_term, h_low, d)
    return gaussian_calibration(variance, log_variance=log_variance, notion="mi-pp", epsilon=eps,
                                delta=None, dim=d, drivers=("epsilon", "total_cond_var", "cond_entropy_lower", "dim"),
                                rule="Theorem 6: sigma^2 = max((A - d e^(2 eps/d) B) / (d (e^(2 eps/d) - 1)), 0), "
                                     "B = exp(2h/d - 1) / (2 pi)")


def gaussian_attribute_mi(epsilon, total_var, cond_var_given_secret) -> Calibration:
    """Gaussian σ for ε-MI attribute privacy of a scalar query (Corollary 4).

    σ² = (Var(f) − e^{2ε} Var(f | g = a)) / (e^{2ε} − 1) ∨ 0, in the setting of [7]: no public
    information, d = 1 and f(X) | g(X) Gaussian with constant variance. This is Theorem 6
    with A = Var(f) and the Gaussian entropy ½ log(2πe Var(f|g)) as h, which gives B = Var(f|g).

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    total_var : float
        sup over Θ of Var(f(X)), > 0.
    cond_var_given_secret : float
        inf over Θ, g of Var(f(X) | g(X) = a), > 0 (the larger the sup ratio, the more noise).
    """
    eps = check_epsilon(epsilon)
    var_f = check_positive(total_var, "total_var")
    var_fg = check_positive(cond_var_given_secret, "cond_var_given_secret")
    gaussian_entropy = 0.5 * math.log(2.0 * math.pi * math.e * var_fg) if var_fg < 1e300 else \
        0.5 * (math.log(2.0 * math.pi * math.e) + math.log(var_fg))
    variance, log_variance = theorem6_variance(eps, var_f, gaussian_entropy, 1)
    return gaussian_calibration(variance, log_variance=log_variance, notion="mi-ap",
                                epsilon=eps, delta=None, dim=1,
                                drivers=("epsilon", "total_var", "cond_var_given_secret"),
                                rule="Corollary 4: sigma^2 = max((Var(f) - e^(2 eps) Var(f|g)) / (e^(2 eps) - 1), 0)")
