"""Calibration rules against formulas recomputed by hand from the paper's statements."""

import math

import numpy as np
import pytest
from scipy import integrate

from estimators.validation import InputError
from mechanisms.calibration import (calibrate, gaussian_approx_dp, gaussian_attribute_dp, gaussian_attribute_mi,
                                    gaussian_mi_dp, gaussian_mi_pp, gaussian_projection_mi_pp,
                                    gaussian_secret_mi_pp, gaussian_structured_pp, laplace_approx_dp, laplace_dp,
                                    laplace_mi_dp, laplace_mi_pp)


def test_theorem4_closed_form_mutual_information_equals_epsilon():
    # Scalar Gaussian query, f = g + w-part: I(g; f + Z | w) = ½ log(1 + v/σ²) exactly.
    for eps, v in [(0.1, 1.0), (0.5, 0.3), (2.0, 4.0)]:
        sigma2 = gaussian_mi_pp(eps, [v]).variance
        assert 0.5 * math.log(1.0 + v / sigma2) == pytest.approx(eps, rel=1e-12)


def test_theorem4_multidimensional_bound_is_tight_at_epsilon():
    # (d/2) log(1 + V/(d σ²)) = ε at the calibrated σ² (Eq. (21) of the paper).
    v = np.array([0.2, 0.5, 1.3])
    cal = gaussian_mi_pp(0.7, v)
    assert cal.dim == 3
    assert 1.5 * math.log(1.0 + v.sum() / (3 * cal.variance)) == pytest.approx(0.7, rel=1e-12)
    assert cal.scale == pytest.approx(math.sqrt(cal.variance))


def test_laplace_mi_scales_by_hand():
    eps, stds = 0.8, [0.3, 0.6]
    b_hand = (0.3 + 0.6) / (2 * (math.exp(0.4) - 1))
    assert laplace_mi_pp(eps, cond_std=stds).scale == pytest.approx(b_hand, rel=1e-12)
    assert laplace_mi_pp(eps, cond_var=[0.09, 0.36]).scale == pytest.approx(b_hand, rel=1e-12)
    assert laplace_mi_dp(eps, cond_std=stds).scale == pytest.approx(b_hand, rel=1e-12)
    cal = laplace_mi_dp(eps, l1_sensitivity=2.0, dim=4)
    b_l1 = 2.0 / (math.sqrt(2) * 4 * (math.exp(0.2) - 1))
    assert cal.scale == pytest.approx(b_l1, rel=1e-12)
    assert cal.variance == pytest.approx(2 * b_l1 ** 2, rel=1e-12)
    assert cal.to_dict()["total_variance"] == pytest.approx(4 * 2 * b_l1 ** 2, rel=1e-12)


def test_laplace_theorem3_entropy_bound_is_tight():
    # The proof's bound d log(1 + s/(d b)) on the MI equals ε at the calibrated b.
    s = np.array([0.4, 0.1, 0.9])
    b = laplace_mi_pp(1.2, cond_std=s).scale
    assert 3 * math.log(1 + s.sum() / (3 * b)) == pytest.approx(1.2, rel=1e-12)


def test_gaussian_mi_dp_three_forms_by_hand():
    eps = 0.5
    assert gaussian_mi_dp(eps, cond_var=[0.1, 0.2]).variance == pytest.approx(0.3 / (2 * (math.exp(0.5) - 1)))
    assert gaussian_mi_dp(eps, l2_sensitivity=1.5, dim=3).variance == pytest.approx(
        1.5 ** 2 / (2 * 3 * (math.exp(1 / 3) - 1)))
    assert gaussian_mi_dp(eps, l2_sensitivity=1.5, compact=True).variance == pytest.approx(
        1.5 ** 2 / (4 * (math.exp(1.0) - 1)))


def test_classical_formulas_by_hand():
    assert laplace_dp(0.5, 2.0).scale == pytest.approx(4.0)
    assert laplace_approx_dp(0.5, 0.1, 2.0).scale == pytest.approx(2.0 / (0.5 - math.log(0.9)))
    assert gaussian_approx_dp(0.5, 1e-5, 2.0).scale == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5)


def _gaussian_hockey_stick(eps, sigma, sens):
    # N(sens, σ²) and N(0, σ²) densities written out: quad calls them point by point, where a
    # scipy.stats call costs tens of microseconds.
    norm_const = sigma * math.sqrt(2 * math.pi)

    def p(t):
        return math.exp(-0.5 * ((t - sens) / sigma) ** 2) / norm_const

    def q(t):
        return math.exp(-0.5 * (t / sigma) ** 2) / norm_const

    # The integrand is positive where the likelihood ratio exceeds e^ε: x > sens/2 + εσ²/sens.
    start = sens / 2 + eps * sigma ** 2 / sens
    val, _ = integrate.quad(lambda t: p(t) - math.exp(eps) * q(t), start, start + 40 * sigma,
                            epsabs=1e-14, epsrel=1e-12, limit=200)
    return val


@pytest.mark.parametrize("eps,delta,sens", [(1.0, 1e-5, 1.0), (0.3, 1e-3, 2.0), (4.0, 1e-6, 0.5)])
def test_analytic_gaussian_meets_delta_exactly(eps, delta, sens):
    cal = gaussian_approx_dp(eps, delta, sens, method="analytic")
    assert _gaussian_hockey_stick(eps, cal.scale, sens) == pytest.approx(delta, rel=1e-6)
    # Smallest: slightly less noise already breaks the target.
    assert _gaussian_hockey_stick(eps, cal.scale * (1 - 1e-4), sens) > delta


def test_analytic_gaussian_root_is_accurate_to_1e10_relative():
    # gaussian_dp_delta is checked against quadrature in test_dp_curves.py.
    from mechanisms.claims.dp_curves import gaussian_dp_delta
    for eps, delta, sens in [(1.0, 1e-5, 1.0), (0.1, 1e-2, 3.0), (6.0, 1e-8, 1.0)]:
        sigma = gaussian_approx_dp(eps, delta, sens, method="analytic").scale
        assert gaussian_dp_delta(eps, sigma * (1 - 1e-10), sens) > delta >= gaussian_dp_delta(eps, sigma * (1 + 1e-10), sens)


def test_analytic_gaussian_is_below_classical_for_eps_at_most_one():
    classical = gaussian_approx_dp(0.5, 1e-5, 1.0).scale
    analytic = gaussian_approx_dp(0.5, 1e-5, 1.0, method="analytic").scale
    assert analytic < classical


def test_projection_theorem5_by_hand():
    a = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    cal = gaussian_projection_mi_pp(0.6, 0.25, matrix=a)
    assert (cal.dim, cal.input_dim, cal.projection) == (2, 3, "deterministic")
    assert cal.variance == pytest.approx(0.25 * 4.0 / (math.exp(0.6) - 1))
    rnd = gaussian_projection_mi_pp(0.6, 0.25, method="random-gaussian", projection_dim=2, input_dim=3,
                                    mean_sq_norm=0.5)
    assert rnd.variance == pytest.approx(0.75 / (math.exp(0.6) - 1))


def test_theorem5_with_identity_matches_theorem4_on_isotropic_covariance():
    # A = I_d, Σ = v I: Theorem 5 part 1 and Theorem 4 give the same σ² (independent path).
    d, v, eps = 4, 0.3, 0.9
    assert gaussian_projection_mi_pp(eps, v, matrix=np.eye(d)).variance == pytest.approx(
        gaussian_mi_pp(eps, [v] * d).variance, rel=1e-12)


def test_theorem6_and_corollary4_by_hand():
    # Gaussian f | g, w with variance u: h = ½ log(2πe u) gives B = u.
    eps, a_var, u = 0.4, 2.0, 0.5
    h = 0.5 * math.log(2 * math.pi * math.e * u)
    expected = (a_var - math.exp(0.8) * u) / (math.exp(0.8) - 1)
    assert gaussian_secret_mi_pp(eps, a_var, h, 1).variance == pytest.approx(expected, rel=1e-12)
    assert gaussian_attribute_mi(eps, a_var, u).variance == pytest.approx(expected, rel=1e-12)
    # Weak dependence: Var(f) close to Var(f|g) -> no noise needed.
    assert gaussian_attribute_mi(eps, 1.0, 0.9).scale == 0.0


def test_theorem6_mutual_information_is_epsilon_for_gaussian_data():
    # f = g + e with g ~ N(0, s), e ~ N(0, u): I(g; f + Z) = ½ log((s + u + σ²)/(u + σ²)).
    s, u, eps = 3.0, 0.5, 0.3
    cal = gaussian_attribute_mi(eps, s + u, u)
    assert 0.5 * math.log((s + u + cal.variance) / (u + cal.variance)) == pytest.approx(eps, rel=1e-12)


def test_structured_and_attribute_baselines_by_hand():
    expected = 2 * (0.8 / 0.5) ** 2 * math.log(1.25 / 1e-3) - 0.2
    assert gaussian_structured_pp(0.5, 1e-3, 0.8, 0.2).variance == pytest.approx(expected)
    assert gaussian_attribute_dp(0.5, 1e-3, 0.8, 0.2).variance == pytest.approx(expected)
    assert gaussian_attribute_dp(0.5, 1e-3, 0.8, 0.2).notion == "approx-ap"
    assert gaussian_structured_pp(0.5, 1e-3, 0.01, 5.0).scale == 0.0


def test_fig3a_column_average_numbers():
    # f = column averages of {0,1}^{n×d}, n = 100: Δ₁ = d/n, Δ₂ = √d/n (one row changes).
    n = 100
    for d in (1, 2, 5, 10, 30):
        lap = laplace_mi_dp(1.0, l1_sensitivity=d / n, dim=d)
        gau = gaussian_mi_dp(1.0, l2_sensitivity=math.sqrt(d) / n, dim=d)
        assert lap.total_variance == pytest.approx(d * 2 * (1 / (math.sqrt(2) * n * (math.exp(1 / d) - 1))) ** 2)
        assert gau.total_variance == pytest.approx(d / (2 * n ** 2 * (math.exp(2 / d) - 1)))


def test_calibration_to_dict_fields():
    out = calibrate("gaussian", "approx-dp", 0.5, delta=1e-5, l2_sensitivity=1.0).to_dict()
    for key in ("noise", "notion", "epsilon", "delta", "dim", "scale", "variance", "rule"):
        assert key in out
    assert out["rule"].startswith("Dwork-Roth")


@pytest.mark.parametrize("call,name", [
    (lambda: gaussian_mi_pp(0.0, [1.0]), "'epsilon'"),
    (lambda: gaussian_mi_pp(-1.0, [1.0]), "'epsilon'"),
    (lambda: gaussian_mi_pp(float("nan"), [1.0]), "'epsilon'"),
    (lambda: gaussian_mi_pp(1.0, [1.0, -0.1]), "'cond_var'"),
    (lambda: gaussian_mi_pp(1.0, [1.0, float("inf")]), "'cond_var'"),
    (lambda: gaussian_mi_pp(1.0, [1.0, 2.0], dim=3), "'cond_var'"),
    (lambda: laplace_mi_pp(1.0, cond_std=[1.0], cond_var=[1.0]), "'cond_std'"),
    (lambda: laplace_mi_pp(1.0), "'cond_std'"),
    (lambda: laplace_mi_dp(1.0, l1_sensitivity=0.0), "'l1_sensitivity'"),
    (lambda: laplace_approx_dp(1.0, 1.0, 1.0), "'delta'"),
    (lambda: laplace_approx_dp(1.0, 0.0, 1.0), "'delta'"),
    (lambda: gaussian_approx_dp(1.0, 1.5, 1.0), "'delta'"),
    (lambda: gaussian_approx_dp(2.0, 1e-5, 1.0), "'epsilon'"),
    (lambda: gaussian_approx_dp(1.0, 1e-5, 1.0, method="exact"), "'method'"),
    (lambda: gaussian_mi_dp(1.0, l2_sensitivity=1.0, dim=2, compact=True), "'compact'"),
    (lambda: gaussian_mi_dp(1.0, l2_sensitivity=1.0, dim=0), "'dim'"),
    (lambda: gaussian_projection_mi_pp(1.0, 1.0, matrix=np.ones((2, 3))), "'matrix'"),
    (lambda: gaussian_projection_mi_pp(1.0, 1.0, matrix=np.ones((3, 2)), input_dim=4), "'matrix'"),
    (lambda: gaussian_projection_mi_pp(1.0, -1.0, projection_dim=2, max_column_norm=1.0), "'op_norm'"),
    (lambda: gaussian_projection_mi_pp(1.0, 1.0, projection_dim=5, max_column_norm=1.0, input_dim=3),
     "'projection_dim'"),
    (lambda: gaussian_projection_mi_pp(1.0, 1.0, method="random-gaussian", projection_dim=2), "'projection_dim'"),
    (lambda: gaussian_secret_mi_pp(1.0, -1.0, 0.0, 1), "'total_cond_var'"),
    (lambda: gaussian_secret_mi_pp(1.0, 1.0, float("nan"), 1), "'cond_entropy_lower'"),
    (lambda: gaussian_attribute_mi(1.0, 1.0, 0.0), "'cond_var_given_secret'"),
    (lambda: gaussian_structured_pp(0.5, 2.0, 1.0, 1.0), "'delta'"),
    (lambda: calibrate("gaussian", "dp", 1.0, l2_sensitivity=1.0), "'notion'"),
    (lambda: calibrate("laplace", "mi-dp", 1.0, l1_sensitivity=1.0, delta=0.1), "'delta'"),
    (lambda: calibrate("gaussian", "mi-pp", 1.0, cond_var=[1.0], projection_dim=1, op_norm=1.0,
                       max_column_norm=1.0), "'cond_var'"),
    (lambda: calibrate("uniform", "dp", 1.0), "'noise'"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(InputError, match=name):
        call()


@pytest.mark.parametrize("args,name", [
    ((0.0, 1e-5, 1.0), "'epsilon' must be > 0"),
    ((-0.5, 1e-5, 1.0), "'epsilon' must be > 0"),
    ((float("nan"), 1e-5, 1.0), "'epsilon' must be finite"),
    ((1.5, 1e-5, 1.0), "'epsilon' must be <= 1"),
    ((0.5, 0.0, 1.0), "'delta' must be in \\(0, 1\\)"),
    ((0.5, 1.0, 1.0), "'delta' must be in \\(0, 1\\)"),
    ((0.5, 1e-5, -1.0), "'sensitivity' must be >= 0"),
    ((0.5, 1e-5, float("inf")), "'sensitivity' must be finite"),
])
def test_classical_gaussian_variance_rejects_bad_input(args, name):
    from mechanisms.calibration import classical_gaussian_variance

    with pytest.raises(InputError, match=name):
        classical_gaussian_variance(*args)


def test_classical_gaussian_variance_by_hand_and_its_wrappers():
    from mechanisms.calibration import classical_gaussian_variance
    from mechanisms.catalog.sums import classic_gaussian_sigma

    # Dwork and Roth Thm A.1: σ² = 2 ln(1.25/δ) Δ² / ε².
    assert classical_gaussian_variance(0.5, 1e-5, 2.0) == pytest.approx(2 * math.log(1.25e5) * 4 / 0.25, rel=1e-14)
    assert classic_gaussian_sigma(0.5, 1e-5, 2.0) == pytest.approx(2 * math.sqrt(2 * math.log(1.25e5)) / 0.5,
                                                                  rel=1e-14)
    with pytest.raises(InputError, match="'l2_sensitivity'"):
        classic_gaussian_sigma(0.5, 1e-5, 0.0)
    # A zero mean gap (the secret does not move the query's mean) needs no noise.
    assert classical_gaussian_variance(0.5, 1e-5, 0.0) == 0.0
    assert gaussian_structured_pp(0.5, 1e-3, 0.0, 0.2).scale == 0.0
