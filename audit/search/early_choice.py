"""The rule that sizes a sequential audit's early look: the fewest runs at which its event tests refute a pair with
one miss by the certificate they choose (:mod:`audit.gating.early_look`, whose module docstring gives the rule and
its measurements).

It reads the event test's certificate choice (:func:`audit.search.event_choice.choose_event`), so it lives with the
search, below both the early look's sizing (:mod:`audit.gating.early_look`) and the audit's plan
(:mod:`audit.audit_plan`), which apply it to the same sizes and levels: :func:`early_rule` hands it to
:func:`audit.certificates.claim_tests.plan_claim_tests` for the float-bit test's share.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from audit.certificates.claim_tests import refutes_with_one_miss, uses_ratio_certificates
from audit.search.prior_search import differing_record
from audit.statistics.pair_candidates import EARLY_LOOK_SELECTION_RUNS

#: MI-sample draws per prior of Θ at the early look: about 20 of each database of a balanced two-point prior.
EARLY_LOOK_SAMPLES = 40
#: The largest probability, over the split of the look's MI sample, with which the event test of an early look sized
#: by the odds ratio may choose another certificate on a deterministic difference (:func:`early_look_refutes`).
ODDS_CHOICE_RISK = 0.01


def early_look_refutes(claim, alpha: float, runs: int, ratio_certificates: bool = False,
                       second_shares: tuple = (0.5,)) -> bool:
    """Whether the event test of an early look at level ``alpha`` with ``runs`` certification runs per input refutes
    ``claim`` on a pair with one miss (all but one run of one input in the event, none of the other's) by the
    certificate it chooses, except with probability at most :data:`ODDS_CHOICE_RISK` over the split of the look's
    MI sample: the rule that sizes the look (:func:`audit.gating.early_look.early_look`).

    It refutes where

    - the Clopper–Pearson (1934) pair does, its bounds at α/2 each on (runs − 1)/runs and 0/runs outside the claim's
      profile (:func:`refutes_with_one_miss`); or, where ``ratio_certificates`` (a pure ε-DP claim at δ = 0,
      :func:`audit.certificates.claim_tests.uses_ratio_certificates`),
    - the odds ratio does, its exact conditional lower bound ψ̲ (Cornfield 1956,
      :func:`audit.certificates.odds_ratio.odds_ratio_lower_bound`) on those counts certifying log(ψ̲)/2 > ε
      (ψ ≤ e^{2ε} for an ε-DP mechanism: Dwork and Roth 2014, Definition 2.4, for the event and its complement),
      and the event test chooses the odds ratio except with probability at most :data:`ODDS_CHOICE_RISK`
      (:func:`odds_choice_risk`, the largest over the priors whose shares of the second database are
      ``second_shares``). The choice is made on the look's held-out draws before its certification runs: where
      it picks the pair at that size, the pair (n of n against 0 of n) refutes nothing
      (``tests/test_early_look_odds_choice.py``).

    The odds ratio's one-miss count is about 40% below the pair's, but at small ε or a small α its choice picks the
    pair at common splits (``dp:0.5`` at α = 0.05 at every split, risk 1; ``dp:1`` at α = 0.05/245 within 60,000
    runs, 0.27), so there the look keeps the pair's count. A function of the claim, the level and the sizes alone,
    fixed before any run: it changes the look's size, never its level.
    """
    if refutes_with_one_miss(claim, alpha, runs):
        return True
    if not ratio_certificates or runs < 2 or not _odds_refutes_with_one_miss(claim.pure_epsilon, alpha, runs):
        return False
    return all(odds_choice_risk(claim, alpha, runs, share, stop_above=ODDS_CHOICE_RISK) <= ODDS_CHOICE_RISK
               for share in second_shares)


def _odds_refutes_with_one_miss(epsilon: float, alpha: float, runs: int) -> bool:
    """Whether the odds ratio's exact conditional bound on n − 1 hits of n = ``runs`` against 0 of n exceeds e^{2ε}.

    Given the total s = n − 1, X₁ follows Fisher's noncentral hypergeometric law, P_ψ(X₁ = k | s) ∝ C(n, k) C(n, s − k)
    ψ^k, whose upper tail grows with ψ, so ψ̲ > e^{2ε} exactly where P_{e^{2ε}}(X₁ ≥ n − 1 | s) < α (Cornfield 1956,
    :func:`audit.certificates.odds_ratio.odds_ratio_lower_bound`): one evaluation of the sum instead of solving for ψ̲,
    which also holds at levels so small that ψ̲ is 0. A tail within rounding of α is a tie, which refutes nothing.
    """
    total = runs - 1
    terms = [_log_comb(runs, k) + _log_comb(runs, total - k) + 2.0 * epsilon * k for k in range(total + 1)]
    top = max(terms)
    log_tail = terms[-1] - top - math.log(math.fsum(math.exp(t - top) for t in terms))
    return math.log(alpha) - log_tail > 1e-12


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


@functools.lru_cache(maxsize=256)
def odds_choice_risk(claim, alpha: float, runs: int, second_share: float = 0.5, samples: int = EARLY_LOOK_SAMPLES,
                     stop_above: float | None = None) -> float:
    """The probability that an early look's event test does not certify a deterministic difference by the odds ratio.

    The look's MI sample draws ``samples`` times from a two-point prior that gives the second database probability
    ``second_share``, so the first database is drawn x ~ Binomial(``samples``, 1 − ``second_share``) times. On a
    deterministic difference the cross-fitted statistic separates the draws, and the event test chooses its event and
    certificate on those held-out scores (:func:`audit.search.event_choice.choose_event` with
    :func:`audit.search.event_search.choice_settings` for ``runs`` runs per input at ``alpha``: the pair of
    Clopper and Pearson 1934, the odds ratio of Cornfield 1956 or the rate ratio of Przyborowski and Wilenski 1940,
    whichever it predicts to certify most), a function of the split (x, ``samples`` − x) alone. The probability is
    summed exactly over the binomial law of x: the splits at which the choice is not the odds ratio, and those where
    either input has fewer than :data:`audit.statistics.pair_candidates.EARLY_LOOK_SELECTION_RUNS` draws (no event
    is chosen on held-out scores there), count against it. A rate ratio counts too: its Poisson numbers of runs make
    its one-miss refutation a matter of chance. With ``stop_above`` the splits are taken likeliest first and the sum
    stops once it exceeds ``stop_above`` (the result is then a part of the sum, above ``stop_above``): where the even
    split already picks the pair, one choice decides.
    """
    from audit.search.event_choice import choose_event  # SciPy, loaded only when a look is planned
    from audit.search.event_search import choice_settings

    settings = choice_settings(runs, alpha, 0.0, claim)
    first = 1.0 - second_share
    weights = {x: math.comb(samples, x) * first ** x * second_share ** (samples - x) for x in range(samples + 1)}
    against = []
    for x in sorted(weights, key=lambda x: -weights[x]):
        if min(x, samples - x) < EARLY_LOOK_SELECTION_RUNS or choose_event(
                np.ones(x), np.zeros(samples - x), **settings).certificate != "odds-ratio":
            against.append(weights[x])
            if stop_above is not None and math.fsum(against) > stop_above:
                break
    return min(1.0, math.fsum(against))


def second_shares(spec) -> tuple:
    """The probabilities of the second database of the two-point priors of ``spec`` at their differing records
    ((0.5,) where there is none): the splits of an early look's MI sample (:func:`early_rule`)."""
    return tuple(sorted({float(np.broadcast_to(np.asarray(getattr(prior, "p", 0.5), dtype=np.float64),
                                               (np.shape(prior.first)[0],))[differing_record(prior)])
                         for prior in spec.priors})) or (0.5,)


def early_rule(spec):
    """The early look's one-miss rule for the audit ``spec``: ``rule(claim, alpha, runs)``, :func:`early_look_refutes`
    with the odds ratio counted where the audit's event test may certify by it
    (:func:`audit.certificates.claim_tests.uses_ratio_certificates` of its claim and δ) and the splits of its priors
    (:func:`second_shares`). A function of the spec alone, fixed before any run."""
    ratios = uses_ratio_certificates(spec.claim, spec.delta)
    return functools.partial(early_look_refutes, ratio_certificates=ratios,
                             second_shares=second_shares(spec) if ratios else (0.5,))
