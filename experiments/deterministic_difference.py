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
whether it is the early look of :mod:`audit.gating.early_look`), the look that refuted, the mechanism runs made
until then, and the ε certified by the test that refuted (the largest where several did: the event test's, or the
float-bit event test's, which reads the float bits of the outputs), with that test's name. Under the table one line a
claim and mechanism says the same across the seeds (:func:`summary`): how many seeds refuted, at which look, the
ranges of the runs and of the certified ε, and for an early look its level α_0 = α·t_0² and its fraction t_0 of the
last look's runs (power α-spending over all the looks; the later looks spend α·(t_k² − t_{k−1}²), the levels summing
to α). Every number the module says comes from that run; none is written here.

The early look is planned only for a claim that few runs can refute (a small ε): its event tests alone test the
claim, below the MI test's sample floor, sized by the one-miss rule with the float-bit test on runs of its own
(:func:`audit.search.early_choice.early_look_refutes`, at 0.8 α_0 and 0.2 α_0). Refuting ε = 4 needs hundreds of
runs per input even for perfectly separated inputs, so ``dp:4`` is refuted, if at all, at an ordinary look. The
float-bit test's probe runs of the unnoised zero count (its outputs hold float bits) count towards its runs on the
seeds where they are made. Run: ``python -m experiments.deterministic_difference [--seeds N] [--max-runs N]
[--claims C1,C2]`` (3 seeds of both claims: about ten seconds on one core).
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


TEST_NAMES = {"event": "event test", "float": "float-bit event test", "mi": "MI test", "gdp": "μ-GDP test"}


def refuting_bound(result) -> tuple:
    """(ε, test name) of the largest ε certified by a test that refuted the claim (``(None, "")`` where none did):
    the event test's or the float-bit event test's event bound (the MI test certifies no ε of its own here)."""
    tests = {"event": result.event_test, "float": result.float_event_test}
    bounds = [(tests[r["test"]].epsilon_lower_bound, TEST_NAMES[r["test"]]) for r in result.refuted_by
              if tests.get(r["test"]) is not None]
    return max(bounds) if bounds else (None, "")


def _span(values, form: str = "{:,}") -> str:
    """``low–high`` of ``values`` written with ``form``, or the one value where all are equal."""
    low, high = form.format(min(values)), form.format(max(values))
    return low if low == high else f"{low}–{high}"


def summary(rows: list, max_runs: int) -> list:
    """One line a (claim, mechanism) of ``rows`` (the dicts :func:`audit_row` returns): the seeds refuted and at which
    look, the first look's size, the ranges of the runs until refuted (per input), of the certified ε and of the
    seconds, and for an early look its level α_0 and its fraction t_0 of the last look's planned runs."""
    lines = []
    for key in dict.fromkeys((row["claim"], row["mechanism"]) for row in rows):
        group = [row for row in rows if (row["claim"], row["mechanism"]) == key]
        refuted = [row for row in group if row["look"] is not None]
        first = group[0]
        size = (f"first look {first['samples']:,} MI samples and {first['event_runs']:,} event runs per input"
                + (f", the early look at α_0 = {first['alpha_0']:.3g} (t_0 = {first['planned_runs']:,} / "
                   f"{first['last_runs']:,} of the last look's runs)" if first["early"] else ", an ordinary look"))
        line = f"{key[0]}, {key[1]}: refuted on {len(refuted)} of {len(group)} seeds"
        if refuted:
            tests = sorted({row["test"] for row in refuted})
            line += (f" at look {_span([row['look'] for row in refuted])} of {_span([row['looks'] for row in group])}; "
                     f"{size}; after {_span([row['runs'] for row in refuted])} runs "
                     f"({_span([row['runs'] / 2 for row in refuted], '{:,.0f}')} per input), certified ε "
                     f"{_span([row['epsilon'] for row in refuted], '{:.3g}')} ({' or '.join(tests)})")
        else:
            line += f" within {max_runs:,} runs; {size}"
        lines.append(line + f"; {_span([row['seconds'] for row in group], '{:.1f}')} s.")
    return lines


def audit_row(name: str, claim: str, seed: int, spec, max_runs: int) -> dict:
    """The sequential audit of ``spec`` within ``max_runs`` runs, as one row of the table: its schedule's first look,
    the look that refuted (``None`` where none did), its runs and the refuting test's certified ε."""
    schedule = look_schedule(spec, max_runs)
    started = time.perf_counter()
    audit = run_sequential_audit(spec, max_runs)
    seconds = time.perf_counter() - started
    refuted = audit.stopped == "refuted"
    epsilon, test = refuting_bound(audit.result) if refuted else (None, "")
    first = schedule[0]
    return {"mechanism": name, "claim": claim, "seed": seed, "samples": first.samples, "event_runs": first.event_runs,
            "early": first.early, "alpha_0": first.alpha, "planned_runs": first.planned_runs,
            "last_runs": schedule[-1].planned_runs, "look": audit.looks[-1].look if refuted else None,
            "looks": len(audit.schedule), "runs": audit.runs, "epsilon": epsilon, "test": test, "seconds": seconds}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-runs", type=int, default=60_000)
    parser.add_argument("--claims", default="dp:1,dp:4", help="comma-separated claims (default: dp:1,dp:4)")
    args = parser.parse_args(argv)
    print("| mechanism | claim | seed | first look: samples, event runs per input (early look?) | refuting look "
          "| runs until refuted | runs per input until refuted | certified ε (refuting test) | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for claim in args.claims.split(","):
        for name, build in cases(claim):
            for seed in range(args.seeds):
                row = audit_row(name, claim, seed, build(seed), args.max_runs)
                rows.append(row)
                bound = "none" if row["epsilon"] is None else f"{row['epsilon']:.3g} ({row['test']})"
                print(f"| {name} | {claim} | {seed} | {row['samples']}, {row['event_runs']} "
                      f"({'early' if row['early'] else 'ordinary'}) | "
                      f"{'none' if row['look'] is None else row['look']} of {row['looks']} | {row['runs']} | "
                      f"{row['runs'] / 2:.0f} | {bound} | {row['seconds']:.1f} |")
    print()
    print("\n".join(summary(rows, args.max_runs)))


if __name__ == "__main__":
    main()
