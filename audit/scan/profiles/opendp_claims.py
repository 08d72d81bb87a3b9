"""Claims of OpenDP's approximate zCDP measurements, which the scan audits as (ε, δ)-DP.

OpenDP states a Gaussian threshold (``make_gaussian_threshold``) in ``Approximate<ZeroConcentratedDivergence>``:
its privacy map gives (ρ, δ), ρ-zCDP outside an event of probability at most δ (the key's noisy count crossing the
threshold on one database only), Bun and Steinke 2016, Definition 8.1 (δ-approximate ρ-zCDP). The scan's audits
take (ε, δ)-DP claims, and :func:`approximate_zcdp_claim` converts: ρ-zCDP implies (ε′, δ′)-DP for every
δ′ in (0, 1) with ε′ = :func:`mechanisms.claims.zcdp_to_dp.zcdp_epsilon` (ρ, δ′) (Canonne, Kamath and Steinke 2020,
"The Discrete Gaussian for Differential Privacy", Proposition 12 at every Rényi order, Corollary 13), and the event
of probability ≤ δ adds its δ, so the claim is (ε′, δ + δ′)-DP at δ′ = :data:`CONVERSION_DELTA`. The conversion is
valid for every ρ-zCDP mechanism, so the claim is never stronger than what OpenDP states; at the grid's ρ = ε²/2 it is
ε′ ≈ 0.43, 5.22 and 27.8 at ε = 0.1, 1 and 4 (Bun and Steinke 2016, Proposition 1.3's ρ + 2√(ρ ln(1/δ′)) gives
0.53, 5.76 and 29.0).
"""

from __future__ import annotations

from mechanisms.claims.zcdp_to_dp import zcdp_epsilon

#: δ′ of the zCDP-to-DP conversion: 10⁻⁶, the δ the OpenDP profile calibrates its small-δ grid points to.
CONVERSION_DELTA = 1e-6
#: The OpenDP output measure this module reads.
APPROXIMATE_ZCDP = "Approximate<ZeroConcentratedDivergence>"


def approximate_zcdp_claim(d_out, where: str, relation: str, conversion_delta: float = CONVERSION_DELTA) -> tuple:
    """(LibraryClaim, "") for an ``Approximate<ZeroConcentratedDivergence>`` privacy map's output (ρ, δ): the
    (ε, δ + δ′)-DP claim of the module docstring, ε = :func:`mechanisms.claims.zcdp_to_dp.zcdp_epsilon` (ρ, δ′)."""
    from mechanisms.adapters.libraries import LibraryClaim

    rho, delta = (float(v) for v in d_out)
    epsilon = zcdp_epsilon(rho, conversion_delta)
    return LibraryClaim("dp", (epsilon, delta + conversion_delta),
                        f"{where}, {APPROXIMATE_ZCDP} (ρ = {rho:g}, δ = {delta:g}) -> (ε, δ + δ′)-DP at "
                        f"δ′ = {conversion_delta:g} (Canonne, Kamath and Steinke 2020, Proposition 12, Corollary 13)",
                        relation), ""
