"""Newton's L2-penalized logistic regression against scikit-learn's solver and the optimality condition."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from audit.statistics.classifier import NEWTON_MAX_FEATURES, LogOdds
from audit.statistics.logistic_regression import data_hessian, fit_logistic
from estimators.validation import InputError


def _gradient(x, y, w, c, inverse_c=1.0):
    # ∂/∂(w, c) of Σ log(1 + e^z) − y z + ‖w‖²/2, z = xw + c, written out independently.
    p = 1.0 / (1.0 + np.exp(-(x @ w + c)))
    return np.concatenate([x.T @ (p - y) + inverse_c * w, [np.sum(p - y)]])


@pytest.mark.parametrize("d, shift, seed", [(1, 0.3, 0), (2, 1.0, 1), (5, 0.1, 2), (3, 4.0, 3)])
def test_newton_reaches_sklearns_minimizer(d, shift, seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(shift, 1, (400, d)), rng.normal(0, 1, (600, d))])
    y = np.concatenate([np.ones(400), np.zeros(600)])
    w, c = fit_logistic(x, y)
    assert np.max(np.abs(_gradient(x, y, w, c))) < 1e-6
    reference = LogisticRegression(tol=1e-12, max_iter=100_000).fit(x, y)
    np.testing.assert_allclose(w, reference.coef_[0], atol=1e-5)
    assert c == pytest.approx(float(reference.intercept_[0]), abs=1e-5)


def test_separable_data_stays_finite():
    # Perfectly separated classes: without the penalty the coefficients would diverge.
    x = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    y = np.array([0.0, 0.0, 1.0, 1.0])
    w, c = fit_logistic(x, y)
    assert np.all(np.isfinite(w)) and np.max(np.abs(_gradient(x, y, w, c))) < 1e-6 and w[0] > 0


def test_bad_input_names_the_argument():
    with pytest.raises(InputError, match="features"):
        fit_logistic(np.zeros(3), np.zeros(3))
    with pytest.raises(InputError, match="'c'"):
        fit_logistic(np.zeros((3, 1)), np.zeros(3), c=0.0)
    with pytest.raises(InputError, match="solver"):
        LogOdds(np.zeros((2, 1)), np.ones((2, 1)), solver="sag")


def test_both_solvers_give_the_same_statistic():
    rng = np.random.default_rng(4)
    first, second = rng.laplace(0.5, 1, (500, 2)), rng.laplace(0, 1, (500, 2))
    y = rng.laplace(0, 1, (50, 2))
    # L-BFGS stops at scikit-learn's default tolerance (1e-4 on the gradient), Newton at rounding precision.
    np.testing.assert_allclose(LogOdds(first, second)(y), LogOdds(first, second, solver="lbfgs")(y), atol=5e-3)


def test_wide_features_go_to_lbfgs():
    rng = np.random.default_rng(5)
    width = NEWTON_MAX_FEATURES + 1
    first, second = rng.normal(0.2, 1, (300, width)), rng.normal(0, 1, (300, width))
    reference = LogisticRegression(max_iter=1000).fit(
        *(lambda s: (s.features(np.concatenate([first, second])), np.r_[np.ones(300), np.zeros(300)]))(
            LogOdds(first, second)))
    np.testing.assert_allclose(LogOdds(first, second).coef, reference.coef_[0])


def test_a_start_changes_the_steps_not_the_minimizer():
    # The objective is strictly convex: from 0, from a nearby start (another sample's solution) and from a far
    # one, Newton's method ends at the same point, where the gradient (written out above) vanishes.
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.normal(0.4, 1, (700, 3)), rng.normal(0, 1, (500, 3))])
    y = np.concatenate([np.ones(700), np.zeros(500)])
    w0, c0 = fit_logistic(x, y)
    other = rng.permutation(len(y))[:600]
    nearby = np.append(*fit_logistic(x[other], y[other]))
    for start in (nearby, np.array([5.0, -5.0, 3.0, 2.0])):
        w, c = fit_logistic(x, y, start=start)
        np.testing.assert_allclose(w, w0, atol=1e-9)
        assert c == pytest.approx(c0, abs=1e-9)
        assert np.max(np.abs(_gradient(x, y, w, c))) < 1e-6


@pytest.mark.parametrize("start", [np.zeros(3), np.array([0.0, 0.0, np.nan, 0.0])])
def test_a_start_of_the_wrong_size_or_not_finite_names_the_argument(start):
    with pytest.raises(InputError, match="'start'"):
        fit_logistic(np.zeros((4, 3)), np.array([0.0, 1.0, 0.0, 1.0]), start=start)


def test_distinct_rows_weighted_by_their_counts_give_the_fit_of_all_rows():
    # L of a sample is the sum of its rows' terms, so distinct rows weighted by their counts, each labelled by its
    # fraction of 1s, give the same L and the same minimizer as the sample row by row.
    rng = np.random.default_rng(7)
    levels = rng.normal(size=(12, 2))
    which = rng.integers(0, 12, 3000)
    y = (rng.random(3000) < 0.3 + 0.04 * which).astype(float)
    w_all, c_all = fit_logistic(levels[which], y)
    counts = np.bincount(which, minlength=12).astype(float)
    ones = np.bincount(which, weights=y, minlength=12)
    w, c = fit_logistic(levels, ones / counts, sample_weight=counts)
    np.testing.assert_allclose(w, w_all, atol=1e-9)
    assert c == pytest.approx(c_all, abs=1e-9)


@pytest.mark.parametrize("weights", [np.ones(3), np.array([1.0, -1.0, 1.0, 1.0]), np.array([1.0, np.inf, 1.0, 1.0])])
def test_bad_sample_weights_name_the_argument(weights):
    with pytest.raises(InputError, match="'sample_weight'"):
        fit_logistic(np.zeros((4, 1)), np.array([0.0, 1.0, 0.0, 1.0]), sample_weight=weights)


def test_chord_steps_from_a_start_hessian_reach_the_minimizer():
    # The data Hessian at a start, summed over parts of the rows (as the cross-fit's folds share it), written out
    # row by row here; the fit from it ends where Newton's method from 0 ends, with the gradient vanishing.
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.laplace(0.3, 1, (900, 4)), rng.laplace(0, 1, (700, 4))])
    y = np.concatenate([np.ones(900), np.zeros(700)])
    other = rng.permutation(len(y))[:800]
    start = np.append(*fit_logistic(x[other], y[other]))
    tilde = np.concatenate([x, np.ones((len(x), 1))], axis=1)
    p = 1.0 / (1.0 + np.exp(-(tilde @ start)))
    by_rows = sum(pi * (1 - pi) * np.outer(row, row) for pi, row in zip(p, tilde))
    parts = np.array_split(rng.permutation(len(y)), 3)
    summed = sum(data_hessian(x[part], start) for part in parts)
    np.testing.assert_allclose(summed, by_rows, rtol=1e-10)
    w0, c0 = fit_logistic(x, y)
    w, c = fit_logistic(x, y, start=start, start_hessian=summed)
    np.testing.assert_allclose(w, w0, atol=1e-8)
    assert c == pytest.approx(c0, abs=1e-8)
    assert np.max(np.abs(_gradient(x, y, w, c))) < 1e-6
    # A Hessian far from the one at the start: the chord steps stop contracting and Newton's method finishes.
    w, c = fit_logistic(x, y, start=start, start_hessian=summed * 40)
    np.testing.assert_allclose(w, w0, atol=1e-8)
    with pytest.raises(InputError, match="'start_hessian'"):
        fit_logistic(x, y, start=start, start_hessian=summed[:-1])
    with pytest.raises(InputError, match="'start_hessian'"):
        fit_logistic(x, y, start_hessian=summed)
