"""The logistic-regression statistic (audit.classifier_statistic) against closed-form log-likelihood ratios."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from audit.classifier_statistic import LogOdds, OutputFeatures, pair_statistic
from estimators.validation import InputError


def test_output_features_one_hot_only_few_valued_columns():
    outputs = np.column_stack([np.arange(40) % 3, np.linspace(0, 1, 40), np.arange(40) % 2])
    features = OutputFeatures(outputs)
    assert [j for j, _ in features.levels] == [0]  # 3 values: one-hot; 40 values: raw; 2 values: raw is enough
    x = features(outputs)
    assert x.shape == (40, 3 + 3)
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(x[:, 3:] * features.std[3:] + features.mean[3:],
                               (outputs[:, [0]] == np.array([0, 1, 2])[None]).astype(float))


def test_log_odds_of_independent_bits_is_the_log_likelihood_ratio():
    """Three independent bits with P(y_j = 1) = p_j under the first input and q_j under the second:
    log p(y)/q(y) = Σ_j y_j log(p_j/q_j) + (1 − y_j) log((1 − p_j)/(1 − q_j)), linear in the bits, so
    a logistic regression on equally many draws of each input estimates it (no prior-odds term)."""
    p, q = np.array([0.7, 0.5, 0.2]), np.array([0.3, 0.5, 0.4])
    rng = np.random.default_rng(0)
    n = 40000
    log_odds = LogOdds((rng.random((n, 3)) < p).astype(float), (rng.random((n, 3)) < q).astype(float))
    grid = np.array(list(itertools.product((0.0, 1.0), repeat=3)))
    truth = (grid * np.log(p / q) + (1 - grid) * np.log((1 - p) / (1 - q))).sum(axis=1)
    np.testing.assert_allclose(log_odds(grid), truth, atol=0.08)


def test_pair_statistic_is_signed_by_the_order_of_the_pair_and_refuses_other_pairs():
    log_odds = LogOdds(np.array([[1.0], [1.0], [0.0], [1.0]]), np.array([[0.0], [0.0], [1.0], [0.0]]))
    statistic = pair_statistic(log_odds, np.array([0.0]), np.array([1.0]))
    y = np.array([[1.0], [0.0]])
    forward = statistic(np.array([0.0]), np.array([1.0]), None, y)
    assert forward[0] > 0 > forward[1]
    np.testing.assert_allclose(statistic(np.array([1.0]), np.array([0.0]), None, y), -forward)
    with pytest.raises(InputError, match="another pair"):
        statistic(np.array([0.0]), np.array([2.0]), None, y)


def test_log_odds_needs_outputs_of_both_inputs():
    with pytest.raises(InputError, match="both inputs"):
        LogOdds(np.zeros((0, 1)), np.ones((5, 1)))
