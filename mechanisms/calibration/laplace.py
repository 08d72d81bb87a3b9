"""Laplace noise for ε-MI Pufferfish privacy and ε-MI DP (Theorem 3, Corollary 2).

Reference: the Pufferfish/MI paper (Nuradha and Goldfeld, Pufferfish Privacy:
An Information-Theoretic Study (IEEE Transactions on Information Theory, 2023)), Section V-A.
All ε are in nats.
"""

from __future__ import annotations

import math


from estimators.validation import check_positive

from mechanisms.calibration._inputs import (attempt, check_epsilon, coordinate_total, exactly_one, log_expm1_ratio, noise_value, normal_ratio,
                      resolve_dim, safe_log)
from mechanisms.calibration.result import Calibration, laplace_calibration


def laplace_mi_scale(epsilon: float, total_cond_std: float, dim: int) -> float:
    """b = Σ_j E[√Var(f_j | w)] / (d (e^{ε/d} − 1)).

    Theorem 3 of the Pufferfish/MI paper (proof: Section VIII-E, Eq. (18)–(19)): the
    bound d log(1 + s/(d b)) on I(g; f + Z | w), with s the summed conditional standard
    deviations, equals ε at this b.
    """
    return noise_value(*mi_scale(epsilon, lambda: total_cond_std, safe_log(total_cond_std), dim), "Laplace scale b",
                       ("epsilon", "total_cond_std", "dim"))


def mi_scale(epsilon: float, total_cond_std, log_total_cond_std: float, dim: int) -> tuple[float, float]:
    """(b, log b) of Theorem 3: the formula as printed (NaN where it overflows) and the same in
    log space (−inf when s = 0). ``total_cond_std`` is a callable giving s, which may overflow."""
    direct = attempt(lambda: float(total_cond_std()) / (dim * math.expm1(normal_ratio(epsilon, dim))))
    return direct, log_total_cond_std - math.log(dim) - log_expm1_ratio(epsilon, dim)


def _std_per_coordinate(cond_std, cond_var, dim):
    """(d, Σ_j s_j as a callable, log Σ_j s_j, what s_j is, the argument given)."""
    name = exactly_one(cond_std=cond_std, cond_var=cond_var)
    if name == "cond_std":
        return (*coordinate_total(cond_std, "cond_std", dim), "E[sqrt Var(f_j|w)]", name)
    # Jensen: E[√Var] ≤ √E[Var], so variances give a valid (larger) b.
    return (*coordinate_total(cond_var, "cond_var", dim, root=True), "sqrt(E[Var(f_j|w)]) (Jensen)", name)


def laplace_mi_pp(epsilon, *, cond_std=None, cond_var=None, dim=None) -> Calibration:
    """Laplace scale for ε-MI PP from conditional spreads of the query (Theorem 3).

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    cond_std : array_like of shape (d,), or one number for all d = ``dim`` coordinates, optional
        Per coordinate j, the supremum over P_X ∈ Θ and w ∈ W* of E[√Var(f_j(X) | w(X))].
    cond_var : array_like of shape (d,), or one number for all d = ``dim`` coordinates, optional
        Alternatively, the supremum of E[Var(f_j(X) | w(X))]; its square root bounds the
        term above by Jensen's inequality. Give exactly one of the two.
    dim : int, optional
        The query dimension d; checked against the length of the list.

    Returns
    -------
    Calibration
        b = Σ_j s_j / (d (e^{ε/d} − 1)) (Theorem 3).
    """
    eps = check_epsilon(epsilon)
    d, total, log_total, what, given = _std_per_coordinate(cond_std, cond_var, dim)
    b, log_b = mi_scale(eps, total, log_total, d)
    return laplace_calibration(b, log_b=log_b, notion="mi-pp", epsilon=eps,
                               delta=None, dim=d, rule=f"Theorem 3: b = sum_j {what} / (d (e^(eps/d) - 1))",
                               drivers=("epsilon", given))


def laplace_mi_dp(epsilon, *, cond_std=None, cond_var=None, l1_sensitivity=None, dim=None) -> Calibration:
    """Laplace scale for ε-MI DP (Corollary 2), in variance or ℓ₁-sensitivity form.

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    cond_std, cond_var : array_like of shape (d,), or one number for all d = ``dim`` coordinates, optional
        Per coordinate, the supremum over P_X and rows i of E[√Var(f_ℓ(X) | X_{−i})]
        (or of E[Var(...)], square-rooted by Jensen). First form of Corollary 2.
    l1_sensitivity : float, optional
        Δ₁(f) = max over neighbours ‖f(x) − f(x')‖₁; gives b = Δ₁ / (√2 d (e^{ε/d} − 1)),
        the second form of Corollary 2 (proof: Section VIII-F, Eq. (20)).
    dim : int, optional
        d; required meaning with ``l1_sensitivity`` (default 1), checked against lists.

    Give exactly one of ``cond_std``, ``cond_var``, ``l1_sensitivity``.
    """
    eps = check_epsilon(epsilon)
    exactly_one(cond_std=cond_std, cond_var=cond_var, l1_sensitivity=l1_sensitivity)
    if l1_sensitivity is None:
        d, total, log_total, what, given = _std_per_coordinate(cond_std, cond_var, dim)
        b, log_b = mi_scale(eps, total, log_total, d)
        drivers = ("epsilon", given)
        rule = f"Corollary 2 (variance form): b = sum_l {what} / (d (e^(eps/d) - 1))"
    else:
        delta1 = check_positive(l1_sensitivity, "l1_sensitivity")
        d = resolve_dim(dim)
        # Eq. (20) bounds the summed conditional spread by Δ₂/√2 ≤ Δ₁/√2.
        b, log_b = mi_scale(eps, lambda: delta1 / math.sqrt(2.0), math.log(delta1) - 0.5 * math.log(2.0), d)
        drivers = ("epsilon", "l1_sensitivity", "dim")
        rule = "Corollary 2 (l1 form): b = Delta_1 / (sqrt(2) d (e^(eps/d) - 1))"
    return laplace_calibration(b, log_b=log_b, notion="mi-dp", epsilon=eps, delta=None, dim=d, rule=rule,
                               drivers=drivers)

