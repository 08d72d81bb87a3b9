"""The batched noisy mechanism: shapes, empirical noise, and empirical MI on Gaussian data."""

import math

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.calibration import (NoisyMechanism, gaussian_mi_pp, gaussian_projection_mi_pp, laplace_mi_dp)


def column_means(dbs):
    return dbs.mean(axis=1)


def gaussian_mi_from_correlation(x, y):
    # Bivariate Gaussian: I = −½ log(1 − ρ²), ρ the sample correlation.
    rho = np.corrcoef(x, y)[0, 1]
    return -0.5 * math.log(1.0 - rho ** 2)


def test_theorem4_mechanism_empirical_mi_matches_epsilon():
    # Rows i.i.d. N(0, s²), f = mean of the rows, secret g = row 0, public w = rows 1..n−1.
    # Var(f | w) = s²/n², and given w, f + Z − mean(w)/n = X_0/n + Z.
    rng = np.random.default_rng(0)
    m, n, s, eps = 200_000, 5, 2.0, 0.4
    cal = gaussian_mi_pp(eps, [s ** 2 / n ** 2])
    dbs = rng.normal(0.0, s, size=(m, n, 1))
    out = cal.mechanism(column_means)(dbs, rng)
    assert out.shape == (m, 1)
    residual = out[:, 0] - dbs[:, 1:, 0].sum(axis=1) / n
    estimate = gaussian_mi_from_correlation(dbs[:, 0, 0], residual)
    assert estimate == pytest.approx(eps, abs=0.01)


@pytest.mark.parametrize("noise_cal", ["laplace", "gaussian"])
def test_noisy_mechanism_shape_and_noise_variance(noise_cal):
    rng = np.random.default_rng(1)
    m, n, d = 50_000, 4, 3
    cal = (laplace_mi_dp(0.5, l1_sensitivity=1.0, dim=d) if noise_cal == "laplace"
           else gaussian_mi_pp(0.5, [0.1, 0.2, 0.3]))
    dbs = rng.integers(0, 2, size=(m, n, d)).astype(float)
    out = cal.mechanism(column_means)(dbs, rng)
    assert out.shape == (m, d)
    noise = out - column_means(dbs)
    expected_var = 2 * cal.scale ** 2 if noise_cal == "laplace" else cal.scale ** 2
    np.testing.assert_allclose(noise.var(axis=0), expected_var, rtol=0.03)
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=4 * math.sqrt(expected_var / m))


def test_deterministic_projection_mechanism():
    rng = np.random.default_rng(2)
    a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]]) / math.sqrt(2)
    cal = gaussian_projection_mi_pp(0.5, 0.1, matrix=a)
    dbs = rng.normal(size=(30_000, 2, 3))
    out = cal.mechanism(column_means, matrix=a)(dbs, rng)
    assert out.shape == (30_000, 2)
    noise = out - column_means(dbs) @ a
    np.testing.assert_allclose(noise.var(axis=0), cal.variance, rtol=0.04)


def test_random_gaussian_projection_has_remark12_moments():
    # With f ≡ constant vector c, Aᵀc has per-coordinate variance ‖c‖²/d (entries N(0, 1/d)).
    rng = np.random.default_rng(3)
    c = np.array([1.0, 2.0, 2.0, 0.0])
    cal = gaussian_projection_mi_pp(1.0, 0.0, method="random-gaussian", projection_dim=2, input_dim=4,
                                    mean_sq_norm=9.0)
    mech = cal.mechanism(lambda dbs: np.broadcast_to(c, (dbs.shape[0], 4)))
    out = mech(np.zeros((40_000, 1, 1)), rng)
    assert out.shape == (40_000, 2)
    np.testing.assert_allclose(out.var(axis=0), 9.0 / 4 + cal.variance, rtol=0.04)


def test_same_seed_same_release():
    cal = gaussian_mi_pp(0.5, [1.0])
    dbs = np.ones((10, 3, 1))
    mech = cal.mechanism(column_means)
    np.testing.assert_array_equal(mech(dbs, 7), mech(dbs, 7))


def test_mechanism_bad_input():
    cal = gaussian_mi_pp(0.5, [1.0, 1.0])
    mech = cal.mechanism(column_means)
    with pytest.raises(InputError, match="'dbs'"):
        mech(np.ones((4, 2)), 0)
    with pytest.raises(InputError, match="'query'"):
        mech(np.ones((4, 2, 3)), 0)  # query returns 3 columns, calibration has dim 2
    with pytest.raises(InputError, match="'query'"):
        NoisyMechanism("not callable", "gaussian", 1.0, 1)
    with pytest.raises(InputError, match="'scale'"):
        NoisyMechanism(column_means, "gaussian", -1.0, 1)
    with pytest.raises(InputError, match="'projection'"):
        NoisyMechanism(column_means, "gaussian", 1.0, 3, projection=np.ones((3, 2)))
    proj = gaussian_projection_mi_pp(0.5, 0.1, projection_dim=1, max_column_norm=1.0)
    with pytest.raises(InputError, match="'matrix'"):
        proj.mechanism(column_means)
    with pytest.raises(InputError, match="'matrix'"):
        cal.mechanism(column_means, matrix=np.eye(2))
