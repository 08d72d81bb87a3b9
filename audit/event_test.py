"""A certified ε-DP lower bound from an event between two neighbouring inputs.

For an (ε, δ)-DP mechanism and any event E, P(M(D) ∈ E) ≤ e^ε P(M(D′) ∈ E) + δ for
neighbours D, D′ (Dwork and Roth 2014, Definition 2.4). Given lower/upper confidence bounds
p̲ on P(M(D) ∈ E) and p̄ on P(M(D′) ∈ E), each at level α/2, ε ≥ log((p̲ − δ) / p̄) holds with
probability ≥ 1 − α. The event is a thresholded critic score chosen on separate runs, so
the certifying runs are fresh (the DP-auditing recipe of Ding et al. 2018 and Jagielski et
al. 2020, with the trained critic as test statistic).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from estimators.validation import check_int, check_probability


def clopper_pearson(successes, trials: int, alpha: float) -> tuple:
    """One-sided Clopper–Pearson bounds (lower, upper), each holding with probability ≥ 1 − α.

    Clopper and Pearson (1934): the lower bound is the α quantile of Beta(k, n − k + 1)
    (0 when k = 0); the upper bound the 1 − α quantile of Beta(k + 1, n − k) (1 when k = n).
    """
    trials = check_int(trials, "trials", 1)
    alpha = check_probability(alpha, "alpha")
    k = np.asarray(successes, dtype=np.float64)
    lower = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1e-300), trials - k + 1), 0.0)
    upper = np.where(k < trials, stats.beta.ppf(1 - alpha, k + 1, np.maximum(trials - k, 1e-300)), 1.0)
    return lower, upper


def epsilon_from_bounds(p_lower: float, p_upper: float, delta: float = 0.0) -> float:
    """ε ≥ log((p̲ − δ) / p̄), floored at 0 (nothing certified)."""
    if p_lower - delta <= 0 or p_upper <= 0:
        return 0.0
    return max(0.0, math.log((p_lower - delta) / p_upper))


def epsilon_objective(delta: float = 0.0):
    """The default event objective: the ε ≥ log((p̲ − δ)/p̄) a pair of bounds would certify."""
    def objective(lower, upper):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((lower - delta > 0) & (upper > 0), np.log(np.maximum(lower - delta, 1e-300) / upper), 0.0)
    return objective


def claim_objective(claim):
    """An event objective for refuting ``claim``: events predicted to refute it first.

    A pair predicted outside the claim's profile scores above 1: for a pure (local) DP claim by
    the ε it would certify (the ε lower bound is that claim's natural evidence), for the other
    claims by its excess over δ(ε′) (:meth:`mechanisms.claims.Claim.event_margin`).
    Any other pair that would certify some ε > 0 scores in (−1, 0) by that ε, so that when
    nothing refutes the ε bound is still the best available; the rest score below −1 by their
    (negative) excess: the event closest to refuting.
    """
    epsilon = epsilon_objective(claim.delta)
    by_epsilon = claim.notion in ("dp", "ldp") and claim.delta == 0

    def objective(lower, upper):
        margin = claim.event_margin(lower, upper)
        eps = epsilon(lower, upper)
        refuting = 1.0 + (eps / (1.0 + eps) if by_epsilon else margin)
        return np.where(margin > 0, refuting, np.where(eps > 0, eps / (1.0 + eps) - 1.0, (margin - 3.0) / 2.0))
    return objective


def choose_threshold(scores_first: np.ndarray, scores_second: np.ndarray, *, runs: int, alpha: float,
                     delta: float = 0.0, objective=None) -> tuple[float, bool, float]:
    """Threshold t and direction maximizing what ``runs`` fresh runs would certify.

    Considers E = {score > t} (first input more likely) and E = {score ≤ t} (second input more
    likely, roles swapped). The prediction uses the observed frequencies with Clopper–Pearson
    bounds at the certification sample size (each at α/2), so tiny events with no power are
    not chosen. ``objective(p_lower, p_upper) -> score`` ranks the predicted bounds (default:
    the ε bound at ``delta``, :func:`epsilon_objective`; for a claim, :func:`claim_objective`).

    Returns
    -------
    threshold, upper_tail, predicted_score
    """
    objective = objective or epsilon_objective(delta)
    pooled = np.concatenate((scores_first, scores_second))
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, 201)))
    above_first = (scores_first[:, None] > thresholds).mean(axis=0)
    above_second = (scores_second[:, None] > thresholds).mean(axis=0)
    best = (float(thresholds[0]), True, -np.inf)
    for upper_tail, p_first, p_second in ((True, above_first, above_second), (False, 1 - above_second, 1 - above_first)):
        lower, _ = clopper_pearson(np.round(p_first * runs), runs, alpha / 2)
        _, upper = clopper_pearson(np.round(p_second * runs), runs, alpha / 2)
        predicted = objective(lower, upper)
        i = int(np.argmax(predicted))
        if predicted[i] > best[2]:
            best = (float(thresholds[i]), upper_tail, float(predicted[i]))
    return best
