"""The logistic-regression statistic (audit.statistics.classifier) against closed-form log-likelihood ratios."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from audit.statistics.classifier import (EmpiricalLogRatio, FeatureDesign, LogOdds, OutputFeatures, QuadraticLogOdds, pair_statistic)
from estimators.validation import InputError


def test_output_features_one_hot_only_few_valued_columns():
    outputs = np.column_stack([np.arange(40) % 3, np.linspace(0, 1, 40), np.arange(40) % 2])
    features = OutputFeatures(outputs)
    assert [j for j, _ in features.levels] == [0]  # 3 values: one-hot; 40 values: raw; 2 values: raw is enough
    x = features(outputs)
    assert x.shape == (40, 3 + 3)
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=1e-12)
    # the one-hot columns (largest value 1) come back from their standardization
    np.testing.assert_allclose(x[:, 3:] * features.std[3:] + features.mean[3:],
                               (outputs[:, [0]] == np.array([0, 1, 2])[None]).astype(float))


def test_output_features_of_huge_outputs_are_finite_and_standardized():
    """Outputs near 1e300 (whose squares overflow) still give finite features with mean 0 and variance 1."""
    rng = np.random.default_rng(4)
    outputs = 1e300 * rng.random((500, 2))
    with np.errstate(over="raise", invalid="raise"):
        x = OutputFeatures(outputs)(outputs)
    assert np.all(np.isfinite(x))
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(x.std(axis=0), 1.0, rtol=1e-12)


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


def test_empirical_log_ratio_is_the_smoothed_count_ratio_of_each_output_row():
    """Counted here with a dictionary: log((n_a(y) + ½)/(N_a + K/2)) − log((n_b(y) + ½)/(N_b + K/2)) over the K
    rows seen (Krichevsky–Trofimov add-½); a row never seen scores log((N_b + K/2)/(N_a + K/2))."""
    from collections import Counter

    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, size=(700, 2)).astype(float)
    b = np.column_stack([rng.integers(0, 2, 500), rng.integers(1, 4, 500)]).astype(float)
    statistic = EmpiricalLogRatio.fit(a, b)
    count_a, count_b = Counter(map(tuple, a)), Counter(map(tuple, b))
    seen = set(count_a) | set(count_b)
    half_k = len(seen) / 2
    for row in seen:
        expected = (math.log((count_a[row] + 0.5) / (700 + half_k)) - math.log((count_b[row] + 0.5) / (500 + half_k)))
        assert statistic(np.array([row]))[0] == pytest.approx(expected, rel=1e-12)
    unseen = statistic(np.array([[9.0, 9.0], [-0.0, 1.0]]))
    assert unseen[0] == pytest.approx(math.log((500 + half_k) / (700 + half_k)))
    assert unseen[1] == statistic(np.array([[0.0, 1.0]]))[0]  # −0.0 is the value 0


def test_empirical_log_ratio_declines_outputs_with_many_values():
    rng = np.random.default_rng(2)
    assert EmpiricalLogRatio.fit(rng.normal(size=(300, 1)), rng.normal(size=(300, 1)), max_values=256) is None
    assert EmpiricalLogRatio.fit(np.zeros((3, 1)), np.ones((3, 1)), max_values=2) is not None


def test_empirical_log_ratio_gathers_a_parity_class_that_an_additive_score_cannot():
    """Three fair bits whose parity is 0.8 likely 1 under the first input, 0.2 under the second (ε = log 4). The
    empirical log-ratio's best event is the parity class itself (0.8 against 0.2); a logistic regression's score
    is additive over the bits, so its tails reach ratio 4 only on single rows (at most 0.2 against 0.05), and at
    2,000 certification runs that certifies less (predictions by audit.search.event_choice.best_event, one upper or lower
    tail, on fresh scores)."""
    from audit.search.event_choice import best_event

    rng = np.random.default_rng(3)

    def draw(n, p_one):
        u = rng.integers(0, 2, (n, 2))
        return np.column_stack([u, u[:, 0] ^ u[:, 1] ^ (rng.random(n) < p_one)]).astype(float)
    train_a, train_b, test_a, test_b = draw(4000, 0.8), draw(4000, 0.2), draw(4000, 0.8), draw(4000, 0.2)
    settings = dict(runs=2000, alpha=0.05, forms=("upper", "lower"), boundary_weights=(0.0, 1.0))
    empirical = EmpiricalLogRatio.fit(train_a, train_b)
    chosen = best_event(empirical(test_a), empirical(test_b), **settings)
    assert abs(chosen.p_first - 0.8) < 0.03 and abs(chosen.p_second - 0.2) < 0.03
    logistic = LogOdds(train_a, train_b)
    additive = best_event(logistic(test_a), logistic(test_b), **settings)
    assert additive.p_first < 0.3 and additive.predicted < chosen.predicted  # a single row: 0.2 against 0.05


def test_logistic_statistic_declines_a_feature_matrix_beyond_its_budget():
    """600 outputs of 4 columns, one of them with 3 values (one-hot: 3 more features): 600 × 7 = 4,200 entries."""
    rng = np.random.default_rng(5)
    a = np.column_stack([rng.normal(size=(300, 3)), rng.integers(0, 3, 300)])
    b = np.column_stack([rng.normal(size=(300, 3)), rng.integers(0, 3, 300)])
    assert LogOdds.fit(a, b, max_entries=4200) is not None
    assert LogOdds.fit(a, b, max_entries=4199) is None
    assert LogOdds.fit(a, b, max_entries=2399) is None  # the raw 600 × 4 alone


def test_quadratic_log_odds_of_two_gaussian_spreads_is_the_log_likelihood_ratio():
    # N(0, 1) against N(0, 3²), equal classes: log-odds log 3 − y²(1/2 − 1/18), which the linear model misses.
    # Checked on [−3, 3] (where N(0, 1) has its draws): beyond, the hinges share the curvature with the square.
    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(20000, 1)), 3.0 * rng.normal(size=(20000, 1))
    y = np.linspace(-3, 3, 13)[:, None]
    exact = math.log(3.0) - y[:, 0] ** 2 * (0.5 - 1.0 / 18.0)
    np.testing.assert_allclose(QuadraticLogOdds.fit(first, second)(y), exact, atol=0.15)
    assert np.max(np.abs(LogOdds.fit(first, second)(y))) < 0.1


def test_quadratic_log_odds_needs_a_column_with_many_values():
    bits = np.random.default_rng(1).integers(0, 2, size=(200, 3)).astype(float)
    assert QuadraticLogOdds.fit(bits[:100], bits[100:]) is None


@pytest.mark.parametrize("case", ["few", "sparse codes", "radix overflow", "too many"])
def test_distinct_rows_are_the_set_of_rows(case):
    from audit.statistics.distinct_values import distinct_rows

    rng = np.random.default_rng(11)
    if case == "few":  # 4^3 possible codes: counted
        outputs = rng.integers(0, 4, (3000, 3)).astype(float) - 1.5
    elif case == "sparse codes":  # 20^5 possible codes, far more than the outputs: sorted
        base = rng.integers(0, 20, (100, 5)).astype(float)
        base[:20, :] = np.arange(20)[:, None]
        outputs = base[rng.integers(0, len(base), 3000)]
    else:
        # 12 columns of 40 values each: 40^12 > 2^62, so the rows are sorted as rows.
        base = rng.integers(0, 40, (60 if case == "radix overflow" else 400, 12)).astype(float)
        base[:40, :] = np.arange(40)[:, None]  # every column takes all 40 values
        outputs = base[rng.integers(0, len(base), 5000)]
        outputs[:len(base)] = base
    got = distinct_rows(outputs, 256)
    expected = {tuple(row) for row in outputs}  # brute force: a set of tuples
    if len(expected) > 256:
        assert got is None
        return
    rows, index = got
    # Every distinct row once, in lexicographic order (increasing codes: the first column most significant).
    assert [tuple(row) for row in rows] == sorted(expected)
    np.testing.assert_array_equal(rows[index], outputs)


@pytest.mark.parametrize("quadratic", [False, True])
def test_the_affine_decision_equals_the_feature_matrix_product(quadratic):
    from audit.statistics.classifier import OutputFeatures

    rng = np.random.default_rng(12)
    train = np.column_stack([rng.normal(size=3000), rng.integers(0, 5, 3000), rng.integers(0, 2, 3000),
                             rng.laplace(size=3000) * 1e3])
    features = OutputFeatures(train, quadratic=quadratic)
    assert [j for j, _ in features.levels] == [1]  # only the 5-valued column is one-hot encoded
    coef = rng.normal(size=features(train[:2]).shape[1])
    test = np.column_stack([rng.normal(size=500), rng.integers(-1, 6, 500), rng.integers(0, 2, 500),
                            rng.laplace(size=500) * 1e3])  # values -1 and 5 were never seen in training
    np.testing.assert_allclose(features.affine(coef, 0.7)(test), features(test) @ coef + 0.7, rtol=1e-10, atol=1e-10)


def _mixed_outputs(rng, n, shift):
    """A continuous column, a column with 4 levels and a constant column (one-hot, squares and neither)."""
    return np.column_stack([rng.normal(shift, 1.0 + shift, n), rng.integers(0, 4, n) + (rng.random(n) < shift),
                            np.zeros(n)])


@pytest.mark.parametrize("kind", [LogOdds, QuadraticLogOdds])
def test_a_fit_on_a_shared_design_is_the_fit_on_its_own_features(kind):
    # On the design's reference rows, the design's fit and kind.fit (which reads the levels and scales of the
    # same draws itself) minimize the same objective on the same features: the same statistic.
    rng = np.random.default_rng(7)
    first, second = _mixed_outputs(rng, 900, 0.5), _mixed_outputs(rng, 700, 0.0)
    outputs = np.concatenate([first, second])
    is_first = np.arange(len(outputs)) < len(first)
    order = rng.permutation(len(outputs))
    outputs, is_first = outputs[order], is_first[order]
    reference = np.flatnonzero(rng.random(len(outputs)) < 0.6)
    design = FeatureDesign.build(outputs, reference)
    shared = kind.from_design(design, reference, is_first[reference])
    own = kind.fit(outputs[reference][is_first[reference]], outputs[reference][~is_first[reference]])
    fresh = _mixed_outputs(rng, 300, 0.25)
    np.testing.assert_allclose(shared(fresh), own(fresh), rtol=1e-7, atol=1e-9)
    # Started at another fit's solution, Newton's method ends at the same minimizer.
    other = np.flatnonzero(rng.random(len(outputs)) < 0.5)
    start = kind.from_design(design, other, is_first[other]).solution
    np.testing.assert_allclose(kind.from_design(design, reference, is_first[reference], start=start)(fresh),
                               own(fresh), rtol=1e-7, atol=1e-9)


def test_the_linear_fit_on_a_design_with_squares_ignores_them():
    rng = np.random.default_rng(8)
    outputs = rng.normal(0.0, 1.0, (1000, 2))
    is_first = rng.random(1000) < 0.5
    outputs[is_first] *= 2.0  # a change of spread: the squares would matter if they were used
    rows = np.arange(1000)
    design = FeatureDesign.build(outputs, rows)
    assert design.width == 2 + 2 + 2 * 3 and design.linear_width == 2  # raw, squares, 3 hinges a column
    linear = LogOdds.from_design(design, rows, is_first)
    assert len(linear.coef) == 2
    y = rng.normal(size=(50, 2))
    np.testing.assert_allclose(linear(y), LogOdds(outputs[is_first], outputs[~is_first])(y), rtol=1e-7, atol=1e-9)


def test_a_design_declines_what_a_fit_cannot_use():
    rng = np.random.default_rng(9)
    bits = (rng.random((200, 3)) < 0.5).astype(float)
    design = FeatureDesign.build(bits, np.arange(200))
    assert QuadraticLogOdds.from_design(design, np.arange(200), np.arange(200) < 100) is None  # nothing to square
    assert LogOdds.from_design(design, np.arange(200), np.ones(200, dtype=bool)) is None  # one input only
    assert FeatureDesign.build(bits, np.arange(200), max_entries=1000) is None  # 200 × 6 entries with squares


@pytest.mark.parametrize("kind", [LogOdds, QuadraticLogOdds])
def test_a_design_of_discrete_outputs_fits_on_its_distinct_rows_the_statistic_of_all_rows(kind):
    # A bit, a column with 4 values and one with 21 (squared by the quadratic statistic): at most 168 distinct
    # rows among 4,000 outputs, so the design holds one row per distinct row and weighs each by its count; the
    # statistic is the one fitted on every output.
    rng = np.random.default_rng(10)

    def outputs(n, shift):
        return np.column_stack([rng.random(n) < 0.5 + shift, rng.integers(0, 4, n),
                                rng.integers(0, 20, n) + (rng.random(n) < shift)]).astype(float)
    first, second = outputs(2000, 0.3), outputs(2000, 0.0)
    all_outputs = np.concatenate([first, second])
    is_first = np.arange(4000) < 2000
    rows = np.arange(4000)
    design = FeatureDesign.build(all_outputs, rows)
    assert design.inverse is not None and len(design.matrix) <= 168
    y = outputs(200, 0.15)
    np.testing.assert_allclose(kind.from_design(design, rows, is_first)(y), kind.fit(first, second)(y),
                               rtol=1e-7, atol=1e-9)
    # Continuous outputs are not aggregated.
    assert FeatureDesign.build(rng.normal(size=(4000, 2)), rows).inverse is None


def test_the_empirical_log_ratio_from_a_designs_distinct_rows_is_the_one_fitted_on_the_outputs():
    rng = np.random.default_rng(11)
    outputs = np.column_stack([rng.integers(0, 3, 3000), rng.random(3000) < 0.3]).astype(float)
    is_first = rng.random(3000) < 0.4
    outputs[is_first, 1] = rng.random(int(is_first.sum())) < 0.6
    design = FeatureDesign.build(outputs, np.arange(3000))
    assert design.inverse is not None and len(design.rows) == 6
    rows = np.flatnonzero(rng.random(3000) < 0.7)
    from_counts = EmpiricalLogRatio.from_counts(design.rows, design.inverse[rows], is_first[rows])
    fitted = EmpiricalLogRatio.fit(outputs[rows][is_first[rows]], outputs[rows][~is_first[rows]])
    query = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [2.0, 1.0], [7.0, 1.0]])  # the last row never occurs
    np.testing.assert_array_equal(from_counts(query), fitted(query))
    # Only rows the counted outputs take are seen: with one value of the first column left out, 4 rows remain.
    kept = rows[outputs[rows, 0] != 2]
    assert len(EmpiricalLogRatio.from_counts(design.rows, design.inverse[kept], is_first[kept]).rows) == 4
    with pytest.raises(InputError, match="both inputs"):
        EmpiricalLogRatio.from_counts(design.rows, design.inverse[rows], np.ones(len(rows), dtype=bool))


def test_the_empirical_log_ratio_from_row_counts_is_the_add_half_formula():
    """Three rows counted (5, 0), (2, 3), (0, 4): N₁ = 7, N₂ = 7, K = 3; written out by hand here."""
    rows = np.array([[0.0], [1.0], [2.0]])
    statistic = EmpiricalLogRatio.from_row_counts(rows, np.array([5, 2, 0]), np.array([0, 3, 4]))
    expected = [math.log(5.5 / 8.5) - math.log(0.5 / 8.5), math.log(2.5 / 8.5) - math.log(3.5 / 8.5),
                math.log(0.5 / 8.5) - math.log(4.5 / 8.5), 0.0]  # the last: a row never seen, log(8.5/8.5)
    np.testing.assert_allclose(statistic(np.array([[0.0], [1.0], [2.0], [9.0]])), expected, rtol=1e-12, atol=1e-15)
    # fit counts the same outputs into the same statistic
    outputs_a, outputs_b = np.array([[0.0]] * 5 + [[1.0]] * 2), np.array([[1.0]] * 3 + [[2.0]] * 4)
    query = np.array([[0.0], [1.0], [2.0], [9.0]])
    np.testing.assert_array_equal(EmpiricalLogRatio.fit(outputs_a, outputs_b)(query), statistic(query))


@pytest.mark.parametrize("rows, n_first, n_second, message", [
    (np.array([0.0, 1.0]), np.array([1, 1]), np.array([1, 1]), "'rows'"),
    (np.zeros((0, 1)), np.zeros(0), np.zeros(0), "'rows'"),
    (np.array([[0.0], [1.0]]), np.array([1]), np.array([1, 1]), "'n_first'"),
    (np.array([[0.0], [1.0]]), np.array([1, 1]), np.array([1, -1]), "'n_second'"),
    (np.array([[0.0], [1.0]]), np.array([1, 0]), np.array([1, 0]), "counted on neither"),
    (np.array([[0.0], [1.0]]), np.array([1, 2]), np.array([0, 0]), "both inputs"),
])
def test_the_empirical_log_ratio_from_row_counts_refuses_bad_counts(rows, n_first, n_second, message):
    with pytest.raises(InputError, match=message):
        EmpiricalLogRatio.from_row_counts(rows, n_first, n_second)


def test_the_quadratic_statistic_bends_with_a_laplace_log_likelihood_ratio():
    # Laplace(1, 2) against Laplace(0, 2): log-ratio (|y| − |y − 1|)/2, flat at ∓1/2 outside [0, 1] (a linear
    # spline). The hinges at the pooled quantiles (about −1.1, 0.5, 2.1) let the fit flatten there; a line cannot.
    rng = np.random.default_rng(3)
    first, second = rng.laplace(1.0, 2.0, (20000, 1)), rng.laplace(0.0, 2.0, (20000, 1))
    y = np.array([[-1.5], [-1.0], [2.0], [2.5]])
    exact = (np.abs(y[:, 0]) - np.abs(y[:, 0] - 1.0)) / 2.0
    assert np.max(np.abs(QuadraticLogOdds.fit(first, second)(y) - exact)) < 0.12
    assert np.min(np.abs(LogOdds.fit(first, second)(y) - exact)) > 0.2


def test_hinges_are_quantile_knots_within_the_newton_feature_budget():
    from audit.statistics.classifier import HINGE_KNOTS, NEWTON_MAX_FEATURES

    rng = np.random.default_rng(12)
    outputs = rng.normal(size=(4000, 2))
    narrow = OutputFeatures(outputs, quadratic=True)
    levels = np.arange(1, HINGE_KNOTS + 1) / (HINGE_KNOTS + 1)
    for j in range(2):
        np.testing.assert_array_equal(narrow.hinge_knots[narrow.hinge_columns == j], np.quantile(outputs[:, j], levels))
    wide = OutputFeatures(rng.normal(size=(2000, 20)), quadratic=True)  # 20 raw + 20 squares: 1 knot a column fits
    assert wide.top.shape[0] <= NEWTON_MAX_FEATURES and len(wide.hinge_knots) == 20
    assert len(OutputFeatures(rng.normal(size=(2000, 40)), quadratic=True).hinge_knots) == 0  # 80 > 64 already
    assert len(OutputFeatures(outputs).hinge_knots) == 0  # the linear statistic's features have none
