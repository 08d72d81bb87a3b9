"""A certified pure ε-DP lower bound from the ratio of one event's probabilities, with Poisson run counts.

For an ε-DP mechanism (δ = 0), neighbours D, D′ and any event E with p₁ = P(M(D) ∈ E) and
p₂ = P(M(D′) ∈ E), p₁ ≤ e^ε p₂ (Dwork and Roth 2014, Definition 2.4). Two binomial counts
bound p₁ and p₂ separately (two Clopper–Pearson bounds, each at a share of α,
:func:`audit.certificates.event_bounds.certified_epsilon`). With a random number of runs instead, their ratio
is bounded by one exact test:

- run each input N ~ Poisson(λ) times, the two numbers drawn independently with the same λ and
  independently of the mechanism; the numbers of hits X₁, X₂ are then independent
  Poisson(λ p₁) and Poisson(λ p₂) (Poisson thinning);
- given their total s = x₁ + x₂, X₁ ~ Binomial(s, θ) with θ = p₁/(p₁ + p₂), whatever λ and
  the scale of p₁, p₂ (Przyborowski and Wilenski 1940; the uniformly most powerful unbiased test
  of the ratio of two Poisson means, Lehmann and Romano 2005, Section 4.5);
- the one-sided Clopper–Pearson lower bound θ̲ at level α (Clopper and Pearson 1934) holds given
  s, so unconditionally: ρ̲ = θ̲/(1 − θ̲) ≤ p₁/p₂ with probability ≥ 1 − α, and
  ε ≥ log ρ̲.

It spends α once, on one binomial, where the Clopper–Pearson pair spends it on two; it loses the
factors 1 − p of the binomial variances (var log ρ̂ ≈ 1/(λp₁) + 1/(λp₂) against
(1 − p₁)/(np₁) + (1 − p₂)/(np₂)), so it gains most on events that are rare under both inputs
and least where p₁ is close to 1 (there the odds ratio, :mod:`audit.certificates.odds_ratio`, or the pair
does better). The event test chooses among the three on its selection runs, at no α
(:func:`predicted_epsilon`).

**Budget.** A run budget of m runs per input is kept exactly: λ is the largest mean whose Poisson
law exceeds m with probability at most :data:`RUN_OVERFLOW` (:func:`poisson_run_mean`; about
m − 4.7 √m). Both numbers are drawn before any run (:func:`draw_run_counts`); if either exceeds m,
no run is made and nothing is certified. The test rejects only when both are within the budget,
on exactly the runs the Poisson design makes then, so its type-I error is at most the Poisson
design's, α: the overflow costs power (probability ≤ 2 · :data:`RUN_OVERFLOW`), never validity.

It bounds pure DP only: with δ > 0, p₁ ≤ e^ε p₂ + δ bounds no ratio.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, special, stats

from estimators.validation import InputError, check_int, check_probability

from audit.certificates.odds_ratio import _normal_quantile

#: The largest probability that a Poisson number of runs exceeds the run budget (either input's
#: draw; :func:`poisson_run_mean`). An overflow certifies nothing, so this is power, not α.
RUN_OVERFLOW = 1e-6


@functools.lru_cache(maxsize=64)
def poisson_run_mean(budget: int, overflow: float = RUN_OVERFLOW) -> float:
    """The largest λ with P(Poisson(λ) > ``budget``) ≤ ``overflow`` (0 where even λ → 0 exceeds it).

    P(Poisson(λ) > m) increases continuously in λ from 0, so λ is the root of
    P(Poisson(λ) > m) = ``overflow`` on (0, m + 1] (at λ = m + 1 the probability is above ½).
    """
    budget = check_int(budget, "budget", 1)
    overflow = check_probability(overflow, "overflow")

    def excess(lam: float) -> float:
        return float(stats.poisson.sf(budget, lam)) - overflow

    return float(optimize.brentq(excess, 1e-12, budget + 1.0, xtol=1e-9, rtol=4 * np.finfo(float).eps))


def draw_run_counts(budget: int, rng: np.random.Generator) -> tuple[int, int] | None:
    """(runs of the first input, runs of the second): independent Poisson(λ) draws with
    λ = :func:`poisson_run_mean` (``budget``); None when either exceeds ``budget`` (no run is made)."""
    lam = poisson_run_mean(check_int(budget, "budget", 1))
    first, second = (int(n) for n in rng.poisson(lam, size=2))
    if max(first, second) > budget:
        return None
    return first, second


def rate_ratio_lower_bound(hits_first: int, hits_second: int, alpha: float) -> float:
    """The exact conditional one-sided lower confidence bound ρ̲ on p₁/p₂ (level 1 − α).

    ``hits_first`` ~ Poisson(λ p₁) and ``hits_second`` ~ Poisson(λ p₂), independent, with one λ
    (:func:`draw_run_counts`). Given the total s, X₁ ~ Binomial(s, p₁/(p₁ + p₂)); θ̲ is its
    Clopper–Pearson lower bound, the α quantile of Beta(x₁, x₂ + 1) (0 when x₁ = 0), and
    ρ̲ = θ̲/(1 − θ̲) (module docstring).

    Returns
    -------
    float
        ρ̲ ≥ 0 (0 when ``hits_first`` is 0).
    """
    hits_first = check_int(hits_first, "hits_first", 0)
    hits_second = check_int(hits_second, "hits_second", 0)
    alpha = check_probability(alpha, "alpha")
    if hits_first == 0:
        return 0.0
    theta = float(special.betaincinv(hits_first, hits_second + 1, alpha))
    if theta >= 1.0:
        raise InputError(f"the rate-ratio bound at hits_first = {hits_first}, hits_second = {hits_second} and "
                         f"alpha = {alpha} is not finite in double precision")
    return theta / (1.0 - theta)


def rate_ratio_epsilon(rho_lower: float) -> float:
    """The pure ε-DP lower bound max(0, log ρ̲) of a rate-ratio bound ρ̲ (module docstring: p₁/p₂ ≤ e^ε)."""
    return max(0.0, math.log(rho_lower)) if rho_lower > 0 else 0.0


def _paulson_log_ratio(x1: np.ndarray, x2: np.ndarray, alpha: float) -> np.ndarray:
    """log ρ̲ of :func:`rate_ratio_lower_bound` at (possibly fractional) counts x₁ ≥ 1, x₂ ≥ 0, approximately.

    θ̲ = Beta quantile(α; x₁, x₂ + 1) gives ρ̲ = (x₁/(x₂ + 1)) / F, with F the 1 − α quantile of
    Fisher's F law on (2(x₂ + 1), 2x₁) degrees of freedom (the Beta–F relation). Paulson's (1942)
    cube-root normal approximation to that quantile, w = F^{1/3} solving
    (1 − a₂) w − (1 − a₁) = z √(a₁ + a₂ w²) with aᵢ = 2/(9 dᵢ), is closed-form: the larger root of
    a quadratic. For 0.001 ≤ α ≤ 0.2 and wherever the exact log ρ̲ is positive, it is within 0.025
    of it, and within 0.005 where x₂ ≥ 5 (tests/test_rate_ratio.py); it ranks candidate events, and
    the chosen one's certificate is decided on the exact bound.
    """
    z = _normal_quantile(1.0 - alpha)
    a1, a2 = 2.0 / (9.0 * 2.0 * (x2 + 1.0)), 2.0 / (9.0 * 2.0 * x1)
    quad_a = (1.0 - a2) ** 2 - z * z * a2
    quad_b = -2.0 * (1.0 - a1) * (1.0 - a2)
    quad_c = (1.0 - a1) ** 2 - z * z * a1
    with np.errstate(invalid="ignore", divide="ignore"):
        w = (-quad_b + np.sqrt(quad_b * quad_b - 4.0 * quad_a * quad_c)) / (2.0 * quad_a)
        return np.log(x1) - np.log(x2 + 1.0) - 3.0 * np.log(w)


def predicted_epsilon(p_first, p_second, runs: int, alpha: float, exact: bool = False) -> np.ndarray:
    """The ε ≥ log ρ̲ that a budget of ``runs`` runs per input is predicted to certify at these frequencies.

    The expected counts are x = p · λ with λ = :func:`poisson_run_mean` (``runs``): the Poisson design
    makes fewer runs than the budget on average, and the prediction pays for that. log ρ̲ at those
    counts is Paulson's approximation (:func:`_paulson_log_ratio`), or with ``exact`` the Beta
    quantile itself (one per frequency: for deciding one event's certificate). A prediction for
    choosing on selection runs; the certificate itself is exact (:func:`rate_ratio_lower_bound`).
    Where fewer than one hit is expected under the first input, or the prediction is not positive,
    the result is −∞ (no ε predicted).
    """
    lam = poisson_run_mean(int(runs))
    x1 = np.asarray(p_first, dtype=np.float64) * lam
    x2 = np.asarray(p_second, dtype=np.float64) * lam
    usable = x1 >= 1.0
    x1 = np.where(usable, x1, 1.0)
    if exact:
        theta = special.betaincinv(x1, x2 + 1.0, alpha)
        with np.errstate(divide="ignore"):
            eps = np.log(theta) - np.log1p(-theta)
    else:
        eps = _paulson_log_ratio(x1, x2, alpha)
    return np.where(usable & (eps > 0), eps, -np.inf)
