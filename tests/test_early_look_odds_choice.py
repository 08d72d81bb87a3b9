"""When the early look may be sized by the odds ratio's one-miss count (audit.search.early_choice.early_look_refutes).

With one miss (n − 1 hits of n against 0 of n) the odds ratio (Cornfield 1956) refutes a pure ε-DP claim with
about 40% fewer runs per input than the Clopper–Pearson pair: dp:1 at the scan's α = 0.05/245 with a last look
of 60,000 runs, 70 → 42; dp:0.5 at α = 0.05 with 6,000, 28 → 18. But the event test certifies by the odds ratio
only where its choice on the early look's MI sample (40 held-out draws, a Binomial(40, ½) split between the two
inputs) predicts that better, and on a perfectly separated pair at those sizes it picks the Clopper–Pearson pair,
which certifies nothing above the claim with n of n against 0 of n: dp:0.5's look of 18 runs picks it even at an
even split, so it never refutes there; dp:1's look of 42 runs picks it once the smaller side has 16 draws or
fewer (probability 0.27). And a smaller look tolerates fewer misses: an event chosen on ~20 held-out draws per
input of a nearly separated mechanism misses a few certification runs (the tutorial's snapped mean with too little
noise: the pair's 224-run look refuted 10 of 10 seeds, the odds ratio's 180-run look 6 of 10). So the look takes
the fewest runs at which the pair refutes with one miss; only where no size within the cap lets the pair refute
does it take the fewest at which the odds ratio does and the choice picks another certificate with probability at
most 1% over the split (summed exactly over its binomial law): dp:1.9 at 0.05/245 with 6,000, which had no early
look, 73.

Counts here are computed independently: the pair from the Beta quantiles (Clopper and Pearson 1934), the odds
ratio's exact conditional tail P_ψ(X₁ ≥ x₁ | s) summed by hand (Fisher's noncentral hypergeometric law), the
split's law from SciPy's binomial; the choice itself is the event test's (choose_event with its settings).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

import audit.gating.early_look as early
import audit.search.early_choice as early_choice
from audit.gating.sequential import look_schedule, run_sequential_audit
from audit.search.event_choice import choose_event
from audit.search.event_search import choice_settings
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

SAMPLES = 40  # the early look's MI sample: the event is chosen on its draws
FLOOR = 8  # the fewest held-out draws of each input an event is chosen on at an early look
RISK = 0.01  # the largest chance that the choice is not the odds ratio at an odds-sized look
SCAN_ALPHA = 0.05 / 245  # a scan case's α, 245 cases


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


def _choices(epsilon: float, alpha: float, runs: int) -> dict:
    """The event test's certificate at each split (x draws of the first input, 40 − x of the second) of perfectly
    separated held-out scores, where both sides have at least 8 draws."""
    settings = choice_settings(runs, alpha, 0.0, parse_claim(f"dp:{epsilon}"))
    return {x: choose_event(np.ones(x), np.zeros(SAMPLES - x), **settings).certificate
            for x in range(FLOOR, SAMPLES - FLOOR + 1)}


def _not_odds(epsilon: float, alpha: float, runs: int) -> float:
    """The chance over x ~ Binomial(40, ½) that the choice is not the odds ratio (too few draws of a side included)."""
    odds = [x for x, certificate in _choices(epsilon, alpha, runs).items() if certificate == "odds-ratio"]
    return 1.0 - float(sum(stats.binom.pmf(x, SAMPLES, 0.5) for x in odds))


def _size(epsilon: float, alpha: float, last: int, refutes) -> tuple[int, float] | None:
    """(c, α_0) of the look of 40 + 2c runs at α·((40 + 2c)/last)² whose one-miss pair first refutes."""
    for runs in range(2, 81):
        level = alpha * ((SAMPLES + 2 * runs) / last) ** 2
        if refutes(epsilon, level, runs - 1, runs):
            return runs, level
    return None


def _by_pair(e, a, h, n):
    return _pair_refutes(e, a, h, n)


def _by_either(e, a, h, n):
    return _pair_refutes(e, a, h, n) or _odds_refutes(e, a, h, n)


def _by_rule(e, a, h, n):
    return _pair_refutes(e, a, h, n) or (_odds_refutes(e, a, h, n) and _not_odds(e, a, n) <= RISK)


def expected_early_runs(epsilon: float, alpha: float, last: int) -> tuple[int, float] | None:
    """(c, α_0) of the early look by its rule, computed here: the fewest c whose one-miss pair the Clopper–Pearson
    pair refutes; where none within the cap does, the fewest the odds ratio refutes with its choice the odds ratio
    but for a chance ≤ 1%."""
    return _size(epsilon, alpha, last, _by_pair) or _size(epsilon, alpha, last, _by_rule)


def expected_float_early_runs(epsilon: float, alpha: float, last: int) -> tuple[int, float] | None:
    """(c, α_0) of an early look sized with the float-bit test, computed here: the fewest c whose look of 40 + 4c runs
    (the MI sample, then c runs of each input for each of the two event tests), at most 100 runs per input, at
    α·((40 + 4c)/last)², has both tests refute a one-miss pair by the rule at their parts, 0.8 α_0 and 0.2 α_0."""
    for runs in range(2, 41):
        level = alpha * ((SAMPLES + 4 * runs) / last) ** 2
        if all(_by_rule(epsilon, part * level, runs - 1, runs) for part in (0.8, 0.2)):
            return runs, level
    return None


def _spec(claim: str, alpha: float, seed: int = 0) -> AuditSpec:
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    return AuditSpec(mechanism=_secret_bit, priors=(pair.prior(),), claim=parse_claim(claim), records=(0,),
                     seed=seed, alpha=alpha, arithmetic="ideal")


def _secret_bit(dbs, rng):
    return dbs[:, :1, 0].astype(np.float64)


# (ε, α, the last look's runs, the pair's count, the odds ratio's count, the rule's count)
CASES = [(0.5, 0.05, 6000, 28, 18, 28), (1.0, SCAN_ALPHA, 60_000, 70, 42, 70), (1.0, 0.05, 6000, 40, 26, 40),
         (1.5, 0.05, 6000, 58, 38, 58), (1.9, SCAN_ALPHA, 6000, None, 73, 73)]


@pytest.mark.parametrize("epsilon, alpha, last, pair_runs, odds_runs, rule_runs", CASES)
def test_the_look_takes_the_odds_ratios_count_only_where_the_pair_gives_none(epsilon, alpha, last,
                                                                                      pair_runs, odds_runs, rule_runs):
    assert (_size(epsilon, alpha, last, _by_pair) or (None,))[0] == pair_runs
    assert _size(epsilon, alpha, last, _by_either)[0] == odds_runs
    runs, level = expected_early_runs(epsilon, alpha, last)
    assert runs == rule_runs
    look = early.early_look(_spec(f"dp:{epsilon}", alpha), lambda r: alpha * (r / last) ** 2, last, float_runs=False)
    assert look[:2] == (SAMPLES, rule_runs) and look[2] == pytest.approx(level, rel=1e-12)
    assert look[3] == SAMPLES + 2 * rule_runs
    # Where the pair gives no look, it refutes by the odds ratio, which the choice picks but for a chance ≤ 1%.
    if pair_runs is None:
        assert _odds_refutes(epsilon, level, runs - 1, runs) and not _pair_refutes(epsilon, level, runs - 1, runs)
        assert early.odds_choice_risk(parse_claim(f"dp:{epsilon}"), level, runs) == pytest.approx(
            _not_odds(epsilon, level, runs), abs=1e-12) and _not_odds(epsilon, level, runs) <= RISK


@pytest.mark.parametrize("epsilon, alpha, last, pair_runs, odds_runs, rule_runs", CASES[:2])
def test_at_the_odds_ratios_own_count_the_choice_picks_the_pair_which_refutes_nothing(epsilon, alpha, last,
                                                                                   pair_runs, odds_runs, rule_runs):
    runs, level = _size(epsilon, alpha, last, _by_either)
    claim = parse_claim(f"dp:{epsilon}")
    pair_splits = [x for x, c in _choices(epsilon, level, runs).items() if c == "clopper-pearson"]
    assert not _pair_refutes(epsilon, level, runs, runs) and _odds_refutes(epsilon, level, runs, runs)
    if epsilon == 0.5:  # dp:0.5's 18 runs: the pair at every split, even 20/20
        assert pair_splits == list(range(FLOOR, SAMPLES - FLOOR + 1))
        assert early.odds_choice_risk(claim, level, runs) == pytest.approx(1.0, abs=1e-12)
    else:  # dp:1's 42 runs: the pair where the smaller side has ≤ 16 draws
        assert pair_splits == [x for x in range(FLOOR, SAMPLES - FLOOR + 1) if min(x, SAMPLES - x) <= 16]
        assert early.odds_choice_risk(claim, level, runs) == pytest.approx(2 * stats.binom.cdf(16, SAMPLES, 0.5),
                                                                           abs=1e-12)
        assert 2 * stats.binom.cdf(16, SAMPLES, 0.5) == pytest.approx(0.268, abs=1e-3)
    assert not early.early_look_refutes(claim, level, runs, ratio_certificates=True)


def test_the_risk_counts_an_uneven_prior_and_the_selection_floor():
    # dp:0.5 at its rule's 23 runs: the pair where the smaller side has ≤ 11 draws, and splits with a side below 8
    # draws (no event chosen on held-out scores) count too; a prior drawing the second input with probability 0.3
    # makes uneven splits likelier and the risk larger.
    claim = parse_claim("dp:0.5")
    level = 0.05 * ((SAMPLES + 2 * 23) / 6000) ** 2
    assert [x for x, c in _choices(0.5, level, 23).items() if c != "odds-ratio"] == \
        [x for x in range(FLOOR, SAMPLES - FLOOR + 1) if min(x, SAMPLES - x) <= 11]
    assert early.odds_choice_risk(claim, level, 23) == pytest.approx(2 * stats.binom.cdf(11, SAMPLES, 0.5), abs=1e-12)
    uneven = stats.binom.cdf(11, SAMPLES, 0.7) + stats.binom.sf(28, SAMPLES, 0.7)  # x draws of the first input
    assert early.odds_choice_risk(claim, level, 23, second_share=0.3) == pytest.approx(uneven, abs=1e-12)
    assert uneven > RISK and not early.early_look_refutes(claim, level, 23, True, second_shares=(0.5, 0.3))
    assert early.early_look_refutes(claim, level, 23, True) and not early.early_look_refutes(claim, level, 23, False)
    # With stop_above the likeliest split comes first: at 18 runs the even split already picks the pair, and the sum
    # stops there, at its probability C(40, 20)/2⁴⁰.
    level = 0.05 * ((SAMPLES + 2 * 18) / 6000) ** 2
    assert early.odds_choice_risk(claim, level, 18, stop_above=RISK) == pytest.approx(stats.binom.pmf(20, SAMPLES, 0.5),
                                                                                     abs=1e-12)


def test_the_odds_count_holds_at_levels_so_small_that_its_bound_is_zero():
    # dp:1 at α = 0.05 within 10⁹ runs: the level of a look of a few dozen runs is ~10⁻¹⁵, where ψ̲ of few runs is 0.
    assert not early.early_look_refutes(parse_claim("dp:1"), 1e-20, 10, ratio_certificates=True)
    assert _odds_refutes(1.0, 1e-6, 39, 40) == early_choice._odds_refutes_with_one_miss(1.0, 1e-6, 40)


def test_an_early_look_sized_by_the_odds_ratio_alone_does_not_refute_a_deterministic_difference(monkeypatch):
    # End to end, dp:0.5 at α = 0.05 within 6,000 runs: the look as sized refutes at once (40 + 2·28 runs); sized by
    # the odds ratio alone (18 runs per input) its event test certifies by the pair, refutes nothing, and the audit
    # needs its next look (1,200 runs).
    spec = _spec("dp:0.5", 0.05, seed=3)
    audit = run_sequential_audit(spec, 6000)
    assert audit.refuted and len(audit.looks) == 1 and audit.runs == SAMPLES + 2 * 28

    def by_odds(claim, alpha, runs):
        return runs >= 2 and _odds_refutes(claim.pure_epsilon, alpha, runs - 1, runs)

    monkeypatch.setattr(early_choice, "refutes_with_one_miss", by_odds)
    audit = run_sequential_audit(spec, 6000)
    assert audit.schedule[0].early and audit.schedule[0].event_runs == 18
    assert audit.looks[0].claim_verdict != "refuted" and audit.refuted and audit.runs > 2 * 100


def test_dp19_at_the_scans_alpha_is_refuted_at_an_early_look_it_did_not_have():
    # The scan's case budget, 6,000 runs: dp:1.9 at α = 0.05/245 had no early look (the pair's one-miss count
    # passes 100 runs per input) and was refuted at the first ordinary look, 1,200 runs; now at 40 + 2·73.
    for seed in range(3):
        audit = run_sequential_audit(_spec("dp:1.9", SCAN_ALPHA, seed=seed), 6000)
        assert audit.schedule[0].early and audit.schedule[0].event_runs == 73
        assert audit.looks[0].claim_verdict == "refuted" and audit.runs == SAMPLES + 2 * 73


def _measured(claim: str, alpha: float, seeds: int) -> dict:
    """The early look's size and how the audits of the secret bit within 6,000 runs end, over ``seeds`` seeds."""
    audits = [run_sequential_audit(_spec(claim, alpha, seed=seed), 6000) for seed in range(seeds)]
    head = audits[0].schedule[0]
    return {"early": head.event_runs if head.early else None, "refuted": sum(a.refuted for a in audits),
            "at_early_look": sum(a.schedule[0].early and a.looks[0].claim_verdict == "refuted" for a in audits),
            "runs": sorted({a.runs for a in audits})}


# (claim, α, {before, after}): the pair's one-miss rule alone (before) and the rule (after), 20 seeds each: at the
# scan's α these claims get an early look they did not have; at 0.05 the pair's look stands.
MEASURED = [
    ("dp:1.5", SCAN_ALPHA, {"early": None, "refuted": 20, "at_early_look": 0, "runs": [1200]},
     {"early": 52, "refuted": 20, "at_early_look": 20, "runs": [144]}),
    ("dp:1.7", SCAN_ALPHA, {"early": None, "refuted": 20, "at_early_look": 0, "runs": [1200]},
     {"early": 61, "refuted": 20, "at_early_look": 20, "runs": [162]}),
    ("dp:1.9", SCAN_ALPHA, {"early": None, "refuted": 20, "at_early_look": 0, "runs": [1200]},
     {"early": 73, "refuted": 20, "at_early_look": 20, "runs": [186]}),
    ("dp:1.5", 0.05, {"early": 58, "refuted": 20, "at_early_look": 20, "runs": [156]},
     {"early": 58, "refuted": 20, "at_early_look": 20, "runs": [156]}),
    ("dp:1.9", 0.05, {"early": 79, "refuted": 20, "at_early_look": 20, "runs": [198]},
     {"early": 79, "refuted": 20, "at_early_look": 20, "runs": [198]}),
]


@pytest.mark.slow
@pytest.mark.parametrize("claim, alpha, before, after", MEASURED)
def test_the_secret_bit_is_refuted_at_the_early_look_in_20_of_20_seeds(monkeypatch, claim, alpha, before,
                                                                               after):
    # End to end within the scan's 6,000 runs: the secret bit (an output equal to the differing record, ε = ∞).
    measured = _measured(claim, alpha, 20)
    with monkeypatch.context() as patched:
        patched.setattr(early_choice, "odds_choice_risk", lambda *a, **k: 1.0)  # the pair's one-miss count only
        pair_only = _measured(claim, alpha, 20)
    print(json.dumps({"claim": claim, "alpha": alpha, "before": pair_only, "after": measured}))
    assert (pair_only, measured) == (before, after)


def test_the_float_bit_tests_own_choice_at_its_early_look_refutes_whichever_it_picks():
    # Under float arithmetic the look is sized by the pair for both tests (0.8 α_0 and 0.2 α_0). The float-bit test
    # chooses its certificate on its own held-out scores as the event test does: dp:0.1 at α = 0.05 within 6,000 runs
    # (23 runs, α_0 = 2.42e-5) picks the pair at uneven splits (smaller side ≤ 15 draws, 0.154) and the odds ratio
    # at the others, and each refutes with one miss there; dp:0.2 at α = 0.05/245 (33 runs) picks the pair at every
    # split, which refutes by the look's rule.
    for epsilon, alpha, runs, level, pair_share in [(0.1, 0.05, 23, 2.42e-5, 0.154), (0.2, SCAN_ALPHA, 33, 1.68e-7, 1)]:
        spec = AuditSpec(mechanism=_secret_bit, priors=_spec("dp:1", alpha).priors, claim=parse_claim(f"dp:{epsilon}"),
                         records=(0,), alpha=alpha, arithmetic="float")
        looks = look_schedule(spec, 6000, float_runs=True)
        head = looks[0]
        assert head.early and early.early_float_planned(spec, head) and head.event_runs == runs
        assert head.alpha == pytest.approx(level, rel=3e-3)
        float_alpha = 0.2 * head.alpha
        choices = _choices(epsilon, float_alpha, runs)
        assert set(choices.values()) <= {"clopper-pearson", "odds-ratio"}
        pair = [x for x, c in choices.items() if c == "clopper-pearson"]
        assert 1.0 - sum(stats.binom.pmf(x, SAMPLES, 0.5) for x in range(FLOOR, SAMPLES - FLOOR + 1)
                         if x not in pair) == pytest.approx(pair_share, abs=1e-3)
        assert _pair_refutes(epsilon, float_alpha, runs - 1, runs) and _odds_refutes(epsilon, float_alpha, runs - 1,
                                                                                     runs)


GRID = 2.0 ** -32


def _snapped_mean_too_little_noise(db, rng):
    """The tutorial's snapped_buggy: the mean of 20 ages in [0, 100] with the Laplace noise of ages in [0, 1]
    (one record moves the mean by 5, 100 noise scales), rounded to a multiple of 2⁻³²."""
    ages = np.clip(db[:, 0], 0.0, 100.0)
    return np.round((ages.mean() + rng.laplace(0.0, 1.0 / len(ages))) / GRID) * GRID


def _looks_to_refute(seed: int) -> tuple[int, int]:
    from audit.gating.assertions import ClaimRefuted, assert_claim

    low = np.zeros((20, 1))
    high = low.copy()
    high[0, 0] = 100.0
    with pytest.raises(ClaimRefuted) as refuted:
        assert_claim(_snapped_mean_too_little_noise, "dp:1", pairs=[(low, high)], per_database=True, seed=seed,
                     alpha=0.005)
    return len(refuted.value.audit.looks), refuted.value.audit.runs


def test_a_nearly_separated_mechanism_keeps_the_pairs_early_look(monkeypatch):
    # Its event, chosen on ~20 held-out draws per input, misses a few certification runs (56 of 60 on seed 0): the
    # pair's look (40 + 2·92 = 224 runs) refutes it at once; the odds ratio's smaller look (40 + 2·70), which the
    # rule would take for a perfectly separated pair, does not on seed 0 and the audit needs its next look.
    assert [_looks_to_refute(seed) for seed in range(3)] == [(1, 224)] * 3
    import audit.search.early_choice as early_choice

    monkeypatch.setattr(early_choice, "refutes_with_one_miss", lambda claim, alpha, runs: False)  # the odds ratio's
    looks, runs = _looks_to_refute(0)
    assert looks == 2 and runs > 224
