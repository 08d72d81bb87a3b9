"""Benchmark: runs to refute a deterministic difference (issue 39 item 3), with ``miaudit audit --max-runs``'s looks.

Two mechanisms whose outputs differ deterministically between neighbouring inputs (ε = ∞):

- ``unnoised zero count`` (a batched mechanism): a count released with Laplace noise, except a count of 0,
  released exactly; the pair: the one record at 0 against 1;
- ``label set`` (a per-database function, encoded outputs): a model whose ``classes_`` is the labels it was
  fitted on (diffprivlib 0.6.6's LogisticRegression, its issue #106); the pair: a record with a third label
  present against absent.

For each, the sequential audit (:func:`audit.gating.sequential.run_sequential_audit`, the nested looks of
``--max-runs``, stopping at the first refuting look) of the claim ``dp:1`` is run on several seeds, and the
table gives the runs per input of the smallest look (its MI sample per prior input, and its event test's
certification runs), the look that refuted and the mechanism runs made until then, against the fixed audit
of the default budget. Run: ``python -m experiments.deterministic_difference [--seeds N] [--max-runs N]``.

Measured (2 seeds, ``--max-runs 60000``, shared 2-core CPU): both refuted at the first of 5 looks, after
1,200 runs (unnoised zero count: 600 per input) and 1,312 (label set: 656 per input), certified ε 3.7–4.1,
0.2–1.8 s. The first look is 400 samples (its MI sample, 200 per input: the held-out split's floor of
:data:`audit.engine.MIN_TEST_SAMPLES` at the default split) and 400 certification runs per input; the
event test alone would refute ``dp:1`` on a deterministic difference with a few dozen runs per input, so the
issue's target of ≤ 100 runs per input is not met: it needs a first look below the MI sample's floor (for a
claim the MI test does not test) and an event chosen on fewer held-out draws than
:data:`audit.statistics.pair_candidates.MIN_SELECTION_RUNS`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from audit.gating.sequential import look_schedule, run_sequential_audit
from audit.spec import AuditSpec
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.outputs.encoding import OutputEncoder


def unnoised_zero_count(dbs, rng):
    """Laplace(1) noise on every count but 0, which is released exactly (ε = ∞ between counts 0 and 1)."""
    counts = dbs[:, :, 0].sum(axis=1)
    return np.where(counts == 0, 0.0, counts + rng.laplace(0.0, 1.0, size=len(counts)))[:, None]


class _LabelSetModel:
    def fit(self, X, y, rng):
        self.classes_ = np.unique(y)
        rows = 1 if len(self.classes_) == 2 else len(self.classes_)
        self.coef_ = rng.laplace(0.0, 1.0, size=(rows, X.shape[1]))
        return self


def label_set_model(db, rng):
    """A fitted model whose ``classes_`` are the labels present (column 2), coefficients Laplace noise."""
    return _LabelSetModel().fit(db[:, :2], db[:, 2], rng)


def cases():
    """(name, spec builder of a seed) of each mechanism, audited against ``dp:1``."""
    zero = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    base = np.array([[0.1, 0.2, 0.0], [0.3, 0.1, 1.0], [0.5, 0.9, 0.0], [0.7, 0.4, 1.0]])
    labels = NeighbouringPair(np.vstack([base, [[0.2, 0.8, 2.0]]]), base)
    return (
        ("unnoised zero count", lambda seed: AuditSpec(mechanism=unnoised_zero_count, priors=(zero.prior(),),
                                                       claim=parse_claim("dp:1"), records=(0,), seed=seed)),
        ("label set", lambda seed: AuditSpec(
            mechanism=PerDatabaseMechanism(label_set_model, "label set", encoder=OutputEncoder()),
            priors=(labels.prior(),), claim=parse_claim("dp:1", relation="add-remove"), relation="add-remove",
            records=(4,), seed=seed)),
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-runs", type=int, default=60_000)
    args = parser.parse_args(argv)
    print("| mechanism | seed | smallest look: samples, event runs per input | refuting look | runs until refuted "
          "| runs per input until refuted | certified ε | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, build in cases():
        for seed in range(args.seeds):
            spec = build(seed)
            first = look_schedule(spec, args.max_runs)[0]
            started = time.perf_counter()
            audit = run_sequential_audit(spec, args.max_runs)
            seconds = time.perf_counter() - started
            refuted = audit.stopped == "refuted"
            look = audit.looks[-1]
            bound = audit.result.dp_epsilon_lower_bound_event
            print(f"| {name} | {seed} | {first.samples}, {first.event_runs} | "
                  f"{look.look if refuted else 'none'} of {len(audit.schedule)} | {audit.runs} | "
                  f"{audit.runs / 2:.0f} | {bound:.3g} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
