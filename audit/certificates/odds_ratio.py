"""A certified pure ε-DP lower bound from the odds ratio of one event between two neighbouring inputs.

For an ε-DP mechanism (δ = 0), neighbours D, D′ and any event E with p₁ = P(M(D) ∈ E) and
p₂ = P(M(D′) ∈ E), the definition holds for E (p₁ ≤ e^ε p₂) and for its complement with the
roles swapped (1 − p₂ ≤ e^ε (1 − p₁)) (Dwork and Roth 2014, Definition 2.4). Multiplying the two,

    ψ = p₁ (1 − p₂) / (p₂ (1 − p₁)) ≤ e^{2ε},   so   ε ≥ log(ψ) / 2.

From fresh runs (x₁ hits in n₁ runs of D, x₂ in n₂ of D′) the exact conditional lower confidence
bound ψ̲ on the odds ratio holds with probability ≥ 1 − α (Cornfield 1956): given x₁ + x₂ = s,
x₁ follows Fisher's noncentral hypergeometric law with parameter ψ, whose upper tail
P_ψ(X₁ ≥ x₁ | s) increases with ψ, and ψ̲ is where that tail equals α. So ε ≥ log(ψ̲)/2 holds with
probability ≥ 1 − α. Against the two Clopper–Pearson bounds of :func:`audit.certificates.event_bounds.certified_epsilon`
(each at α/2) it pays one level α for both probabilities, and it is tighter when the event and its
complement are both informative (randomized response: p₁ = e^ε/(1 + e^ε), p₂ = 1/(1 + e^ε) gives
ψ = e^{2ε} exactly); it is looser on a rare event, whose complement tells little (ψ ≈ p₁/p₂ then,
halved in the log). The event test chooses between the two certificates on its selection runs
(:func:`predicted_epsilon`), so the choice costs no α.

It bounds pure DP only: with δ > 0 the two inequalities carry δ and their product does not bound ψ.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, special, stats

from estimators.validation import InputError, check_int, check_probability


def _log_binomial(n: int, k: np.ndarray) -> np.ndarray:
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def odds_ratio_lower_bound(hits_first: int, runs_first: int, hits_second: int, runs_second: int,
                           alpha: float) -> float:
    """The exact conditional one-sided lower confidence bound ψ̲ on the odds ratio (level 1 − α).

    ψ = p₁ (1 − p₂) / (p₂ (1 − p₁)) for ``hits_first`` ~ Binomial(``runs_first``, p₁) and
    ``hits_second`` ~ Binomial(``runs_second``, p₂), independent. Conditionally on the total
    s = x₁ + x₂, X₁ has Fisher's noncentral hypergeometric law
    P_ψ(X₁ = k | s) ∝ C(n₁, k) C(n₂, s − k) ψ^k on max(0, s − n₂) ≤ k ≤ min(n₁, s), and ψ̲ solves
    P_ψ̲(X₁ ≥ x₁ | s) = α (Cornfield 1956).
    ψ̲ = 0 when x₁ is the smallest value the total allows (no ψ makes it surprising).

    Returns
    -------
    float
        ψ̲ ≥ 0 (``inf`` never: the tail is below 1 for every finite ψ when x₁ > its smallest value).
    """
    runs_first = check_int(runs_first, "runs_first", 1)
    runs_second = check_int(runs_second, "runs_second", 1)
    hits_first = check_int(hits_first, "hits_first", 0)
    hits_second = check_int(hits_second, "hits_second", 0)
    if hits_first > runs_first:
        raise InputError(f"argument 'hits_first' ({hits_first}) must be at most 'runs_first' ({runs_first})")
    if hits_second > runs_second:
        raise InputError(f"argument 'hits_second' ({hits_second}) must be at most 'runs_second' ({runs_second})")
    alpha = check_probability(alpha, "alpha")
    total = hits_first + hits_second
    low, high = max(0, total - runs_second), min(runs_first, total)
    if hits_first <= low:
        return 0.0
    k = np.arange(low, high + 1, dtype=np.float64)
    log_weight = _log_binomial(runs_first, k) + _log_binomial(runs_second, total - k)
    upper = k >= hits_first
    log_alpha = math.log(alpha)

    def excess(log_psi: float) -> float:  # log P(X₁ ≥ x₁) − log α, increasing in log ψ
        terms = log_weight + k * log_psi
        return float(special.logsumexp(terms[upper]) - special.logsumexp(terms)) - log_alpha

    # Bracket the root around Woolf's approximate bound (½ added to every cell, Haldane 1956), widening
    # by doubling steps of its standard error until the excess changes sign.
    guess, se = _woolf_lower(hits_first + 0.5, runs_first - hits_first + 0.5, hits_second + 0.5,
                             runs_second - hits_second + 0.5, alpha)
    step = se
    left, right = guess - step, guess + step
    while excess(left) > 0:
        left -= step
        step *= 2
    step = se
    while excess(right) < 0:
        right += step
        step *= 2
    return math.exp(optimize.brentq(excess, left, right, xtol=1e-12, rtol=4 * np.finfo(float).eps))


def odds_ratio_epsilon(psi_lower: float) -> float:
    """The pure ε-DP lower bound max(0, log(ψ̲)/2) of an odds-ratio bound ψ̲ (module docstring: ψ ≤ e^{2ε})."""
    return max(0.0, math.log(psi_lower) / 2.0) if psi_lower > 0 else 0.0


@functools.lru_cache(maxsize=16)
def _normal_quantile(level: float) -> float:
    return float(stats.norm.ppf(level))


def _woolf_lower(a, b, c, d, alpha: float):
    """(log ψ̂ − z₁₋α · se, se) for the 2 × 2 cells a, b (first input: in E, not) and c, d (second):
    Woolf's (1955) normal approximation to the log odds ratio, se² = 1/a + 1/b + 1/c + 1/d."""
    se = np.sqrt(1 / a + 1 / b + 1 / c + 1 / d)
    return np.log(a / b) - np.log(c / d) - _normal_quantile(1.0 - alpha) * se, se


def predicted_epsilon(p_first, p_second, runs: int, alpha: float) -> np.ndarray:
    """The ε ≥ log(ψ̲)/2 that ``runs`` fresh runs per input are predicted to certify at these frequencies.

    Woolf's (1955) normal approximation to the log odds ratio: log ψ̂ − z₁₋α · se with
    se² = Σ 1/(cell count) over the four cells x₁, n − x₁, x₂, n − x₂ at the frequencies (each
    count at least ½, Haldane 1956), halved (module docstring). A prediction for choosing the
    certificate on selection runs; the certificate itself is exact (:func:`odds_ratio_lower_bound`).
    Where the prediction is not positive the result is −∞ (no ε predicted).
    """
    n = float(runs)
    x1 = np.clip(np.asarray(p_first, dtype=np.float64) * n, 0.5, n - 0.5)
    x2 = np.clip(np.asarray(p_second, dtype=np.float64) * n, 0.5, n - 0.5)
    eps = _woolf_lower(x1, n - x1, x2, n - x2, alpha)[0] / 2.0
    return np.where(eps > 0, eps, -np.inf)
