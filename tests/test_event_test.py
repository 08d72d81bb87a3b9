"""Direct unit tests of audit.certificates.event_bounds against independent computations (scipy's exact
binomial confidence intervals, the closed form of the ε bound, a brute-force threshold search)."""

import functools
import math

import numpy as np
import pytest
from scipy import stats

from audit.search.event_choice import choose_threshold
from audit.certificates.event_bounds import clopper_pearson, epsilon_from_bounds
from estimators.validation import InputError


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


@pytest.mark.parametrize("bad", [-1, 11, 2.5, float("nan"), [3, 12], "three"])
def test_clopper_pearson_refuses_counts_outside_zero_to_trials(bad):
    # A count below 0 or above n, or not whole, has no binomial interval (it gave NaN or 0/1 silently).
    with pytest.raises(InputError, match="successes"):
        clopper_pearson(bad, 10, 0.05)


def test_epsilon_from_bounds_closed_form():
    assert epsilon_from_bounds(0.5, 0.1) == pytest.approx(math.log(5))
    assert epsilon_from_bounds(0.5, 0.1, 0.05) == pytest.approx(math.log(4.5))
    assert epsilon_from_bounds(0.1, 0.5) == 0.0          # floored: nothing certified
    assert epsilon_from_bounds(0.04, 0.01, 0.05) == 0.0  # p̲ ≤ δ
    assert epsilon_from_bounds(0.3, 0.0) == 0.0          # p̄ = 0 cannot be certified from a finite sample


@functools.lru_cache(maxsize=None)  # the brute forces ask for the same few counts many times
def _cp_lower(k, n, level):
    return 0.0 if k == 0 else stats.binomtest(k, n, alternative="greater").proportion_ci(level, method="exact").low


@functools.lru_cache(maxsize=None)
def _cp_upper(k, n, level):
    return 1.0 if k == n else stats.binomtest(k, n, alternative="less").proportion_ci(level, method="exact").high


def _brute_force(scores_first, scores_second, runs, alpha, delta):
    """Every candidate threshold and both directions, one at a time (an independent loop)."""
    pooled = np.concatenate((scores_first, scores_second))
    best = 0.0
    for t in np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, 201))):
        for p1, p2 in (((scores_first > t).mean(), (scores_second > t).mean()),
                       ((scores_second <= t).mean(), (scores_first <= t).mean())):
            lo = _cp_lower(int(round(p1 * runs)), runs, 1 - alpha / 2)
            hi = _cp_upper(int(round(p2 * runs)), runs, 1 - alpha / 2)
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


# --- event forms (choose_event) --------------------------------------------------------------

from audit.search.event_choice import SELECTION_PESSIMISM, ScoreEvent, best_event, choose_event  # noqa: E402
from audit.certificates.event_bounds import claim_objective
from fake_runner import SamplingRunner




def _log_ratio(p_first, p_second, runs, alpha):
    lo, hi = _cp_lower(int(round(p_first * runs)), runs, 1 - alpha / 2), _cp_upper(int(round(p_second * runs)), runs, 1 - alpha / 2)
    return math.log(lo / hi) if lo > 0 and hi > 0 and lo > hi else 0.0


def _pessimistic_log_ratio(p_first, p_second, n_first, n_second, runs, alpha):
    """The predicted certificate of an event seen with frequencies p on n selection scores: the frequencies
    enter as their one-sided Clopper–Pearson bounds at 1 − SELECTION_PESSIMISM (lower under the first input,
    upper under the second), then as counts of ``runs`` certification runs. A two-tailed event's p are pairs
    (lower tail, upper tail): each tail is bounded on its own and the bounds summed."""
    level = 1 - SELECTION_PESSIMISM
    lower = sum(_cp_lower(int(round(p * n_first)), n_first, level) for p in np.atleast_1d(p_first))
    upper = min(1.0, sum(_cp_upper(int(round(p * n_second)), n_second, level) for p in np.atleast_1d(p_second)))
    return _log_ratio(lower, upper, runs, alpha)


def _brute_force_forms(a, b, runs, alpha, gammas):
    """Every form, threshold, boundary weight and direction on discrete scores, one at a time."""
    values = np.unique(np.concatenate((a, b)))
    best = 0.0

    def both_orders(p_a, p_b):
        return max(_pessimistic_log_ratio(p_a, p_b, len(a), len(b), runs, alpha),
                   _pessimistic_log_ratio(p_b, p_a, len(b), len(a), runs, alpha))
    for t in values:
        for g in gammas:
            for p_a, p_b in ((np.mean(a > t) + g * np.mean(a == t), np.mean(b > t) + g * np.mean(b == t)),
                             (np.mean(a < t) + g * np.mean(a == t), np.mean(b < t) + g * np.mean(b == t))):
                best = max(best, both_orders(p_a, p_b))
        for t2 in values[values > t]:
            best = max(best, both_orders((np.mean(a <= t), np.mean(a > t2)), (np.mean(b <= t), np.mean(b > t2))))
    return best


@pytest.mark.parametrize("seed", [0, 1])
def test_best_event_matches_brute_force_over_every_form_on_discrete_scores(seed):
    rng = np.random.default_rng(seed)
    a = rng.choice(6, 6000, p=[0.3, 0.1, 0.1, 0.1, 0.1, 0.3]).astype(float)
    b = rng.choice(6, 6000, p=[0.1, 0.2, 0.2, 0.2, 0.2, 0.1]).astype(float)
    gammas = (0.0, 0.25, 0.5, 0.75, 1.0)
    choice = best_event(a, b, runs=300, alpha=0.05, boundary_weights=gammas)
    # The choice predicts bounds within a relative 2e-4 of the exact ones (interpolated: audit.certificates.event_bounds._cp_lookup),
    # so each log-ratio within about 4e-4 (two bounds at two stages) of the exact one computed here.
    assert choice.predicted == pytest.approx(_brute_force_forms(a, b, 300, 0.05, gammas), abs=1e-3)
    # Both tails carry a's extra mass here ({0} ∪ {5}: 0.6 against 0.2, one tail 0.3 against 0.1, the
    # same ratio): at 300 certification runs the larger event has the tighter bounds.
    assert choice.event.form == "two-tailed" and choice.event.first_is_a
    # choose_event checks the richer family on held-out scores: here both tails hold up there too.
    assert choose_event(a, b, runs=300, alpha=0.05, boundary_weights=gammas).event.form == "two-tailed"


def _normal_event_probability(event: ScoreEvent, mean: float) -> float:
    """P(s ∈ E) for s ~ N(mean, 1), in closed form (no atoms)."""
    sf = stats.norm.sf
    if event.form == "upper":
        return sf(event.threshold - mean)
    if event.form == "lower":
        return 1 - sf(event.threshold - mean)
    return (1 - sf(event.threshold - mean)) + sf(event.second_threshold - mean)


@pytest.mark.parametrize("shift, runs, tolerance", [(0.5, 20000, 0.05), (1.0, 5000, 0.05)])
def test_choose_event_on_two_gaussian_score_laws_is_near_the_closed_form_best(shift, runs, tolerance):
    """s ~ N(μ, 1) under a, N(0, 1) under b: the best event is a tail, and its predicted ε at the
    certification size is known in closed form; the chosen event's exact value must be close."""
    rng = np.random.default_rng(7)
    a, b = rng.normal(shift, 1.0, 50_000), rng.normal(0.0, 1.0, 50_000)
    choice = choose_event(a, b, runs=runs, alpha=0.05)
    grid = np.linspace(-4.0, 8.0, 601)
    # Clopper–Pearson as quantiles of the beta law (Clopper and Pearson 1934), over the whole grid at once.
    k_a, k_b = np.round(stats.norm.sf(grid - shift) * runs), np.round(stats.norm.sf(grid) * runs)
    lower = np.where(k_a > 0, stats.beta.ppf(0.025, np.maximum(k_a, 1), runs - k_a + 1), 0.0)
    upper = np.where(k_b < runs, stats.beta.ppf(0.975, k_b + 1, np.maximum(runs - k_b, 1)), 1.0)
    with np.errstate(divide="ignore"):
        best = float(np.max(np.where((lower > upper) & (upper > 0), np.log(lower / upper), 0.0)))
    event = choice.event
    p_a, p_b = _normal_event_probability(event, shift), _normal_event_probability(event, 0.0)
    exact = _log_ratio(p_a, p_b, runs, 0.05) if event.first_is_a else _log_ratio(p_b, p_a, runs, 0.05)
    assert exact == pytest.approx(best, abs=tolerance)
    assert event.form in ("upper", "lower") and event.first_is_a == (event.form == "upper")


def test_choose_event_finds_a_lower_tail_likelier_under_the_first_input():
    """The two combinations the published one-threshold rule leaves out: a fifth of a's scores lie
    far below, so E = {s ≤ t} with a first; choose_threshold cannot see it."""
    rng = np.random.default_rng(4)
    b = rng.normal(0.0, 1.0, 2000)
    a = np.where(rng.random(2000) < 0.2, rng.normal(-6.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000))
    choice = choose_event(a, b, runs=5000, alpha=0.05, forms=("upper", "lower"))
    assert choice.event.form == "lower" and choice.event.first_is_a and choice.predicted > 1.5
    assert choose_threshold(a, b, runs=5000, alpha=0.05)[2] < 0.2


def test_randomized_event_hits_its_probability_and_is_reproducible():
    """A randomized boundary point: P(E) = P(s > t) + γ P(s = t), drawn with seeded coins."""
    event = ScoreEvent("upper", 1.0, boundary_weight=0.25)
    scores = np.repeat([0.0, 1.0, 2.0], [50_000, 40_000, 10_000])
    hits = event.contains(scores, np.random.default_rng(3))
    assert hits.mean() == pytest.approx(0.1 + 0.25 * 0.4, abs=0.005)
    assert np.array_equal(hits, event.contains(scores, np.random.default_rng(3)))
    with pytest.raises(Exception, match="rng"):
        event.contains(scores)
    assert "probability 0.25" in event.describe()


def test_score_event_plain_forms_and_bad_arguments():
    s = np.array([-1.0, 0.0, 1.0, 2.0])
    assert ScoreEvent("upper", 0.0).contains(s).tolist() == [False, False, True, True]
    assert ScoreEvent("upper", 0.0, boundary_weight=1.0).contains(s).tolist() == [False, True, True, True]
    assert ScoreEvent("lower", 1.0, boundary_weight=1.0).contains(s).tolist() == [True, True, True, False]
    assert ScoreEvent("two-tailed", -1.0, second_threshold=1.0).contains(s).tolist() == [True, False, False, True]
    for kwargs, name in ((dict(form="middle", threshold=0.0), "form"),
                         (dict(form="upper", threshold=0.0, boundary_weight=2.0), "boundary_weight"),
                         (dict(form="two-tailed", threshold=0.0), "second_threshold")):
        with pytest.raises(Exception, match=name):
            ScoreEvent(**kwargs)
    with pytest.raises(Exception, match="forms"):
        choose_event(s, s, runs=10, alpha=0.05, forms=("middle",))


def _laplace_llr_scores(mean, count, rng):
    """The log-likelihood ratio of Laplace(0, 1) against Laplace(1, 1) at y ~ Laplace(mean, 1), plus a
    little noise (a trained critic's imprecision): it saturates at ±1, so no event has a ratio above e."""
    y = rng.laplace(mean, 1.0, count)
    return np.abs(y - 1) - np.abs(y) + rng.normal(0.0, 0.02, count)


@pytest.mark.parametrize("seed", range(6))
def test_a_claim_at_its_boundary_gets_the_event_with_the_best_certified_epsilon(seed):
    """ε = 1 exactly and a 1-DP claim: no event refutes it, and selection noise must not make a rich
    event (both tails, refuting only through its complement) beat the plain tail. The chosen event,
    certified on fresh runs, gives nearly the ε the plain tail gives (closed form: 1 minus the
    Clopper–Pearson loss)."""
    from mechanisms.claims.parsing import parse_claim

    rng = np.random.default_rng(seed)
    objective = claim_objective(parse_claim("dp:1"))
    select_a, select_b = _laplace_llr_scores(0.0, 8750, rng), _laplace_llr_scores(1.0, 8750, rng)
    fresh_a, fresh_b = _laplace_llr_scores(0.0, 17500, rng), _laplace_llr_scores(1.0, 17500, rng)
    event = choose_event(select_a, select_b, runs=17500, alpha=0.025, objective=objective).event
    in_a, in_b = event.contains(fresh_a, rng).sum(), event.contains(fresh_b, rng).sum()
    first, second = (in_a, in_b) if event.first_is_a else (in_b, in_a)
    lower, upper = _cp_lower(int(first), 17500, 1 - 0.0125), _cp_upper(int(second), 17500, 1 - 0.0125)
    assert math.log(lower / upper) > 0.5


@pytest.mark.parametrize("trials", [1, 37, 128, 129, 3461, 23333, 250_000, 1_000_000])
@pytest.mark.parametrize("level", [0.001, 0.025, 0.16])
def test_predicted_bounds_are_within_2e4_of_scipys_exact_intervals_at_every_count(trials, level):
    """The event choice's predicted bounds (audit.certificates.event_bounds._cp_lookup, interpolated between exact
    knots) against scipy's Beta quantiles at every count (every 97th beyond 10⁵ trials)."""
    from audit.certificates.event_bounds import _cp_lookup

    counts = np.arange(0, trials + 1, 1 if trials <= 100_000 else 97, dtype=float)
    counts[-1] = trials
    exact_lower = np.where(counts > 0, stats.beta.ppf(level, np.maximum(counts, 1e-300), trials - counts + 1), 0.0)
    exact_upper = np.where(counts < trials, stats.beta.ppf(1 - level, counts + 1,
                                                           np.maximum(trials - counts, 1e-300)), 1.0)
    for got, exact in ((_cp_lookup(counts, trials, level, True), exact_lower),
                       (_cp_lookup(counts, trials, level, False), exact_upper)):
        assert np.all(np.abs(got - exact) <= 2e-4 * exact + 1e-15)
    assert _cp_lookup(np.zeros((2, 3)), trials, level, False).shape == (2, 3)


def test_quantiles_of_sorted_scores_are_numpys_to_the_bit():
    """The thresholds' quantiles of sorted scores (audit.certificates.sorted_scores.quantiles_of_sorted, without a
    partition where it can) against np.quantile itself: the same numbers, signs of zero included, at the event
    choice's evenly spaced levels and the μ-GDP grid's (gaussian_dp._CANDIDATE_LEVELS)."""
    from audit.certificates.gaussian_dp import _CANDIDATE_LEVELS
    from audit.certificates.sorted_scores import quantiles_of_sorted

    rng = np.random.default_rng(3)
    samples = [rng.normal(size=n) for n in (1, 2, 3, 200, 201, 202, 5000)]
    samples += [rng.integers(-3, 4, 1000).astype(float), np.round(rng.normal(size=999), 1),
                np.r_[-np.inf, rng.normal(size=500), np.inf], np.r_[rng.normal(size=300), np.inf, np.inf],
                np.r_[rng.normal(size=300), np.nan], np.r_[-0.0, 0.0, -0.0, rng.normal(size=250)]]
    for scores in samples:
        ordered = np.sort(scores)
        for levels in (np.linspace(0.0, 1.0, 2), np.linspace(0.0, 1.0, 101), np.linspace(0.0, 1.0, 201),
                       _CANDIDATE_LEVELS):
            with np.errstate(invalid="ignore"):
                expected = np.quantile(ordered, levels)
            got = quantiles_of_sorted(ordered, levels)
            assert np.array_equal(got, expected, equal_nan=True)
            assert np.array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("trials", [5, 129, 23333])
def test_bounds_looked_up_at_a_few_counts_are_those_of_the_whole_table(trials):
    """A lookup of a few counts computes the bounds at their knots only (audit.certificates.event_bounds._KnotBounds):
    the same numbers as interpolating in the table of every knot's exact bound, before and after
    a larger lookup completes the table."""
    from audit.certificates.event_bounds import _cp_side, _knot_counts, _KnotBounds

    rng = np.random.default_rng(trials)
    for level, lower in ((0.16, True), (0.16, False), (0.025, True)):
        knots = _knot_counts(trials)
        whole = _cp_side(knots, trials, level, lower)
        table = _KnotBounds(trials, level, lower)
        few = np.array([0.0, trials, float(rng.integers(0, trials + 1)), float(knots[len(knots) // 2])])
        assert np.array_equal(table(few), np.interp(few, knots, whole))
        assert not table.complete or len(knots) <= 2 * len(few)
        many = rng.integers(0, trials + 1, 100).astype(float)
        assert np.array_equal(table(many), np.interp(many, knots, whole)) and table.complete


def test_certified_epsilon_takes_the_event_or_its_complement():
    from audit.certificates.event_bounds import certified_epsilon

    # p̲ = 0.964, p̄ = 0.386: the event certifies log(0.964/0.386) = 0.915, its complement with the inputs
    # swapped log(0.614/0.036) = 2.836 from the same two bounds.
    assert certified_epsilon(0.964, 0.386) == pytest.approx(math.log(0.614 / 0.036))
    assert certified_epsilon(0.5, 0.1) == pytest.approx(math.log(5))  # the event itself is the better
    assert certified_epsilon(0.964, 0.386, 0.01) == pytest.approx(math.log(0.604 / 0.036))
    assert certified_epsilon(0.3, 0.5) == 0.0  # neither direction certifies


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 2.5])
def test_certified_epsilon_agrees_with_the_pure_dp_claims_own_check(epsilon):
    # mechanisms.claims.claim checks both DP inequalities (the event and the complement) on its own: the
    # certified ε exceeds a pure ε-DP claim exactly when that check refutes it.
    from audit.certificates.event_bounds import certified_epsilon
    from mechanisms.claims.parsing import parse_claim

    claim = parse_claim(f"dp:{epsilon}")
    rng = np.random.default_rng(7)
    for p_lower, p_upper in rng.uniform(0.001, 0.999, size=(400, 2)):
        if abs(certified_epsilon(p_lower, p_upper) - epsilon) < 1e-9:
            continue  # on the boundary either answer is right
        assert (certified_epsilon(p_lower, p_upper) > epsilon) == claim.check_event(p_lower, p_upper).refuted


def test_continuous_scores_get_no_randomized_boundary():
    # No score value repeats: a randomized boundary could only split a single run, so that family is not
    # considered and the choice is the one made without interior weights.
    rng = np.random.default_rng(21)
    a, b = rng.laplace(0.4, 1.0, 3000), rng.laplace(0.0, 1.0, 3000)
    full = choose_event(a, b, runs=5000, alpha=0.05)
    plain = choose_event(a, b, runs=5000, alpha=0.05, boundary_weights=(0.0, 1.0))
    assert not full.event.randomized and full == plain
    # With atoms (rounded scores) the randomized family is back in the comparison.
    from audit.search.score_grid import _Selection
    assert _Selection(np.round(a), np.round(b)).has_atoms and not _Selection(a, b).has_atoms


def test_the_pooled_selection_scores_are_the_sorted_pool_to_the_bit():
    # _Selection merges the two sorted inputs; np.sort of the pool, as before, is the reference. Zeros of both
    # signs are where a merge of sorted inputs would differ: NumPy's vectorised sort may change a zero's sign.
    from audit.search.score_grid import _Selection

    rng = np.random.default_rng(5)
    for case in range(60):
        a, b = rng.normal(size=rng.integers(1, 300)), rng.normal(0.2, size=rng.integers(1, 300))
        if case % 3 == 1:
            a, b = np.round(a * 3), np.round(b * 3)  # ties, and zeros of both signs (np.round(-0.2) is -0.0)
        elif case % 3 == 2:
            a[0] = np.nan
        pooled = np.sort(np.concatenate((a, b)))
        assert np.array_equal(_Selection(a, b).pooled.view(np.uint64), pooled.view(np.uint64))


def _split_epsilon_by_hand(k1, k2, n, alpha, share):
    """log(p̲/p̄) with p̲ at level α·share and p̄ at α·(1 − share), from scipy's exact binomial intervals."""
    lower = stats.binomtest(k1, n, alternative="greater").proportion_ci(1 - alpha * share, method="exact").low
    upper = stats.binomtest(k2, n, alternative="less").proportion_ci(1 - alpha * (1 - share), method="exact").high
    return math.log(lower / upper)


@pytest.mark.parametrize("p_first, p_second", [(0.4, 0.0), (0.02, 0.0005), (0.6, 0.3)])
def test_the_split_of_alpha_is_the_best_of_the_grid(p_first, p_second):
    from audit.search.event_choice import LOWER_SHARES, _Predictor
    from audit.certificates.event_bounds import epsilon_objective

    n, alpha = 20000, 0.05
    share = _Predictor(n, alpha, epsilon_objective()).lower_share(p_first, p_second)
    k1, k2 = round(p_first * n), round(p_second * n)
    by_hand = {s: _split_epsilon_by_hand(k1, k2, n, alpha, s) for s in LOWER_SHARES}
    assert by_hand[share] == pytest.approx(max(by_hand.values()), abs=1e-9)
    if p_second == 0.0:
        # No hits under the second input: p̄ = 1 − (α(1 − s))^{1/n} is the wide bound, so it gets most of α.
        assert share < 0.5 and by_hand[share] > by_hand[0.5] + 0.1


def test_event_search_certifies_at_the_chosen_split():
    from audit.statistics.pair_candidates import PairCandidate
    from audit.search.event_search import event_search

    class Runner(SamplingRunner):
        def sample(self, dbs, rng, what=""):
            p = np.where(dbs[:, 0, 0] == 1.0, 0.3, 0.0)  # the event never happens under the second input
            return (rng.random(len(dbs)) < p).astype(np.float64)[:, None]

    rng = np.random.default_rng(6)
    held_out = ((rng.random(5000) < 0.3).astype(float), np.zeros(5000))
    candidate = PairCandidate(np.ones((1, 1)), np.zeros((1, 1)), 0, lambda a, b, d, y: y[:, 0], "bit",
                              held_out=held_out)
    runs, alpha = 10000, 0.05
    # δ > 0 (however small) leaves the Clopper–Pearson pair as the only certificate (no odds or rate ratio).
    result = event_search([candidate], runner=Runner(), rng=rng, runs=runs, alpha=alpha, delta=1e-12)
    assert result.certificate == "clopper-pearson" and result.lower_share < 0.5 and result.p_second == 0.0
    k1 = round(result.p_first * runs)
    expected = stats.binomtest(k1, runs, alternative="greater").proportion_ci(
        1 - alpha * result.lower_share, method="exact").low
    assert result.p_first_lower == pytest.approx(expected, rel=1e-10)
    assert result.p_second_upper == pytest.approx(1 - (alpha * (1 - result.lower_share)) ** (1 / runs), rel=1e-10)
    assert result.epsilon_lower_bound == pytest.approx(math.log(result.p_first_lower / result.p_second_upper))
