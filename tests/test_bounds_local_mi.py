"""Local-MI paper conversions (Theorems 1, 2, Lemma 1, Eq. 7) against independent computations.

Every expected value is computed here: binary-channel capacities by maximising the mutual
information over the input law, the conversion maxima by grid search over (p0, p1), and
Lemma 1's integral against closed-form KL divergences.
"""

import json
import math

import numpy as np
import pytest

from audit.bounds.local_mi.binary import bac_capacity_bits, bernoulli_kl_bits, binary_entropy_bits
from audit.bounds.local_mi.conversions import (
    ldp_delta_from_lmip_bits,
    ldp_floor_bits,
    lip_delta_from_lmip_bits,
    lip_floor_bits,
    lmip_from_privacy_curve_bits,
)
from audit.cli.main import main
from estimators.validation import InputError
from mechanisms.claims.dp_curves import gaussian_ldp_curve, laplace_ldp_curve, pure_ldp_curve

LOG2E = 1.0 / math.log(2.0)


def h2(p):
    p = np.clip(np.asarray(p, float), 0.0, 1.0)  # rounding in q* can step past 0 or 1
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -p * np.log2(p) - (1 - p) * np.log2(1 - p)
    return np.nan_to_num(out)


def binary_mi(pi, a, b):
    """I(A; B) in bits, P[A=1] = pi, P[B=1|A=0] = a, P[B=1|A=1] = b."""
    q = (1 - pi) * a + pi * b
    return h2(q) - (1 - pi) * h2(a) - pi * h2(b)


def brute_capacity(a, b):
    """max over pi of I(A; B), from the stationarity condition dI/dpi = 0 (MI is concave in pi).

    dI/dpi = (b − a) log((1 − q)/q) − H(b) + H(a) = 0 gives the output law
    q* = 1/(1 + 2^{(H(b) − H(a))/(b − a)}), hence pi* = (q* − a)/(b − a).
    """
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    diff = np.where(a == b, 1.0, b - a)
    with np.errstate(over="ignore"):
        q = 1.0 / (1.0 + np.exp2((h2(b) - h2(a)) / diff))
    pi = np.clip((q - a) / diff, 0.0, 1.0)  # only rounding leaves [0, 1]
    return np.where(a == b, 0.0, binary_mi(pi, a, b))


# -- Eq. (7) --------------------------------------------------------------------------------

@pytest.mark.parametrize("e0,e1", [
    (0.1, 0.2), (0.2, 0.1), (0.1, 0.95), (0.7, 0.2), (0.9, 0.8), (0.6, 0.3), (0.0, 0.0),
    (0.0, 0.3), (0.3, 0.0), (1.0, 1.0), (0.4, 0.6), (0.5, 0.5), (0.05, 0.05), (0.999, 0.01),
])
def test_bac_capacity_matches_input_law_grid(e0, e1):
    pi = np.linspace(0.0, 1.0, 200001)
    expected = binary_mi(pi, e0, 1.0 - e1).max()  # ε1 = P[B=0|A=1]
    assert bac_capacity_bits(e0, e1) == pytest.approx(expected, abs=1e-8)


def test_bac_capacity_vectorises_and_bsc_closed_form():
    e = np.array([0.0, 0.1, 0.25, 0.5])
    np.testing.assert_allclose(bac_capacity_bits(e, e), 1.0 - h2(e), atol=1e-12)


def test_binary_helpers_against_definitions():
    assert binary_entropy_bits(0.25) == pytest.approx(-(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75)))
    p1, p0 = 0.3, 0.6  # the paper's form below Eq. (9)
    paper = math.log2((1 - p1) / (1 - p0)) + p1 * math.log2(p1 * (1 - p0) / (p0 * (1 - p1)))
    assert bernoulli_kl_bits(p1, p0) == pytest.approx(paper, rel=1e-12)


# -- Theorem 1(a) and Theorem 2(a): maxima against a grid search over (p0, p1) -----------------

GRID = np.linspace(0.0, 1.0, 801)  # step 1/800
P0, P1 = np.meshgrid(GRID, GRID, indexing="ij")


@pytest.fixture(scope="module")
def grid_capacity():
    return brute_capacity(P0, P1)


@pytest.mark.parametrize("mu,eps", [(0.1, 0.5), (0.1, 2.0), (0.3, 1.0), (0.01, 0.2), (0.5, 4.0)])
def test_ldp_conversion_matches_grid_search(grid_capacity, mu, eps):
    feasible = grid_capacity <= mu
    objective = np.maximum(0.0, np.maximum(P0 - math.exp(eps) * P1, P1 - math.exp(eps) * P0))
    grid_best = objective[feasible].max()
    delta = ldp_delta_from_lmip_bits(mu, eps)
    assert delta >= grid_best - 1e-9  # the optimiser never does worse than the grid
    assert delta <= grid_best + 4e-3  # and the grid (step 1/800) comes close to it


@pytest.mark.parametrize("mu,eps", [(0.1, 0.5), (0.1, 2.0), (0.01, 0.3), (0.5, 1.0)])
def test_lip_conversion_matches_grid_search(mu, eps):
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.nan_to_num(P1 * np.log2(P1 / P0), nan=0.0, posinf=np.inf) + \
            np.nan_to_num((1 - P1) * np.log2((1 - P1) / (1 - P0)), nan=0.0, posinf=np.inf)
        kl = np.where(P1 == 0, -np.log2(1 - P0), kl)
        kl = np.where(P1 == 1, -np.log2(P0), kl)
    feasible = kl <= mu
    objective = np.maximum(0.0, np.maximum(P0 - math.exp(eps) * P1, math.exp(-eps) * P1 - P0))
    grid_best = objective[feasible].max()
    delta = lip_delta_from_lmip_bits(mu, eps)
    assert delta >= grid_best - 1e-9
    assert delta <= grid_best + 4e-3


def test_ldp_conversion_is_accurate_to_1e6_against_fine_1d_search():
    # Independent 1-D refinement: for each p0 on a fine grid, the largest p1 with brute-force
    # capacity ≤ μ (bisection on the brute-force capacity), then the best p1 − e^ε p0.
    mu, eps = 0.2, 1.0
    p0 = np.linspace(0.0, 0.3, 30001)
    lo, hi = p0.copy(), np.ones_like(p0)
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        ok = brute_capacity(p0, mid) <= mu
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    expected = np.max(lo - math.exp(eps) * p0)
    assert ldp_delta_from_lmip_bits(mu, eps) == pytest.approx(expected, abs=1e-6)


def test_curves_vectorise_and_limits():
    eps = np.array([0.1, 1.0, 5.0, 40.0])
    d = ldp_delta_from_lmip_bits(0.1, eps)
    assert d.shape == (4,) and np.all(np.diff(d) <= 1e-12)
    # Paper, after Thm 1: δ ≥ p̄_μ and → p̄_μ as ε → ∞; μ ≥ 1 bit gives δ = 1.
    assert np.all(d >= ldp_floor_bits(0.1) - 1e-9)
    assert d[-1] == pytest.approx(ldp_floor_bits(0.1), abs=1e-7)
    np.testing.assert_allclose(ldp_delta_from_lmip_bits(np.array([1.0, 1.5]), 3.0), 1.0)
    assert ldp_delta_from_lmip_bits(0.0, 1.0) == pytest.approx(0.0, abs=1e-12)
    # Fig. 3: the LIP curve saturates at 1 − 2^−μ.
    lip = lip_delta_from_lmip_bits(np.array([0.1, 0.01]), 40.0)
    np.testing.assert_allclose(lip, 1 - 2.0 ** -np.array([0.1, 0.01]), atol=1e-7)
    assert lip_floor_bits(0.1) == pytest.approx(1 - 2 ** -0.1)
    # smaller μ gives a smaller δ (first remark after Thm 1)
    assert ldp_delta_from_lmip_bits(0.05, 1.0) < ldp_delta_from_lmip_bits(0.1, 1.0)


@pytest.mark.parametrize("mu", [0.01, 0.1, 0.5, 0.9])
def test_ldp_floor_solves_its_equation(mu):
    p = ldp_floor_bits(mu)
    assert 0 < p < 1
    assert h2(p) / p == pytest.approx(-math.log2(2 ** mu - 1), rel=1e-9)
    # it is the Z-channel edge: capacity with p0 = 0, p1 = p̄ equals μ
    assert brute_capacity(0.0, p) == pytest.approx(mu, abs=1e-9)


# -- Theorem 1(b) via Lemma 1, against closed-form KL divergences --------------------------------

@pytest.mark.parametrize("sigma,sens", [(1.0, 1.0), (2.0, 1.0), (0.5, 3.0), (10.0, 2.0)])
def test_mu_ci_of_gaussian_curve_is_gaussian_kl(sigma, sens):
    # KL(N(0,σ²) ‖ N(Δ,σ²)) = Δ²/(2σ²) nats; the Gaussian curve is symmetric, so Lemma 1 is exact.
    expected = LOG2E * sens**2 / (2 * sigma**2)
    assert lmip_from_privacy_curve_bits(gaussian_ldp_curve(sigma, sens)) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("b,sens", [(1.0, 1.0), (0.5, 2.0), (3.0, 1.0)])
def test_mu_ci_of_laplace_curve_is_laplace_kl(b, sens):
    r = sens / b  # KL(Lap(0,b) ‖ Lap(Δ,b)) = r + e^{−r} − 1 nats
    assert lmip_from_privacy_curve_bits(laplace_ldp_curve(b, sens)) == pytest.approx(LOG2E * (r + math.exp(-r) - 1), rel=1e-8)


@pytest.mark.parametrize("eps0", [0.1, 1.0, 3.0])
def test_mu_ci_of_pure_dp_is_randomized_response_kl(eps0):
    p = math.exp(eps0) / (1 + math.exp(eps0))
    kl_bits = p * math.log2(p / (1 - p)) + (1 - p) * math.log2((1 - p) / p)
    assert lmip_from_privacy_curve_bits(pure_ldp_curve(eps0)) == pytest.approx(kl_bits, rel=1e-8)


# -- bad input ---------------------------------------------------------------------------------

def test_bad_parameters_are_rejected_by_name():
    with pytest.raises(InputError, match="'mu'"):
        ldp_delta_from_lmip_bits(-0.1, 1.0)
    with pytest.raises(InputError, match="'epsilon'"):
        ldp_delta_from_lmip_bits(0.1, 0.0)
    with pytest.raises(InputError, match="'epsilon'"):
        lip_delta_from_lmip_bits(0.1, -1.0)
    with pytest.raises(InputError, match="'mu'"):
        lip_floor_bits(float("nan"))
    with pytest.raises(InputError, match="'e0'"):
        bac_capacity_bits(1.2, 0.1)
    with pytest.raises(InputError, match="'e1'"):
        bac_capacity_bits(0.1, -0.1)
    with pytest.raises(InputError, match="'sigma'"):
        gaussian_ldp_curve(0.0, 1.0)
    with pytest.raises(InputError, match="'curve'"):
        lmip_from_privacy_curve_bits(lambda e: e)


# -- the CLI -----------------------------------------------------------------------------------

def run_cli(capsys, *argv):
    assert main(["bounds", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_bac_capacity_units(capsys):
    bits = run_cli(capsys, "bac-capacity", "--p0", "0.1", "--p1", "0.2", "--bits")
    nats = run_cli(capsys, "bac-capacity", "--p0", "0.1", "--p1", "0.2")
    expected = brute_capacity(0.1, 0.8)
    assert bits["unit"] == "bits" and bits["capacity"] == pytest.approx(expected, abs=1e-9)
    assert nats["unit"] == "nats" and nats["capacity"] == pytest.approx(expected * math.log(2), abs=1e-9)
    assert "Eq. (7)" in bits["source"]


def test_cli_conversions_take_mu_in_the_selected_unit(capsys):
    in_bits = run_cli(capsys, "ldp-from-lmip", "--mu", "0.1", "--epsilon", "1", "--bits")
    in_nats = run_cli(capsys, "ldp-from-lmip", "--mu", str(0.1 * math.log(2)), "--epsilon", "1")
    assert in_bits["delta"] == pytest.approx(in_nats["delta"], abs=1e-9)
    floor = run_cli(capsys, "ldp-floor", "--mu", "0.1", "--bits")
    assert h2(floor["delta"]) / floor["delta"] == pytest.approx(-math.log2(2 ** 0.1 - 1), rel=1e-9)
    lip = run_cli(capsys, "lip-from-lmip", "--mu", "0.1", "--epsilon", "1", "--bits")
    assert lip["delta"] >= 1 - 2 ** -0.1
    lip_floor = run_cli(capsys, "lip-floor", "--mu", "0.1", "--bits")
    assert lip_floor["delta"] == pytest.approx(1 - 2 ** -0.1)


def test_cli_lmip_from_ldp_curves(capsys):
    g = run_cli(capsys, "lmip-from-ldp", "--gaussian-sigma", "2", "--sensitivity", "1")
    assert g["unit"] == "nats" and g["mu"] == pytest.approx(1 / 8, rel=1e-8)  # Δ²/(2σ²) nats
    lap = run_cli(capsys, "lmip-from-ldp", "--laplace-scale", "1", "--sensitivity", "1", "--bits")
    assert lap["mu"] == pytest.approx(LOG2E * math.exp(-1), rel=1e-8)
    pure = run_cli(capsys, "lmip-from-ldp", "--pure-epsilon", "1")
    assert pure["mu"] == pytest.approx(math.tanh(0.5), rel=1e-8)  # ε tanh(ε/2) nats


def test_cli_bad_input_exits_2(capsys):
    assert main(["bounds", "ldp-from-lmip", "--mu", "-1", "--epsilon", "1", "--json"]) == 2
    assert "'--mu'" in capsys.readouterr().err
    assert main(["bounds", "bac-capacity", "--p0", "1.5", "--p1", "0.1"]) == 2
    assert "'--p0'" in capsys.readouterr().err
    assert main(["bounds", "lmip-from-ldp", "--gaussian-sigma", "1"]) == 2
    assert "'--sensitivity'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, flag", [
    (["gaussian-ldp", "--sigma", "1", "--sensitivity", "0", "--epsilon", "1"], "sensitivity"),
    (["gaussian-ldp", "--sigma", "1", "--sensitivity", "-2", "--epsilon", "1"], "sensitivity"),
    (["gaussian-ldp", "--sigma", "0", "--sensitivity", "1", "--epsilon", "1"], "sigma"),
    (["gaussian-ldp", "--sigma", "1", "--sensitivity", "1", "--epsilon", "nan"], "epsilon"),
    (["lmip-from-ldp", "--gaussian-sigma", "1", "--sensitivity", "0"], "sensitivity"),
    (["lmip-from-ldp", "--gaussian-sigma", "-1", "--sensitivity", "1"], "gaussian-sigma"),
    (["lmip-from-ldp", "--laplace-scale", "1", "--sensitivity", "inf"], "sensitivity"),
    (["lmip-from-ldp", "--laplace-scale", "0", "--sensitivity", "1"], "laplace-scale"),
    (["lmip-from-ldp", "--pure-epsilon", "0"], "pure-epsilon"),
])
def test_cli_errors_name_the_flag_not_the_library_parameter(argv, flag, capsys):
    assert main(["bounds", *argv]) == 2
    err = capsys.readouterr().err
    assert f"argument '--{flag}'" in err
    assert "l1_sensitivity" not in err and "l2_sensitivity" not in err and "'scale'" not in err


@pytest.mark.parametrize("curve", [pure_ldp_curve(1.0), gaussian_ldp_curve(1.0, 1.0), laplace_ldp_curve(1.0, 1.0)])
@pytest.mark.parametrize("bad", [-0.5, float("nan"), [0.5, -1.0]])
def test_privacy_curves_refuse_epsilon_outside_their_domain(curve, bad):
    # δ(ε) is defined for ε ≥ 0: the pure curve gave 0.568 at ε = −0.5 and 0 at NaN, silently.
    with pytest.raises(InputError, match="epsilon"):
        curve(bad)
