"""Gaussian noise for ε-MI Pufferfish privacy and ε-MI DP (Theorem 4, Corollary 3).

Reference: the Pufferfish/MI paper (Nuradha and Goldfeld, Pufferfish Privacy:
An Information-Theoretic Study (IEEE Transactions on Information Theory, 2023)), Section V-B.
All ε are in nats.
"""

from __future__ import annotations

import math

from estimators.validation import InputError, check_positive

from mechanisms.calibration._inputs import (attempt, check_epsilon, coordinate_total, exactly_one, log_expm1_ratio, noise_value, normal_ratio,
                      resolve_dim, safe_log)
from mechanisms.calibration.result import Calibration, gaussian_calibration


def gaussian_mi_variance(epsilon: float, total_cond_var: float, dim: int) -> float:
    """σ² = Σ_j E[Var(f_j | w)] / (d (e^{2ε/d} − 1)).

    Theorem 4 of the Pufferfish/MI paper (proof: Section VIII-G, Eq. (21)): the bound
    (d/2) log(1 + V/(d σ²)) on I(g; f + Z | w), with V the summed conditional variances,
    equals ε at this σ². Theorem 5's proof (Eq. (22)) applies it to Aᵀf with d = ℓ.
    """
    return noise_value(*mi_variance(epsilon, lambda: total_cond_var, safe_log(total_cond_var), dim),
                       "Gaussian variance sigma^2", ("epsilon", "total_cond_var", "dim"))


def mi_variance(epsilon: float, total_cond_var, log_total_cond_var: float, dim: int) -> tuple[float, float]:
    """(σ², log σ²) of Theorem 4: the formula as printed (NaN where it overflows) and the same
    in log space (−inf when V = 0). ``total_cond_var`` is a callable giving V, which may overflow."""
    direct = attempt(lambda: float(total_cond_var()) / (dim * math.expm1(normal_ratio(2.0 * epsilon, dim))))
    return direct, log_total_cond_var - math.log(dim) - log_expm1_ratio(2.0 * epsilon, dim)


def gaussian_mi_pp(epsilon, cond_var, *, dim=None) -> Calibration:
    """Gaussian σ for ε-MI PP from conditional variances of the query (Theorem 4).

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    cond_var : array_like of shape (d,), or one number for all d = ``dim`` coordinates
        Per coordinate j, the supremum over P_X ∈ Θ and w ∈ W* of E[Var(f_j(X) | w(X))].
    dim : int, optional
        d, checked against the length of ``cond_var``.
    """
    eps = check_epsilon(epsilon)
    d, total, log_total = coordinate_total(cond_var, "cond_var", dim)
    variance, log_variance = mi_variance(eps, total, log_total, d)
    return gaussian_calibration(variance, log_variance=log_variance, notion="mi-pp", epsilon=eps,
                                delta=None, dim=d,
                                rule="Theorem 4: sigma^2 = sum_j E[Var(f_j|w)] / (d (e^(2 eps/d) - 1))",
                                drivers=("epsilon", "cond_var"))


def gaussian_mi_dp(epsilon, *, cond_var=None, l2_sensitivity=None, dim=None, compact=False) -> Calibration:
    """Gaussian σ for ε-MI DP (Corollary 3) in its three forms.

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    cond_var : array_like of shape (d,), or one number for all d = ``dim`` coordinates, optional
        Per coordinate, sup over P_X and rows i of E[Var(f_ℓ(X) | X_{−i})]; variance form
        σ² = Σ / (d (e^{2ε/d} − 1)).
    l2_sensitivity : float, optional
        Δ₂(f); sensitivity form σ² = Δ₂² / (2 d (e^{2ε/d} − 1)) (Eq. (20) bounds the
        summed conditional variance by Δ₂²/2).
    dim : int, optional
        d (default 1 with ``l2_sensitivity``), checked against ``cond_var``.
    compact : bool
        With ``l2_sensitivity`` and d = 1 on a compact domain with continuous f: the
        Popoviciu form σ² = Δ₂² / (4 (e^{2ε} − 1)) (Corollary 3, last statement).

    Give exactly one of ``cond_var`` and ``l2_sensitivity``.
    """
    eps = check_epsilon(epsilon)
    exactly_one(cond_var=cond_var, l2_sensitivity=l2_sensitivity)
    if cond_var is not None:
        if compact:
            raise InputError("argument 'compact' applies to the 'l2_sensitivity' form only")
        d, total, log_total = coordinate_total(cond_var, "cond_var", dim)
        variance, log_variance = mi_variance(eps, total, log_total, d)
        drivers = ("epsilon", "cond_var")
        rule = "Corollary 3 (variance form): sigma^2 = sum_l E[Var(f_l|X_-i)] / (d (e^(2 eps/d) - 1))"
    else:
        delta2 = check_positive(l2_sensitivity, "l2_sensitivity")
        d = resolve_dim(dim)
        if compact:
            if d != 1:
                raise InputError(f"argument 'compact' needs a scalar query (dim 1), got dim {d}")
            # Popoviciu: Var ≤ Δ₂²/4 instead of Δ₂²/2.
            variance, log_variance = mi_variance(eps, lambda: delta2 ** 2 / 4.0,
                                                 2.0 * math.log(delta2) - math.log(4.0), 1)
            rule = "Corollary 3 (compact scalar form): sigma^2 = Delta_2^2 / (4 (e^(2 eps) - 1))"
        else:
            variance, log_variance = mi_variance(eps, lambda: delta2 ** 2 / 2.0,
                                                 2.0 * math.log(delta2) - math.log(2.0), d)
            rule = "Corollary 3 (l2 form): sigma^2 = Delta_2^2 / (2 d (e^(2 eps/d) - 1))"
        drivers = ("epsilon", "l2_sensitivity", "dim")
    return gaussian_calibration(variance, log_variance=log_variance, notion="mi-dp", epsilon=eps, delta=None, dim=d,
                                rule=rule,
                                drivers=drivers)
