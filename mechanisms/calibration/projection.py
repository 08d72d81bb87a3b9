"""Gaussian ε-MI PP noise after a projection Aᵀf(X) to ℓ ≤ d dimensions (Theorem 5).

Reference: the Pufferfish/MI paper (Nuradha and Goldfeld, Pufferfish Privacy:
An Information-Theoretic Study (IEEE Transactions on Information Theory, 2023)), Theorem 5,
Remark 12 and the proof in Section VIII-I. All ε are in nats.
"""

from __future__ import annotations

import math

import numpy as np

from estimators.validation import InputError, check_choice, check_int, check_nonnegative

from mechanisms.calibration._inputs import attempt, check_epsilon, log_sum, projection_matrix, safe_log
from mechanisms.calibration.gaussian import mi_variance
from mechanisms.calibration.result import Calibration, gaussian_calibration

METHODS = ("deterministic", "random-gaussian")


def gaussian_projection_mi_pp(epsilon, op_norm, *, method="deterministic", matrix=None, projection_dim=None,
                              max_column_norm=None, input_dim=None, mean_sq_norm=None) -> Calibration:
    """Gaussian σ for the projected mechanism Aᵀf(X) + N(0, σ² I_ℓ) under ε-MI PP.

    Parameters
    ----------
    epsilon : float
        MI budget in nats, > 0.
    op_norm : float
        The supremum over P_X ∈ Θ and w ∈ W* of E[‖Σ_{f|w}‖_op], the expected operator
        norm of the conditional covariance of f(X) given w(X).
    method : {"deterministic", "random-gaussian"}
        ``"deterministic"``: Theorem 5 part 1, σ² = E‖Σ‖_op · max_j ‖φ_j‖² / (e^{2ε/ℓ} − 1).
        Give ``matrix`` (d, ℓ), or ``projection_dim`` ℓ with ``max_column_norm`` (and
        optionally ``input_dim``). ``"random-gaussian"``: Theorem 5 part 2 with Remark 12's
        matrix (i.i.d. N(0, 1/d) entries, drawn afresh for every database and not
        released), σ² = E[‖Σ‖_op + ‖μ_{f|w}‖²] / (e^{2ε/ℓ} − 1); needs ``projection_dim``,
        ``input_dim`` and ``mean_sq_norm``.
    mean_sq_norm : float
        For ``"random-gaussian"``: the supremum of E‖E[f(X) | w(X)]‖².

    Returns
    -------
    Calibration
        ``dim`` = ℓ, ``projection`` names the method, ``input_dim`` = d where known.
    """
    eps = check_epsilon(epsilon)
    method = check_choice(method, "method", METHODS)
    op = check_nonnegative(op_norm, "op_norm")
    if input_dim is not None:
        input_dim = check_int(input_dim, "input_dim", minimum=1)
    if method == "deterministic":
        if mean_sq_norm is not None:
            raise InputError("argument 'mean_sq_norm' is used only with method='random-gaussian'")
        if matrix is not None:
            if projection_dim is not None or max_column_norm is not None:
                raise InputError("give either 'matrix' or 'projection_dim' with 'max_column_norm', not both")
            arr = projection_matrix(matrix, input_dim)
            input_dim, ell = arr.shape
            # log max_j ‖φ_j‖² without squaring entries that could overflow.
            log_col_sq = max(_log_sq_norm(column) for column in arr.T)
            col_sq = attempt(lambda: float(np.max(np.sum(arr ** 2, axis=0))))
            col_driver = "matrix"
        else:
            if projection_dim is None or max_column_norm is None:
                raise InputError("method='deterministic' needs 'matrix', or 'projection_dim' and 'max_column_norm'")
            ell = check_int(projection_dim, "projection_dim", minimum=1)
            column_norm = check_nonnegative(max_column_norm, "max_column_norm")
            log_col_sq, col_sq = 2.0 * safe_log(column_norm), attempt(lambda: column_norm ** 2)
            col_driver = "max_column_norm"
        # Eq. (22): Σ_j E[φ_jᵀ Σ φ_j] ≤ ℓ ‖Σ‖_op max‖φ_j‖², then Theorem 4 with d = ℓ.
        variance, log_variance = mi_variance(eps, lambda: ell * op * col_sq,
                                             math.log(ell) + safe_log(op) + log_col_sq, ell)
        drivers = ("epsilon", "op_norm", col_driver, "projection_dim")
        rule = "Theorem 5 (1): sigma^2 = E||Sigma_f|w||_op max_j ||phi_j||^2 / (e^(2 eps/l) - 1)"
    else:
        if matrix is not None or max_column_norm is not None:
            raise InputError("method='random-gaussian' draws its own matrix: drop 'matrix' and 'max_column_norm'")
        if projection_dim is None or input_dim is None or mean_sq_norm is None:
            raise InputError("method='random-gaussian' needs 'projection_dim', 'input_dim' and 'mean_sq_norm'")
        ell = check_int(projection_dim, "projection_dim", minimum=1)
        mu_sq = check_nonnegative(mean_sq_norm, "mean_sq_norm")
        variance, log_variance = mi_variance(eps, lambda: ell * (op + mu_sq),
                                             math.log(ell) + log_sum(np.array([op, mu_sq])), ell)
        drivers = ("epsilon", "op_norm", "mean_sq_norm", "projection_dim")
        rule = ("Theorem 5 (2) with Remark 12's N(0, 1/d) matrix: "
                "sigma^2 = E[||Sigma_f|w||_op + ||mu_f|w||^2] / (e^(2 eps/l) - 1)")
    if input_dim is not None and ell > input_dim:
        raise InputError(f"argument 'projection_dim' ({ell}) must be <= the query dimension 'input_dim' ({input_dim})")
    return gaussian_calibration(variance, log_variance=log_variance, notion="mi-pp", epsilon=eps, delta=None,
                                dim=ell, rule=rule,
                                drivers=drivers, projection=method, input_dim=input_dim)


def _log_sq_norm(column: np.ndarray) -> float:
    """log ‖φ‖² (−inf for a zero column), scaled so that squaring cannot overflow."""
    scale = float(np.max(np.abs(column)))
    if scale == 0.0:
        return -math.inf
    return 2.0 * math.log(scale) + math.log(float(np.sum((column / scale) ** 2)))
