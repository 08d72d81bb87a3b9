"""The joint binomial test of μ-GDP: one rigorous level-α test over a grid of thresholds.

Under μ-GDP every threshold's false-positive and false-negative rates lie on or above the
trade-off curve G_μ (Dong, Roth and Su 2022, Definition 2.3); the counts of a grid of thresholds
are jointly binomial, and μ is rejected when the weighted tail of the counts beyond the curve is
at most α at every point of the curve (:func:`joint_binomial_mu`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from estimators.validation import InputError, check_int, check_positive, check_probability

from audit.certificates.event_bounds import _cp_side


#: Standard deviations of X either side of its mean that :func:`joint_tail_probability` sums exactly; the
#: binomial mass outside them is added whole (an upper bound, about 1e-23 at 10 standard deviations).
_WINDOW_SDS = 7.0

#: Coarse intervals of the curve's parameter u on which :func:`_joint_rejects` starts, and the factor by
#: which it splits an interval whose corner bound exceeds the level, for at most :data:`_REFINEMENTS` rounds.
_COARSE_INTERVALS, _SPLIT, _REFINEMENTS = 32, 2, 12

#: The share of α the approximate size aims at in the search for μ̲ before the rigorous check (:func:`joint_binomial_mu`).
SEARCH_SIZE_SHARE = 0.9


def _binomial_cdf(k, n: int, p):
    """P(Bin(n, p) ≤ k), elementwise, for any integer-valued k (0 below 0, 1 from n)."""
    k = np.asarray(k, dtype=np.float64)
    inside = special.bdtr(np.clip(k, 0, n), n, np.clip(p, 0.0, 1.0))
    return np.where(k < 0, 0.0, np.where(k >= n, 1.0, inside))


@functools.lru_cache(maxsize=8)
def _log_factorials(n: int) -> np.ndarray:
    """log k! for k = 0..n."""
    return special.gammaln(np.arange(n + 1, dtype=np.float64) + 1.0)


def _table_pad(n: int, width: int) -> int:
    """Counts past n a table of :func:`_count_tables` or :func:`_largest_y_table` holds: enough for the widest window
    of any rate at ``n`` runs (at most 2·:data:`_WINDOW_SDS`·(√n/2 + 1) + 3 counts), so that one table per n
    serves every call; ``width`` where a window is wider still."""
    return max(int(math.ceil(2.0 * _WINDOW_SDS * (math.sqrt(n) / 2.0 + 1.0))) + 4, width)


# Two tables: the two counts' run numbers of one joint_binomial_mu call (its bisection and check reuse them).
@functools.lru_cache(maxsize=2)
def _count_tables(n: int, pad: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For k = 0 … n + ``pad``, with k above n read as n (a window's counts are capped at n): (k as float64,
    log n! − log k! − log (n − k)! in that order of operations, and ``n − k``'s float), the tables whose
    contiguous stretches :func:`_binomial_window` copies instead of indexing count by count."""
    log_fact = _log_factorials(n)
    counts = np.minimum(np.arange(n + 1 + pad, dtype=np.float64), n)
    index = counts.astype(np.int64)
    log_choose = log_fact[n] - log_fact[index] - log_fact[n - index]
    return counts, log_choose, n - counts


def _rows(table: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``table[starts[i] + j]`` for j < ``width``, one row per start (contiguous stretches, copied)."""
    # The windows as a read-only strided view of ``table`` (what numpy.lib.stride_tricks.sliding_window_view
    # gives, without its per-call argument handling); indexing it copies the rows.
    windows = np.ndarray((len(table) - width + 1, width), dtype=table.dtype, buffer=table,
                         strides=(table.strides[0], table.strides[0]))
    return windows[starts]


def _window_bounds(n: int, p: np.ndarray):
    """First and last count of each Bin(n, p)'s window (:data:`_WINDOW_SDS` standard deviations about its mean)."""
    sd = np.sqrt(n * p * (1.0 - p)) + 1.0
    low = np.clip(np.floor(n * p - _WINDOW_SDS * sd), 0, n)
    high = np.clip(np.ceil(n * p + _WINDOW_SDS * sd), 0, n)
    return low, high


def _binomial_window(n: int, p: np.ndarray, last=None):
    """Counts within :data:`_WINDOW_SDS` standard deviations of each Bin(n, p)'s mean, and their probabilities.

    Returns (first count of each window (k,), last count (k,), probabilities (k, w)),
    w the widest window's width; each row's probabilities are 0 beyond its own window, and beyond ``last``
    (k,) where given (counts the caller sums no further than).
    """
    low, high = _window_bounds(n, p)
    width = int(np.max(high - low)) + 1
    counts_table, log_choose, rest_table = _count_tables(n, _table_pad(n, width))
    start = low.astype(np.int64)
    counts = _rows(counts_table, start, width)
    # p is a rate of the curve strictly inside (0, 1) here; the floor only keeps log finite if it rounds to 0 or 1.
    tiny = np.finfo(np.float64).tiny
    log_p = np.log(np.maximum(p, tiny))[:, None]
    log_q = np.log(np.maximum(1.0 - p, tiny))[:, None]
    # log C(n, k) + k log p + (n − k) log(1 − p), in place (each element's operations as written out).
    pmf = _rows(log_choose, start, width)
    scratch = counts * log_p
    pmf += scratch
    np.multiply(_rows(rest_table, start, width), log_q, out=scratch)
    pmf += scratch
    np.exp(pmf, out=pmf)
    end = high if last is None else np.minimum(high, last)
    pmf[np.arange(width)[None, :] > (end - low)[:, None]] = 0.0
    return low, high, pmf


@functools.lru_cache(maxsize=1)  # one statistic a joint_binomial_mu call
def _largest_y_table(a: float, b: float, level_count: float, n1: int, n2: int, pad: int) -> np.ndarray:
    """⌊(c − a·x/n)·n′/b + 1e-9⌋ for x = 0 … n + ``pad`` (x above n read as n), as int64: the largest count Y
    with a·x/n + b·Y/n′ ≤ c (:func:`joint_tail_probability`; the 1e-9 keeps a count on the boundary)."""
    x = np.minimum(np.arange(n1 + 1 + pad, dtype=np.float64), n1)
    return np.floor((level_count - a * x / n1) * n2 / b + 1e-9).astype(np.int64)


def joint_tail_probability(fpr, fnr, weights, level_count, runs) -> np.ndarray:
    """An upper bound on P(a·X/n + b·Y/n' ≤ c) for independent X ~ Bin(n, fpr), Y ~ Bin(n', fnr).

    ``weights`` = (a, b) > 0, ``level_count`` = c, ``runs`` = (n, n'); vectorized over ``fpr`` and ``fnr``
    (arrays of one shape). The sum over x of P(X = x)·P(Y ≤ ⌊(c − a·x/n)·n'/b⌋) is exact within
    :data:`_WINDOW_SDS` standard deviations of each count's mean; the mass outside them is counted whole
    (X's added, Y's cumulative probability taken as 1 above its window and as its value at the window's
    start below it), so the value never falls below the true probability (up to float rounding).
    """
    (a, b), (n1, n2) = weights, runs
    p = np.atleast_1d(np.asarray(fpr, dtype=np.float64))
    q = np.atleast_1d(np.asarray(fnr, dtype=np.float64))
    # The largest counts with the statistic at most c when the other count is 0 (the 1e-9 keeps a count on
    # the boundary inside despite rounding: inclusion only raises the bound).
    x_cap = min(n1, math.floor(level_count * n1 / a + 1e-9))
    y_cap = min(n2, math.floor(level_count * n2 / b + 1e-9))
    if x_cap < 0 or y_cap < 0:
        return np.zeros(p.shape)
    # Either count alone must stay under its cap: the smaller of the two marginal probabilities bounds the joint one.
    x_alone = _binomial_cdf(x_cap, n1, p)
    bound = np.minimum(x_alone, _binomial_cdf(y_cap, n2, q))
    active = np.nonzero(bound > 1e-300)[0]
    if active.size == 0:
        return bound
    pa, qa = p[active], q[active]
    # X's probabilities beyond the cap are 0: no y keeps the statistic ≤ c there.
    x_low, x_high, x_pmf = _binomial_window(n1, pa, last=x_cap)
    y_low, y_high, y_pmf = _binomial_window(n2, qa)
    below = _binomial_cdf(y_low - 1, n2, qa)  # P(Y < the window's first count)
    # Y's cumulative probabilities with the window's first count at column 2: column 1 holds P(Y < it), for
    # counts below the window, column 0 holds 0, for a negative largest count, and the last column 1, for
    # counts above the window (at most 1).
    width = y_pmf.shape[1]
    y_cdf = np.empty((len(active), width + 3))
    y_cdf[:, 0], y_cdf[:, 1], y_cdf[:, -1] = 0.0, below, 1.0
    np.cumsum(y_pmf, axis=1, out=y_cdf[:, 2:-1])
    y_cdf[:, 2:-1] += below[:, None]
    y_cdf[:, 2:-1][np.arange(width)[None, :] > (y_high - y_low)[:, None]] = 1.0
    y_max = _rows(_largest_y_table(float(a), float(b), float(level_count), int(n1), int(n2),
                                    _table_pad(int(n1), x_pmf.shape[1])),
                  x_low.astype(np.int64), x_pmf.shape[1])
    column = np.clip(y_max - y_low.astype(np.int64)[:, None] + 2, 1, width + 2)
    column[y_max < 0] = 0
    x_pmf *= np.take_along_axis(y_cdf, column, axis=1)
    # X below the window, and X above it but within the cap (beyond the cap no y keeps the statistic ≤ c).
    outside = _binomial_cdf(x_low - 1, n1, pa) + np.maximum(x_alone[active] - _binomial_cdf(x_high, n1, pa), 0.0)
    bound[active] = np.minimum(bound[active], x_pmf.sum(axis=1) + outside)
    return bound


def _curve_points(u, mu: float):
    """The point (FPR, FNR) = (Φ(−u), Φ(u − μ)) of G_μ at parameter u (G_μ(Φ(−u)) = Φ(u − μ))."""
    return special.ndtr(-np.asarray(u)), special.ndtr(np.asarray(u) - mu)


@dataclass(frozen=True)
class _Stretch:
    """Where on G_μ the joint sum is needed, for one observed statistic: the stretch of the curve's parameter u
    is [``u_low``, μ + ``u_high_offset``] (:func:`_stretch_of`); ``None`` fields mean nothing can be rejected.

    Outside it a corner has P(X ≤ x_cap) ≤ α or P(Y ≤ y_cap) ≤ α (the Clopper–Pearson upper bounds of the
    caps at level α), so only the stretch needs the joint sum. The caps depend on the statistic, its weights,
    the runs and α, not on μ: they are computed once per :func:`joint_binomial_mu` call.
    """

    u_low: float | None
    u_high_offset: float | None

    def at(self, mu: float):
        """[u_low, u_high] at μ, or None when even a rate of 1 stays within a cap (nothing can be rejected)."""
        return None if self.u_low is None else (self.u_low, mu + self.u_high_offset)


def _stretch_of(weights, level_count, runs, alpha: float) -> _Stretch:
    """The caps of :class:`_Stretch` for the statistic a·X/n + b·Y/n' ≤ ``level_count``."""
    (a, b), (n1, n2) = weights, runs
    x_cap = min(n1, math.floor(level_count * n1 / a + 1e-9))
    y_cap = min(n2, math.floor(level_count * n2 / b + 1e-9))
    p_crit = float(_cp_side(np.float64(x_cap), n1, alpha, lower=False))
    q_crit = float(_cp_side(np.float64(y_cap), n2, alpha, lower=False))
    if p_crit >= 1.0 or q_crit >= 1.0:
        return _Stretch(None, None)
    return _Stretch(float(special.ndtri(1.0 - p_crit)), float(special.ndtri(q_crit)))


def _joint_rejects(mu: float, weights, level_count, runs, alpha: float, caps: _Stretch) -> bool:
    """Whether every point on or above G_μ gives the observed statistic or less a probability ≤ α (rigorous).

    The probability P(a·X/n + b·Y/n' ≤ c) decreases in both rates, so on the stretch u ∈ [u₀, u₁] of the
    curve it is at most its value at the corner (Φ(−u₁), Φ(u₀ − μ)), and points above the curve have less.
    The corners' bounds are computed on intervals of u, split where they exceed α; False (not rejected)
    when a point of the curve itself exceeds α or the splitting ends undecided.
    """
    stretch = caps.at(mu)
    if stretch is None:
        return False
    if stretch[0] >= stretch[1]:
        return True
    edges = np.linspace(*stretch, _COARSE_INTERVALS + 1)
    starts, ends = edges[:-1], edges[1:]
    middle = 0.5 * (starts + ends)
    # A point of the curve over α is decided at once (not rejected); on the finer intervals the corners decide.
    if np.any(joint_tail_probability(*_curve_points(middle, mu), weights, level_count, runs) > alpha):
        return False
    for _ in range(_REFINEMENTS + 1):
        over = joint_tail_probability(special.ndtr(-ends), special.ndtr(starts - mu), weights, level_count, runs) > alpha
        if not over.any():
            return True
        split = np.linspace(0.0, 1.0, _SPLIT + 1)
        cut = starts[over][:, None] + (ends[over] - starts[over])[:, None] * split[None, :]
        starts, ends = cut[:, :-1].ravel(), cut[:, 1:].ravel()
    return False


def _joint_size(mu: float, weights, level_count, runs, alpha: float, caps: _Stretch,
                limit: float | None = None) -> float:
    """The largest probability of the observed statistic or less over points of G_μ (approximate: on a grid
    of the stretch, refined around its maximum); it only steers the search for μ̲, which
    :func:`_joint_rejects` then checks.

    ``limit``: a caller that only asks whether the size is at most ``limit`` gets the coarse grid's largest value
    as soon as it exceeds ``limit`` (the refined maximum is at least that, so the answer is the same), without
    the refinement."""
    stretch = caps.at(mu)
    if stretch is None:
        return 1.0
    if stretch[0] >= stretch[1]:
        return 0.0
    u = np.linspace(*stretch, _COARSE_INTERVALS // 2 + 1)
    values = joint_tail_probability(*_curve_points(u, mu), weights, level_count, runs)
    i = int(np.argmax(values))
    if limit is not None and values[i] > limit:
        return float(values[i])
    fine = np.linspace(u[max(i - 1, 0)], u[min(i + 1, len(u) - 1)], 2 * _SPLIT + 1)
    return float(max(values[i], np.max(joint_tail_probability(*_curve_points(fine, mu), weights, level_count, runs))))


def clip_rate(rate, runs):
    """``rate`` kept off 0 and 1 by half a count of ``runs`` (elementwise)."""
    return np.clip(rate, 0.5 / np.asarray(runs), 1.0 - 0.5 / np.asarray(runs))


def probit_slope(rate, runs):
    """1/φ(Φ⁻¹(r)), the derivative of Φ⁻¹ at r = :func:`clip_rate` (``rate``, ``runs``) (elementwise)."""
    z = special.ndtri(clip_rate(rate, runs))
    return math.sqrt(2.0 * math.pi) * np.exp(0.5 * z * z)


def probit_spread(fpr, n_fp, fnr, n_fn):
    """The delta-method standard deviation of Φ⁻¹(1 − p̂) − Φ⁻¹(q̂), the μ of the point (p̂, q̂) on G_μ, for
    binomial rates p̂ of ``n_fp`` runs and q̂ of ``n_fn`` (Casella and Berger 2002, Theorem 5.5.24; the
    rates kept off 0 and 1 by :func:`clip_rate`): √(Σ r(1 − r)/n · (Φ⁻¹)′(r)²)."""
    p, q = clip_rate(fpr, n_fp), clip_rate(fnr, n_fn)
    return np.sqrt(p * (1 - p) / n_fp * probit_slope(p, n_fp) ** 2 + q * (1 - q) / n_fn * probit_slope(q, n_fn) ** 2)


def joint_binomial_mu(false_positives: int, false_negatives: int, runs, weights, alpha: float, *,
                      tolerance: float = 1e-4) -> float:
    """μ̲ from one threshold's two error counts, tested together exactly (module docstring, ``"joint-binomial"``).

    Parameters
    ----------
    false_positives, false_negatives : int
        X out of n = ``runs[0]`` runs (type-I errors) and Y out of n' = ``runs[1]`` (type-II errors).
    runs : (int, int)
        (n, n') ≥ 1.
    weights : (float, float)
        (a, b) > 0 of the statistic a·X/n + b·Y/n', fixed before the counts are seen.
    alpha : float
        The test's level.
    tolerance : float
        μ̲ is found by bisection to within this (rounded down).

    Returns
    -------
    float
        The largest μ (to ``tolerance``, rounded down) at which the test rejects "the point lies on or above
        G_μ" (Dong, Roth and Su 2022, Eq. (2.2)); 0 when it rejects nothing. The test's size grows with μ
        (the curve moves down and the statistic is fixed), so every μ < μ̲ is rejected too: with probability
        ≥ 1 − α the mechanism is μ-GDP for no μ < μ̲.

    Raises
    ------
    InputError
        Counts that are not integers in [0, runs], runs below 1, weights not positive and finite, ``alpha``
        outside (0, 1) or ``tolerance`` not positive (a negative weight would reverse the statistic's
        direction and certify a μ̲ the counts do not support).
    """
    n1, n2 = (check_int(r, f"runs[{i}]", 1) for i, r in enumerate(runs))
    a, b = (check_positive(w, f"weights[{i}]") for i, w in enumerate(weights))
    for name, count, trials in (("false_positives", false_positives, n1), ("false_negatives", false_negatives, n2)):
        if check_int(count, name, 0) > trials:
            raise InputError(f"argument '{name}' must be at most its runs ({trials}), got {count}")
    alpha = check_probability(alpha, "alpha")
    tolerance = check_positive(tolerance, "tolerance")
    runs, weights = (n1, n2), (a, b)
    level_count = a * false_positives / n1 + b * false_negatives / n2
    # Nothing is rejected when even μ = 0 is not, by the approximate size: a screen only (μ̲ is 0 either way
    # unless the rigorous check below passes), which spares most audits one rigorous check.
    caps = _stretch_of(weights, level_count, runs, alpha)
    if _joint_size(0.0, weights, level_count, runs, alpha, caps, limit=alpha) > alpha:
        return 0.0
    # Search on the approximate size (:func:`_joint_size`) for the μ where it reaches α, then check that μ
    # rigorously (:func:`_joint_rejects`), stepping down by the tolerance while the check fails. A μ the check
    # passes is enough: the test's size grows with μ, so every smaller μ is rejected too.
    # The target leaves the rigorous check room (its corners bound the size from above): about 5e-4 of μ at
    # 10⁴ runs, against a check that would otherwise split intervals many times over.
    target = SEARCH_SIZE_SHARE * alpha

    def below(mu):
        return _joint_size(mu, weights, level_count, runs, alpha, caps, limit=target) <= target

    # A bracket around the normal approximation (z_α √(σ₁² + σ₂²) below the observed point's μ), widened
    # until it holds, then bisection.
    p_hat, q_hat = (false_positives + 0.5) / (n1 + 1), (false_negatives + 0.5) / (n2 + 1)
    spread = float(probit_spread(p_hat, n1, q_hat, n2))
    guess = float(special.ndtri(1 - p_hat) - special.ndtri(q_hat) + special.ndtri(alpha) * spread)
    step = max(spread, 0.01)
    low, high = max(0.0, guess - step), max(guess, 0.0) + step
    while low > 0 and not below(low):
        low, step = max(0.0, low - 2 * step), 2 * step
    while below(high):
        low, high, step = high, high + 2 * step, 2 * step
        if high > 64.0:
            break
    while high - low > tolerance:
        middle = 0.5 * (low + high)
        if below(middle):
            low = middle
        else:
            high = middle
    candidate = low
    for attempt in range(64):
        if _joint_rejects(candidate, weights, level_count, runs, alpha, caps):
            return candidate
        candidate = max(0.0, candidate - tolerance * 2 ** attempt)
        if candidate == 0.0:
            break
    return 0.0
