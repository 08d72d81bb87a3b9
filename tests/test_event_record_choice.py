"""Which record the event tests run on under a product prior (:func:`audit.certificates.secret_bounds.event_critic`).

The mechanism releases record 1 of 4 one-bit records (Bernoulli(½) each) by randomized response at ε = 1, keeping
the bit with probability p = e/(1 + e) (Warner 1965); records 0, 2 and 3 are not read. Each record's MI,
I(X_i; M | X_−i), is log 2 − h(p) nats for record 1 (a binary symmetric channel with uniform input, Cover and Thomas
2006, Section 7.1.4, h the binary entropy in nats) and 0 for the others, computed in the test. At 1,000 samples the
MI test chooses its record on the 100 draws of the validation split, where on these seeds a useless record scores
above record 1 (3 seeds of 50 in experiments/record_choice.py); the event tests, certified on fresh runs, choose on
the 500 held-out draws too and run on record 1, and then refute the false claim dp:0.5 (the mechanism is exactly
1-DP: the ratio of its two outputs' probabilities is p/(1 − p) = e).
"""

from __future__ import annotations

import numpy as np
import pytest

from audit.engine import run_audit
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import ProductBernoulli

RECORDS, EPSILON, SAMPLES = 4, 1.0, 1000
#: Seeds on which the MI test's candidate (chosen on the validation split) is a record the mechanism does not read.
SEEDS_WHERE_VALIDATION_MISSES = (1, 23, 34)


def _kept() -> float:
    return np.exp(EPSILON) / (1 + np.exp(EPSILON))


def record_one_by_randomized_response(dbs, rng):
    bits = dbs[:, 1, 0]
    return np.where(rng.random(len(bits)) < _kept(), bits, 1 - bits)[:, None].astype(float)


def _exact_mi() -> np.ndarray:
    p = _kept()
    mi = np.zeros(RECORDS)
    mi[1] = np.log(2) + p * np.log(p) + (1 - p) * np.log(1 - p)  # log 2 − h(p)
    return mi


@pytest.mark.train  # the audits' MI tests train critics
@pytest.mark.parametrize("seed", SEEDS_WHERE_VALIDATION_MISSES)
def test_the_event_tests_run_on_the_record_that_leaks_where_the_validation_split_chose_another(seed):
    mi = _exact_mi()
    assert mi[1] == pytest.approx(0.1109, abs=1e-4) and np.count_nonzero(mi) == 1
    result = run_audit(AuditSpec(mechanism=record_one_by_randomized_response,
                                 priors=[ProductBernoulli(np.full(RECORDS, 0.5))], claim=parse_claim("dp:0.5"),
                                 samples=SAMPLES, seed=seed))
    leaking = f"record {int(np.argmax(mi))}"
    assert not result.certified_secret.startswith(leaking)  # the MI test's choice, on 100 validation draws
    assert result.event_test.secret == leaking
    assert result.claim_verdict == "refuted" and result.refuted_by[0]["test"] == "event"
