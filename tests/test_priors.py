"""Priors (members of Θ): shapes, moments from their parameters, structure flags, validation."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from estimators.validation import InputError
from mechanisms.inputs.priors import Categorical, FixedRest, ProductBernoulli, ProductGaussian, TwoPoint, UniformBox
from mechanisms.inputs.user_priors import EmpiricalResample, Mixture


def _within(sample_mean, expected, sd, count, z=5.0):
    """Each sample mean lies within z standard errors of its expectation."""
    error = np.abs(sample_mean - expected)
    np.testing.assert_array_less(error, np.broadcast_to(z * np.maximum(sd, 1e-12) / np.sqrt(count), error.shape))


def test_product_bernoulli_mean_and_values():
    p = np.array([[0.1, 0.5], [0.9, 0.3], [0.0, 1.0]])
    draws = ProductBernoulli(p)(20000, 1)
    assert draws.shape == (20000, 3, 2)
    assert set(np.unique(draws)) <= {0.0, 1.0}
    _within(draws.mean(axis=0), p, np.sqrt(p * (1 - p)), 20000)
    # p = 0 and p = 1 are exact.
    assert (draws[:, 2, 0] == 0).all() and (draws[:, 2, 1] == 1).all()


def test_bernoulli_shape_inference_and_broadcast():
    assert ProductBernoulli([0.2, 0.4, 0.6]).shape == (3, 1)
    prior = ProductBernoulli(0.3, shape=(5, 2))
    assert prior.shape == (5, 2) and prior.n == 5 and prior.k == 2
    np.testing.assert_array_equal(prior.p, np.full((5, 2), 0.3))


def test_product_gaussian_covariance_per_record():
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    mean = np.array([[1.0, -1.0], [0.0, 3.0]])
    draws = ProductGaussian(mean, cov)(20000, 2)
    _within(draws.mean(axis=0), mean, np.sqrt(np.diag(cov)), 20000)
    for record in range(2):
        sample_cov = np.cov(draws[:, record, :], rowvar=False)
        # The sample covariance entry has standard error sqrt((S_ii S_jj + S_ij^2) / N).
        se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / 20000)
        np.testing.assert_array_less(np.abs(sample_cov - cov), 5 * se)
    # Different records are independent: their cross-covariance is near zero.
    cross = np.cov(draws[:, 0, 0], draws[:, 1, 0])[0, 1]
    assert abs(cross) < 5 * np.sqrt(2.0 * 2.0 / 20000)


def test_gaussian_theta_g_members_and_singular_covariance():
    prior = ProductGaussian.theta_g([0.5, -1.0, 2.0], [1.0, 0.25, 4.0])
    assert prior.shape == (3, 1)
    draws = prior(30000, 3)
    _within(draws[:, :, 0].var(axis=0), np.array([1.0, 0.25, 4.0]),
            np.sqrt(2) * np.array([1.0, 0.25, 4.0]), 30000)
    assert prior.in_theta_g(2.0, 4.0) and not prior.in_theta_g(1.9, 4.0) and not prior.in_theta_g(2.0, 3.9)
    # Rank-one covariance: the second attribute is exactly twice the first.
    rank_one = ProductGaussian.iid_rows([0.0, 0.0], [[1.0, 2.0], [2.0, 4.0]], n=4)
    draws = rank_one(50, 0)
    np.testing.assert_allclose(draws[..., 1], 2 * draws[..., 0], atol=1e-9)
    assert rank_one.independent_rows and not rank_one.independent_columns
    assert ProductGaussian(np.zeros((2, 3)), 1.0).independent_columns


def test_uniform_box_moments_and_support():
    low = np.array([[0.0], [-2.0]])
    high = np.array([[1.0], [4.0]])
    draws = UniformBox(low, high)(20000, 4)
    assert ((draws >= low) & (draws <= high)).all()
    _within(draws.mean(axis=0), (low + high) / 2, (high - low) / np.sqrt(12), 20000)


def test_categorical_frequencies_and_values():
    probabilities = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0]])
    prior = Categorical(probabilities, values=[-1.0, 0.0, 7.0])
    assert prior.shape == (2, 1)
    draws = prior(20000, 5)
    for record in range(2):
        frequencies = np.array([(draws[:, record, 0] == v).mean() for v in (-1.0, 0.0, 7.0)])
        _within(frequencies, probabilities[record], np.sqrt(probabilities[record] * (1 - probabilities[record])), 20000)


def test_two_point_records():
    first = np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]])
    second = np.array([[1.0, 0.0], [2.0, 3.0], [6.0, 6.0]])
    prior = TwoPoint(first, second, p=[0.25, 0.5, 0.0])
    draws = prior(20000, 6)
    is_second = (draws == second).all(axis=2)
    is_first = (draws == first).all(axis=2)
    assert (is_first | is_second).all()
    _within(is_second.mean(axis=0), np.array([0.25, 0.5, 0.0]), np.sqrt([0.1875, 0.25, 0.0]), 20000)
    # Record 1 switches both attributes together: columns are dependent.
    assert not prior.independent_columns
    assert TwoPoint(first, second, p=[0.25, 0.0, 0.0]).independent_columns


def test_two_point_draws_follow_the_uniforms_record_by_record():
    # Record i of draw j is second(i) exactly when the draw's i-th uniform (from the same rng) is below p_i;
    # the rows are copied bit for bit (a -0.0 stays -0.0).
    first = np.array([[0.0, -0.0], [1.5, 2.5]])
    second = np.array([[-0.0, 1.0], [np.pi, -7.0]])
    prior = TwoPoint(first, second, p=[0.3, 0.8])
    draws = prior(500, np.random.default_rng(11))
    uniforms = np.random.default_rng(11).random((500, 2))
    for j in range(500):
        for i in range(2):
            expected = second[i] if uniforms[j, i] < [0.3, 0.8][i] else first[i]
            assert draws[j, i].tobytes() == expected.tobytes()
    assert draws.dtype == np.float64 and draws.flags.c_contiguous


def test_fixed_rest_really_fixes_the_other_rows():
    rest = np.arange(10.0).reshape(5, 2)
    prior = FixedRest(rest, 2, ProductBernoulli(0.5, shape=(1, 2)))
    draws = prior(3000, 7)
    others = [0, 1, 3, 4]
    assert (draws[:, others, :] == rest[others]).all()
    assert set(np.unique(draws[:, 2, :])) == {0.0, 1.0}
    _within(draws[:, 2, :].mean(axis=0), np.array([0.5, 0.5]), np.array([0.5, 0.5]), 3000)
    assert prior.discrete and prior.independent_rows
    assert not FixedRest(rest, 0, ProductGaussian(np.zeros((1, 2)), 1.0)).discrete


def test_empirical_resampling_with_and_without_replacement(tmp_path):
    data = np.arange(12.0).reshape(6, 2)
    prior = EmpiricalResample(data, n_records=4)
    draws = prior(6000, 8)
    assert draws.shape == (6000, 4, 2)
    row_ids = draws[..., 0] / 2
    assert np.isin(row_ids, np.arange(6)).all() and (draws[..., 1] == draws[..., 0] + 1).all()
    _within(np.array([(row_ids == r).mean() for r in range(6)]), np.full(6, 1 / 6),
            np.full(6, np.sqrt(5 / 36)), 24000)
    assert prior.independent_rows and prior.discrete
    without = EmpiricalResample(data, n_records=6, replace=False)
    rows = np.sort(without(200, 9)[..., 0], axis=1)
    assert (rows == data[:, 0]).all()  # a permutation of all six records each time
    assert not without.independent_rows


def test_empirical_from_csv_with_header_and_npy(tmp_path):
    csv = tmp_path / "salaries.csv"
    csv.write_text("salary_2022,salary_2023\n50,52\n60,60\n70,75\n")
    prior = EmpiricalResample.from_file(csv, n_records=2)
    np.testing.assert_array_equal(prior.data, [[50, 52], [60, 60], [70, 75]])
    npy = tmp_path / "data.npy"
    np.save(npy, np.array([1.0, 2.0, 3.0]))
    assert EmpiricalResample.from_file(npy, n_records=2).shape == (2, 1)
    with pytest.raises(InputError, match="'path'.*does not exist"):
        EmpiricalResample.from_file(tmp_path / "missing.csv", 2)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,x\n")
    with pytest.raises(InputError, match="'path'.*cannot read"):
        EmpiricalResample.from_file(bad, 2)
    with pytest.raises(InputError, match="'path'.*.csv or .npy"):
        EmpiricalResample.from_file(csv.rename(tmp_path / "data.txt"), 2)


def test_mixture_weights_and_flags():
    zeros = ProductBernoulli(0.0, shape=(3, 1))
    ones = ProductBernoulli(1.0, shape=(3, 1))
    mixture = Mixture((zeros, ones), [0.3, 0.7])
    draws = mixture(20000, 10)
    # Each database comes whole from one component: all zeros or all ones.
    assert ((draws == 0).all(axis=(1, 2)) | (draws == 1).all(axis=(1, 2))).all()
    _within(np.array([(draws == 1).all(axis=(1, 2)).mean()]), 0.7, np.sqrt(0.21), 20000)
    assert not mixture.independent_rows and mixture.discrete
    assert Mixture((ones,), [1.0]).independent_rows


def test_same_seed_same_databases():
    priors = [
        ProductBernoulli(0.3, shape=(4, 2)), ProductGaussian(np.zeros((4, 2)), [[1.0, 0.5], [0.5, 1.0]]),
        UniformBox(0.0, 1.0, shape=(4, 2)), Categorical([0.5, 0.5], shape=(4, 2)),
        TwoPoint(np.zeros((4, 2)), np.ones((4, 2))), FixedRest(np.zeros((4, 2)), 1, UniformBox(0.0, 1.0, shape=(1, 2))),
        EmpiricalResample(np.arange(10.0).reshape(5, 2), 4), Mixture((UniformBox(0.0, 1.0, shape=(4, 2)),
                                                                     ProductBernoulli(0.5, shape=(4, 2))), [0.5, 0.5]),
    ]
    for prior in priors:
        np.testing.assert_array_equal(prior(7, 123), prior(7, 123))
        np.testing.assert_array_equal(prior(7, np.random.default_rng(5)), prior(7, 5))
        assert not np.array_equal(prior(7, 1), prior(7, 2)), prior.name
        assert prior(7, 0).shape == (7, 4, 2)
        summary = json.loads(json.dumps(prior.to_dict()))
        assert summary["shape"] == [4, 2] and summary["description"] == prior.describe()
        assert "4x2" in prior.describe() or "4 records" in prior.describe()


@pytest.mark.parametrize("build, message", [
    (lambda: ProductBernoulli([[1.5]]), "'p'.*\\[0, 1\\]"),
    (lambda: ProductBernoulli([[np.nan]]), "'p'.*finite"),
    (lambda: ProductBernoulli(0.5), "'p'.*shape=\\(n, k\\)"),
    (lambda: ProductBernoulli(0.5, shape=(0, 1)), "'shape\\[0\\] \\(n\\)'"),
    (lambda: ProductBernoulli([0.1, 0.2], shape=(3, 1)), "'p'.*does not broadcast"),
    (lambda: ProductGaussian(np.zeros((2, 2)), [[1.0, 2.0], [2.0, 1.0]]), "'cov'.*positive semi-definite"),
    (lambda: ProductGaussian(np.zeros((2, 2)), [[1.0, 0.5], [0.0, 1.0]]), "'cov'.*symmetric"),
    (lambda: ProductGaussian(np.zeros((2, 2)), np.eye(3)), "'cov'.*\\(2, 2\\)"),
    (lambda: ProductGaussian.theta_g([0.0, 1.0], [1.0, -1.0]), "'variances'"),
    (lambda: UniformBox([1.0], [1.0]), "'low' and 'high'"),
    (lambda: Categorical([[0.5, 0.6]]), "'probabilities'.*sum to 1"),
    (lambda: Categorical([[1.5, -0.5]]), "'probabilities'.*non-negative"),
    (lambda: Categorical([[0.5, 0.5]], values=[1.0]), "'values'"),
    (lambda: TwoPoint(np.zeros((2, 1)), np.ones((2, 1)), p=[0.5, 2.0]), "'p'"),
    (lambda: TwoPoint(np.zeros((2, 1)), np.ones((3, 1))), "'second'"),
    (lambda: FixedRest(np.zeros((3, 2)), 3, ProductBernoulli(0.5, shape=(1, 2))), "'record'.*< n = 3"),
    (lambda: FixedRest(np.zeros((3, 2)), 0, ProductBernoulli(0.5, shape=(1, 3))), "'record_prior'"),
    (lambda: EmpiricalResample(np.zeros((3, 2)), 4, replace=False), "'n_records'"),
    (lambda: EmpiricalResample(np.zeros((3, 2)), 2, replace="no"), "'replace'"),
    (lambda: Mixture((ProductBernoulli(0.5, shape=(2, 1)),), [0.5]), "'weights'"),
    (lambda: Mixture((ProductBernoulli(0.5, shape=(2, 1)), ProductBernoulli(0.5, shape=(3, 1))), [0.5, 0.5]),
     "'components'.*one shape"),
])
def test_bad_parameters_name_the_argument(build, message):
    with pytest.raises(InputError, match=message):
        build()


def test_bad_sample_count_and_seed():
    prior = ProductBernoulli(0.5, shape=(2, 1))
    with pytest.raises(InputError, match="'m'"):
        prior(0, 1)
    with pytest.raises(InputError, match="'seed'"):
        prior(3, "seven")


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), k=st.integers(1, 4), m=st.integers(1, 9),
       p=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_every_prior_returns_m_by_n_by_k(n, k, m, p, seed):
    priors = [ProductBernoulli(p, shape=(n, k)), ProductGaussian(np.zeros((n, k)), 1.0 + p),
              UniformBox(-p - 1.0, p, shape=(n, k)), Categorical([p, 1.0 - p], shape=(n, k)),
              TwoPoint(np.zeros((n, k)), np.ones((n, k)), p=p)]
    for prior in priors:
        draws = prior(m, seed)
        assert draws.shape == (m, n, k) and draws.dtype == np.float64 and np.isfinite(draws).all()


@settings(max_examples=40, deadline=None)
@given(p=st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not 0 <= v <= 1),
                   st.just(float("nan"))))
def test_any_probability_outside_unit_interval_is_rejected(p):
    with pytest.raises(InputError, match="'p'"):
        ProductBernoulli(p, shape=(2, 2))
