"""Remark 11's region and Remark 14's free-privacy condition, against direct comparisons."""

import math

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.calibration import (gaussian_approx_dp, gaussian_mi_dp, gaussian_secret_mi_pp,
                                    remark11_mi_dp_is_quieter, remark11_threshold, remark14_correlation_threshold,
                                    remark14_free_privacy)


@pytest.mark.parametrize("dim", [1, 5, 30])
def test_remark11_region_agrees_with_comparing_the_two_sigmas(dim):
    for eps in (0.01, 0.05, 0.2, 0.45):
        for eps_prime in np.linspace(0.02, 1.0, 25):
            mi = gaussian_mi_dp(eps, l2_sensitivity=1.0, dim=dim).variance
            classical = gaussian_approx_dp(eps_prime, math.sqrt(2 * eps), 1.0).variance
            assert remark11_mi_dp_is_quieter(eps_prime, eps, dim) == (mi < classical)


def test_remark11_boundary_equalizes_the_variances():
    eps, dim = 0.05, 30
    boundary = remark11_threshold(eps, dim)
    assert boundary < 1.0
    mi = gaussian_mi_dp(eps, l2_sensitivity=1.0, dim=dim).variance
    classical = gaussian_approx_dp(boundary, math.sqrt(2 * eps), 1.0).variance
    assert mi == pytest.approx(classical, rel=1e-12)


def test_remark11_region_vectorizes_and_shrinks_with_dim():
    e_prime, e = np.meshgrid(np.linspace(0.05, 1.0, 20), np.linspace(0.01, 0.45, 15))
    small = remark11_mi_dp_is_quieter(e_prime, e, 2)
    large = remark11_mi_dp_is_quieter(e_prime, e, 30)
    assert small.shape == e.shape
    assert np.all(small >= large)  # the paper: region decreases (by inclusion) in d


def test_remark14_free_privacy_matches_theorem6_zero_noise():
    for a_term, h in [(1.0, 0.0), (1.0, 1.5), (0.2, -1.0), (3.0, 0.9)]:
        free = remark14_free_privacy(0.5, a_term, h, 2)
        assert free == (gaussian_secret_mi_pp(0.5, a_term, h, 2).scale == 0.0)


def test_remark14_correlation_threshold_for_jointly_gaussian():
    eps = 0.3
    rho_star = remark14_correlation_threshold(eps)
    assert rho_star == pytest.approx(math.sqrt((math.exp(2 * eps) - 1) * math.exp(-2 * eps)))
    # Var(f|g,w) = (1 − ρ²) Var(f|w): at ρ just below ρ*, free; just above, not.
    var_fw = 2.0
    for rho, expected in [(rho_star * 0.99, True), (min(rho_star * 1.01, 0.999), False)]:
        h = 0.5 * math.log(2 * math.pi * math.e * (1 - rho ** 2) * var_fw)
        assert remark14_free_privacy(eps, var_fw, h, 1) is expected


def test_region_bad_input():
    with pytest.raises(InputError, match="'epsilon'"):
        remark11_threshold(0.6, 30)
    with pytest.raises(InputError, match="'epsilon'"):
        remark11_threshold(-0.1, 30)
    with pytest.raises(InputError, match="'epsilon_prime'"):
        remark11_mi_dp_is_quieter(1.5, 0.1, 30)
    with pytest.raises(InputError, match="'dim'"):
        remark11_threshold(0.1, 0)
    with pytest.raises(InputError, match="'total_cond_var'"):
        remark14_free_privacy(0.1, -1.0, 0.0, 1)
