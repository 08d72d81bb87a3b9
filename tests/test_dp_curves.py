"""Privacy profiles against direct numerical integration of the hockey-stick divergence."""

import numpy as np
import pytest
from scipy import integrate, stats

from estimators.validation import InputError
from mechanisms.dp_curves import gaussian_dp_delta, laplace_dp_delta


def hockey_stick(p_pdf, q_pdf, eps, lo, hi):
    val, _ = integrate.quad(lambda t: max(p_pdf(t) - np.exp(eps) * q_pdf(t), 0.0), lo, hi, limit=400, points=[0.0])
    return val


@pytest.mark.parametrize("sigma,delta_l2,eps", [(1.0, 1.0, 0.5), (0.5, 1.0, 1.0), (2.0, 1.0, 0.1), (1.0, 3.0, 2.0)])
def test_gaussian_profile_matches_integral(sigma, delta_l2, eps):
    p = stats.norm(delta_l2, sigma).pdf
    q = stats.norm(0.0, sigma).pdf
    expected = hockey_stick(p, q, eps, -30 * sigma, delta_l2 + 30 * sigma)
    assert gaussian_dp_delta(eps, sigma, delta_l2) == pytest.approx(expected, abs=1e-8)


@pytest.mark.parametrize("b,delta_l1,eps", [(1.0, 1.0, 0.3), (0.5, 1.0, 1.0), (1.0, 1.0, 1.5), (2.0, 3.0, 0.0)])
def test_laplace_profile_matches_integral(b, delta_l1, eps):
    p = stats.laplace(delta_l1, b).pdf
    q = stats.laplace(0.0, b).pdf
    expected = hockey_stick(p, q, eps, -60 * b, delta_l1 + 60 * b)
    assert laplace_dp_delta(eps, b, delta_l1) == pytest.approx(expected, abs=1e-8)


def test_profiles_vectorize_and_validate():
    eps = np.array([0.0, 0.5, 1.0])
    assert gaussian_dp_delta(eps, 1.0, 1.0).shape == (3,)
    with pytest.raises(InputError, match="'sigma'"):
        gaussian_dp_delta(0.5, 0.0, 1.0)
    with pytest.raises(InputError, match="'epsilon'"):
        laplace_dp_delta(-1.0, 1.0, 1.0)
