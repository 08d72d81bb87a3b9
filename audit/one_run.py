"""One-run audits: m canaries, one training run, and a certified (ε, δ) lower bound.

Steinke, Nasr and Jagielski (NeurIPS 2023), "Privacy auditing with one (1) training run",
Algorithm 1 and Theorem 3.1. Each of m canaries is included in the training set by an
independent fair coin Sᵢ ∈ {−1, +1} (miaudit's seeded coin); after the one run the auditor scores
every canary, guesses "included" (Tᵢ = +1) for the k₊ highest scores and "excluded" (Tᵢ = −1) for
the k₋ lowest, and abstains on the rest, so r = k₊ + k₋ guesses. If the training is (ε, δ)-DP
under adding or removing one canary, the number W of correct guesses satisfies, for every v,

    P[W ≥ v] ≤ P[W̃ ≥ v] + δ · 2m · max_{i = 1..m} (1/i) · P[v > W̃ ≥ v − i],   W̃ ~ Binomial(r, e^ε/(1 + e^ε))

(Theorem 3.1). With v the observed count, every ε whose right-hand side is at most α is refuted
at level α, so ε_lb is the largest such ε (their Algorithm 2 by bisection: the right-hand side grows
with ε). Several (k₊, k₋) choices fixed before the run are paid for by a union bound (α / their
number), so the certificate never depends on which choice looked best afterwards.

What it certifies, and why it is loose: ε_lb is a lower bound on the ε of every (ε, δ) guarantee
the training can have under add/remove of one canary, at confidence 1 − α, from a single run. Its
ceiling is set by the binomial tail, not by the mechanism: with r guesses all correct it is
log(p/(1 − p)) with p = α^{1/r}, about 1.8 at r = 20 and α = 0.05; a Gaussian mechanism's ε at
small δ is reached only in tails that m canaries rarely sample; and in black-box audits the other
canaries and the training data blur each canary's score (Keinan et al. 2025, "How well can
differential privacy be audited in one run?", show one-run audits cannot be tight for Gaussian
mechanisms). Many-run audits (``miaudit audit``) certify much more at the same ε.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from estimators.result_forms import fields_to_dict
from estimators.validation import InputError, check_int, check_probability

__all__ = ["GUESS_GRID_SHARES", "OneRunAudit", "default_guesses", "guess_grid", "one_run_audit", "one_run_epsilon",
           "one_run_tail"]

#: The largest ε the bisection of :func:`one_run_epsilon` considers (e^ε/(1 + e^ε) is 1 in float64 beyond ~37).
MAX_EPSILON = 30.0

#: The default share of the canaries guessed on each side (k₊ = k₋ = this · m, at least 1): about the
#: best single choice for a Gaussian mechanism at ε ≈ 4 and m = 1000 (k = 20 to 50 gave the largest mean ε_lb
#: over 100 simulated runs with μ = 0.92, δ = 1e-5; tests/test_one_run.py keeps the simulation's setting).
DEFAULT_GUESS_SHARE = 0.025

#: Shares of m guessed on each side in :func:`guess_grid`: 1%, 2%, 3% and 5% (k = 10, 20, 30, 50 at m = 1000).
#: Measured on an ideal Gaussian one-run audit (m = 1000, exactly the μ-GDP of ε = 4 at δ = 1e-5, μ = 0.925,
#: 40 simulated runs: tests/test_one_run.py::test_ideal_gaussian_one_run_ratio_at_m_1000): the mean certified
#: ε_lb/ε was 0.363 with the single default k = 25 at α, 0.355 with this grid at α/4, and 0.42 for the best k
#: chosen after the fact (not a certificate). The union bound costs about as much as the choice gains.
GUESS_GRID_SHARES = (0.01, 0.02, 0.03, 0.05)

STATEMENT = ("A one-run bound certifies, at confidence 1 − α, that the training is (ε, δ)-DP under adding or removing "
             "one canary for no ε below ε_lb (Steinke, Nasr and Jagielski 2023, Theorem 3.1). It is loose by design: "
             "only the r guesses carry evidence and the binomial tail caps what they certify (all of 20 right gives at "
             "most about 1.8 at α = 0.05); a Gaussian mechanism's ε at small δ lives in tails that m canaries rarely "
             "reach, and in black-box audits the other canaries and the training data blur each canary's score "
             "(Keinan et al. 2025: one-run audits cannot be tight for Gaussian mechanisms). A many-run audit "
             "(miaudit audit) certifies far more at the same ε.")


def one_run_tail(correct: int, guesses: int, canaries: int, epsilon: float, delta: float = 0.0) -> float:
    """The right-hand side of Steinke, Nasr and Jagielski (2023), Theorem 3.1, at v = ``correct``.

    P[W̃ ≥ v] + δ · 2m · max_{i=1..m} (1/i) P[v > W̃ ≥ v − i] with W̃ ~ Binomial(r, e^ε/(1 + e^ε)),
    r = ``guesses`` and m = ``canaries``: the largest probability an (ε, δ)-DP training allows for at
    least v correct guesses out of r.
    """
    v, r, m = _counts(correct, guesses, canaries)
    p = 1.0 / (1.0 + math.exp(-epsilon))
    tail = float(stats.binom.sf(v - 1, r, p))
    if delta == 0:
        return tail
    i = np.arange(1, m + 1)
    below = stats.binom.cdf(v - 1, r, p)
    window = below - stats.binom.cdf(v - i - 1, r, p)  # P[v − i ≤ W̃ ≤ v − 1]
    return tail + delta * 2 * m * float(np.max(window / i))


def one_run_epsilon(correct: int, guesses: int, canaries: int, *, alpha: float = 0.05, delta: float = 0.0) -> float:
    """ε_lb: the largest ε whose Theorem 3.1 tail (:func:`one_run_tail`) at the observed count is at most ``alpha``.

    Steinke, Nasr and Jagielski (2023), Algorithm 2 (bisection on ε; the tail grows with ε).
    0 when even ε = 0 is not refuted.
    """
    v, r, m = _counts(correct, guesses, canaries)
    alpha = check_probability(alpha, "alpha")
    if not 0.0 <= delta < 1.0:
        raise InputError(f"argument 'delta' must be in [0, 1) (got {delta})")
    if one_run_tail(v, r, m, 0.0, delta) > alpha:
        return 0.0
    low, high = 0.0, MAX_EPSILON
    if one_run_tail(v, r, m, high, delta) <= alpha:
        return high
    for _ in range(60):  # to about 1e-17 of MAX_EPSILON
        middle = 0.5 * (low + high)
        if one_run_tail(v, r, m, middle, delta) <= alpha:
            low = middle
        else:
            high = middle
    return low


def _counts(correct, guesses, canaries) -> tuple[int, int, int]:
    m = check_int(canaries, "canaries", 1)
    r = check_int(guesses, "guesses", 0)
    v = check_int(correct, "correct", 0)
    if r > m:
        raise InputError(f"argument 'guesses' ({r}) must be at most the number of canaries ({m})")
    if v > r:
        raise InputError(f"argument 'correct' ({v}) must be at most the number of guesses ({r})")
    return v, r, m


@dataclass(frozen=True)
class OneRunAudit:
    """A one-run audit's certificate (:func:`one_run_audit`).

    Attributes
    ----------
    epsilon_lower_bound : float
        ε_lb at confidence 1 − ``alpha``: the best of the guess choices, each certified at α / their number.
    delta : float
        The δ at which ε is bounded (the claim's δ).
    alpha : float
    canaries : int
        m, the canaries each included by a fair coin.
    included : int
        How many the coins included.
    k_plus, k_minus, guesses, correct : int
        The guess choice that gave ε_lb: k₊ "included" guesses on the highest scores, k₋ "excluded"
        guesses on the lowest, r = k₊ + k₋ guesses, of which ``correct`` were right.
    choices : list of dict
        Every guess choice fixed before the run, with its counts and ε_lb (at α / their number).
    claimed_epsilon : float or None
        The ε the bound is compared with (the accountant's), when given.
    statement : str
        What a one-run bound certifies and why it is loose.
    """

    epsilon_lower_bound: float
    delta: float
    alpha: float
    canaries: int
    included: int
    k_plus: int
    k_minus: int
    guesses: int
    correct: int
    choices: list
    claimed_epsilon: float | None = None
    statement: str = STATEMENT

    @property
    def ratio(self) -> float | None:
        """ε_lb / the claimed ε (None without a claim)."""
        return None if not self.claimed_epsilon else self.epsilon_lower_bound / self.claimed_epsilon

    @property
    def refuted(self) -> bool:
        """Whether ε_lb exceeds the claimed ε (level α): the claim is contradicted."""
        return self.claimed_epsilon is not None and self.epsilon_lower_bound > self.claimed_epsilon

    def to_dict(self) -> dict:
        return fields_to_dict(self, extra={"ratio": self.ratio, "refuted": self.refuted})

    def text(self) -> str:
        """The certificate in words, for the command line."""
        claim = ("" if self.claimed_epsilon is None else
                 f" against the claimed ε = {self.claimed_epsilon:.4g} (ratio {self.ratio:.3f}; "
                 f"{'REFUTED' if self.refuted else 'not refuted'})")
        return (f"one-run audit: {self.canaries} canaries ({self.included} included by the coin), "
                f"{self.k_plus} + {self.k_minus} guesses, {self.correct} of {self.guesses} right"
                + (f" (the best of {len(self.choices)} guess choices fixed before the run, each certified at "
                   f"α/{len(self.choices)})" if len(self.choices) > 1 else "") + ": "
                f"certified ε ≥ {self.epsilon_lower_bound:.4g} at δ = {self.delta:g}, α = {self.alpha:g}"
                f"{claim}.\n{self.statement}")


def default_guesses(canaries: int) -> list:
    """[(k, k)] with k = :data:`DEFAULT_GUESS_SHARE` · m (at least 1, at most m/2)."""
    m = check_int(canaries, "canaries", 2)
    k = min(max(1, round(DEFAULT_GUESS_SHARE * m)), m // 2)
    return [(k, k)]


def guess_grid(canaries: int) -> list:
    """[(k, k)] for k = share · m over :data:`GUESS_GRID_SHARES` (at least 1, at most m/2, each once).

    The best over these choices is certified by :func:`one_run_audit` with α split equally between them
    (a union bound), so it never depends on which looked best afterwards.
    """
    m = check_int(canaries, "canaries", 2)
    ks = sorted({min(max(1, round(share * m)), m // 2) for share in GUESS_GRID_SHARES})
    return [(k, k) for k in ks]


def one_run_audit(scores, included, *, guesses=None, alpha: float = 0.05, delta: float = 0.0,
                  claimed_epsilon: float | None = None) -> OneRunAudit:
    """Certify an (ε, δ) lower bound from one run's canary scores (Steinke, Nasr and Jagielski 2023).

    Parameters
    ----------
    scores : array_like of shape (m,)
        One score per canary, larger where the run looks trained on it (a white-box canary's
        gradient coordinate, minus a black-box canary's loss).
    included : array_like of bool, shape (m,)
        The coins: which canaries the run was trained on. They must be independent fair coins drawn
        before the run (Algorithm 1); the certificate is only as good as that.
    guesses : sequence of (k_plus, k_minus), or "grid", optional
        Guess choices fixed before the run; α is split evenly between them (union bound), and ε_lb is
        the best of them. ``"grid"``: :func:`guess_grid`. Default :func:`default_guesses` (one choice).
    alpha : float, default 0.05
    delta : float, default 0
        The δ of the guarantee audited (the claim's).
    claimed_epsilon : float, optional
        The ε to compare with.

    Returns
    -------
    OneRunAudit
    """
    scores = np.asarray(scores, dtype=np.float64).ravel()
    coins = np.asarray(included)
    if coins.dtype != bool:
        raise InputError("argument 'included' must be an array of bool (which canaries the run was trained on)")
    coins = coins.ravel()
    if scores.shape != coins.shape:
        raise InputError(f"arguments 'scores' and 'included' must have the same length (got {scores.size} and "
                         f"{coins.size})")
    if scores.size < 2 or not np.all(np.isfinite(scores)):
        raise InputError("argument 'scores' must hold at least two finite scores")
    alpha = check_probability(alpha, "alpha")
    m = scores.size
    if isinstance(guesses, str):
        if guesses != "grid":
            raise InputError(f"argument 'guesses' must be a sequence of (k_plus, k_minus) or 'grid' (got {guesses!r})")
        guesses = guess_grid(m)
    choices = default_guesses(m) if guesses is None else [tuple(g) for g in guesses]
    if not choices:
        raise InputError("argument 'guesses' must hold at least one (k_plus, k_minus) choice")
    # Ties are broken by a fixed order (the canary's index), never by the coins.
    order = np.lexsort((np.arange(m), -scores))
    level = alpha / len(choices)
    rows = []
    for k_plus, k_minus in choices:
        k_plus, k_minus = check_int(k_plus, "k_plus", 0), check_int(k_minus, "k_minus", 0)
        if k_plus + k_minus > m or k_plus + k_minus == 0:
            raise InputError(f"argument 'guesses': k_plus + k_minus must be in [1, {m}] (got {k_plus} + {k_minus})")
        top, bottom = order[:k_plus], order[m - k_minus:]
        correct = int(coins[top].sum() + (~coins[bottom]).sum())
        bound = one_run_epsilon(correct, k_plus + k_minus, m, alpha=level, delta=delta)
        rows.append({"k_plus": k_plus, "k_minus": k_minus, "guesses": k_plus + k_minus, "correct": correct,
                     "epsilon_lower_bound": bound, "level": level})
    best = max(rows, key=lambda row: row["epsilon_lower_bound"])  # ties: the first choice
    return OneRunAudit(epsilon_lower_bound=best["epsilon_lower_bound"], delta=delta, alpha=alpha, canaries=m,
                       included=int(coins.sum()), k_plus=best["k_plus"], k_minus=best["k_minus"],
                       guesses=best["guesses"], correct=best["correct"], choices=rows,
                       claimed_epsilon=claimed_epsilon)
