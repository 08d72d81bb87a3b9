"""Type-I error of the domain's pair families with their pilot selection, at the boundary (slow).

A sum of records in [0, 1] with Laplace noise of scale 1 is exactly 1-DP: the pairs at the domain's ends
change the sum by 1, and the privacy loss of a Laplace shift Δ at scale b is Δ / b (Dwork and Roth 2014,
Theorem 3.6), so the claim 1-DP is true and tight. Each audit chooses its pair among the families on pilot
runs (audit.search.family_pilot, seeded by its trial), then its event on selection runs and certifies it on
fresh runs (audit.search.event_search) at α = 0.05. The pilot's choice is free of α only if the
certificate stays valid after it: refutations of the true claim must stay at most α of the audits.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from audit.search.event_search import event_search
from audit.search.family_pilot import domain_pairs_by_pilot
from audit.search.input_domain import domain_from_ranges
from audit.statistics.pair_candidates import PairCandidate
from mechanisms.claims.parsing import parse_claim
from mechanisms.execution.runner import MechanismRunner

AUDITS = 200
ALPHA = 0.05


def _laplace_sum(dbs, rng):
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0, (len(dbs), 1))


@pytest.mark.slow
def test_pilot_selected_family_pairs_refute_a_tight_true_claim_at_most_alpha_of_the_time():
    claim = parse_claim("dp:1")
    domain = domain_from_ranges((0.0, 1.0), "[0, 1]")
    refuted, kept_ends = 0, 0
    with MechanismRunner(_laplace_sum, "Laplace sum") as runner:
        for trial in range(AUDITS):
            (pair,), _ = domain_pairs_by_pilot(_laplace_sum, domain, (2, 1), "replace-one", seed=trial, runs=1000,
                                               alpha=ALPHA, claim=claim, budget=4000, steps=0)
            record = int(np.flatnonzero(np.any(pair.first != pair.second, axis=1))[0])
            kept_ends += abs(float(pair.first[record, 0] - pair.second[record, 0])) == 1.0
            candidate = PairCandidate(pair.first, pair.second, record, lambda a, b, dbs, outputs: outputs[:, 0])
            event = event_search([candidate], runner=runner, rng=np.random.default_rng([trial, 1]), runs=1000,
                                 alpha=ALPHA, claim=claim)
            refuted += event.epsilon_lower_bound > 1.0
    print(f"type-I study: {refuted} of {AUDITS} audits refuted the true claim; {kept_ends} kept a pair across the range")
    # Under H0 the count is at most Binomial(AUDITS, α) stochastically; its 0.999 quantile is 20 at 200 audits.
    assert refuted <= binom.ppf(0.999, AUDITS, ALPHA), refuted
    # The pilot found the boundary: most audits kept a pair whose record changes by the whole range.
    assert kept_ends >= AUDITS // 2, kept_ends
