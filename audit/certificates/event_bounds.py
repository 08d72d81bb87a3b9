"""A certified ε-DP lower bound from an event between two neighbouring inputs.

For an (ε, δ)-DP mechanism and any event E, P(M(D) ∈ E) ≤ e^ε P(M(D′) ∈ E) + δ for
neighbours D, D′ (Dwork and Roth 2014, Definition 2.4). Given lower/upper confidence bounds
p̲ on P(M(D) ∈ E) and p̄ on P(M(D′) ∈ E) at levels αs and α(1 − s) (each at α/2 by default; a split
s chosen on the selection runs, :meth:`_Predictor.lower_share`), ε ≥ log((p̲ − δ) / p̄) holds with
probability ≥ 1 − α (the union bound). The event is a thresholded critic score chosen on separate runs, so
the certifying runs are fresh (the DP-auditing recipe of Ding et al. 2018 and Jagielski et
al. 2020, with the trained critic as test statistic). :func:`choose_event` considers an upper
or a lower tail of the score with either input first, with a randomized boundary point
(Bichsel et al. 2021), and both tails at once; the choice is made on the selection runs only,
so it costs no α. For pure DP it may also choose to certify the event by its odds ratio instead,
ε ≥ log(ψ̲)/2 at level α (:mod:`audit.certificates.odds_ratio`), or by the ratio of its two probabilities from
Poisson numbers of runs, ε ≥ log ρ̲ at level α (:mod:`audit.certificates.rate_ratio`), where the selection runs
predict that to do better.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from estimators.validation import InputError, check_int, check_probability, plain



def clopper_pearson(successes, trials: int, alpha: float) -> tuple:
    """One-sided Clopper–Pearson bounds (lower, upper), each holding with probability ≥ 1 − α.

    Clopper and Pearson (1934): the lower bound is the α quantile of Beta(k, n − k + 1)
    (0 when k = 0); the upper bound the 1 − α quantile of Beta(k + 1, n − k) (1 when k = n).
    ``successes`` (a count or an array of counts) must be whole numbers in [0, ``trials``]: one
    :class:`InputError` naming it otherwise (a count outside gave NaN on one side, the other side's end on the other).
    """
    trials = check_int(trials, "trials", 1)
    alpha = check_probability(alpha, "alpha")
    try:
        k = np.asarray(successes, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"argument 'successes' must be a count or an array of counts, got {plain(successes)}") from None
    if not np.all(np.isfinite(k)) or np.any(k < 0) or np.any(k > trials) or np.any(k != np.round(k)):
        raise InputError(f"argument 'successes' must be whole numbers in [0, trials] = [0, {trials}], got {plain(successes)}")
    return _cp_side(k, trials, alpha, lower=True), _cp_side(k, trials, alpha, lower=False)


def _cp_side(k: np.ndarray, trials: int, alpha: float, lower: bool) -> np.ndarray:
    """One side of :func:`clopper_pearson` (validated arguments)."""
    # special.betaincinv is the Beta quantile (what stats.beta.ppf computes, without its per-call argument handling).
    if lower:
        return np.where(k > 0, special.betaincinv(np.maximum(k, 1e-300), trials - k + 1, alpha), 0.0)
    return np.where(k < trials, special.betaincinv(k + 1, np.maximum(trials - k, 1e-300), 1 - alpha), 1.0)


#: The shares of α for p̲ a Clopper–Pearson certificate may use, ½ first: the event search chooses one on its
#: selection runs (:meth:`audit.search.event_choice._Predictor.lower_share`), and the refutability helpers take the
#: best of them (:func:`audit.certificates.claim_tests.refutable_with`).
LOWER_SHARES = (0.5, 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9)

#: Counts computed exactly at each end of a predicted bound's table (0..this and trials − this..trials).
EXACT_END_COUNTS = 32

#: Ratio between successive counts at which a predicted bound is computed exactly beyond those ends.
KNOT_RATIO = 1.05


@functools.lru_cache(maxsize=32)
def _knot_counts(trials: int) -> np.ndarray:
    """The counts at which :func:`_cp_lookup` computes a bound exactly at ``trials`` trials.

    Every count within :data:`EXACT_END_COUNTS` of 0 or of ``trials``, and counts in geometric
    progression (ratio :data:`KNOT_RATIO`) from there towards the middle, from each end: about
    310 counts at 23,333 trials instead of one per count.
    """
    if trials <= 4 * EXACT_END_COUNTS:
        return np.arange(trials + 1, dtype=np.float64)
    steps = int(np.ceil(np.log(trials / (2.0 * EXACT_END_COUNTS)) / np.log(KNOT_RATIO))) + 1
    inner = np.round(np.geomspace(EXACT_END_COUNTS, trials / 2.0, steps))
    ends = np.arange(EXACT_END_COUNTS + 1, dtype=np.float64)
    return np.unique(np.concatenate([ends, inner, trials - inner, trials - ends]))


class _KnotBounds:
    """Exact one-sided Clopper–Pearson bounds at :func:`_knot_counts`, computed when first needed.

    Linear interpolation at a count uses only the two knots around it, so a lookup of a few counts
    (a held-out event's, :func:`choose_event`) computes the bounds at their knots only
    (:func:`_cp_side` is elementwise; the others stay NaN and unused): the same numbers as the
    whole table, at a few bounds' cost. A larger lookup completes the table.
    """

    #: Lookups of at most this many counts compute only the knots around them.
    FEW = 16

    def __init__(self, trials: int, alpha: float, lower: bool):
        self.trials, self.alpha, self.lower = trials, alpha, lower
        self.counts = _knot_counts(trials)
        self.bounds = np.full(len(self.counts), np.nan)
        self.complete = False

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        if not self.complete:
            if counts.size <= self.FEW:
                # counts[j − 1] ≤ c < counts[j]: knots j − 1 and j (the last knot for c at or beyond it).
                j = np.searchsorted(self.counts, counts.ravel(), side="right")
                needed = np.clip(np.concatenate((j - 1, j)), 0, len(self.counts) - 1)
            else:
                needed = np.arange(len(self.counts))
            missing = needed[np.isnan(self.bounds[needed])]
            if missing.size:
                self.bounds[missing] = _cp_side(self.counts[missing], self.trials, self.alpha, self.lower)
            self.complete = not np.isnan(self.bounds).any()
        return np.interp(counts, self.counts, self.bounds)


@functools.lru_cache(maxsize=32)
def _knot_bounds(trials: int, alpha: float, lower: bool) -> _KnotBounds:
    """The :class:`_KnotBounds` of a sample size, level and side (kept, with the bounds computed so far)."""
    return _KnotBounds(trials, alpha, lower)


def _cp_lookup(counts: np.ndarray, trials: int, alpha: float, lower: bool) -> np.ndarray:
    """One side of :func:`clopper_pearson` for whole-number ``counts``, as the event choice predicts it.

    Choosing an event predicts the bounds of thousands of candidate events at a few sample sizes
    and levels. The bound is computed exactly at a few hundred counts per size and level
    (:func:`_knot_counts`, kept: :class:`_KnotBounds`) and linearly interpolated in the count
    between them: within a relative 2·10⁻⁴ of the exact bound at every count (tested at levels
    0.001 to 0.16 and up to 10⁶ trials), an error
    far below the sampling noise of the frequencies it is applied to. The certificate itself is
    always exact (:func:`clopper_pearson`).
    """
    counts = np.asarray(counts, dtype=np.float64)
    return _knot_bounds(int(trials), float(alpha), lower)(counts)


def epsilon_from_bounds(p_lower: float, p_upper: float, delta: float = 0.0) -> float:
    """ε ≥ log((p̲ − δ) / p̄), floored at 0 (nothing certified)."""
    if p_lower - delta <= 0 or p_upper <= 0:
        return 0.0
    return max(0.0, math.log((p_lower - delta) / p_upper))


def certified_epsilon(p_lower: float, p_upper: float, delta: float = 0.0) -> float:
    """The ε ≥ 0 an event's bounds certify, from the event or its complement, floored at 0.

    With p̲ ≤ P_first(E) and p̄ ≥ P_second(E), (ε, δ)-DP between the two inputs requires
    P_first(E) ≤ e^ε P_second(E) + δ and, for the complement with the roles swapped (the
    neighbouring relation is symmetric), P_second(Eᶜ) ≤ e^ε P_first(Eᶜ) + δ, where
    P_second(Eᶜ) ≥ 1 − p̄ and P_first(Eᶜ) ≤ 1 − p̲ (Dwork and Roth 2014, Definition 2.4). So
    ε ≥ max(log((p̲ − δ)/p̄), log((1 − p̄ − δ)/(1 − p̲))), from the same two bounds at the same
    level: the complement costs no α.
    """
    return max(epsilon_from_bounds(p_lower, p_upper, delta), epsilon_from_bounds(1.0 - p_upper, 1.0 - p_lower, delta))


def certified_delta(p_lower: float, p_upper: float, epsilon: float) -> float:
    """The δ an event's bounds certify at ``epsilon``: max(p̲ − e^ε p̄, (1 − p̄) − e^ε (1 − p̲)).

    (ε, δ)-DP requires P_first(E) ≤ e^ε P_second(E) + δ and, for the complement with the roles
    swapped, P_second(Eᶜ) ≤ e^ε P_first(Eᶜ) + δ (Dwork and Roth 2014, Definition 2.4), so with
    p̲ ≤ P_first(E) and p̄ ≥ P_second(E) holding together at 1 − α, every δ the mechanism has at ε
    is at least this value at 1 − α (:func:`certified_epsilon` solves the same inequalities for ε).
    A value ≤ 0 certifies nothing.
    """
    growth = math.exp(epsilon)
    return max(p_lower - growth * p_upper, (1.0 - p_upper) - growth * (1.0 - p_lower))


def with_delta_certificate(event, claim):
    """``event`` (:class:`audit.result.EventTest`) with δ̲ at an approximate (ε, δ) claim's ε
    (:func:`certified_delta` of its p̲ and p̄); unchanged for any other claim."""
    if event is None or claim is None or not claim.delta > 0 or not hasattr(claim, "epsilon"):
        return event
    from dataclasses import replace

    return replace(event, delta_lower_bound=certified_delta(event.p_first_lower, event.p_second_upper, claim.epsilon),
                   delta_epsilon=float(claim.epsilon))


def epsilon_objective(delta: float = 0.0):
    """The default event objective: the ε ≥ log((p̲ − δ)/p̄) a pair of bounds would certify.

    At δ = 0 it also ranks an ε certified directly (the odds-ratio and rate-ratio certificates,
    :mod:`audit.certificates.odds_ratio`, :mod:`audit.certificates.rate_ratio`) as that ε: its ``rank_epsilon``.
    """
    def objective(lower, upper):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((lower - delta > 0) & (upper > 0), np.log(np.maximum(lower - delta, 1e-300) / upper), 0.0)
    if delta == 0:
        objective.rank_epsilon = lambda eps: np.asarray(eps, dtype=np.float64)
    return objective


#: How :func:`claim_objective` ranks the events predicted not to refute a claim that is not pure DP: by the ε they
#: certify (the ε-optimal event) or by their excess over the claim's profile (the δ-optimal event).
CLAIM_RANKINGS = ("epsilon", "delta")


def claim_objective(claim, rank: str = "epsilon"):
    """An event objective for refuting ``claim``: events predicted to refute it first.

    A pair predicted outside the claim's profile scores above 1: for a pure (local) DP claim by
    the ε it would certify (the ε lower bound is that claim's natural evidence), for the other
    claims by its excess over δ(ε′) (:meth:`mechanisms.claims.claim.Claim.event_margin`). For a pure
    claim only the event itself counts (ε > the claimed ε), not its complement with the roles
    swapped: that complement is an event of its own among those considered, and ranking an
    event by its complement would choose it for an ε it does not certify.
    Any other pair that would certify some ε > 0 scores in (−1, 0) by that ε, so that when
    nothing refutes the ε bound is still the best available; the rest score below −1 by their
    (negative) excess: the event closest to refuting. (For a pure claim that excess is computed
    only when no pair of the batch certifies an ε; otherwise those pairs score −∞, which ranks
    them the same: below every pair that certifies.)

    ``rank="delta"`` (a claim that is not pure DP only): every pair counts by the event's own excess m
    (not its complement's, an event of its own among those considered), and the pairs that certify
    some ε > 0 but are not predicted to refute rank in (−1, 0) by m instead of their ε, as m/(1 − m)
    (m ≥ −2, the excess p̲ − e^ε′ p̄ − δ(ε′) at some grid ε′, 0 included): the
    δ-optimal event, whose certified δ̲ at the profile's ε′ is predicted closest to δ(ε′). For an
    (ε, δ) claim and an event rarer than 1/(1 + e^ε) under the second input the best ε′ is the
    claim's ε (δ(ε′) = δ + (1 − δ)(e^ε − e^ε′)₊/(1 + e^ε) falls faster than e^ε′ p̄ rises below it),
    so the excess is δ̲(ε) − δ: the event maximises the certified δ̲ at the claim's ε.
    """
    if rank not in CLAIM_RANKINGS:
        raise InputError(f"argument 'rank' must be one of {CLAIM_RANKINGS}, got {rank!r}")
    epsilon = epsilon_objective(claim.delta)
    by_epsilon = claim.pure_epsilon is not None
    by_delta = rank == "delta" and not by_epsilon

    def objective(lower, upper):
        lower, upper = np.broadcast_arrays(np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64))
        eps = epsilon(lower, upper)
        certifies = eps > 0
        if by_epsilon:
            # The margin ranks only the events that certify no ε, and those only when none does (an event
            # that certifies ranks above every one that does not); the profile scan is the costly part.
            margin = np.full(eps.shape, -np.inf)
            if not certifies.any():
                margin = claim.event_margin(lower, upper)
            refuting, refutes = 1.0 + eps / (1.0 + eps), eps > claim.epsilon
        else:
            # Ranked by δ, an event counts by its own excess (its complement is an event of its own): no ties.
            margin = claim.event_margin(lower, upper, complement=not by_delta)
            refuting, refutes = 1.0 + margin, margin > 0
        certifying = np.minimum(margin, 0.0) / (1.0 - np.minimum(margin, 0.0)) if by_delta else eps / (1.0 + eps) - 1.0
        return np.where(refutes, refuting, np.where(certifies, certifying, (margin - 3.0) / 2.0))

    if by_epsilon:
        def rank_epsilon(eps):
            # An ε certified directly (odds or rate ratio) ranks as a pair of bounds certifying it; −∞: none.
            eps = np.asarray(eps, dtype=np.float64)
            positive = np.maximum(eps, 0.0)
            share = positive / (1.0 + positive)
            return np.where(eps > claim.epsilon, 1.0 + share, np.where(eps > 0, share - 1.0, -np.inf))
        objective.rank_epsilon = rank_epsilon
    # Above refutes_above an event is predicted to refute the claim, above certifies_above to certify some ε > 0
    # (or some excess for a claim of another notion): the tiny-count guard reads them (_Predictor).
    objective.refutes_above, objective.certifies_above = 1.0, -1.0
    return objective


