"""Direct unit tests of audit.event_test against independent computations (scipy's exact
binomial confidence intervals, the closed form of the ε bound, a brute-force threshold search)."""

import math

import numpy as np
import pytest
from scipy import stats

from audit.event_test import choose_threshold, clopper_pearson, epsilon_from_bounds


@pytest.mark.parametrize("k, n", [(0, 10), (1, 10), (5, 10), (10, 10), (37, 500), (499, 500), (3, 20000)])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_clopper_pearson_matches_scipy_exact_one_sided_intervals(k, n, alpha):
    lower, upper = clopper_pearson(k, n, alpha)
    expected_lower = stats.binomtest(k, n, alternative="greater").proportion_ci(1 - alpha, method="exact").low
    expected_upper = stats.binomtest(k, n, alternative="less").proportion_ci(1 - alpha, method="exact").high
    assert float(lower) == pytest.approx(expected_lower, abs=1e-12)
    assert float(upper) == pytest.approx(expected_upper, abs=1e-12)


def test_clopper_pearson_is_vectorised_over_counts():
    lower, upper = clopper_pearson(np.array([0, 3, 10]), 10, 0.05)
    for i, k in enumerate((0, 3, 10)):
        single = clopper_pearson(k, 10, 0.05)
        assert lower[i] == pytest.approx(float(single[0]))
        assert upper[i] == pytest.approx(float(single[1]))


def test_clopper_pearson_coverage_by_simulation():
    """The one-sided lower bound at α misses the true p at most a fraction α of the time."""
    rng = np.random.default_rng(0)
    p, n, alpha = 0.3, 200, 0.1
    k = rng.binomial(n, p, 4000)
    lower, upper = clopper_pearson(k, n, alpha)
    assert np.mean(lower > p) <= alpha + 0.02
    assert np.mean(upper < p) <= alpha + 0.02


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, float("nan")])
def test_clopper_pearson_rejects_alpha_outside_unit_interval(bad):
    with pytest.raises(Exception, match="alpha"):
        clopper_pearson(1, 10, bad)


def test_epsilon_from_bounds_closed_form():
    assert epsilon_from_bounds(0.5, 0.1) == pytest.approx(math.log(5))
    assert epsilon_from_bounds(0.5, 0.1, 0.05) == pytest.approx(math.log(4.5))
    assert epsilon_from_bounds(0.1, 0.5) == 0.0          # floored: nothing certified
    assert epsilon_from_bounds(0.04, 0.01, 0.05) == 0.0  # p̲ ≤ δ
    assert epsilon_from_bounds(0.3, 0.0) == 0.0          # p̄ = 0 cannot be certified from a finite sample


def _brute_force(scores_first, scores_second, runs, alpha, delta):
    """Every candidate threshold and both directions, one at a time (an independent loop)."""
    pooled = np.concatenate((scores_first, scores_second))
    best = 0.0
    for t in np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, 201))):
        for p1, p2 in (((scores_first > t).mean(), (scores_second > t).mean()),
                       ((scores_second <= t).mean(), (scores_first <= t).mean())):
            lo = stats.binomtest(int(round(p1 * runs)), runs, alternative="greater").proportion_ci(
                1 - alpha / 2, method="exact").low if round(p1 * runs) > 0 else 0.0
            hi = stats.binomtest(int(round(p2 * runs)), runs, alternative="less").proportion_ci(
                1 - alpha / 2, method="exact").high if round(p2 * runs) < runs else 1.0
            if lo - delta > 0 and hi > 0:
                best = max(best, math.log((lo - delta) / hi))
    return best


@pytest.mark.parametrize("delta", [0.0, 0.01])
def test_choose_threshold_finds_the_best_predicted_event(delta):
    rng = np.random.default_rng(3)
    # Only the upper tail separates: a fifth of the first input's scores are shifted far up.
    second = rng.normal(0.0, 1.0, 400)
    first = np.where(rng.random(400) < 0.2, rng.normal(5.0, 1.0, 400), rng.normal(0.0, 1.0, 400))
    threshold, upper_tail, predicted = choose_threshold(first, second, runs=2000, alpha=0.05, delta=delta)
    assert predicted == pytest.approx(_brute_force(first, second, 2000, 0.05, delta), rel=1e-9)
    assert upper_tail and predicted > 1.0


def test_choose_threshold_swaps_roles_when_the_second_input_scores_lower():
    rng = np.random.default_rng(4)
    first = rng.normal(0.0, 1.0, 400)
    # A fifth of the second input's scores are far down: E = {score ≤ t} is likelier under it.
    second = np.where(rng.random(400) < 0.2, rng.normal(-5.0, 1.0, 400), rng.normal(0.0, 1.0, 400))
    _, upper_tail, predicted = choose_threshold(first, second, runs=2000, alpha=0.05)
    assert not upper_tail and predicted > 1.0
