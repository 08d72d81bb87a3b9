"""Noise σ of the Gaussian mechanism that meets a local-MI target μ (bits).

The local-MI paper's Fig. 1 sets σ² so that μ̄_G^CI = μ (d = 10, Δ = 1, so ‖X‖ ≤ √10), and
Fig. 3 so that μ̄_G^CD = μ for the 21-point truncated N(0, 1/4) input. Both μ̄ decrease
strictly in σ (a noisier channel is a degraded version of a less noisy one, so by data
processing MI cannot grow), so the σ is found by a bracketing root search on log σ.
"""

from __future__ import annotations

import math

from scipy import optimize

from estimators.validation import InputError, check_choice, check_positive, plain

from mechanisms.constructions.gaussian_capacity import gaussian_lmip_ci_bits
from mechanisms.constructions.gaussian_discrete_input import gaussian_lmip_cd_bits

__all__ = ["gaussian_sigma_for_lmip_bits"]


def gaussian_sigma_for_lmip_bits(mu_bits: float, method: str = "ci", *, amplitude: float | None = None,
                                 dim: int = 1, support=None, pmf=None, rtol: float = 1e-6) -> float:
    """σ such that the Gaussian mechanism's optimal LMIP equals ``mu_bits``.

    Parameters
    ----------
    mu_bits : float
        Target μ > 0 in bits.
    method : {"ci", "cd"}
        ``"ci"``: μ̄_G^CI (capacity with ‖X‖ ≤ ``amplitude`` in ``dim`` dimensions, local-MI
        paper Section II / Fig. 1); ``"cd"``: μ̄_G^CD for the discrete input ``support``/``pmf``
        (Section II / Fig. 3).
    rtol : float
        Relative tolerance on σ.

    Returns
    -------
    float
        The noise standard deviation σ.
    """
    mu_bits = check_positive(mu_bits, "mu_bits")
    check_choice(method, "method", ("ci", "cd"))
    if method == "ci":
        if amplitude is None:
            raise InputError("argument 'amplitude' is required with method='ci'")
        amplitude = check_positive(amplitude, "amplitude")

        def mu_of(sigma):  # tight tolerance: the root search needs μ̄ well beyond rtol
            return gaussian_lmip_ci_bits(sigma, amplitude, dim, rtol=1e-7).mu
        power = amplitude**2 / dim
    else:
        if support is None or pmf is None:
            raise InputError("arguments 'support' and 'pmf' are required with method='cd'")

        def mu_of(sigma):
            return gaussian_lmip_cd_bits(sigma, support, pmf)
        power = float(sum(q * x * x for x, q in zip(support, pmf)))
        if power <= 0:
            raise InputError("argument 'support' must not be the single point 0")
        dim = 1
    # Start where the average-power bound (d/2) log(1 + P/σ²) (Theorem 3) equals μ: there
    # μ̄(σ) ≤ μ. Halve σ until μ̄(σ) > μ, which brackets the root.
    hi = math.sqrt(power / math.expm1(2.0 * mu_bits * math.log(2.0) / dim))
    lo = hi
    for _ in range(60):
        lo /= 2.0
        if mu_of(lo) > mu_bits:
            break
    else:
        raise InputError(f"argument 'mu_bits' = {plain(mu_bits)} is not reachable by any σ")
    if mu_of(hi) >= mu_bits:  # only when the bound is attained (Gaussian-like input): σ = hi
        return hi
    root = optimize.brentq(lambda log_sigma: mu_of(math.exp(log_sigma)) - mu_bits,
                           math.log(lo), math.log(hi), xtol=rtol)
    return math.exp(root)
