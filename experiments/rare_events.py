"""Runs to refute a claim broken by a rare release, with and without the counting statistic (issue 39 §4):
``python -m experiments.rare_events``.

Two mechanisms, each audited on its neighbouring pair over ``--seeds`` seeds at several budgets
(``--samples``; the event test's certification runs per input equal them), once as miaudit audits it and
once without the counting statistic (:mod:`audit.statistics.counting`), on the same seeds. Only the candidate
statistics differ, and the choice among them is made on draws the certificate never sees, so α is the same
in both.

- ``threshold``: a seeded NumPy stand-in for OpenDP 0.16's ``make_count_by >> then_laplace_threshold(scale=1,
  threshold=8)`` (OpenDP's noise takes no seed) on 20 records of one key and, in the first database only, one
  record of a second key. Each key's count plus discrete Laplace noise of scale 1 (a difference of two
  geometric variables) is released when at least 8; the output row is (key 0's released count, key 0
  released, key 1's released count, key 1 released), the value and support blocks of the encoder
  (:mod:`mechanisms.outputs.encoding`) with one bucket per key. Key 1 is released with probability
  P(1 + Z ≥ 8) = e⁻⁷/(1 + e⁻¹) = 6.67e-4 with its record and never without it, so δ(1) ≥ 6.67e-4 against
  the claimed (1, 2.5e-4).
- ``sentinel``: N(0, 1), except that with the record at 1 the output is 1/π with probability 2e-3 (a middle
  point of the bulk: no tail event and no float-bit statistic holds it); δ(ε) = 2e-3 exactly
  (``tests/test_counting_statistic.py``), claimed (1, 5e-4).

Beside the audits, :func:`binomial_runs` is the fewest runs per input at which the expected count
n·p, against 0, refutes the claim by Clopper–Pearson bounds at α/2 per side of the event test's α = 0.04
(Clopper and Pearson 1934): what the counts alone allow.

Measured on a 2-core x86_64 CPU shared with other sessions (load average 12-19), ``--seeds 10`` (about 11
minutes there), refuted audits of 10 with / without the counting statistic (:data:`MEASURED`):

- ``threshold`` (the counts alone refute from 52,000 runs per input): 0/0 at 20,000 samples, 3/3 at 40,000,
  4/5 at 60,000, 7/8 at 80,000, 10/10 at 120,000. The other statistics already choose the released key (the
  support statistic keeps to the key columns, the logistic regressions see the key's presence), so the counting
  statistic changes nothing here: both follow the certification counts.
- ``sentinel`` (the counts alone refute from 14,000): 4/0 at 10,000, 10/0 at 20,000, 40,000, 80,000 and 160,000.
  Without it no statistic holds the sentinel (it is in the middle of the Gaussian's bulk) and nothing is refuted
  at any budget.
"""

from __future__ import annotations

import argparse
import contextlib
import math

import numpy as np
from scipy.stats import beta

import audit.search.event_candidates as event_candidates
import audit.statistics.classifier_critic as classifier_critic
from experiments._ablation import refuted_counts_by_variant
from mechanisms.claims.notions import DifferentialPrivacy
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

#: The discrete Laplace law of scale 1 as a difference of two geometric variables of this success probability.
GEOMETRIC_P = 1 - math.exp(-1.0)

#: Per case: (the rare release's probability, the claim's ε and δ, the budgets audited by default).
CASES = {"threshold": (math.exp(-7) / (1 + math.exp(-1)), 1.0, 2.5e-4, (20_000, 40_000, 60_000, 80_000, 120_000)),
         "sentinel": (2e-3, 1.0, 5e-4, (10_000, 20_000, 40_000, 80_000, 160_000))}

#: The event test's share of an audit's α = 0.05 (:class:`audit.certificates.claim_tests.ClaimPlan`).
EVENT_ALPHA = 0.04

#: What one run of ``--seeds 10`` measured (module docstring): case -> budget -> (refuted audits of 10 with the
#: counting statistic, without it).
MEASURED = {"threshold": {20_000: (0, 0), 40_000: (3, 3), 60_000: (4, 5), 80_000: (7, 8), 120_000: (10, 10)},
            "sentinel": {10_000: (4, 0), 20_000: (10, 0), 40_000: (10, 0), 80_000: (10, 0), 160_000: (10, 0)}}

SENTINEL = 1 / math.pi


def threshold_release(dbs, rng):
    """The threshold stand-in: record 0 at 1 is the one user of key 1 (module docstring)."""
    m = dbs.shape[0]
    key0 = 20 + rng.geometric(GEOMETRIC_P, m) - rng.geometric(GEOMETRIC_P, m)
    key1 = 1 + rng.geometric(GEOMETRIC_P, m) - rng.geometric(GEOMETRIC_P, m)
    released0, released1 = key0 >= 8, (key1 >= 8) & (dbs[:, 0, 0] == 1.0)
    return np.column_stack([np.where(released0, key0, 0), released0, np.where(released1, key1, 0),
                            released1]).astype(np.float64)


def sentinel_release(dbs, rng, p: float = 2e-3):
    """N(0, 1), or 1/π with probability ``p`` when record 0 is 1."""
    m = dbs.shape[0]
    noise = rng.normal(0.0, 1.0, m)
    return np.where((rng.random(m) < p) & (dbs[:, 0, 0] == 1.0), SENTINEL, noise)[:, None]


MECHANISMS = {"threshold": threshold_release, "sentinel": sentinel_release}


@contextlib.contextmanager
def without_counting():
    """The event search without the counting statistic (its candidates as before it)."""
    saved = event_candidates.COUNTING_STATISTICS, classifier_critic.COUNTING_STATISTICS
    event_candidates.COUNTING_STATISTICS = classifier_critic.COUNTING_STATISTICS = ()
    try:
        yield
    finally:
        event_candidates.COUNTING_STATISTICS, classifier_critic.COUNTING_STATISTICS = saved


def binomial_runs(p: float, epsilon: float, delta: float, step: int = 1000, most: int = 10**7) -> int | None:
    """The fewest runs per input (a multiple of ``step``, at most ``most``) at which round(n·p) hits against 0 refute
    (ε, δ) by Clopper–Pearson bounds at :data:`EVENT_ALPHA`/2 per side (p̲ − e^ε p̄ > δ; Clopper and Pearson 1934);
    None if none does."""
    for runs in range(step, most + 1, step):
        hits = round(runs * p)
        lower = beta.ppf(EVENT_ALPHA / 2, hits, runs - hits + 1) if hits else 0.0
        upper = 1 - (EVENT_ALPHA / 2) ** (1 / runs)
        if lower - math.exp(epsilon) * upper > delta:
            return runs
    return None


def refuted_counts(case: str, samples: int, seeds: int) -> dict:
    """{"counting": refuted audits, "without": refuted audits} of ``case`` over ``seeds`` seeds."""
    _, epsilon, delta, _ = CASES[case]
    pair = NeighbouringPair(np.array([[1.0]]), np.array([[0.0]]))
    claim = DifferentialPrivacy(epsilon, delta)
    return refuted_counts_by_variant(MECHANISMS[case], pair, claim, samples, seeds,
                                     (("counting", contextlib.nullcontext), ("without", without_counting)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="default: both")
    parser.add_argument("--samples", default=None, help="budgets, comma-separated (default: each case's)")
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args(argv)
    for case in args.case or CASES:
        p, epsilon, delta, budgets = CASES[case]
        if args.samples is not None:
            budgets = tuple(int(s) for s in args.samples.split(","))
        print(f"{case}: p = {p:.3g} vs 0, claimed ({epsilon:g}, {delta:g}); the expected count refutes from "
              f"{binomial_runs(p, epsilon, delta)} runs per input (binomial)", flush=True)
        for samples in budgets:
            counts = refuted_counts(case, samples, args.seeds)
            print(f"  {samples} samples: refuted with the counting statistic {counts['counting']}/{args.seeds}, "
                  f"without {counts['without']}/{args.seeds}", flush=True)


if __name__ == "__main__":
    main()
