"""Laplace noise for ε-MI Pufferfish privacy and ε-MI DP (Theorem 3, Corollary 2).

Reference: the Pufferfish/MI paper (``papers/pufferfish-mi-privacy.txt``), Section V-A.
All ε are in nats.
"""

from __future__ import annotations

import math

import numpy as np

from estimators.validation import check_positive

from ._inputs import check_epsilon, exactly_one, nonnegative_vector, resolve_dim
from .result import Calibration, laplace_calibration


def laplace_mi_scale(epsilon: float, total_cond_std: float, dim: int) -> float:
    """b = Σ_j E[√Var(f_j | w)] / (d (e^{ε/d} − 1)).

    Theorem 3 of the Pufferfish/MI paper (proof: Section VIII-E, Eq. (18)–(19)): the
    bound d log(1 + s/(d b)) on I(g; f + Z | w), with s the summed conditional standard
    deviations, equals ε at this b.
    """
    return float(total_cond_std) / (dim * math.expm1(epsilon / dim))


def _std_per_coordinate(cond_std, cond_var, dim):
    name = exactly_one(cond_std=cond_std, cond_var=cond_var)
    if name == "cond_std":
        return nonnegative_vector(cond_std, "cond_std", dim), "E[sqrt Var(f_j|w)]"
    # Jensen: E[√Var] ≤ √E[Var], so variances give a valid (larger) b.
    return np.sqrt(nonnegative_vector(cond_var, "cond_var", dim)), "sqrt(E[Var(f_j|w)]) (Jensen)"


def laplace_mi_pp(epsilon, *, cond_std=None, cond_var=None, dim=None) -> Calibration:
    """Laplace scale for ε-MI PP from conditional spreads of the query (Theorem 3).

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    cond_std : array_like of shape (d,), optional
        Per coordinate j, the supremum over P_X ∈ Θ and w ∈ W* of E[√Var(f_j(X) | w(X))].
    cond_var : array_like of shape (d,), optional
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
    spreads, what = _std_per_coordinate(cond_std, cond_var, dim)
    d = spreads.size
    b = laplace_mi_scale(eps, spreads.sum(), d)
    return laplace_calibration(b, notion="mi-pp", epsilon=eps, delta=None, dim=d,
                               rule=f"Theorem 3: b = sum_j {what} / (d (e^(eps/d) - 1))")


def laplace_mi_dp(epsilon, *, cond_std=None, cond_var=None, l1_sensitivity=None, dim=None) -> Calibration:
    """Laplace scale for ε-MI DP (Corollary 2), in variance or ℓ₁-sensitivity form.

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    cond_std, cond_var : array_like of shape (d,), optional
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
        spreads, what = _std_per_coordinate(cond_std, cond_var, dim)
        d = spreads.size
        b = laplace_mi_scale(eps, spreads.sum(), d)
        rule = f"Corollary 2 (variance form): b = sum_l {what} / (d (e^(eps/d) - 1))"
    else:
        delta1 = check_positive(l1_sensitivity, "l1_sensitivity")
        d = resolve_dim(dim)
        # Eq. (20) bounds the summed conditional spread by Δ₂/√2 ≤ Δ₁/√2.
        b = laplace_mi_scale(eps, delta1 / math.sqrt(2.0), d)
        rule = "Corollary 2 (l1 form): b = Delta_1 / (sqrt(2) d (e^(eps/d) - 1))"
    return laplace_calibration(b, notion="mi-dp", epsilon=eps, delta=None, dim=d, rule=rule)
