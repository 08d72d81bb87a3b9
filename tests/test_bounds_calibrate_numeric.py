"""The numeric cases of issue 12 (A5, C, E) for ``miaudit bounds`` and ``miaudit calibrate``:
answers that exist are computed stably (checked against closed forms and asymptotics written
here), answers beyond the float range are one error line naming the flag, and the Gaussian
capacity's work is bounded."""

import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from audit.bounds.lip import exact_optimum
from audit.cli.main import main
from mechanisms.constructions import gaussian_capacity
from mechanisms.constructions.gaussian_capacity import MAX_GRID_ENTRIES, gaussian_lmip_ci_bits

LN2 = math.log(2.0)


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def run_error(capsys, *argv) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    return err[0]


def ldp_floor_by_bisection(mu_nats: float) -> float:
    """p̄_μ with H_b(p)/p = −log₂(2^μ − 1), by bisection on log p (μ given in nats)."""
    target = -math.log2(math.expm1(mu_nats))

    def ratio(log_p):  # H_b(p)/p in bits
        p = math.exp(log_p)
        return (-log_p - (1 - p) / p * math.log1p(-p)) / LN2

    lo, hi = -745.0, -1e-15  # p from the smallest float to just below 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio(mid) > target else (lo, mid)
    return math.exp(0.5 * (lo + hi))


# ---------------------------------------------------------------- bounds: A5, C, E


def test_ldp_from_lmip_at_huge_epsilon_is_the_floor(capsys):
    out = run_json(capsys, "bounds", "ldp-from-lmip", "--mu", "0.1", "--epsilon", "1e6")
    assert out["delta"] == pytest.approx(ldp_floor_by_bisection(0.1), rel=1e-8)
    assert run_json(capsys, "bounds", "lip-from-lmip", "--mu", "0.1", "--epsilon", "1e6")["delta"] == \
        pytest.approx(-math.expm1(-0.1), rel=1e-8)  # Theorem 2's floor 1 − 2^−μ (μ in bits)


def test_ldp_floor_for_a_tiny_mu(capsys):
    # For small μ, 2^μ − 1 ≈ μ ln 2 and H_b(p)/p ≈ log₂(1/p) + log₂ e, so p̄_μ ≈ e μ (μ in nats).
    assert run_json(capsys, "bounds", "ldp-floor", "--mu", "1e-300")["delta"] == pytest.approx(math.e * 1e-300,
                                                                                           rel=1e-12)
    assert run_json(capsys, "bounds", "ldp-floor", "--mu", "0.3")["delta"] == \
        pytest.approx(ldp_floor_by_bisection(0.3), rel=1e-10)
    assert "'--mu'" in run_error(capsys, "bounds", "ldp-floor", "--mu", "1e-320")


def epi_lower_and_power_upper(sigma, amplitude, dim):
    """Entropy-power lower bound (uniform input on the ball) and average-power upper bound, nats."""
    log_volume = 0.5 * dim * math.log(math.pi) + dim * math.log(amplitude) - math.lgamma(0.5 * dim + 1)
    lower = 0.5 * dim * np.logaddexp(0.0, 2 * log_volume / dim - math.log(2 * math.pi * math.e) - 2 * math.log(sigma))
    upper = 0.5 * dim * np.logaddexp(0.0, 2 * math.log(amplitude) - math.log(dim) - 2 * math.log(sigma))
    return float(lower), float(upper)


@pytest.mark.parametrize("sigma", ["1e-3", "1e-320"])
def test_gaussian_lmip_ci_for_a_tiny_sigma_returns_the_closed_form_bounds(sigma, capsys):
    out = run_json(capsys, "bounds", "gaussian-lmip-ci", "--sigma", sigma, "--amplitude", "1")
    lower, upper = epi_lower_and_power_upper(float(sigma), 1.0, 1)
    assert out["kind"] == "bounds" and out["iterations"] == 0
    assert out["mu"] == pytest.approx(lower, rel=1e-12) and out["upper"] == pytest.approx(upper, rel=1e-12)


def test_gaussian_lmip_ci_in_300_dimensions_is_finite_and_within_the_bounds(capsys):
    out = run_json(capsys, "bounds", "gaussian-lmip-ci", "--sigma", "1", "--amplitude", "1", "--dim", "300")
    lower, upper = epi_lower_and_power_upper(1.0, 1.0, 300)
    assert out["kind"] == "exact"
    assert lower <= out["mu"] <= out["upper"] <= upper + 1e-9
    assert out["upper"] - out["mu"] <= 1e-4 * out["mu"] + 1e-9


def test_gaussian_lmip_ci_in_a_billion_dimensions(capsys):
    # A²/(dσ²) → 0: the capacity tends to A²/(2σ²) = 1/2 nat, squeezed by the two bounds.
    out = run_json(capsys, "bounds", "gaussian-lmip-ci", "--sigma", "1", "--amplitude", "1", "--dim", "1000000000")
    assert out["kind"] == "bounds"
    assert out["upper"] == pytest.approx(0.5e9 * math.log1p(1e-9), rel=1e-12)
    assert out["mu"] == pytest.approx(0.5, abs=1e-6) and out["mu"] <= out["upper"]


def test_gaussian_capacity_work_is_capped(monkeypatch):
    # The cap at a twentieth of its value: the same stop, in a tenth of a second rather than seconds.
    updates = gaussian_capacity.MAX_KERNEL_UPDATES // 20
    monkeypatch.setattr(gaussian_capacity, "MAX_KERNEL_UPDATES", updates)
    result = gaussian_lmip_ci_bits(0.3, 3.0, 10, rtol=1e-12, max_iter=10**9)
    entries = (10 * 10 + 1) * (25 * (10 + math.sqrt(10) + 12) + 1)
    assert entries < MAX_GRID_ENTRIES
    # stopped by the work cap: at most updates / entries iterations over a kernel of ≥ entries entries
    assert result.kind == "lower" and result.iterations <= updates // entries and result.gap > 0


def test_gaussian_lmip_ci_subnormal_sigma_is_not_a_traceback(capsys):
    assert main(["bounds", "gaussian-lmip-ci", "--sigma", "1e-320", "--amplitude", "1"]) == 0
    capsys.readouterr()


def test_lip_design_huge_epsilon_names_the_flag(tmp_path, capsys):
    np.save(tmp_path / "p.npy", np.array([[1 / 4, 2 / 5], [3 / 4, 3 / 5]]))
    np.save(tmp_path / "y.npy", np.array([1 / 4, 3 / 4]))
    for eps in ("750", "400"):
        line = run_error(capsys, "bounds", "lip-design", "--pxgy", str(tmp_path / "p.npy"), "--py",
                         str(tmp_path / "y.npy"), "--epsilon", eps)
        assert "'--epsilon'" in line


def test_lip_exact_optimum_at_huge_epsilon_is_the_entropy_of_y():
    # Once e^ε exceeds 1/min P_X and e^−ε P_X is below every entry of P_X|Y, the constraint
    # admits U = Y, so the optimum is I(Y; Y) = H(Y).
    py = np.array([1 / 4, 3 / 4])
    value = exact_optimum(np.array([[1 / 4, 2 / 5], [3 / 4, 3 / 5]]), py, 700.0).value
    assert value == pytest.approx(float(-(py * np.log(py)).sum()), rel=1e-9)


# ---------------------------------------------------------------- calibrate: A5, C


@pytest.mark.parametrize("argv, flags", [
    (["laplace", "--notion", "dp", "--epsilon", "1e-320", "--l1-sensitivity", "1"], ["'--epsilon'"]),
    (["laplace", "--notion", "dp", "--epsilon", "1", "--l1-sensitivity", "1e308"], ["'--l1-sensitivity'"]),
    (["laplace", "--notion", "mi-dp", "--epsilon", "1", "--l1-sensitivity", "1e308"], ["'--l1-sensitivity'"]),
    (["gaussian", "--notion", "mi-dp", "--epsilon", "400", "--l2-sensitivity", "1"], ["'--epsilon'"]),
    (["gaussian", "--notion", "approx-dp", "--epsilon", "1e-320", "--delta", "0.1", "--l2-sensitivity", "1"],
     ["'--epsilon'"]),
    (["laplace", "--notion", "mi-dp", "--epsilon", "1e-320", "--l1-sensitivity", "1"], ["'--epsilon'"]),
])
def test_calibration_beyond_the_float_range_is_one_line_naming_the_flags(argv, flags, capsys):
    line = run_error(capsys, "calibrate", *argv)
    assert all(flag in line for flag in flags)
    assert "inf" not in line.split(":")[-1].split()


def test_mi_dp_gaussian_at_epsilon_400_in_log_space(capsys):
    # σ² = Δ²/(2(e^{800} − 1)): exp overflows, the answer does not (Corollary 3).
    out = run_json(capsys, "calibrate", "gaussian", "--notion", "mi-dp", "--epsilon", "400", "--l2-sensitivity", "1e300")
    log_variance = 2 * 300 * math.log(10) - math.log(2) - 800 - math.log1p(-math.exp(-800))
    assert out["variance"] == pytest.approx(math.exp(log_variance), rel=1e-12)
    assert out["scale"] == pytest.approx(math.exp(0.5 * log_variance), rel=1e-12)


def test_laplace_mi_pp_for_a_tiny_epsilon_over_many_dimensions(capsys):
    # b = Σ_j s_j / (d (e^{ε/d} − 1)) with ε/d below the smallest normal float: e^{ε/d} − 1 = ε/d,
    # so b = d s / ε; one --cond-std value with --dim d is s in every coordinate (no d-long list).
    out = run_json(capsys, "calibrate", "laplace", "--notion", "mi-pp", "--epsilon", "1e-300", "--cond-std",
                   "1e-180", "--dim", "1000000000000000000")
    assert out["scale"] == pytest.approx(1e18 * 1e-180 / 1e-300, rel=1e-12)
    assert out["dim"] == 10**18


def test_analytic_gaussian_at_a_vanishing_epsilon(capsys):
    # ε → 0: δ(0; σ) = 2Φ(Δ/(2σ)) − 1 (Balle and Wang 2018, Theorem 8), so σ = Δ / (2 Φ⁻¹((1 + δ)/2)).
    out = run_json(capsys, "calibrate", "gaussian", "--notion", "approx-dp", "--epsilon", "1e-320", "--delta", "0.1",
                   "--l2-sensitivity", "1e100", "--analytic")
    assert out["scale"] == pytest.approx(1e100 / (2 * norm.ppf(0.55)), rel=1e-9)


def test_messages_show_plain_numbers(capsys):
    line = run_error(capsys, "bounds", "composition", "--mi-epsilons=-1,2")
    assert "[-1.0, 2.0]" in line and "np.float64" not in line
