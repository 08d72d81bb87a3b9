"""ρ-zCDP to (ε, δ)-DP (:mod:`mechanisms.claims.zcdp_to_dp`), against computations made here.

The Gaussian mechanism of noise σ and sensitivity Δ is ρ-zCDP with ρ = Δ²/(2σ²) (Bun and Steinke 2016,
Proposition 1.6), and its exact privacy curve is δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) (Balle and Wang
2018, Theorem 8): its exact ε at δ, found by bisection here, is a floor no valid conversion may go below, and
Proposition 1.3's ρ + 2√(ρ ln(1/δ)) a ceiling the tighter conversion must not exceed.
"""

import math

import numpy as np
import pytest

from mechanisms.claims.zcdp_to_dp import zcdp_epsilon, zcdp_epsilon_bun_steinke


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """Balle and Wang 2018, Theorem 8."""
    a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    return _phi(a - b) - math.exp(epsilon) * _phi(-a - b)


def _gaussian_exact_epsilon(delta: float, sigma: float, sensitivity: float) -> float:
    """The smallest ε ≥ 0 with δ(ε) ≤ δ, by bisection (δ(ε) decreases in ε)."""
    if _gaussian_delta(0.0, sigma, sensitivity) <= delta:
        return 0.0
    low, high = 0.0, 1.0
    while _gaussian_delta(high, sigma, sensitivity) > delta:
        low, high = high, 2 * high
    for _ in range(200):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if _gaussian_delta(middle, sigma, sensitivity) > delta else (low, middle)
    return high


def _proposition_12_delta(rho: float, epsilon: float) -> float:
    """inf over a dense α grid of exp((α − 1)(αρ − ε))/(α − 1) · (1 − 1/α)^α (Canonne, Kamath and Steinke 2020,
    Corollary 13), in logs."""
    t = np.logspace(-9, 9, 400_001)  # α − 1
    log_delta = t * ((1 + t) * rho - epsilon) - np.log(t) + (1 + t) * (np.log(t) - np.log1p(t))
    return float(np.exp(log_delta.min()))


@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0, 30.0])
@pytest.mark.parametrize("sensitivity", [1.0, 2.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3, 0.05, 0.5])
def test_the_conversion_lies_between_the_gaussians_exact_epsilon_and_proposition_1_3(sigma, sensitivity, delta):
    rho = sensitivity**2 / (2 * sigma**2)
    converted = zcdp_epsilon(rho, delta)
    exact = _gaussian_exact_epsilon(delta, sigma, sensitivity)
    assert exact <= converted + 1e-12
    assert converted <= rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert zcdp_epsilon_bun_steinke(rho, delta) == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)))


@pytest.mark.parametrize("rho", [1e-4, 0.005, 0.5, 8.0, 200.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-6, 0.05])
def test_a_brute_force_grid_over_the_order_reproduces_the_infimum(rho, delta):
    """At the returned ε the grid's infimum is δ (the solution of δ(ε) = δ), and a slightly smaller ε needs more;
    where δ(0) ≤ δ already, ε is 0."""
    epsilon = zcdp_epsilon(rho, delta)
    if epsilon == 0.0:
        assert _proposition_12_delta(rho, 0.0) <= delta
        return
    assert _proposition_12_delta(rho, epsilon) == pytest.approx(delta, rel=1e-4)
    assert _proposition_12_delta(rho, epsilon - 1e-3 * max(epsilon, 1e-3)) > delta


def test_the_tighter_conversion_at_the_opendp_grid():
    """ρ = ε²/2 at the scan's ε = 0.1, 1, 4 and δ′ = 10⁻⁶: below Proposition 1.3's 0.53, 5.76, 29.0."""
    for epsilon, bun_steinke in ((0.1, 0.5307), (1.0, 5.7565), (4.0, 29.026)):
        rho = epsilon**2 / 2
        assert zcdp_epsilon_bun_steinke(rho, 1e-6) == pytest.approx(bun_steinke, abs=1e-3)
        assert zcdp_epsilon(rho, 1e-6) < bun_steinke - 0.09


@pytest.mark.parametrize("rho, delta", [(0.0, 1e-6), (0.0, 5e-324), (5e-324, 1e-6), (1e-300, 1 - 1e-16),
                                         (1e-20, 1e-300), (1.0, 5e-324), (1e300, 1e-6), (3.0, 1 - 1e-6),
                                         (1e-12, 0.5)])
def test_extreme_inputs_give_a_finite_valid_epsilon(rho, delta):
    epsilon = zcdp_epsilon(rho, delta)
    assert math.isfinite(epsilon) and 0.0 <= epsilon <= zcdp_epsilon_bun_steinke(rho, delta)
    if rho == 0.0:
        assert epsilon == 0.0


def test_bad_input_names_the_argument():
    for function in (zcdp_epsilon, zcdp_epsilon_bun_steinke):
        with pytest.raises(ValueError, match="argument 'delta'"):
            function(0.5, 0.0)
        with pytest.raises(ValueError, match="argument 'delta'"):
            function(0.5, 1.0)
        with pytest.raises(ValueError, match="argument 'rho'"):
            function(-1.0, 1e-6)
        with pytest.raises(ValueError, match="argument 'rho'"):
            function(math.nan, 1e-6)
