"""experiments/bingham_sampler.py: the density diffprivlib's Bingham sampler draws, and its privacy loss."""

import numpy as np
import pytest
from scipy import integrate, optimize

from experiments.bingham_sampler import (axial_loss, b_constant, concentration, goodness_of_fit, log_density,
                                         planar_event, planar_loss, privacy_loss, sphere_grid)


def _closed_form_d2(theta, a):
    """d = 2, C with eigenvalues λ₁ ≥ λ₂, a = ε(λ₁ − λ₂)/(4Δ), θ from the top eigenvector: 1/b + 1/(b + 2a) = 1
    (Kent, Ganeiber and Mardia 2018, §3) has the root b = 1 − a + √(1 + a²), and the sampler's density is
    exp(−a sin²θ) (1 + 2a sin²θ / b)^(−2) (the ACG proposal times diffprivlib's acceptance step)."""
    b = 1.0 - a + np.sqrt(1.0 + a * a)
    x = a * np.sin(theta) ** 2
    return np.exp(-x) * (1.0 + 2.0 * x / b) ** -2


def test_the_derived_density_is_the_closed_form_in_d2():
    theta = np.linspace(0.0, 2 * np.pi, 37)
    u = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    for epsilon in (0.3, 4.0):
        logs = log_density(u, np.diag([1.0, 0.0]), epsilon)
        expected = np.log(_closed_form_d2(theta, epsilon / 4.0))
        np.testing.assert_allclose(logs, expected, atol=1e-12)
    assert b_constant([0.0, 0.0, 0.0]) == 3.0


def test_the_library_draws_follow_the_derived_density_not_the_stated_one():
    pytest.importorskip("diffprivlib")
    tests, means = goodness_of_fit(2, 4.0, 2000, seed=3)
    assert tests["derived"].pvalue > 1e-3
    assert tests["stated"].pvalue < 1e-20
    # E[u1^2] of the stated density, d = 2: (1 + I1(a/2)/I0(a/2))/2 at a = ε/4 = 1 (the Bingham density on the
    # circle is a von Mises density in 2θ, Mardia and Jupp 2000, §9.4), against the quadrature
    from scipy.special import iv
    assert means["stated"] == pytest.approx((1 + iv(1, 0.5) / iv(0, 0.5)) / 2, abs=1e-9)
    assert abs(means["draws"] - means["derived"]) < 0.02 < abs(means["draws"] - means["stated"])


def test_privacy_loss_against_a_direct_quadrature_in_d2():
    c_a, c_b, epsilon = np.diag([0.0, 2.0]), np.diag([-1.0, 3.0]), 1.0
    grid = sphere_grid(2, 400)

    def log_p(theta, lam):  # the top eigenvector is e2 in both: a = ε(λ₂ − λ₁)/4, θ from e2
        a = epsilon * (lam[1] - lam[0]) / 4.0
        z = integrate.quad(lambda s: _closed_form_d2(s, a), 0.0, 2 * np.pi)[0] / (2 * np.pi)
        return np.log(_closed_form_d2(theta, a) / z)

    loss = lambda theta: -abs(log_p(theta, (0.0, 2.0)) - log_p(theta, (-1.0, 3.0)))
    direct = max(-optimize.minimize_scalar(loss, bounds=(lo, lo + np.pi / 2), method="bounded").fun
                 for lo in (0.0, np.pi / 2))
    # the grid's nodes are midpoints, so its sup is below the true one by O(spacing²)
    assert privacy_loss(c_a, c_b, epsilon, grid) == pytest.approx(direct, abs=1e-4)


def test_the_reduced_quadratures_agree_with_the_sphere_grid_in_d3():
    grid = sphere_grid(3, 120)
    for epsilon in (0.5, 2.0):
        on_grid = privacy_loss(np.zeros((3, 3)), np.diag([1.0, -1.0, -1.0]), epsilon, grid) / epsilon
        assert axial_loss(3, epsilon) == pytest.approx(on_grid, abs=2e-3)
        stated = privacy_loss(np.zeros((3, 3)), np.diag([1.0, -1.0, -1.0]), epsilon, grid, buggy=False) / epsilon
        assert axial_loss(3, epsilon, buggy=False) == pytest.approx(stated, abs=2e-3)
    on_grid = privacy_loss(np.diag([5.0, 5.0, 0.0]), np.diag([6.0, 4.0, 0.0]), 2.0, grid) / 2.0
    assert planar_loss(3, 2.0, 5.0) == pytest.approx(on_grid, abs=2e-3)
    assert on_grid > 1.0  # a violation: more than ε on matrices 1 apart in spectral norm


def test_the_planar_event_against_the_uniform_law():
    # C_A = diag(M, M, 0, 0) is uniform in the plane's angle θ: P(cos²θ < τ) = (2/π) arcsin √τ, and the whole circle 1
    p_a, p_b = planar_event(4, 2.0, 20.0, 1e-3)
    assert p_a == pytest.approx(2 / np.pi * np.arcsin(np.sqrt(1e-3)), rel=1e-9)
    assert np.log(p_a / p_b) > 2.0  # the event alone exceeds the claim ε = 2
    assert planar_event(4, 2.0, 20.0, 1.0) == pytest.approx((1.0, 1.0), abs=1e-9)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="c must be a symmetric square matrix"):
        concentration(np.ones((2, 3)), 1.0)
    with pytest.raises(ValueError, match="d must be 2 or 3"):
        sphere_grid(4)
