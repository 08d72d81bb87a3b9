"""One entry point, ``calibrate(noise, notion, epsilon, ...)``, over every rule of the package.

It chooses the theorem from the noise, the notion and which quantities are given, and
rejects quantities the chosen rule would ignore, so a contradictory request fails loudly.
"""

from __future__ import annotations

from estimators.validation import InputError, check_choice

from mechanisms.claims.claim import CALIBRATION_NOTIONS as NOTIONS
from mechanisms.calibration.classical import gaussian_approx_dp, laplace_approx_dp, laplace_dp
from mechanisms.calibration.gaussian import gaussian_mi_dp, gaussian_mi_pp
from mechanisms.calibration.laplace import laplace_mi_dp, laplace_mi_pp
from mechanisms.calibration.projection import gaussian_projection_mi_pp
from mechanisms.calibration.noisy import NOISES
from mechanisms.calibration.result import Calibration

# Which optional quantities each (noise, notion) rule reads.
_ACCEPTS = {
    ("laplace", "dp"): {"dim", "l1_sensitivity"},
    ("laplace", "approx-dp"): {"dim", "delta", "l1_sensitivity"},
    ("laplace", "mi-dp"): {"dim", "cond_std", "cond_var", "l1_sensitivity"},
    ("laplace", "mi-pp"): {"dim", "cond_std", "cond_var"},
    ("gaussian", "approx-dp"): {"dim", "delta", "l2_sensitivity", "analytic"},
    ("gaussian", "mi-dp"): {"dim", "cond_var", "l2_sensitivity", "compact"},
    ("gaussian", "mi-pp"): {"dim", "cond_var", "projection_dim", "op_norm", "max_column_norm",
                            "random_projection", "mean_sq_norm"},
}

_REQUIRED = {
    ("laplace", "dp"): ("l1_sensitivity",),
    ("laplace", "approx-dp"): ("delta", "l1_sensitivity"),
    ("gaussian", "approx-dp"): ("delta", "l2_sensitivity"),
}


def calibrate(noise, notion, epsilon, *, delta=None, dim=None, l1_sensitivity=None, l2_sensitivity=None,
              cond_var=None, cond_std=None, projection_dim=None, op_norm=None, max_column_norm=None,
              random_projection=False, mean_sq_norm=None, analytic=False, compact=False) -> Calibration:
    """Calibrate Laplace or Gaussian noise for a privacy notion.

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
    notion : {"mi-dp", "mi-pp", "dp", "approx-dp"}
    epsilon : float
        > 0; nats for the MI notions.
    delta : float, optional
        δ in (0, 1) for ``"approx-dp"`` only.
    dim : int, optional
        Query dimension d (checked against per-coordinate lists; the input dimension of a
        projection).
    l1_sensitivity, l2_sensitivity : float, optional
        Δ₁(f), Δ₂(f).
    cond_var, cond_std : array_like, optional
        Per-coordinate conditional variances / standard deviations of the query (see
        :func:`laplace_mi_pp`, :func:`gaussian_mi_pp`).
    projection_dim, op_norm, max_column_norm, random_projection, mean_sq_norm : optional
        Theorem 5 (see :func:`gaussian_projection_mi_pp`); ``random_projection`` selects
        part 2 with Remark 12's Gaussian matrix.
    analytic : bool
        Gaussian (ε, δ)-DP by the Balle–Wang analytic calibration instead of the classical one.
    compact : bool
        Corollary 3's compact scalar form for Gaussian MI-DP.

    Returns
    -------
    Calibration

    Rules: Laplace dp/approx-dp: Remark 8; Laplace mi-pp: Theorem 3; Laplace mi-dp:
    Corollary 2; Gaussian approx-dp: Dwork–Roth A.1 or Balle–Wang Theorem 8; Gaussian mi-pp:
    Theorem 4, or Theorem 5 with ``projection_dim``; Gaussian mi-dp: Corollary 3.

    Examples
    --------
    >>> calibrate("laplace", "dp", 1.0, l1_sensitivity=2.0)  # b = Δ₁ / ε
    Calibration(noise='laplace', notion='dp', epsilon=1.0, dim=1, scale=2.0)
    """
    noise = check_choice(noise, "noise", NOISES)
    notion = check_choice(notion, "notion", NOTIONS)
    if (noise, notion) == ("gaussian", "dp"):
        raise InputError("argument 'notion': Gaussian noise cannot give pure eps-DP (delta = 0); "
                         "use notion 'approx-dp' or Laplace noise")
    given = {"delta": delta, "dim": dim, "l1_sensitivity": l1_sensitivity, "l2_sensitivity": l2_sensitivity,
             "cond_var": cond_var, "cond_std": cond_std, "projection_dim": projection_dim, "op_norm": op_norm,
             "max_column_norm": max_column_norm, "mean_sq_norm": mean_sq_norm,
             "random_projection": random_projection or None, "analytic": analytic or None,
             "compact": compact or None}
    accepted = _ACCEPTS[(noise, notion)]
    for name, value in given.items():
        if value is not None and name not in accepted:
            raise InputError(f"argument '{name}' does not apply to {noise} noise for {notion}")
    for name in _REQUIRED.get((noise, notion), ()):
        if given[name] is None:
            raise InputError(f"argument '{name}' is required for {noise} noise for {notion}")

    if noise == "laplace":
        if notion == "dp":
            return laplace_dp(epsilon, l1_sensitivity, dim=dim)
        if notion == "approx-dp":
            return laplace_approx_dp(epsilon, delta, l1_sensitivity, dim=dim)
        if notion == "mi-dp":
            return laplace_mi_dp(epsilon, cond_std=cond_std, cond_var=cond_var, l1_sensitivity=l1_sensitivity,
                                 dim=dim)
        return laplace_mi_pp(epsilon, cond_std=cond_std, cond_var=cond_var, dim=dim)
    if notion == "approx-dp":
        return gaussian_approx_dp(epsilon, delta, l2_sensitivity, dim=dim,
                                  method="analytic" if analytic else "classical")
    if notion == "mi-dp":
        return gaussian_mi_dp(epsilon, cond_var=cond_var, l2_sensitivity=l2_sensitivity, dim=dim, compact=compact)
    projection_args = {"projection_dim": projection_dim, "op_norm": op_norm, "max_column_norm": max_column_norm,
                       "mean_sq_norm": mean_sq_norm, "random_projection": random_projection or None}
    if any(v is not None for v in projection_args.values()):
        if cond_var is not None:
            raise InputError("argument 'cond_var' contradicts the projection arguments: Theorem 5 "
                             "uses 'op_norm' instead")
        if op_norm is None:
            raise InputError("argument 'op_norm' is required with a projection (Theorem 5)")
        if projection_dim is None:
            raise InputError("argument 'projection_dim' is required with a projection (Theorem 5)")
        if random_projection:
            return gaussian_projection_mi_pp(epsilon, op_norm, method="random-gaussian",
                                             projection_dim=projection_dim, input_dim=dim,
                                             mean_sq_norm=mean_sq_norm)
        if max_column_norm is None:
            raise InputError("argument 'max_column_norm' is required with a deterministic projection (Theorem 5)")
        return gaussian_projection_mi_pp(epsilon, op_norm, method="deterministic", projection_dim=projection_dim,
                                         max_column_norm=max_column_norm, input_dim=dim)
    if cond_var is None:
        raise InputError("argument 'cond_var' is required for gaussian noise for mi-pp (Theorem 4), "
                         "or give 'projection_dim' and 'op_norm' (Theorem 5)")
    return gaussian_mi_pp(epsilon, cond_var, dim=dim)
