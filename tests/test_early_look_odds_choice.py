"""Why the early look's one-miss rule reads the Clopper–Pearson pair only (audit.gating.early_look).

With one miss (n − 1 hits of n against 0 of n) the odds ratio (Cornfield 1956) refutes a pure ε-DP claim with
about 40% fewer runs per input than the Clopper–Pearson pair: dp:1 at the scan's α = 0.05/245 with a last look
of 60,000 runs, 70 → 42; dp:0.5 at α = 0.05 with 6,000, 28 → 18. But the event test certifies by the odds ratio
only where its choice on the early look's MI sample (about 20 held-out draws of each input, a Binomial(40, ½)
split) predicts that better, and on a perfectly separated pair at those sizes it picks the Clopper–Pearson pair,
which certifies nothing above the claim with n of n against 0 of n: dp:0.5's look of 18 runs picks it even at an
even split, so it never refutes there; dp:1's look of 42 runs picks it once the smaller side has 16 draws or
fewer (probability 0.27). A look sized by the odds ratio would therefore not reliably refute a deterministic
difference, which is what it is for; sized by the pair, whichever certificate is chosen refutes.

Counts here are computed independently: the pair from the Beta quantiles (Clopper and Pearson 1934), the odds
ratio's exact conditional tail P_ψ(X₁ ≥ x₁ | s) summed by hand (Fisher's noncentral hypergeometric law).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import audit.gating.early_look as early
from audit.gating.sequential import run_sequential_audit
from audit.search.event_choice import choose_event
from audit.search.event_search import choice_settings
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

SAMPLES = 40  # the early look's MI sample: the event is chosen on its draws


def _pair_refutes(epsilon: float, alpha: float, hits: int, runs: int) -> bool:
    """Pure ε-DP against ``hits`` of ``runs`` and 0 of ``runs``: Clopper–Pearson at α/2 each from the Beta
    quantiles, on the event and on its complement (Dwork and Roth 2014, Definition 2.4)."""
    lower = stats.beta.ppf(alpha / 2, hits, runs - hits + 1) if hits else 0.0
    upper = stats.beta.ppf(1 - alpha / 2, 1, runs)
    return lower > math.exp(epsilon) * upper or (1 - upper) > math.exp(epsilon) * (1 - lower)


def _odds_refutes(epsilon: float, alpha: float, hits: int, runs: int) -> bool:
    """ψ̲ > e^{2ε} for ``hits`` of ``runs`` against 0 of ``runs``: the exact conditional tail at ψ = e^{2ε},
    P(X₁ ≥ hits | s = hits) = C(n, s) ψ^s / Σ_k C(n, k) C(n, s − k) ψ^k, below α (Cornfield 1956)."""
    log_psi = 2 * epsilon
    terms = [math.log(math.comb(runs, k) * math.comb(runs, hits - k)) + k * log_psi for k in range(hits + 1)]
    top = max(terms)
    return terms[-1] - top - math.log(sum(math.exp(t - top) for t in terms)) < math.log(alpha)


def _size(epsilon: float, alpha: float, last: int, refutes) -> tuple[int, float]:
    """(c, α_0) of the look of 40 + 2c runs at α·((40 + 2c)/last)² whose one-miss pair first refutes."""
    for runs in range(2, 81):
        level = alpha * ((SAMPLES + 2 * runs) / last) ** 2
        if refutes(epsilon, level, runs - 1, runs):
            return runs, level
    raise AssertionError("no early look")


def _secret_bit(dbs, rng):
    return dbs[:, :1, 0].astype(np.float64)


def _spec(claim: str, alpha: float, seed: int = 0) -> AuditSpec:
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    return AuditSpec(mechanism=_secret_bit, priors=(pair.prior(),), claim=parse_claim(claim), records=(0,),
                     seed=seed, alpha=alpha, arithmetic="ideal")


# (ε, α, the last look's runs, the pair's count, the odds ratio's count, a split of the MI sample at which
# the choice picks the pair)
CASES = [(0.5, 0.05, 6000, 28, 18, (20, 20)), (1.0, 0.05 / 245, 60_000, 70, 42, (16, 24))]


@pytest.mark.parametrize("epsilon, alpha, last, pair_runs, odds_runs, split", CASES)
def test_the_odds_ratio_would_size_the_look_smaller_but_its_choice_picks_the_pair_there(epsilon, alpha, last,
                                                                                       pair_runs, odds_runs, split):
    assert _size(epsilon, alpha, last, _pair_refutes)[0] == pair_runs
    runs, level = _size(epsilon, alpha, last, lambda e, a, h, n: _pair_refutes(e, a, h, n) or _odds_refutes(e, a, h, n))
    assert runs == odds_runs
    # The look as planned today: the pair's count.
    look = early.early_look(_spec(f"dp:{epsilon}", alpha), lambda r: alpha * (r / last) ** 2, last, float_runs=False)
    assert look[1] == pair_runs
    # At the odds ratio's count, perfectly separated held-out draws: the choice is the Clopper–Pearson pair, and the
    # pair at all runs hit against none does not refute (the odds ratio would have).
    claim = parse_claim(f"dp:{epsilon}")
    choice = choose_event(np.ones(split[0]), np.zeros(split[1]), **choice_settings(runs, level, 0.0, claim))
    assert choice.certificate == "clopper-pearson"
    assert not _pair_refutes(epsilon, level, runs, runs) and _odds_refutes(epsilon, level, runs, runs)


def test_at_the_pairs_count_either_certificate_refutes_a_perfect_pair():
    # The sizing the look keeps: at the pair's count the one-miss pair refutes by construction, and the odds ratio,
    # which the choice picks at an even split, refutes too.
    for epsilon, alpha, last, pair_runs, _, _ in CASES:
        level = alpha * ((SAMPLES + 2 * pair_runs) / last) ** 2
        claim = parse_claim(f"dp:{epsilon}")
        choice = choose_event(np.ones(20), np.zeros(20), **choice_settings(pair_runs, level, 0.0, claim))
        assert choice.certificate == "odds-ratio"
        assert _pair_refutes(epsilon, level, pair_runs - 1, pair_runs) and _odds_refutes(epsilon, level, pair_runs - 1,
                                                                                         pair_runs)


def test_dp1s_odds_sized_look_picks_the_pair_in_about_a_quarter_of_the_splits():
    # dp:1 at α = 0.05/245, 60,000: at 42 runs the choice picks the pair where the smaller side has ≤ 16 draws.
    epsilon, alpha, last, _, odds_runs, _ = CASES[1]
    level = alpha * ((SAMPLES + 2 * odds_runs) / last) ** 2
    settings = choice_settings(odds_runs, level, 0.0, parse_claim("dp:1"))
    pair_splits = [h for h in range(1, SAMPLES) if choose_event(np.ones(h), np.zeros(SAMPLES - h),
                                                                  **settings).certificate == "clopper-pearson"]
    assert pair_splits == [h for h in range(1, SAMPLES) if min(h, SAMPLES - h) <= 16]
    assert 2 * stats.binom.cdf(16, SAMPLES, 0.5) == pytest.approx(0.268, abs=1e-3)


def test_an_early_look_sized_by_the_odds_ratio_does_not_refute_a_deterministic_difference(monkeypatch):
    # End to end, dp:0.5 at α = 0.05 within 6,000 runs: the look as sized refutes at once (40 + 2·28 runs); sized by
    # the odds ratio (18 runs per input) its event test certifies by the pair, refutes nothing, and the audit needs
    # its next look (1,200 runs).
    spec = _spec("dp:0.5", 0.05, seed=3)
    audit = run_sequential_audit(spec, 6000)
    assert audit.refuted and len(audit.looks) == 1 and audit.runs == SAMPLES + 2 * 28

    def by_odds(claim, alpha, runs):
        return runs >= 2 and _odds_refutes(claim.pure_epsilon, alpha, runs - 1, runs)

    monkeypatch.setattr(early, "refutes_with_one_miss", by_odds)
    audit = run_sequential_audit(spec, 6000)
    assert audit.schedule[0].early and audit.schedule[0].event_runs == 18
    assert audit.looks[0].claim_verdict != "refuted" and audit.refuted and audit.runs > 2 * 100
