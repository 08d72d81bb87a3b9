"""The pytest API's type-I error at its claim's boundary (issue 43): ``assert_claim`` on a mechanism that meets its
claim exactly fails in at most α of independent checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from audit.gating.assertions import ClaimRefuted, assert_claim

EPSILON, ALPHA, CHECKS = 1.0, 0.05, 1000

#: P(the report is the record's bit) = e^ε / (1 + e^ε) (Warner 1965; Dwork and Roth 2014, Section 3.2).
KEEP = math.exp(EPSILON) / (1 + math.exp(EPSILON))


def _randomized_response(dbs, rng):
    """Record 0's bit, kept with probability :data:`KEEP` and flipped otherwise."""
    bits = dbs[:, 0, 0]
    return np.where(rng.random(len(dbs)) < KEEP, bits, 1 - bits)[:, None]


@pytest.mark.slow
def test_assert_claim_fails_a_mechanism_exactly_at_its_claim_in_at_most_alpha_of_the_checks():
    # On the pair (0, 1) the two output laws are Bernoulli(1 − KEEP) and Bernoulli(KEEP): the event {report = 1}
    # has ratio KEEP / (1 − KEEP) = e^ε exactly, and no event a larger one, so the mechanism is ε-DP and no less.
    assert math.log(KEEP / (1 - KEEP)) == pytest.approx(EPSILON, rel=1e-12)
    pairs = [(np.array([[0.0]]), np.array([[1.0]]))]
    failed = 0
    for seed in range(CHECKS):
        try:
            assert_claim(_randomized_response, f"dp:{EPSILON}", pairs=pairs, max_runs=6000, alpha=ALPHA, seed=seed)
        except ClaimRefuted:
            failed += 1
    # Each check fails with probability ≤ α, so the count is at most Binomial(CHECKS, α) stochastically.
    bound = stats.binom.ppf(0.999, CHECKS, ALPHA)
    print(f"assert_claim type-I: {failed} of {CHECKS} checks failed at α = {ALPHA} (bound {bound:.0f})")
    assert failed <= bound, f"{failed} of {CHECKS} checks failed"
