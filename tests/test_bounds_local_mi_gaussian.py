"""The Gaussian mechanism in the local-MI paper: capacity (CI-LMIP), CD-LMIP, LIP curve, Thm 3.

Expected values come from independent computations written here: the BPSK mutual information
and the uniform-sphere mutual information by numerical integration (scipy quad, scipy.stats),
Gaussian-mixture entropy by quad, closed-form hockey-stick divergences of a symmetric
two-point input, and a direct log-det.
"""

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from audit.bounds.local_mi.conversions import lmip_from_privacy_curve_bits
from audit.cli.main import main
from estimators.validation import InputError
from mechanisms.calibration import gaussian_sigma_for_lmip_bits
from mechanisms.claims.dp_curves import gaussian_ldp_curve
from mechanisms.constructions.gaussian_capacity import gaussian_capacity_bounds_bits, gaussian_lmip_ci_bits
from mechanisms.constructions.gaussian_discrete_input import (gaussian_lip_curve, gaussian_lmip_cd_bits, gaussian_noise_lmip_bits, truncated_gaussian_input)

LOG2E = 1.0 / math.log(2.0)


def mixture_mi_bits(points, weights, sigma):
    """I(X; X + N(0, σ²)) = h(Y) − h(N) for a discrete X, by quad of the mixture entropy."""
    points, weights = np.asarray(points, float), np.asarray(weights, float)
    # The normal density written out: quad calls it point by point, where scipy.stats.norm.pdf
    # costs tens of microseconds a call.
    scaled_weights = weights / (sigma * math.sqrt(2 * math.pi))

    def density(y):
        return float(np.sum(scaled_weights * np.exp(-0.5 * ((y - points) / sigma) ** 2)))

    def integrand(y):
        f = density(y)
        return -f * math.log(f) if f > 0 else 0.0

    lo, hi = points.min() - 12 * sigma, points.max() + 12 * sigma
    h_y, _ = integrate.quad(integrand, lo, hi, limit=500, points=list(points), epsabs=1e-12)
    return LOG2E * (h_y - 0.5 * math.log(2 * math.pi * math.e * sigma**2))


@pytest.mark.parametrize("amplitude,sigma", [(0.5, 1.0), (1.0, 1.0), (1.5, 1.0), (1.0, 2.0)])
def test_capacity_d1_matches_bpsk_where_binary_input_is_optimal(amplitude, sigma):
    # Smith (1971): for A/σ below about 1.6 the capacity-achieving input is ±A equiprobable.
    expected = mixture_mi_bits([-amplitude, amplitude], [0.5, 0.5], sigma)
    result = gaussian_lmip_ci_bits(sigma, amplitude, 1, rtol=1e-7)
    assert result.kind == "exact" and result.unit == "bits"
    assert result.mu <= result.upper and result.gap == pytest.approx(result.upper - result.mu)
    assert result.mu == pytest.approx(expected, abs=result.gap + 2e-6)
    assert result.radii[-1] == pytest.approx(amplitude)


def test_capacity_d1_above_binary_at_high_snr_and_below_power_bound():
    # A/σ = 3: more than two mass points; capacity exceeds BPSK but not the average-power bound.
    result = gaussian_lmip_ci_bits(1.0, 3.0, 1)
    bpsk = mixture_mi_bits([-3.0, 3.0], [0.5, 0.5], 1.0)
    three_points = max(mixture_mi_bits([-3.0, 0.0, 3.0], [w, 1 - 2 * w, w], 1.0) for w in np.linspace(0.2, 0.45, 11))
    assert result.mu >= three_points - 1e-6 > bpsk
    assert result.upper <= 0.5 * math.log2(1 + 9.0)
    assert 0.0 < result.gap < 1e-3


def sphere_mi_bits(radius, sigma, dim):
    """I(X; X + N) with X uniform on the sphere of given radius, via the noncentral χ² law of
    S = ‖Y‖²/σ²: h(Y) = h(S) + E[log(area(S^{d−1}) T^{d−1} / (2T/σ²))] with T = ‖Y‖ = σ√S."""
    law = stats.ncx2(dim, (radius / sigma) ** 2)
    log_area = math.log(2) + dim / 2 * math.log(math.pi) - math.lgamma(dim / 2)
    hi = law.ppf(1 - 1e-15)

    def integrand(s):
        p = law.pdf(s)
        if p <= 0:
            return 0.0
        t = sigma * math.sqrt(s)
        # f_Y(y) = p_S(s) · (ds/dt) / (area · t^{d−1}), ds/dt = 2t/σ²
        return p * (-math.log(p) - math.log(2 * t / sigma**2) + log_area + (dim - 1) * math.log(t))

    h_y, _ = integrate.quad(integrand, 0.0, hi, limit=500, epsabs=1e-12)
    return LOG2E * (h_y - dim / 2 * math.log(2 * math.pi * math.e * sigma**2))


def test_capacity_d10_small_amplitude_is_the_uniform_sphere_input():
    amplitude, sigma, dim = 1.0, 1.0, 10
    result = gaussian_lmip_ci_bits(sigma, amplitude, dim, rtol=1e-7)
    expected = sphere_mi_bits(amplitude, sigma, dim)
    assert result.mu == pytest.approx(expected, abs=result.gap + 2e-6)
    heaviest = int(np.argmax(result.weights))
    assert result.radii[heaviest] == pytest.approx(amplitude) and result.weights[heaviest] > 0.99


@pytest.mark.parametrize("sigma", [1.0, math.sqrt(20.0)])
def test_capacity_d10_between_simple_bounds(sigma):
    amplitude, dim = math.sqrt(10.0), 10  # the paper's Δ = 1
    result = gaussian_lmip_ci_bits(sigma, amplitude, dim)
    lower, upper = gaussian_capacity_bounds_bits(sigma, amplitude, dim, rtol=1e-7)
    # cube-input lower bound: d × BPSK with amplitude Δ (binary optimal in 1-D here), by quad
    cube = dim * mixture_mi_bits([-1.0, 1.0], [0.5, 0.5], sigma)
    assert lower == pytest.approx(cube, abs=1e-5)
    assert cube - result.gap - 1e-6 <= result.mu <= result.upper <= 0.5 * dim * math.log2(1 + 1 / sigma**2) + 1e-9
    assert result.upper >= cube - 1e-6
    assert upper == pytest.approx(0.5 * dim * math.log2(1 + 1 / sigma**2))


def test_fig2_bound_lies_above_the_gaussian_capacity():
    # Fig. 2: μ^CI from the Gaussian LDP curve (sensitivity 2√d Δ) ≥ μ̄_G^CI, with Δ = 1.
    for dim, sigma2 in [(1, 1.0), (1, 50.0), (10, 20.0)]:
        sigma = math.sqrt(sigma2)
        bound = lmip_from_privacy_curve_bits(gaussian_ldp_curve(sigma, 2 * math.sqrt(dim)))
        assert bound == pytest.approx(LOG2E * 2 * dim / sigma2, rel=1e-8)  # KL of the two extreme inputs
        assert bound >= gaussian_lmip_ci_bits(sigma, math.sqrt(dim), dim).upper


def test_cd_lmip_matches_mixture_entropy_by_quad():
    support, pmf = truncated_gaussian_input()
    assert support.size == 21 and pmf.sum() == pytest.approx(1.0)
    for sigma in (0.5, 2.0):
        assert gaussian_lmip_cd_bits(sigma, support, pmf) == pytest.approx(mixture_mi_bits(support, pmf, sigma), abs=1e-7)


def two_point_lip_delta(a, sigma, eps):
    """δ̄^LIP(ε) for X = ±a equiprobable, in closed form (the likelihood ratio is monotone in y)."""
    alpha = math.exp(eps)
    # H_α(P_Y ‖ P_{Y|a}): the event {y < y1} where ½(1 + e^{−2ay/σ²}) > α
    y1 = -sigma**2 / (2 * a) * math.log(2 * alpha - 1)
    mix_over = 0.5 * stats.norm.cdf(y1, a, sigma) + 0.5 * stats.norm.cdf(y1, -a, sigma) - alpha * stats.norm.cdf(y1, a, sigma)
    # H_α(P_{Y|a} ‖ P_Y): the event {y > y2} where ½(1 + e^{−2ay/σ²}) < 1/α (empty when α ≥ 2)
    cond_over = 0.0
    if alpha < 2:
        y2 = -sigma**2 / (2 * a) * math.log(2 / alpha - 1)
        cond_over = stats.norm.sf(y2, a, sigma) - alpha * 0.5 * (stats.norm.sf(y2, a, sigma) + stats.norm.sf(y2, -a, sigma))
    return max(mix_over, cond_over / alpha)


@pytest.mark.parametrize("a,sigma", [(1.0, 1.0), (0.5, 2.0)])
def test_lip_curve_matches_two_point_closed_form(a, sigma):
    curve = gaussian_lip_curve(sigma, [-a, a], [0.5, 0.5])
    eps = np.array([0.05, 0.3, 0.6, 1.0, 2.0])
    expected = [two_point_lip_delta(a, sigma, e) for e in eps]
    np.testing.assert_allclose(curve(eps), expected, atol=2e-6)
    assert curve(0.3) == pytest.approx(expected[1], abs=2e-6)


def test_mu_cd_from_lip_curve_bounds_the_true_mi():
    support, pmf = truncated_gaussian_input()
    for sigma in (1.0, 3.0):
        bound = lmip_from_privacy_curve_bits(gaussian_lip_curve(sigma, support, pmf))
        assert bound >= mixture_mi_bits(support, pmf, sigma)


def test_theorem3_matches_direct_log_det():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(4, 4)), rng.normal(size=(4, 6))
    k_x, k_y = a @ a.T, b @ b.T + 0.1 * np.eye(4)
    direct = 0.5 * math.log2(np.linalg.det(np.eye(4) + np.linalg.inv(k_y) @ k_x))
    assert gaussian_noise_lmip_bits(k_x, k_y) == pytest.approx(direct, rel=1e-10)
    # the best-case pair (Δ² I, σ² I) gives (d/2) log(1 + Δ²/σ²)
    assert gaussian_noise_lmip_bits(np.eye(3), 4 * np.eye(3)) == pytest.approx(1.5 * math.log2(1.25))


def test_bad_gaussian_inputs():
    with pytest.raises(InputError, match="'pmf'"):
        gaussian_lmip_cd_bits(1.0, [0.0, 1.0], [0.5, 0.6])
    with pytest.raises(InputError, match="'pmf'"):
        gaussian_lip_curve(1.0, [0.0, 1.0], [1.5, -0.5])
    with pytest.raises(InputError, match="'support'"):
        gaussian_lmip_cd_bits(1.0, [0.0, 0.0], [0.5, 0.5])
    with pytest.raises(InputError, match="'sigma'"):
        gaussian_lmip_ci_bits(-1.0, 1.0)
    with pytest.raises(InputError, match="'dim'"):
        gaussian_lmip_ci_bits(1.0, 1.0, 0)
    with pytest.raises(InputError, match="'k_y'"):
        gaussian_noise_lmip_bits(np.eye(2), np.zeros((2, 2)))
    with pytest.raises(InputError, match="'k_x'"):
        gaussian_noise_lmip_bits(np.eye(3), np.eye(2))
    with pytest.raises(InputError, match="'epsilon'"):
        gaussian_lip_curve(1.0, [0.0, 1.0], [0.5, 0.5])(-1.0)


def run_cli(capsys, *argv):
    assert main(["bounds", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_gaussian_calculators(capsys):
    ldp = run_cli(capsys, "gaussian-ldp", "--sigma", "1", "--sensitivity", "2", "--epsilon", "1")
    # Balle–Wang closed form written out: Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ)
    assert ldp["delta"] == pytest.approx(stats.norm.cdf(0.5) - math.e * stats.norm.cdf(-1.5), abs=1e-12)
    ci = run_cli(capsys, "gaussian-lmip-ci", "--sigma", "1", "--amplitude", "0.5", "--bits")
    assert ci["kind"] == "exact" and ci["unit"] == "bits"
    assert ci["mu"] == pytest.approx(mixture_mi_bits([-0.5, 0.5], [0.5, 0.5], 1.0), abs=ci["gap"] + 2e-6)
    ci_nats = run_cli(capsys, "gaussian-lmip-ci", "--sigma", "1", "--amplitude", "0.5")
    assert ci_nats["mu"] == pytest.approx(ci["mu"] * math.log(2), rel=1e-9)
    cd = run_cli(capsys, "gaussian-lmip-cd", "--sigma", "1", "--support=-1,1", "--pmf", "0.5,0.5", "--bits")
    assert cd["mu"] == pytest.approx(mixture_mi_bits([-1, 1], [0.5, 0.5], 1.0), abs=1e-7)
    lip = run_cli(capsys, "gaussian-lip", "--sigma", "1", "--support=-1,1", "--pmf", "0.5,0.5", "--epsilon", "0.3")
    assert lip["delta"] == pytest.approx(two_point_lip_delta(1.0, 1.0, 0.3), abs=2e-6)
    mu = run_cli(capsys, "lmip-from-lip", "--sigma", "1", "--support=-1,1", "--pmf", "0.5,0.5", "--bits")
    assert mu["mu"] >= cd["mu"]
    assert main(["bounds", "gaussian-lmip-cd", "--sigma", "1", "--support=-1,1", "--pmf", "0.5,0.6"]) == 2
    assert "'--pmf'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, why", [
    (["gaussian-ldp", "--sigma", "1", "--sensitivity", "2", "--epsilon", "1"],
     "σ and the sensitivity are in the inputs' units, ε is LDP's natural-log ratio bound and δ a probability"),
    (["gaussian-lip", "--sigma", "1", "--support=-1,1", "--pmf", "0.5,0.5", "--epsilon", "0.3"],
     "σ and the support are in the inputs' units, the pmf and δ are probabilities and ε is LIP's natural-log ratio "
     "bound"),
])
def test_the_gaussian_curves_print_no_unit_and_refuse_bits(capsys, argv, why):
    # No number these two read or print is an information value, so --bits would convert nothing.
    assert "unit" not in run_cli(capsys, *argv)
    assert main(["bounds", *argv, "--bits"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"miaudit bounds: error: argument '--bits': miaudit bounds {argv[0]} reads and prints no information value "
        f"({why}), so nothing is in nats or bits; drop --bits")
