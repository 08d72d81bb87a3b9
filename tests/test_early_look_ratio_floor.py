"""The early look's certifying floor counts the ratio certificates where its event test may use them
(audit.gating.early_look, audit.certificates.claim_tests.uses_ratio_certificates).

The run counts are worked by hand: with n runs per input, n hits against none,
- the Clopper–Pearson pair at α/2 each is p̲ = (α/2)^{1/n}, p̄ = 1 − (α/2)^{1/n}, so ε > 0 iff (α/2)^{1/n} > 1/2,
  n > log₂(2/α): 6 at α = 0.05 (log₂ 40 = 5.32), 8 at α = 0.01 (log₂ 200 = 7.64);
- the odds ratio's exact conditional test (Cornfield 1956) has ψ̲ > 1 iff Fisher's one-sided p-value of n of n
  against 0 of n, 1/C(2n, n), is below α: C(6, 3) = 20 is not above 1/0.05 = 20 and C(8, 4) = 70 is, so 4 at
  α = 0.05; C(8, 4) = 70 < 100 < C(10, 5) = 252, so 5 at α = 0.01 (the rate ratio needs n > log₂(1/α), more).
"""

from __future__ import annotations

import numpy as np
import pytest

import audit.gating.early_look as early
from test_early_look_odds_choice import expected_early_runs  # the pair or the odds ratio, computed there
from audit.certificates.claim_tests import smallest_certifying_runs
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

ALPHA = 0.05


@pytest.mark.parametrize("alpha, pair, ratios", [(0.05, 6, 4), (0.01, 8, 5)])
def test_the_certifying_floor_by_hand(alpha, pair, ratios):
    assert smallest_certifying_runs(alpha) == pair
    assert smallest_certifying_runs(alpha, ratio_certificates=True) == ratios


def _deterministic(dbs, rng):
    return dbs[:, :1, 0].astype(np.float64)


def _spec(claim: str, delta: float = 0.0) -> AuditSpec:
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    return AuditSpec(mechanism=_deterministic, priors=(pair.prior(),), claim=parse_claim(claim), records=(0,),
                     seed=0, delta=delta, arithmetic="ideal")


@pytest.mark.parametrize("claim, delta, ratios", [("dp:1", 0.0, True), ("ldp:0.5", 0.0, True), ("dp:1", 1e-5, False),
                                                  ("dp:1:1e-5", 0.0, False), ("gdp:1", 0.0, False)])
def test_the_early_look_counts_the_ratio_certificates_where_its_event_test_may_use_them(monkeypatch, claim, delta,
                                                                                        ratios):
    seen = []

    def recorded(alpha, limit=10**9, *, ratio_certificates=False):
        seen.append(ratio_certificates)
        return smallest_certifying_runs(alpha, limit, ratio_certificates=ratio_certificates)

    monkeypatch.setattr(early, "smallest_certifying_runs", recorded)
    early.early_look(_spec(claim, delta), lambda runs: ALPHA * (runs / 60_000) ** 2, 60_000, float_runs=False)
    assert seen and set(seen) == {ratios}


@pytest.mark.parametrize("epsilon, last", [(0.5, 6000), (1.0, 6000), (1.0, 60_000)])
def test_the_early_looks_size_is_the_one_miss_rules_with_the_ratio_floor(epsilon, last):
    # The look of 40 draws and c runs per input (40 + 2c runs) at α·(runs/last)²: the fewest c whose one-miss pair
    # refutes (by the pair, or by the odds ratio where the choice picks it, early_look_refutes); the ratio floor
    # (4 at most, above) lies far below it and changes nothing.
    runs, level = expected_early_runs(epsilon, ALPHA, last)
    assert runs > smallest_certifying_runs(level, ratio_certificates=True)
    look = early.early_look(_spec(f"dp:{epsilon}"), lambda r: ALPHA * (r / last) ** 2, last, float_runs=False)
    assert look[:2] == (40, runs) and look[3] == 40 + 2 * runs
    assert look[2] == pytest.approx(level, rel=1e-12)
