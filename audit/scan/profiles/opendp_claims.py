"""Claims of OpenDP's approximate zCDP measurements, which the scan audits as (ε, δ)-DP.

OpenDP states a Gaussian threshold (``make_gaussian_threshold``) in ``Approximate<ZeroConcentratedDivergence>``:
its privacy map gives (ρ, δ), ρ-zCDP outside an event of probability at most δ (the key's noisy count crossing the
threshold on one database only), Bun and Steinke 2016, Definition 8.1 (δ-approximate ρ-zCDP). The scan's audits
take (ε, δ)-DP claims, and :func:`approximate_zcdp_claim` converts: ρ-zCDP implies (ρ + 2√(ρ ln(1/δ′)), δ′)-DP for
every δ′ > 0 (Bun and Steinke 2016, Proposition 1.3), and the event of probability ≤ δ adds its δ, so the claim is
(ρ + 2√(ρ ln(1/δ′)), δ + δ′)-DP at δ′ = :data:`CONVERSION_DELTA`. The conversion is loose next to the optimal one
(Canonne, Kamath and Steinke 2020, Proposition 12): the claim it gives is never stronger than what OpenDP states.
"""

from __future__ import annotations

import math

#: δ′ of the zCDP-to-DP conversion: 10⁻⁶, the δ the OpenDP profile calibrates its small-δ grid points to.
CONVERSION_DELTA = 1e-6
#: The OpenDP output measure this module reads.
APPROXIMATE_ZCDP = "Approximate<ZeroConcentratedDivergence>"


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP: ρ + 2√(ρ ln(1/δ)) (Bun and Steinke 2016, Proposition 1.3).

    Parameters
    ----------
    rho : float
        ρ ≥ 0 of the zCDP guarantee.
    delta : float
        δ in (0, 1) of the (ε, δ)-DP guarantee.

    Returns
    -------
    float
        ε in nats.
    """
    if not (isinstance(rho, (int, float)) and math.isfinite(rho) and rho >= 0):
        raise ValueError(f"argument 'rho': a finite number ≥ 0 expected, got {rho!r}")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"argument 'delta': a number in (0, 1) expected, got {delta!r}")
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def approximate_zcdp_claim(d_out, where: str, relation: str, conversion_delta: float = CONVERSION_DELTA) -> tuple:
    """(LibraryClaim, "") for an ``Approximate<ZeroConcentratedDivergence>`` privacy map's output (ρ, δ): the
    (ε, δ + δ′)-DP claim of the module docstring, ε = :func:`zcdp_epsilon` (ρ, δ′)."""
    from mechanisms.adapters.libraries import LibraryClaim

    rho, delta = (float(v) for v in d_out)
    epsilon = zcdp_epsilon(rho, conversion_delta)
    return LibraryClaim("dp", (epsilon, delta + conversion_delta),
                        f"{where}, {APPROXIMATE_ZCDP} (ρ = {rho:g}, δ = {delta:g}) -> (ε, δ + δ′)-DP at "
                        f"δ′ = {conversion_delta:g} (Bun and Steinke 2016, Proposition 1.3)", relation), ""
