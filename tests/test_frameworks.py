"""Structured Pufferfish frameworks (Definition 4): DP, attribute privacy, the salary example."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from audit.frameworks import (
    PufferfishFramework,
    SecretFunction,
    SecretPair,
    attribute_privacy,
    differential_privacy,
    salary_example,
    salary_query,
)
from estimators.validation import InputError
from mechanisms.base import MechanismError
from mechanisms.inputs.priors import Categorical, ProductBernoulli, ProductGaussian
from mechanisms.inputs.user_priors import EmpiricalResample, Mixture


def test_dp_secrets_are_rows_and_the_rest():
    dbs = np.random.default_rng(0).normal(size=(5, 4, 3))
    framework = differential_privacy(4, 3)
    assert len(framework.secret_pairs) == 4 and framework.shape == (4, 3)
    for i, pair in enumerate(framework.secret_pairs):
        g, w = pair.evaluate(dbs)
        np.testing.assert_array_equal(g, dbs[:, i, :])
        manual_rest = np.concatenate([dbs[:, j, :] for j in range(4) if j != i], axis=1)
        np.testing.assert_array_equal(w, manual_rest)


def test_dp_strategies_follow_the_prior():
    pair = differential_privacy(3, 1).secret_pairs[0]
    assert pair.strategy(ProductBernoulli(0.5, shape=(3, 1))) == "certify"
    assert pair.strategy(ProductGaussian(np.zeros((3, 1)), 1.0)) == "certify"
    dependent_discrete = Mixture((ProductBernoulli(0.1, shape=(3, 1)), ProductBernoulli(0.9, shape=(3, 1))), [0.5, 0.5])
    assert not pair.g_w_independent(dependent_discrete) and pair.w_discrete(dependent_discrete)
    assert pair.strategy(dependent_discrete) == "stratify"
    dependent_continuous = Mixture((ProductGaussian(np.zeros((3, 1)), 1.0), ProductGaussian(np.ones((3, 1)), 1.0)),
                                   [0.5, 0.5])
    assert pair.strategy(dependent_continuous) == "estimate-only"
    without_replacement = EmpiricalResample(np.arange(5.0), 3, replace=False)
    assert pair.strategy(without_replacement) == "stratify"


def test_dp_with_one_record_has_no_public_part():
    framework = differential_privacy(1, 2)
    assert framework.public == () and framework.edges == ()
    (pair,) = framework.secret_pairs
    assert pair.w is None and pair.strategy(Mixture((ProductGaussian(np.zeros((1, 2)), 1.0),), [1.0])) == "certify"


def test_attribute_privacy_without_public_information():
    dbs = np.random.default_rng(1).normal(size=(6, 5, 3))
    framework = attribute_privacy(5, 3, statistic=lambda column: column.max(axis=1, keepdims=True))
    assert framework.public == () and len(framework.secret_pairs) == 3
    for j, pair in enumerate(framework.secret_pairs):
        g, w = pair.evaluate(dbs)
        assert w is None
        np.testing.assert_array_equal(g, dbs[:, :, j].max(axis=1)[:, None])
        correlated = ProductGaussian.iid_rows([0.0, 0.0, 0.0], [[1, 0.9, 0], [0.9, 1, 0], [0, 0, 1]], n=5)
        assert pair.strategy(correlated) == "certify"  # nothing to condition on


def test_attribute_privacy_with_public_rest():
    dbs = np.random.default_rng(2).normal(size=(4, 3, 3))
    framework = attribute_privacy(3, 3, public_rest=True)
    correlated = ProductGaussian.iid_rows([0.0, 0.0, 0.0], [[1, 0.5, 0], [0.5, 1, 0], [0, 0, 1]], n=3)
    for j, pair in enumerate(framework.secret_pairs):
        g, w = pair.evaluate(dbs)
        np.testing.assert_array_equal(g, dbs[:, :, j])
        others = [c for c in range(3) if c != j]
        # Row-major flattening of the other columns: record 0's attributes, then record 1's, ...
        manual = np.stack([dbs[:, i, c] for i in range(3) for c in others], axis=1)
        np.testing.assert_array_equal(w, manual)
        assert pair.strategy(ProductBernoulli(0.5, shape=(3, 3))) == "certify"
        assert pair.strategy(correlated) == "estimate-only"
    with pytest.raises(InputError, match="'public_rest'"):
        attribute_privacy(3, 1, public_rest=True)


def _figure_1_departments():
    # Four departments of four employees, columns (2022 salary, 2023 salary). HR and IT
    # have more than two raises (g = 1), PR and R&D at most two (g = 0), as in Fig. 1.
    hr = [[50, 55], [60, 61], [70, 72], [80, 80]]     # 3 raises
    it = [[90, 95], [85, 90], [70, 71], [65, 66]]     # 4 raises
    pr = [[40, 42], [45, 45], [50, 49], [55, 56]]     # 2 raises
    rd = [[100, 100], [95, 90], [110, 111], [99, 99]]  # 1 raise
    return np.array([hr, it, pr, rd], dtype=float)


def test_salary_example_matches_figure_1():
    dbs = _figure_1_departments()
    framework = salary_example()
    assert framework.shape == (4, 2) and framework.public and len(framework.edges) == 1
    g, w = framework.secret_pairs[0].evaluate(dbs)
    np.testing.assert_array_equal(g[:, 0], [1, 1, 0, 0])
    np.testing.assert_allclose(w[:, 0], [(50 + 60 + 70 + 80) / 4, (90 + 85 + 70 + 65) / 4,
                                         (40 + 45 + 50 + 55) / 4, (100 + 95 + 110 + 99) / 4])
    np.testing.assert_allclose(salary_query(dbs)[:, 0], [(55 + 61 + 72 + 80) / 4, (95 + 90 + 71 + 66) / 4,
                                                         (42 + 45 + 49 + 56) / 4, (100 + 90 + 111 + 99) / 4])
    pair = framework.secret_pairs[0]
    assert pair.g.always_discrete and pair.independence == "unknown"
    assert pair.strategy(ProductGaussian(np.zeros((4, 2)), 1.0)) == "estimate-only"
    assert pair.strategy(EmpiricalResample(dbs.reshape(-1, 2), 4)) == "stratify"
    # A lower threshold moves PR into g = 1.
    g1 = salary_example(threshold=1).secret_pairs[0].g(dbs)
    np.testing.assert_array_equal(g1[:, 0], [1, 1, 1, 0])


def test_framework_summary_is_json_ready():
    framework = differential_privacy(2, 1, priors=[ProductBernoulli(0.5, shape=(2, 1)),
                                                   Categorical([0.2, 0.8], shape=(2, 1))])
    summary = json.loads(json.dumps(framework.to_dict()))
    assert summary["edges"] == [["record 0", "records except 0"], ["record 1", "records except 1"]]
    assert len(summary["strategies"]) == 4 and {s["strategy"] for s in summary["strategies"]} == {"certify"}
    assert framework.with_priors().priors == () and framework.with_priors().shape == (2, 1)


def test_framework_validation():
    g = SecretFunction("g", lambda d: d[:, 0, :])
    w = SecretFunction("w", lambda d: d[:, 1, :])
    stranger = SecretFunction("stranger", lambda d: d[:, 0, :])
    with pytest.raises(InputError, match="'edges'.*'stranger ~ w'"):
        PufferfishFramework("x", (g,), (w,), (SecretPair(stranger, w),))
    with pytest.raises(InputError, match="'edges' must be empty"):
        PufferfishFramework("x", (g,), (), (SecretPair(g, w),))
    with pytest.raises(InputError, match="'private'"):
        PufferfishFramework("x", ())
    with pytest.raises(InputError, match="'independence'"):
        SecretPair(g, w, "sometimes")
    with pytest.raises(InputError, match="'priors'.*prior 0 has shape \\(3, 1\\)"):
        differential_privacy(2, 1, priors=[ProductBernoulli(0.5, shape=(3, 1))])
    with pytest.raises(InputError, match="'function'"):
        SecretFunction("g", None)
    with pytest.raises(InputError, match="'threshold'"):
        salary_example(n=4, threshold=4)
    with pytest.raises(InputError, match="'n'"):
        differential_privacy(0, 1)


def test_secret_function_with_wrong_output_is_named():
    flat = SecretFunction("flat g", lambda d: d[:, 0, 0])
    with pytest.raises(MechanismError, match="secret function 'flat g' returned shape \\(3,\\)"):
        flat(np.zeros((3, 2, 1)))
    nan = SecretFunction("nan g", lambda d: np.where(d[:, 0, :] > 0, np.nan, 0.0))
    dbs = np.zeros((3, 2, 1))
    dbs[1, 0, 0] = 1.0
    with pytest.raises(MechanismError, match="'nan g' returned NaN or inf for database 1"):
        nan(dbs)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 6), k=st.integers(1, 4), m=st.integers(1, 5), seed=st.integers(0, 1000))
def test_dp_pairs_partition_every_database(n, k, m, seed):
    dbs = np.random.default_rng(seed).normal(size=(m, n, k))
    for i, pair in enumerate(differential_privacy(n, k).secret_pairs):
        g, w = pair.evaluate(dbs)
        assert g.shape == (m, k) and w.shape == (m, (n - 1) * k)
        rebuilt = np.insert(w.reshape(m, n - 1, k), i, g, axis=1)
        np.testing.assert_array_equal(rebuilt, dbs)


def _python_calls_building(n: int) -> int:
    """Python-level calls (generator steps included) made while building the DP framework on n records."""
    import sys

    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        differential_privacy(n, 1)
    finally:
        sys.setprofile(None)
    return calls


def test_dp_framework_set_up_is_linear_in_records():
    # Issue 32 B2: checking each edge against every private and public function made set-up
    # O(n²) (16 s at n = 30,000). Counting Python calls, not time: quadrupled work when n
    # doubles is the quadratic signature; linear set-up doubles (the 2.5 leaves room for the
    # constant part). The nested scan made the ratio ~3.9 at these sizes.
    small, large = _python_calls_building(200), _python_calls_building(400)
    assert large / small < 2.5, (small, large)
    framework = differential_privacy(400, 1)
    assert len(framework.edges) == 400 and len(framework.secret_pairs) == 400
