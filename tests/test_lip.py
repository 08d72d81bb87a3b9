"""Tests of the LIP / max-lift design (mechanisms.constructions.lip) and its bounds (audit.bounds.lip).

Expected values come from computations written here (numpy SVD, brute-force grids, SciPy
SLSQP, direct lift checks) or from numbers printed in the paper's Example 1.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from audit.bounds.lip import approximate_optimum, exact_optimum, lip_bounds
from audit.cli.main import main
from estimators.validation import InputError
from mechanisms.constructions.lip import leakage_geometry, lip_design

# Example 1 with the typo corrected: the last entry of P_X|Y is 3/5 (DESIGN.md).
PXGY = np.array([[1 / 4, 2 / 5], [3 / 4, 3 / 5]])
PY = np.array([1 / 4, 3 / 4])


def _svd_in_test(pxgy, py):
    px = pxgy @ py
    w = np.diag(1 / np.sqrt(py)) @ np.linalg.inv(pxgy) @ np.diag(np.sqrt(px))
    _, singular, vt = np.linalg.svd(w)
    return px, w, singular, vt


def _entropy(p, axis=-1):
    p = np.asarray(p, dtype=float)
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=axis)


def _mutual_information(kernel, py):
    """I(U;Y) for P_U|Y (rows u, columns y): H(U) − H(U|Y)."""
    pu = kernel @ py
    return _entropy(pu) - float(np.sum(py * _entropy(kernel.T)))


def _log_lifts(kernel, pxgy, py):
    """log P_X|U(x|u)/P_X(x) = log P_XU(x,u)/(P_X(x) P_U(u)), all (x, u) with P_U(u) > 0."""
    joint = (pxgy * py) @ kernel.T  # (x, u)
    px, pu = pxgy @ py, kernel @ py
    keep = pu > 1e-15
    with np.errstate(divide="ignore"):
        return np.log(joint[:, keep] / np.outer(px, pu[keep]))


def _random_instance(rng, k):
    pxgy = rng.dirichlet(np.full(k, 2.0), size=k).T
    py = rng.dirichlet(np.full(k, 3.0))
    return pxgy, py


# ---------------------------------------------------------------------------------------------
# Example 1


def test_example1_px_sigma_and_singular_vector():
    px, _, singular, vt = _svd_in_test(PXGY, PY)
    geometry = leakage_geometry(PXGY, PY)
    np.testing.assert_allclose(px, [0.3625, 0.6375], atol=1e-12)
    np.testing.assert_allclose(geometry.px, px, atol=1e-12)
    assert round(singular[0], 4) == 7.4012  # printed in Example 1
    assert singular[1] == pytest.approx(1.0, abs=1e-12)  # Proposition 2
    assert geometry.sigma_max == pytest.approx(singular[0], rel=1e-12)
    np.testing.assert_allclose(np.abs(geometry.l_star), [0.7984, 0.6021], atol=1e-4)
    np.testing.assert_allclose(np.abs(geometry.l_star), np.abs(vt[0]), atol=1e-12)
    np.testing.assert_allclose(np.abs(geometry.w), [[4.8166, 4.2583], [3.4761, 1.5366]], atol=1e-4)


def test_example1_p1_p2_and_chi2_coefficients():
    px, _, singular, vt = _svd_in_test(PXGY, PY)
    l_star = vt[0] * np.sign(vt[0][0])
    gamma = l_star[0] / np.sqrt(px[0])  # the paper's 1.326: 0.7984 / 0.6021
    assert round(gamma, 3) == 1.326
    coefficient = 0.5 * singular[0] ** 2 / gamma**2
    # The paper's 15.5771 used γ rounded to 1.326; the exact coefficient differs by 2e-4 relative.
    assert coefficient == pytest.approx(15.5771, rel=3e-4)
    assert round(0.5 * singular[0] ** 2, 2) == 27.39  # the strong χ²-criterion approximation

    eps = np.array([0.002, 0.01, 0.03, 0.049])
    bounds = lip_bounds(PXGY, PY, eps)
    np.testing.assert_allclose(bounds.P1_lower, coefficient * eps**2 / (1 + eps), rtol=1e-10)
    np.testing.assert_allclose(bounds.P2_lower, coefficient * (np.exp(eps) + np.exp(-eps) - 2), rtol=1e-10)
    np.testing.assert_allclose(bounds.chi2_approximation, 0.5 * singular[0] ** 2 * eps**2, rtol=1e-12)
    np.testing.assert_allclose(bounds.factors.gamma1, gamma, rtol=1e-12)
    np.testing.assert_allclose(bounds.factors.gamma2, gamma * (1 + eps), rtol=1e-12)
    np.testing.assert_allclose(bounds.factors.lambda1, np.expm1(eps) / eps / gamma, rtol=1e-12)
    np.testing.assert_allclose(bounds.factors.lambda2, -np.expm1(-eps) / eps / gamma, rtol=1e-12)
    # For K = 2 the lower bounds are the exact P1, P2 (Eqs. (14), (20)): the vertex LP agrees.
    for e in eps:
        assert approximate_optimum(PXGY, PY, e, "first").value == pytest.approx(
            coefficient * e**2 / (1 + e), rel=1e-9)
        assert approximate_optimum(PXGY, PY, e, "second").value == pytest.approx(
            coefficient * (math.exp(e) + math.exp(-e) - 2), rel=1e-9)


def test_example1_p_y_given_u_matches_paper():
    eps = 0.03
    first = lip_design(PXGY, PY, eps, approach="first")
    second = lip_design(PXGY, PY, eps, approach="second")
    # Section VI: P_Y|U=0 = [0.25 − 2.4169 ε, ...], P_Y|U=1 = [0.25 + 2.4169 ε/(1+ε), ...].
    np.testing.assert_allclose(first.p_y_given_u[:, 0], [0.25 - 2.4169 * eps, 0.75 + 2.4169 * eps], rtol=5e-5)
    np.testing.assert_allclose(first.p_y_given_u[:, 1],
                               [0.25 + 2.4169 * eps / (1 + eps), 0.75 - 2.4169 * eps / (1 + eps)], rtol=5e-5)
    # Second approach: the paper prints 2.4169·(1 − e^ε) for U = 1; from λ₂ = (1 − e^−ε)/(1.326 ε)
    # the entry is 0.25 + 2.4169·(1 − e^−ε) (the printed sign would make it < 0.25).
    np.testing.assert_allclose(second.p_y_given_u[:, 0],
                               [0.25 - 2.4169 * np.expm1(eps), 0.75 + 2.4169 * np.expm1(eps)], rtol=5e-5)
    np.testing.assert_allclose(second.p_y_given_u[:, 1],
                               [0.25 - 2.4169 * np.expm1(-eps), 0.75 + 2.4169 * np.expm1(-eps)], rtol=5e-5)
    for design in (first, second):  # "P_U^1 P_Y|U=0 + P_U^2 P_Y|U=1 = P_Y"
        np.testing.assert_allclose(design.p_y_given_u @ design.p_u, PY, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# The construction


@pytest.mark.parametrize("leakage", ["lip", "max-lift"])
@pytest.mark.parametrize("approach", ["first", "second"])
@pytest.mark.parametrize("symmetric", [False, True])
def test_design_is_a_valid_kernel_meeting_the_constraint(leakage, approach, symmetric):
    rng = np.random.default_rng(7)
    for _ in range(4):
        pxgy, py = _random_instance(rng, 3)
        geometry = leakage_geometry(pxgy, py)
        eps = 0.5 * max(geometry.c1_prime, geometry.c2_prime)
        design = lip_design(pxgy, py, eps, approach=approach, leakage=leakage, symmetric=symmetric)
        kernel = design.p_u_given_y
        assert np.all(kernel >= 0)
        np.testing.assert_allclose(kernel.sum(axis=0), 1.0, atol=1e-12)
        lifts = _log_lifts(kernel, pxgy, py)
        assert lifts.max() <= eps + 1e-12
        if leakage == "lip":
            assert lifts.min() >= -eps - 1e-12
        assert design.mutual_information == pytest.approx(_mutual_information(kernel, py), rel=1e-9, abs=1e-15)
        if symmetric:
            np.testing.assert_allclose(design.p_u, [0.5, 0.5], atol=1e-12)


def test_design_rejects_epsilon_outside_valid_kernel_range():
    with pytest.raises(InputError, match="epsilon"):
        lip_design(PXGY, PY, 3.0, approach="second")


def test_release_samples_follow_the_kernel():
    design = lip_design(PXGY, PY, 0.04, approach="second")
    y = np.repeat([0, 1], 20000)
    u = design.release(y, seed=3)
    assert np.array_equal(u, design.release(y, seed=3))
    for symbol in (0, 1):
        observed = np.mean(u[y == symbol] == 0)
        expected = design.p_u_given_y[0, symbol]
        assert abs(observed - expected) < 4 * math.sqrt(expected * (1 - expected) / 20000)


# ---------------------------------------------------------------------------------------------
# The exact optimum of problem (1)


def _grid_optimum_binary(pxgy, py, eps, points=1501, two_sided=True):
    """Brute force: every binary kernel (a, b) = P(U=0|Y=y) on a grid, the lift checked directly
    (both sides for LIP, the upper side only for max-lift)."""
    grid = np.linspace(0.0, 1.0, points)
    px = pxgy @ py
    best = -np.inf
    # The grid a block of rows at a time: the same kernels as one meshgrid, in arrays that stay in
    # the cache instead of a dozen of a million entries each.
    for rows in np.array_split(grid, max(1, points // 50)):
        a, b = np.meshgrid(rows, grid, indexing="ij")
        k0 = np.stack([a.ravel(), b.ravel()])  # (y, n)
        pxu0 = (pxgy * py) @ k0
        pu0 = py @ k0
        with np.errstate(divide="ignore", invalid="ignore"):
            lift0 = np.log(pxu0 / (px[:, None] * pu0))
            lift1 = np.log((px[:, None] - pxu0) / (px[:, None] * (1 - pu0)))
            if two_sided:
                lift0, lift1 = np.abs(lift0), np.abs(lift1)
            ok = (np.all(lift0 <= eps, axis=0) | (pu0 == 0)) & (np.all(lift1 <= eps, axis=0) | (pu0 == 1))
            # The MI of the feasible kernels only (a small part of the grid).
            pu0, k0 = pu0[ok], k0[:, ok]
            mi = _entropy(np.stack([pu0, 1 - pu0]), axis=0) - py @ _entropy(np.stack([k0, 1 - k0]), axis=0)
        if mi.size:
            best = max(best, float(mi.max()))
    return best


def _segment_optimum(pxgy, py, eps):
    """K = 2 in closed form: P_Y|U=u = (t, 1 − t) with t in an interval cut out by the lift band;
    a mean-P_Y mixture of a convex function on a segment is best at its two end points."""
    px = pxgy @ py
    # Row x of P_X|Y (t, 1 − t) = c_x + d_x t must lie in [e^−ε, e^ε] P_X(x), and 0 ≤ t ≤ 1.
    c, d = pxgy[:, 1], pxgy[:, 0] - pxgy[:, 1]
    lo, hi = 0.0, 1.0
    for bound_lo, bound_hi, cx, dx in zip(math.exp(-eps) * px, math.exp(eps) * px, c, d):
        ends = sorted([(bound_lo - cx) / dx, (bound_hi - cx) / dx])
        lo, hi = max(lo, ends[0]), min(hi, ends[1])
    weight_lo = (hi - py[0]) / (hi - lo)

    def kl(t):
        q = np.array([t, 1 - t])
        return float(np.sum(np.where(q > 0, q * np.log(np.where(q > 0, q, 1) / py), 0)))

    return weight_lo * kl(lo) + (1 - weight_lo) * kl(hi)


def test_exact_optimum_matches_brute_force_grid_for_binary_alphabets():
    for eps, points in ((0.05, 401), (0.3, 1001)):
        optimum = exact_optimum(PXGY, PY, eps)
        grid_best = _grid_optimum_binary(PXGY, PY, eps, points)
        assert grid_best <= optimum.value + 1e-12
        assert grid_best >= optimum.value * (1 - 2e-2)
        assert optimum.value == pytest.approx(_segment_optimum(PXGY, PY, eps), rel=1e-10)
        lifts = _log_lifts(optimum.p_u_given_y, PXGY, PY)
        assert np.abs(lifts).max() <= eps + 1e-9
        assert _mutual_information(optimum.p_u_given_y, PY) == pytest.approx(optimum.value, rel=1e-9)
        assert optimum.certificate == pytest.approx(optimum.value, rel=1e-9)
        assert optimum.certificate_violation <= 1e-9


def test_exact_max_lift_optimum_matches_brute_force_grid():
    eps = 0.3
    optimum = exact_optimum(PXGY, PY, eps, leakage="max-lift")
    grid_best = _grid_optimum_binary(PXGY, PY, eps, 1001, two_sided=False)
    assert grid_best <= optimum.value + 1e-12
    assert grid_best >= optimum.value * (1 - 2e-2)
    assert _log_lifts(optimum.p_u_given_y, PXGY, PY).max() <= eps + 1e-9
    # Dropping the lower side of (1c) can only help.
    assert optimum.value >= exact_optimum(PXGY, PY, eps, leakage="lip").value


def test_exact_optimum_is_not_beaten_by_a_local_optimizer():
    rng = np.random.default_rng(11)
    pxgy, py = _random_instance(rng, 3)
    eps = 0.2
    optimum = exact_optimum(pxgy, py, eps)
    kernel = optimum.p_u_given_y
    np.testing.assert_allclose(kernel.sum(axis=0), 1.0, atol=1e-9)
    assert np.abs(_log_lifts(kernel, pxgy, py)).max() <= eps + 1e-9
    assert _mutual_information(kernel, py) == pytest.approx(optimum.value, rel=1e-9)
    assert optimum.u_alphabet_size <= len(py) + 1

    n_u, k = 4, len(py)
    px = pxgy @ py

    def unpack(theta):
        return theta.reshape(n_u, k)

    def lift_margins(theta):  # ε − |log lift| written as two linear-fractional constraints
        kernel_ = unpack(theta)
        joint = (pxgy * py) @ kernel_.T
        scaled = np.outer(px, kernel_ @ py)
        return np.concatenate([(math.exp(eps) * scaled - joint).ravel(), (joint - math.exp(-eps) * scaled).ravel()])

    constraints = [{"type": "eq", "fun": lambda t: unpack(t).sum(axis=0) - 1.0},
                   {"type": "ineq", "fun": lift_margins}]
    best = 0.0
    for _ in range(6):
        noise = rng.dirichlet(np.ones(n_u), size=k).T
        start = (0.9 * np.full((n_u, k), 1.0 / n_u) + 0.1 * noise).ravel()
        found = minimize(lambda t: -_mutual_information(np.clip(unpack(t), 1e-300, 1), py), start,
                         method="SLSQP", bounds=[(0, 1)] * (n_u * k), constraints=constraints,
                         options={"maxiter": 300, "ftol": 1e-12})
        candidate = np.clip(unpack(found.x), 0, 1)
        candidate /= candidate.sum(axis=0)
        if np.all(lift_margins(candidate.ravel()) >= -1e-9):
            best = max(best, _mutual_information(candidate, py))
    assert best <= optimum.value + 1e-8
    assert best >= 0.97 * optimum.value


# ---------------------------------------------------------------------------------------------
# Bounds


@pytest.mark.parametrize("leakage", ["lip", "max-lift"])
def test_bounds_sandwich_on_random_instances(leakage):
    rng = np.random.default_rng(5)
    for _ in range(5):
        pxgy, py = _random_instance(rng, 3)
        geometry = leakage_geometry(pxgy, py)
        eps = 0.5 * max(geometry.c1_prime, geometry.c2_prime)
        b = lip_bounds(pxgy, py, eps, leakage)
        p1 = approximate_optimum(pxgy, py, eps, "first", leakage).value
        p2 = approximate_optimum(pxgy, py, eps, "second", leakage).value
        tol = 1e-12
        assert b.P1_lower_gamma_max <= b.P1_lower + tol <= p1 + 2 * tol <= b.P1_upper + 3 * tol  # Lemma 2 / 4
        assert b.P2_lower <= p2 + tol <= b.P2_upper + 2 * tol  # Lemma 3 / 5
        if leakage == "lip":
            assert b.P2_lower_lambda_prime <= b.P2_lower + tol
        assert p1 <= p2 + tol  # Theorem 2: P2 ≥ P1
        optimum = exact_optimum(pxgy, py, eps, leakage).value
        designs = [lip_design(pxgy, py, eps, a, leakage).mutual_information for a in ("first", "second")]
        # Exact sandwich: a valid mechanism's MI ≤ optimum ≤ the χ²/Bhatia–Davis bound.
        assert max(designs) <= optimum + 1e-12
        assert optimum <= float(b.optimum_upper) + 1e-12


def test_p2_approximates_the_optimum_as_epsilon_shrinks():
    # Proposition 5: (1) = P2 + o(ε²), so the relative gap must shrink with ε.
    rng = np.random.default_rng(2)
    pxgy, py = _random_instance(rng, 3)
    gaps = []
    for eps in (0.02, 0.005, 0.00125):
        optimum = exact_optimum(pxgy, py, eps).value
        p2 = approximate_optimum(pxgy, py, eps, "second").value
        gaps.append(abs(optimum - p2) / optimum)
    assert gaps[2] < gaps[1] < gaps[0]
    assert gaps[2] < 0.01


def test_max_lift_upper_bound_needs_the_energy_factor_for_three_symbols():
    # Lemma 4's P1' ≤ ½ε²σ² fails for K = 3: with uniform P_X the feasible directions
    # (1, 1, −2)/√3 and its permutations have ‖L‖² = 2 and average to zero.
    delta = 0.1
    pxgy = (1 - delta) * np.eye(3) + delta / 3
    py = np.full(3, 1 / 3)
    eps = 0.01
    _, w, singular, _ = _svd_in_test(pxgy, py)
    directions = [np.roll(np.array([1.0, 1.0, -2.0]) / math.sqrt(3), i) for i in range(3)]
    direct = 0.5 * eps**2 * np.mean([np.sum((w @ d) ** 2) for d in directions])
    paper_upper = 0.5 * eps**2 * singular[0] ** 2
    assert direct > paper_upper
    assert approximate_optimum(pxgy, py, eps, "first", "max-lift").value >= direct - 1e-15
    assert float(lip_bounds(pxgy, py, eps, "max-lift").P1_upper) >= direct - 1e-15


def test_max_lift_first_approach_for_two_symbols_is_the_full_energy_not_eq_35():
    # For K = 2, L ⊥ √P_X is a line L = t·v (v = L*, unit), and L ≤ √P_X bounds t to [−b, a] with
    # a = √(P_X(x)/P_X(x′)) for the one sign pattern and b = 1/a for the other, so a mean-zero
    # distribution on the segment (weights b/(a + b), a/(a + b) at a and −b) has E t² = a·b = 1:
    # P₁' = ½ε²σ²_max exactly, and the paper's Eq. (35) ½ε²σ²/(γ₁γ₂) is below it when a ≠ 1.
    eps = 0.1
    _, _, singular, _ = _svd_in_test(PXGY, PY)
    full = 0.5 * eps**2 * singular[0] ** 2  # σ_max > 1 = the trivial singular value (Proposition 2)
    assert approximate_optimum(PXGY, PY, eps, "first", "max-lift").value == pytest.approx(full, rel=1e-9)
    bounds = lip_bounds(PXGY, PY, eps, "max-lift")
    assert float(bounds.P1_upper) == pytest.approx(full, rel=1e-9)
    assert float(bounds.P1_lower) < 0.95 * full  # Eq. (35)'s value: a lower bound only


def test_too_large_epsilon_names_the_range_of_its_own_approach():
    # Example 1: c₁ = min P_Y / max_y Σ_x |α_yx| P_X(x) and c₂ = σ_min(P_X|Y) min P_Y (Proposition 3) bound the
    # first approach; c₁' = log(1 + c₁), c₂' = log(1 + c₂) (Proposition 5) the second. Computed here by hand.
    px = PXGY @ PY
    c1 = PY.min() / np.max(np.abs(np.linalg.inv(PXGY)) @ px)
    c2 = np.linalg.svd(PXGY, compute_uv=False).min() * PY.min()
    for approach, limit in (("first", max(c1, c2)), ("second", max(math.log1p(c1), math.log1p(c2)))):
        with pytest.raises(InputError, match="'epsilon'") as raised:
            lip_design(PXGY, PY, 2.0, approach)
        assert f"the {approach} approach" in str(raised.value) and f"= {limit:.4g})" in str(raised.value)


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "pxgy, py, eps, name",
    [
        (np.array([[0.3, 0.4], [0.6, 0.6]]), PY, 0.1, "pxgy"),  # a column does not sum to 1
        (np.array([[1.2, 0.4], [-0.2, 0.6]]), PY, 0.1, "pxgy"),  # negative entry
        (np.array([[0.5, 0.5], [0.5, 0.5]]), PY, 0.1, "pxgy"),  # singular
        (np.array([[0.25, np.nan], [0.75, 0.6]]), PY, 0.1, "pxgy"),
        (np.ones((2, 3)) / 2, PY, 0.1, "pxgy"),  # not square
        (PXGY, np.array([0.2, 0.3, 0.5]), 0.1, "py"),  # shape mismatch
        (PXGY, np.array([0.3, 0.6]), 0.1, "py"),  # does not sum to 1
        (PXGY, np.array([0.0, 1.0]), 0.1, "py"),  # zero mass
        (PXGY, PY, 0.0, "epsilon"),
        (PXGY, PY, -1.0, "epsilon"),
        (PXGY, PY, float("nan"), "epsilon"),
    ],
)
def test_bad_input_names_the_argument(pxgy, py, eps, name):
    for call in (lambda: lip_bounds(pxgy, py, eps), lambda: exact_optimum(pxgy, py, eps),
                 lambda: lip_design(pxgy, py, eps), lambda: approximate_optimum(pxgy, py, eps)):
        with pytest.raises(InputError, match=f"'{name}'"):
            call()


def test_bad_choice_names_the_argument():
    with pytest.raises(InputError, match="'leakage'"):
        lip_bounds(PXGY, PY, 0.1, leakage="ldp")
    with pytest.raises(InputError, match="'approach'"):
        lip_design(PXGY, PY, 0.01, approach="third")


# ---------------------------------------------------------------------------------------------
# CLI


def _run_cli(capsys, tmp_path, pxgy, py, *extra):
    np.save(tmp_path / "P.npy", pxgy)
    np.save(tmp_path / "p.npy", py)
    code = main(["bounds", "lip-design", "--pxgy", str(tmp_path / "P.npy"), "--py", str(tmp_path / "p.npy"),
                 *extra, "--json"])
    out = capsys.readouterr()
    return code, out


def test_cli_lip_design_example1(capsys, tmp_path):
    eps = 0.04
    code, out = _run_cli(capsys, tmp_path, PXGY, PY, "--epsilon", str(eps))
    assert code == 0
    payload = json.loads(out.out)
    _, _, singular, _ = _svd_in_test(PXGY, PY)
    assert payload["sigma_max"] == pytest.approx(singular[0], rel=1e-12)
    assert payload["unit"] == "nats"
    assert payload["P1"] == pytest.approx(15.5771 * eps**2 / (1 + eps), rel=3e-4)
    assert payload["P2"] == pytest.approx(15.5771 * (math.exp(eps) + math.exp(-eps) - 2), rel=3e-4)
    assert payload["chi2_approximation"] == pytest.approx(27.39 * eps**2, rel=2e-4)
    assert payload["P1_lower"] <= payload["P1"] + 1e-15 <= payload["P1_upper"] + 2e-15
    assert payload["P2_lower"] <= payload["P2"] + 1e-15 <= payload["P2_upper"] + 2e-15
    assert payload["optimum"] == pytest.approx(_segment_optimum(PXGY, PY, eps), rel=1e-10)
    kernel = np.array(payload["optimum_p_u_given_y"])
    assert _mutual_information(kernel, PY) == pytest.approx(payload["optimum"], rel=1e-9)
    assert payload["source"]

    code, out = _run_cli(capsys, tmp_path, PXGY, PY, "--epsilon", str(eps), "--bits")
    bits = json.loads(out.out)
    assert bits["unit"] == "bits"
    assert bits["optimum"] == pytest.approx(payload["optimum"] / math.log(2), rel=1e-12)
    assert bits["P2"] == pytest.approx(payload["P2"] / math.log(2), rel=1e-12)
    assert bits["sigma_max"] == payload["sigma_max"]


def test_cli_rejects_bad_input(capsys, tmp_path):
    code, out = _run_cli(capsys, tmp_path, np.array([[0.3, 0.4], [0.6, 0.6]]), PY, "--epsilon", "0.1")
    assert code == 2 and "'--pxgy'" in out.err
    code, out = _run_cli(capsys, tmp_path, PXGY, PY, "--epsilon", "-0.1")
    assert code == 2 and "epsilon" in out.err


def test_exact_search_refuses_large_alphabets_by_name():
    rng = np.random.default_rng(0)
    pxgy, py = _random_instance(rng, 8)  # 24 constraints, choose 7: 346104 active sets
    with pytest.raises(InputError, match="'pxgy'.*too large"):
        exact_optimum(pxgy, py, 0.1)
