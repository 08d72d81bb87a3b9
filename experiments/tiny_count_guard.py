"""Study of the event search's tiny-count guard (issue 32 D): ``python -m experiments.tiny_count_guard``.

The event search ranks candidate events by what fresh runs are predicted to certify, from their
selection frequencies made pessimistic (:data:`audit.search.event_choice.SELECTION_PESSIMISM`). The best
of a few hundred thresholds on the same scores is optimistic, most of all for an extreme tail
with a handful of hits against a lucky zero: on the two-sided geometric mechanism at its exact
ε = 0.7 such a tail was predicted to refute the true claim, was chosen, and its fresh runs then
certified no positive ε. The guard (:class:`audit.search.event_choice._Predictor`) ranks an event
predicted to refute by its prediction at :data:`audit.search.event_choice.STRICT_SELECTION_PESSIMISM`
when, at that level, it certifies nothing at all. This study measures it, with the guard on and
off (off: the strict level set to the usual one, which makes the guard a no-op), on the same seeds:

- **geometric**: ``--audits`` event searches (:func:`audit.search.event_search.event_search`) of a
  0.7-DP claim on the count of binary records plus two-sided geometric noise of parameter
  e^−0.7 (exactly 0.7-DP: Ghosh, Roughgarden and Sundararajan 2012), the neighbouring pair
  differing in one record, the statistic the output itself, 20,000 selection runs and 20,000
  certification runs per input at α = 0.025 (the event test's share of α = 0.05 in an audit of
  a DP claim): the fraction certifying ε > 0, the median certified ε and the refutations
  (at most a fraction α of them whatever the selection does);
- **catalog** (``--catalog``): the certified event ε of buggy catalog entries whose bugs show
  on rare events (SVT variants, the buggy histogram, noisy max, the off-by-one mean), audited
  as ``dp-epsilon-benchmark`` audits them (:func:`experiments.dp_epsilon_benchmark.miaudit_audit`)
  at ``--runs`` runs, seeds 0 to ``--seeds`` − 1.

Only which event is chosen changes, on selection runs the certificate never sees, so α is the
same with the guard on and off.
"""

from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np

import audit.search.event_choice as event_choice
from audit.statistics.pair_candidates import PairCandidate
from audit.search.event_search import event_search
from mechanisms.claims.parsing import parse_claim

#: The geometric mechanism's ε (its claim is exactly true).
EPSILON = 0.7
#: Records of the counted database.
RECORDS = 10
#: Selection and certification runs per input, and the event test's level in an audit at α = 0.05.
RUNS, ALPHA = 20000, 0.025
#: Buggy catalog entries whose certified bounds rest on rare events.
RARE_EVENT_ENTRIES = ("histogram_buggy", "svt3", "svt4", "svt5", "svt6", "svt34_parallel", "noisy_max_laplace_value",
                      "mean_off_by_one_count")


def geometric_count(dbs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The sum of each database's first column plus two-sided geometric noise, P(z) ∝ e^(−0.7|z|)."""
    counts = dbs[..., 0].sum(axis=1)
    p = 1.0 - np.exp(-EPSILON)
    noise = rng.geometric(p, size=len(counts)) - rng.geometric(p, size=len(counts))
    return (counts + noise)[:, None].astype(np.float64)


class _Runner:
    """The mechanism run on whole batches (the part of :class:`MechanismRunner` the event search uses)."""

    @staticmethod
    def sample(batch, rng, what=""):
        return geometric_count(batch, rng)

    def runs_of(self, database, count, rng, *, what="", budget=None):
        batch = np.repeat(np.asarray(database, dtype=np.float64)[None], count, axis=0)
        return batch, self.sample(batch, rng, what)


def _signed_output(a, b, dbs, outputs):
    """The output, larger where the record looks like ``a`` (the count grows with the record)."""
    return outputs[:, 0] * (1.0 if a[0] > b[0] else -1.0)


def geometric_pair() -> PairCandidate:
    """Two databases of :data:`RECORDS` binary records differing in record 0 (four other ones set)."""
    first = np.zeros((RECORDS, 1))
    first[1:5, 0] = 1.0
    second = first.copy()
    second[0, 0] = 1.0
    return PairCandidate(first, second, 0, _signed_output)


def geometric_epsilons(seeds) -> np.ndarray:
    """The certified ε of one event search per seed (module docstring)."""
    claim = parse_claim(f"dp:{EPSILON}")
    return np.array([event_search([geometric_pair()], runner=_Runner(), rng=np.random.default_rng(seed), runs=RUNS,
                                  alpha=ALPHA, claim=claim).epsilon_lower_bound for seed in seeds])


@contextlib.contextmanager
def guard(on: bool):
    """The tiny-count guard on (as shipped) or off (its strict level set to the usual one: a no-op)."""
    kept = event_choice.STRICT_SELECTION_PESSIMISM
    if not on:
        event_choice.STRICT_SELECTION_PESSIMISM = event_choice.SELECTION_PESSIMISM
    try:
        yield
    finally:
        event_choice.STRICT_SELECTION_PESSIMISM = kept


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=1000, help="event searches of the geometric mechanism")
    parser.add_argument("--catalog", action="store_true", help="also the buggy catalog entries")
    parser.add_argument("--runs", type=int, default=7000, help="runs per catalog audit")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per catalog entry")
    args = parser.parse_args(argv)
    for on in (False, True):
        started = time.perf_counter()
        with guard(on):
            eps = geometric_epsilons(range(args.audits))
        print(f"geometric, guard {'on ' if on else 'off'}: {args.audits} audits, certified ε > 0 in "
              f"{int((eps > 0).sum())}, median ε {np.median(eps):.4f}, refuted {int((eps > EPSILON).sum())} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    if not args.catalog:
        return
    from estimators.neural import CriticConfig
    from mechanisms.catalog import get_entry

    from .dp_epsilon_benchmark import miaudit_audit

    for name in RARE_EVENT_ENTRIES:
        rows = {}
        for on in (False, True):
            with guard(on):
                rows[on] = [round(miaudit_audit(get_entry(name), args.runs, seed, CriticConfig(max_steps=200),
                                                "cpu")["epsilon"], 3) for seed in range(args.seeds)]
        print(f"{name} at {args.runs} runs, seeds 0-{args.seeds - 1}: guard off {rows[False]}, on {rows[True]}",
              flush=True)


if __name__ == "__main__":
    main()
