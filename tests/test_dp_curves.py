"""Privacy profiles against direct numerical integration of the hockey-stick divergence."""

import math

import numpy as np
import pytest
from scipy import integrate

from estimators.validation import InputError
from mechanisms.claims.dp_curves import gaussian_dp_delta, laplace_dp_delta


def hockey_stick(p_pdf, q_pdf, eps, lo, hi):
    scale = math.exp(eps)
    val, _ = integrate.quad(lambda t: max(p_pdf(t) - scale * q_pdf(t), 0.0), lo, hi, limit=400, points=[0.0])
    return val


# The densities in plain math: quad calls them point by point, where a scipy.stats call costs
# tens of microseconds.
def normal_pdf(mean, sigma):
    return lambda t: math.exp(-0.5 * ((t - mean) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def laplace_pdf(mean, b):
    return lambda t: math.exp(-abs(t - mean) / b) / (2 * b)


@pytest.mark.parametrize("sigma,delta_l2,eps", [(1.0, 1.0, 0.5), (0.5, 1.0, 1.0), (2.0, 1.0, 0.1), (1.0, 3.0, 2.0)])
def test_gaussian_profile_matches_integral(sigma, delta_l2, eps):
    p = normal_pdf(delta_l2, sigma)
    q = normal_pdf(0.0, sigma)
    expected = hockey_stick(p, q, eps, -30 * sigma, delta_l2 + 30 * sigma)
    assert gaussian_dp_delta(eps, sigma, delta_l2) == pytest.approx(expected, abs=1e-8)


@pytest.mark.parametrize("b,delta_l1,eps", [(1.0, 1.0, 0.3), (0.5, 1.0, 1.0), (1.0, 1.0, 1.5), (2.0, 3.0, 0.0)])
def test_laplace_profile_matches_integral(b, delta_l1, eps):
    p = laplace_pdf(delta_l1, b)
    q = laplace_pdf(0.0, b)
    expected = hockey_stick(p, q, eps, -60 * b, delta_l1 + 60 * b)
    assert laplace_dp_delta(eps, b, delta_l1) == pytest.approx(expected, abs=1e-8)


def test_profiles_vectorize_and_validate():
    eps = np.array([0.0, 0.5, 1.0])
    assert gaussian_dp_delta(eps, 1.0, 1.0).shape == (3,)
    with pytest.raises(InputError, match="'sigma'"):
        gaussian_dp_delta(0.5, 0.0, 1.0)
    with pytest.raises(InputError, match="'epsilon'"):
        laplace_dp_delta(-1.0, 1.0, 1.0)
