"""Benchmark: runs to refute a deterministic difference (issue 39 item 3), with ``miaudit audit --max-runs``'s looks.

Two mechanisms whose outputs differ deterministically between neighbouring inputs (ε = ∞):

- ``unnoised zero count`` (a batched mechanism): a count released with Laplace noise, except a count of 0,
  released exactly; the pair: the one record at 0 against 1;
- ``label set`` (a per-database function, encoded outputs): a model whose ``classes_`` is the labels it was
  fitted on (diffprivlib 0.6.6's LogisticRegression, its issue #106); the pair: a record with a third label
  present against absent.

For each, the sequential audit (:func:`audit.gating.sequential.run_sequential_audit`, the nested looks of
``--max-runs``, stopping at the first refuting look) of the claims ``dp:1`` and ``dp:4`` is run on several seeds,
and the table gives the first look's size (its MI sample, and its event test's certification runs per input;
whether it is the early look of :mod:`audit.gating.early_look`), the look that refuted and the mechanism runs made
until then. Run: ``python -m experiments.deterministic_difference [--seeds N] [--max-runs N] [--claims C1,C2]``.

Measured (3 seeds, ``--max-runs 60000``, shared 2-core CPU at load average 3–4): against ``dp:1`` both are
refuted at the first of 5 looks, the early look, after 176 runs (88 per input: the MI sample's 40 draws, about
20 of each input, on which the events are chosen, and 34 certification runs of each input for each of the event
test and the float-bit test, both outputs holding float bits; 240 where the float-bit probe's 64 runs of the
unnoised zero count are counted, seeds 0 and 2), certified ε 1.26 at the early look's α_0 = 4.30e-7, 0.2–0.9 s, on
every seed. The early look is sized with the float-bit test by the early look's one-miss rule, the odds ratio counted
where each test's certificate choice on the 40 draws picks it but for a chance ≤ 1%
(:func:`audit.search.early_choice.early_look_refutes`, at 0.8 α_0 and 0.2 α_0). Its α_0 = α·t_0² with t_0 =
176 / 60,000 its fraction of the last look's runs (power α-spending over all the looks; the later looks spend
α·(t_k² − t_{k−1}²) from t_0 on, the levels summing to α = 0.05), and it is below the MI test's sample floor, so the
MI test is skipped there and the event tests alone have α_0. Against ``dp:4`` there is no early look (refuting ε = 4 needs hundreds of runs per input even
for perfectly separated inputs): both are refuted at the first ordinary look of 914 samples and 914 event runs per
input, after 4,424–4,570 runs (2,212–2,285 per input), certified ε 4.5–5.2.
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


def cases(claim: str = "dp:1"):
    """(name, spec builder of a seed) of each mechanism, audited against ``claim``."""
    zero = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    base = np.array([[0.1, 0.2, 0.0], [0.3, 0.1, 1.0], [0.5, 0.9, 0.0], [0.7, 0.4, 1.0]])
    labels = NeighbouringPair(np.vstack([base, [[0.2, 0.8, 2.0]]]), base)
    return (
        ("unnoised zero count", lambda seed: AuditSpec(mechanism=unnoised_zero_count, priors=(zero.prior(),),
                                                       claim=parse_claim(claim), records=(0,), seed=seed)),
        ("label set", lambda seed: AuditSpec(
            mechanism=PerDatabaseMechanism(label_set_model, "label set", encoder=OutputEncoder()),
            priors=(labels.prior(),), claim=parse_claim(claim, relation="add-remove"), relation="add-remove",
            records=(4,), seed=seed)),
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-runs", type=int, default=60_000)
    parser.add_argument("--claims", default="dp:1,dp:4", help="comma-separated claims (default: dp:1,dp:4)")
    args = parser.parse_args(argv)
    print("| mechanism | claim | seed | first look: samples, event runs per input (early look?) | refuting look "
          "| runs until refuted | runs per input until refuted | certified ε | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for claim in args.claims.split(","):
        for name, build in cases(claim):
            for seed in range(args.seeds):
                spec = build(seed)
                first = look_schedule(spec, args.max_runs)[0]
                started = time.perf_counter()
                audit = run_sequential_audit(spec, args.max_runs)
                seconds = time.perf_counter() - started
                refuted = audit.stopped == "refuted"
                look = audit.looks[-1]
                bound = audit.result.dp_epsilon_lower_bound_event
                print(f"| {name} | {claim} | {seed} | {first.samples}, {first.event_runs} "
                      f"({'early' if first.early else 'ordinary'}) | "
                      f"{look.look if refuted else 'none'} of {len(audit.schedule)} | {audit.runs} | "
                      f"{audit.runs / 2:.0f} | {bound:.3g} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
