"""ρ-zCDP to (ε, δ)-DP: the ε that a ρ-zCDP guarantee implies at a given δ, in nats.

Two conversions, both valid for every ρ-zCDP mechanism:

- :func:`zcdp_epsilon_bun_steinke`: ε = ρ + 2√(ρ ln(1/δ)) (Bun and Steinke 2016, "Concentrated Differential
  Privacy: Simplifications, Extensions, and Lower Bounds", TCC 2016, arXiv:1605.02065, Proposition 1.3);
- :func:`zcdp_epsilon`: the conversion of Canonne, Kamath and Steinke 2020, "The Discrete Gaussian for
  Differential Privacy" (NeurIPS 2020, arXiv:2004.00010), Proposition 12 applied at every order (Corollary 13),
  never larger than Proposition 1.3's (the proof is in :func:`zcdp_epsilon`'s notes).

The (ε, δ) claims that :class:`mechanisms.claims.notions.ZeroConcentratedDP` implies come from dp_accounting's
implementation of the same Proposition 12 at its default orders; this module gives ε at one δ, without
dp_accounting or SciPy.
"""

from __future__ import annotations

import math

from estimators.validation import check_nonnegative, check_probability

__all__ = ["zcdp_epsilon", "zcdp_epsilon_bun_steinke"]

#: Bisection steps of :func:`zcdp_epsilon`: each halves ln(t_hi / t_lo), which starts below 400 for any double ρ > 0
#: and δ in (0, 1) (at most ln(4 / √(ρ ln(1/δ))) with ρ ≥ 5e-324, ln(1/δ) ≥ 1.1e-16), so 80 steps are ample; the
#: loop stops once the ratio is within 1 + 1e-12.
_BISECTION_STEPS = 80


def zcdp_epsilon_bun_steinke(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP: ρ + 2√(ρ ln(1/δ)).

    Bun and Steinke 2016, "Concentrated Differential Privacy: Simplifications, Extensions, and Lower Bounds"
    (TCC 2016, arXiv:1605.02065), Proposition 1.3.

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
    rho = check_nonnegative(rho, "rho")
    delta = check_probability(delta, "delta")
    return rho + 2.0 * math.sqrt(rho * -math.log(delta))


def _epsilon_at_order(rho: float, log_inv_delta: float, t: float) -> float:
    """ε at order α = 1 + t: αρ + ln(1 − 1/α) + (ln(1/δ) − ln α)/(α − 1), in t for accuracy near α = 1."""
    log_alpha = math.log1p(t)
    return (1.0 + t) * rho + (math.log(t) - log_alpha) + (log_inv_delta - log_alpha) / t


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP, by the conversion of Canonne, Kamath and Steinke 2020.

    Canonne, Kamath and Steinke 2020, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020,
    arXiv:2004.00010), Proposition 12: an (α, τ)-Rényi-DP mechanism is (ε, δ)-DP for
    δ = exp((α − 1)(τ − ε))/(α − 1) · (1 − 1/α)^α; ρ-zCDP is (α, αρ)-RDP at every α > 1, so (Corollary 13)
    δ(ε) = inf over α > 1 of exp((α − 1)(αρ − ε))/(α − 1) · (1 − 1/α)^α. Solved for ε at ``delta``, each order
    gives ε_α = αρ + ln(1 − 1/α) + (ln(1/δ) − ln α)/(α − 1), and the answer is inf over α of ε_α.

    Parameters
    ----------
    rho : float
        ρ ≥ 0 of the zCDP guarantee.
    delta : float
        δ in (0, 1) of the (ε, δ)-DP guarantee (subnormal δ is fine).

    Returns
    -------
    float
        ε ≥ 0 in nats; 0 at ρ = 0 (the output laws on neighbours are equal).

    Notes
    -----
    With t = α − 1 and L = ln(1/δ), dε_α/dα = ρ − (L − ln α)/t², so the minimising order is the one root of the
    increasing g(t) = ρt² + ln(1 + t) − L; :func:`_epsilon_at_order` at any t is a valid ε, so the bisection
    (on log t, bracket [min(L, √(L/ρ))/4, √(L/ρ)], where g < 0 and g ≥ 0, :data:`_BISECTION_STEPS` steps) returns
    ε_α at the bracket's upper end and can only err upward. It is never larger than Proposition 1.3's
    ρ + 2√(ρL) (Bun and Steinke 2016): that bound is inf over α of (α − 1)(αρ − ε) = −L, and Proposition 12's
    factor (1 − 1/α)^α/(α − 1) = (α − 1)^(α − 1)/α^α is below 1 for α > 1 (its logarithm has derivative
    ln(1 − 1/α) < 0 and tends to 0 at α → 1); the minimum of both is returned so that rounding cannot break it.
    """
    rho = check_nonnegative(rho, "rho")
    delta = check_probability(delta, "delta")
    if rho == 0.0:
        return 0.0
    log_inv_delta = -math.log(delta)
    # √L/√ρ, not √(L/ρ): L/ρ overflows for subnormal ρ.
    high = math.sqrt(log_inv_delta) / math.sqrt(rho)
    low = min(log_inv_delta, high) / 4.0  # g(low) ≤ L/16 + L/4 − L < 0
    for _ in range(_BISECTION_STEPS):
        if high <= low * (1.0 + 1e-12):
            break
        middle = math.sqrt(low * high)
        if rho * middle * middle + math.log1p(middle) - log_inv_delta < 0.0:
            low = middle
        else:
            high = middle
    epsilon = _epsilon_at_order(rho, log_inv_delta, high)
    return max(0.0, min(epsilon, zcdp_epsilon_bun_steinke(rho, delta)))
