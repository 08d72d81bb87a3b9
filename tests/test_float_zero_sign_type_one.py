"""Type-I error of the float-bit event test now that it reads the sign of a zero (audit/statistics/float_bits.py):
an exactly ε-DP mechanism releasing zeros of both signs is refuted in at most an α share of seeds.

The mechanism is y = round(x ⊕ L), L ~ Laplace(1/ε), x the count of a pair of neighbouring databases (x = 0, 1).
``numpy.round`` maps v = x ⊕ L to an integer double: −0.0 for v in [−½, 0) (half to even keeps the sign, IEEE
754-2008, Section 5.9, roundTiesToEven), +0.0 for v in [0, ½], k for v around k ≠ 0. So y, as a bit pattern, is a
function of which interval holds v; over the reals each interval I has P(x + L ∈ I) within e^ε of
P(x + 1 + L ∈ I) (the Laplace mechanism, Dwork et al. 2006), and any set of doubles too (a union of intervals:
post-processing). The float sum x ⊕ L moves x + L by at most one ulp (≤ 2⁻⁵² here), which changes the interval only
when x + L lies that close to a boundary, a chance of order 2⁻⁵⁰ per run. The claim ε holds for the program, so
the verdict's type-I error is at most α (its float-bit share, 0.06 at α = 0.3, too); the refutations counted over
independent seeds are at most Binomial(seeds, α), bounded here by that law's 99.9% point.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from audit.engine import run_audit
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import TwoPoint

EPSILON = 1.0
ALPHA = 0.3


def rounded_laplace(dbs, rng):
    """round(x ⊕ Laplace(1/ε)): exactly ε-DP, −0.0 for x ⊕ L in [−½, 0), +0.0 in [0, ½] (module docstring)."""
    return np.round(dbs.sum(axis=1) + rng.laplace(0.0, 1.0 / EPSILON, (len(dbs), 1)))


def _pair() -> TwoPoint:
    first = np.zeros((3, 1))
    second = first.copy()
    second[0, 0] = 1.0
    return TwoPoint(first, second)


def _study(seeds: int) -> tuple:
    """(refuted, refuted by the float-bit test, that test's α) over ``seeds`` audits of 1,000 samples."""
    refuted = through_bits = 0
    share = None
    for seed in range(seeds):
        result = run_audit(AuditSpec(mechanism=rounded_laplace, priors=[_pair()], claim=parse_claim(f"dp:{EPSILON}"),
                                     samples=1000, seed=seed, alpha=ALPHA))
        share = result.claim_alpha["float"]  # offered: the outputs hold negative zeros (float_bits.has_fine_bits)
        refuted += result.claim_verdict == "refuted"
        through_bits += any(r["test"] == "float" for r in result.refuted_by)
    return refuted, through_bits, share


def test_both_inputs_release_zeros_of_both_signs():
    rng = np.random.default_rng(0)
    for db in (_pair().first, _pair().second):
        y = rounded_laplace(np.repeat(db[None], 4000, axis=0), rng)
        zeros = y[y == 0]
        assert np.signbit(zeros).any() and not np.signbit(zeros).all()


def _check(seeds: int):
    refuted, through_bits, share = _study(seeds)
    assert share == pytest.approx(ALPHA / 5)  # the float-bit test's share (docs/how-to/floating-point.md)
    assert refuted <= binom.ppf(0.999, seeds, ALPHA)
    assert through_bits <= binom.ppf(0.999, seeds, share)


def test_an_exactly_dp_mechanism_with_signed_zeros_is_not_refuted_beyond_alpha_fast():
    _check(20)  # about 4 s


@pytest.mark.slow
def test_an_exactly_dp_mechanism_with_signed_zeros_is_not_refuted_beyond_alpha():
    _check(200)  # 35 refuted (bound 81), 5 of them by the float-bit test (bound 24): about 35 s
