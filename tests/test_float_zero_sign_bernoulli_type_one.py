"""Type-I error of the float-bit event test where its pilot chooses the record (``leaking_record`` in
audit/statistics/float_bits.py, called by audit/search/event_candidates.py): an exactly ε-DP mechanism releasing
zeros of both signs, audited under a product Bernoulli prior, is refuted in at most an α share of seeds.

The mechanism is y = round(s ⊕ L), L ~ Laplace(1/ε), s the sum of n = 3 records in {0, 1} (each Bernoulli(½)), so
that neighbouring databases (one record replaced) have sums s and s ± 1. ``numpy.round`` maps v = s ⊕ L to an
integer double: −0.0 for v in [−½, 0) (half to even keeps the sign, IEEE 754-2008, Section 5.9, roundTiesToEven),
+0.0 for v in [0, ½], k for v around k ≠ 0. So y, as a bit pattern, is a function of which interval holds v; over
the reals each interval I has P(s + L ∈ I) within e^ε of P(s ± 1 + L ∈ I) (the Laplace mechanism, Dwork et al.
2006), and any set of doubles too (a union of intervals: post-processing). The float sum s ⊕ L moves s + L by at
most one ulp (≤ 2⁻⁵¹ here), which changes the interval only when s + L lies that close to a boundary, a chance of
order 2⁻⁵⁰ per run. The claim ε holds for the program whichever record and pair the audit's tests choose, so the
verdict's type-I error is at most α (its float-bit share too); the refutations counted over independent seeds are
at most Binomial(seeds, α), bounded here by that law's 99.9% point (computed with scipy.stats.binom.ppf).

tests/test_float_zero_sign_type_one.py is the same study with a two-point prior, where the pair is given and no
record is chosen.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from audit.engine import run_audit
from audit.search import event_candidates
from audit.spec import AuditSpec
from audit.statistics.float_bits import leaking_record
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import ProductBernoulli

EPSILON = 1.0
ALPHA = 0.3
RECORDS = 3
SAMPLES = 1000


def rounded_laplace_sum(dbs, rng):
    """round(s ⊕ Laplace(1/ε)), s each database's sum: exactly ε-DP, −0.0 for s ⊕ L in [−½, 0) (module docstring)."""
    return np.round(dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0 / EPSILON, (len(dbs), 1)))


def _prior() -> ProductBernoulli:
    return ProductBernoulli(np.full(RECORDS, 0.5))


def _study(seeds: int, monkeypatch) -> tuple:
    """(refuted, refuted by the float-bit test, the tests' shares of α, the records the float-bit test audited, the
    audits whose float-bit pilot left the MI test's record for another) over ``seeds`` audits of :data:`SAMPLES`
    samples."""
    refuted = through_bits = 0
    shares, records, moved = {}, set(), []

    def counted(databases, outputs, candidates, chosen):
        record = leaking_record(databases, outputs, candidates, chosen)
        moved.append(record != chosen)
        return record

    monkeypatch.setattr(event_candidates, "leaking_record", counted)
    for seed in range(seeds):
        result = run_audit(AuditSpec(mechanism=rounded_laplace_sum, priors=[_prior()],
                                     claim=parse_claim(f"dp:{EPSILON}"), samples=SAMPLES, seed=seed, alpha=ALPHA))
        shares = result.claim_alpha  # the float-bit test's offered: the outputs hold negative zeros (has_fine_bits)
        refuted += result.claim_verdict == "refuted"
        through_bits += any(r["test"] == "float" for r in result.refuted_by)
        if result.float_event_test is not None:
            records.add(result.float_event_test.secret)
    return refuted, through_bits, shares, records, sum(moved)


def test_the_prior_draws_databases_whose_outputs_hold_zeros_of_both_signs():
    rng = np.random.default_rng(0)
    y = rounded_laplace_sum(_prior()(20000, rng), rng)
    zeros = y[y == 0]
    assert np.signbit(zeros).any() and not np.signbit(zeros).all()


def _check(seeds: int, monkeypatch) -> tuple:
    refuted, through_bits, shares, records, moved = _study(seeds, monkeypatch)
    assert sum(shares.values()) == pytest.approx(ALPHA) and shares["float"] > 0  # the tests split α (Bonferroni)
    share = shares["float"]
    assert records and records <= {f"record {r}" for r in range(RECORDS)}  # the float-bit test ran on a record
    assert refuted <= binom.ppf(0.999, seeds, ALPHA), refuted
    assert through_bits <= binom.ppf(0.999, seeds, share), through_bits
    return refuted, through_bits, moved


@pytest.mark.train  # its audits' MI tests train critics
def test_an_exactly_dp_mechanism_with_signed_zeros_under_a_bernoulli_prior_is_not_refuted_beyond_alpha_fast(
        monkeypatch):
    _check(10, monkeypatch)  # about 6 s


@pytest.mark.slow
@pytest.mark.train
def test_an_exactly_dp_mechanism_with_signed_zeros_under_a_bernoulli_prior_is_not_refuted_beyond_alpha(monkeypatch):
    refuted, through_bits, moved = _check(100, monkeypatch)
    print(f"refuted {refuted} of 100 (bound {binom.ppf(0.999, 100, ALPHA):g}), {through_bits} by the float-bit test; "
          f"the pilot's record moved in {moved}")
