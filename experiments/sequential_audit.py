"""Study ``sequential-audit``: sequential audits and budget plans over ``dp-epsilon-benchmark``'s entries (issue 30).

For every catalog entry that claims ε-DP or ε-LDP, audited as ``dp-epsilon-benchmark`` audits it
(:func:`experiments.audit_power.catalog_spec`: classifier critics under the entry's exposing
two-point prior, the event test deciding the claim), on the same audit seeds for every audit kind:

- **sequential**: :func:`audit.gating.sequential.run_sequential_audit` with ``max_runs`` = 60,000: nested
  looks at the first 400, 800, … samples of one stream of runs up to 20% of the budget, then the
  last look at all 20,000 samples (60,000 runs); power α-spending α·t² (Kim and DeMets 1987);
- **fixed**: the fixed audit of the sequential audit's last look's size (the most samples whose runs fit in
  60,000 with the float-bit probe's: about 20,000 where a sample costs 3 runs, about 12,000 where the outputs
  hold float bits and the float-bit event test's runs make it 5) at α, **on the same runs** as that last look
  (:func:`audit.gating.sequential.run_audit_on_look_runs`: the same seed and the same chunk boundaries).
  The comparison is paired: the two audits differ only in the level (α_K against α) and in the
  looks before, which isolates what looking early costs;
- **control**: the same fixed audit (:func:`audit.engine.run_audit`) on other seeds. Two fixed audits
  on different runs differ by chance, on some entries by much (an event that certifies nothing on
  some seeds): the noise floor that an unpaired comparison would have to be read against.

Targets (issue 30 §1): the median over the buggy entries of the runs a sequential audit used to
refute (each entry's median over seeds; an unrefuted audit counts its runs) at least 5× fewer than
the fixed budget; each correct entry's certified ε bound at the maximum budget (the last look's)
within 5% of the fixed audit's on the same runs, both the median over the seeds (reported beside
the control-vs-fixed ratio, the noise floor of an unpaired comparison); the type-I error at the boundary at most α over ``boundary_audits`` sequential audits of
``randomized_response`` (exactly 1-LDP, its claim).

**Plans** (issue 30 §3): for each buggy entry, :func:`audit.gating.budget_forecast.plan_budget`'s predicted
runs to refute at the pilot's observed effect (the fewest over its tests, :attr:`BudgetPlan.runs_at_pilot`: an
audit refutes when its event test or its float-bit event test does), against the runs a fixed audit needed:
the smallest budget of a grid (×√2 steps from 1,200 runs) at which at least half of the seeds refute, each
audit of a budget R having the samples whose runs make R (R over the runs per sample, 5 where the outputs
hold float bits, else 3; at least the 400 samples of the smallest audit, whose runs are then the need). Target:
within a factor of 2, or both none within the grid (the plan predicts no refutation, or more runs
than the grid's largest budget, and no budget of the grid refutes).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from audit.gating.budget_forecast import plan_budget
from audit.engine import audit_runner, run_audit
from audit.gating.look_runs import plans_float_runs, runs_per_sample
from audit.gating.sequential import run_audit_on_look_runs, run_sequential_audit
from estimators.neural import CriticConfig
from mechanisms.catalog import get_entry

from .audit_power import ALPHA, catalog_spec
from .dp_epsilon_benchmark import dp_entries
from .framework import Experiment, ExperimentOutput, Table, new_figure

SPEEDUP_TARGET = 5.0
BOUND_TOLERANCE = 0.05
PLAN_FACTOR = 2.0
#: The fewest samples of a fixed audit the plan check runs (the smallest audit of a catalog entry that can refute:
#: :func:`audit.gating.sequential.smallest_round_samples`).
SMALLEST_SAMPLES = 400


@dataclass(frozen=True)
class Grid:
    """What a run audits."""

    entries: tuple | None      # None: every DP/LDP entry
    seeds: int
    samples: int               # the fixed audit's samples (its runs: about 3 × samples)
    max_runs: int              # the sequential audit's budget
    plan_grid: tuple           # fixed budgets (runs) the plan's prediction is checked against
    boundary_audits: int
    boundary_runs: int

    def to_dict(self) -> dict:
        return {"entries": "every DP/LDP catalog entry" if self.entries is None else list(self.entries),
                "seeds": self.seeds, "fixed audit samples": f"the sequential audit's last look's (at most {self.samples})",
                "sequential max_runs": self.max_runs,
                "plan check budgets (runs)": f"{self.plan_grid[0]}..{self.plan_grid[-1]} (x sqrt 2)",
                "boundary audits": self.boundary_audits, "boundary max_runs": self.boundary_runs, "alpha": ALPHA}


def _budgets(first: int, last: int) -> tuple:
    out, value = [], float(first)
    while value <= last * 1.0001:
        out.append(int(round(value)))
        value *= math.sqrt(2)
    return tuple(out)


def quick_grid() -> Grid:
    return Grid(("laplace_sum", "histogram", "histogram_buggy", "noisy_max_laplace_value"), 1, 4000, 12000,
                _budgets(1200, 19200), 20, 6000)


def full_grid() -> Grid:
    return Grid(None, 7, 20000, 60000, _budgets(1200, 240000), 500, 6000)


def _progress(line: str) -> None:
    print(f"sequential-audit: {line}", file=sys.stderr, flush=True)


def _seed(seed: int, index: int, repeat: int) -> int:
    return int(np.random.default_rng([seed, index, repeat, 30]).integers(2**31))


def _bound(result, entry) -> float:
    event = result.event_test
    if event is None:
        return 0.0
    return float(event.epsilon_lower_bound_at_delta if entry.claimed.delta > 0 else event.epsilon_lower_bound)


def _spec(entry, samples: int, seed: int, device):
    return catalog_spec(entry, samples, seed, CriticConfig(), 0, device)


def run_pairs(grid: Grid, device, seed: int) -> dict:
    """One row per (entry, seed): the fixed and the sequential audit."""
    names = dp_entries() if grid.entries is None else list(grid.entries)
    rows = {k: [] for k in ("mechanism", "buggy", "seed", "fixed_refuted", "fixed_runs", "fixed_epsilon",
                            "fixed_seconds", "control_epsilon", "sequential_refuted", "sequential_runs", "sequential_looks",
                            "sequential_epsilon", "sequential_seconds", "sequential_stopped", "sequential_last_runs",
                            "sequential_last_reused", "sequential_last_alpha")}
    for index, name in enumerate(names):
        entry = get_entry(name)
        for repeat in range(grid.seeds):
            audit_seed = _seed(seed, index, repeat)
            spec = _spec(entry, grid.samples, audit_seed, device)
            started = time.perf_counter()
            sequential = run_sequential_audit(spec, grid.max_runs)
            sequential_seconds = time.perf_counter() - started
            started = time.perf_counter()
            fixed = run_audit_on_look_runs(spec, grid.max_runs)  # the sequential audit's last look's runs, at α
            fixed_seconds = time.perf_counter() - started
            # The noise floor: the same fixed audit on other seeds, as far from the first as chance puts it.
            last = sequential.schedule[-1]
            control = run_audit(replace(spec, samples=last.samples, event_runs=last.event_runs,
                                        seed=_seed(seed, 1000 + index, repeat)))
            _progress(f"{name} seed {repeat}: fixed {fixed.claim_verdict} ({fixed.samples} runs, ε ≥ "
                      f"{_bound(fixed, entry):.3f}); sequential {sequential.stopped} after {sequential.runs} runs in "
                      f"{len(sequential.looks)} looks (ε ≥ {_bound(sequential.result, entry):.3f})")
            for key, value in (("mechanism", name), ("buggy", entry.buggy), ("seed", audit_seed),
                               ("fixed_refuted", fixed.refuted), ("fixed_runs", fixed.samples),
                               ("fixed_epsilon", _bound(fixed, entry)), ("fixed_seconds", fixed_seconds),
                               ("control_epsilon", _bound(control, entry)),
                               ("sequential_refuted", sequential.refuted), ("sequential_runs", sequential.runs),
                               ("sequential_looks", len(sequential.looks)),
                               ("sequential_epsilon", _bound(sequential.result, entry)),
                               ("sequential_seconds", sequential_seconds),
                               ("sequential_stopped", sequential.stopped),
                               ("sequential_last_runs", sequential.looks[-1].runs),
                               ("sequential_last_reused", sequential.looks[-1].reused_runs),
                               ("sequential_last_alpha", sequential.looks[-1].alpha)):
                rows[key].append(value)
    return rows


def summarize(rows: dict) -> dict:
    """Per entry: the runs' and the bounds' medians over the seeds, and the refutations counted.

    ``bound_ratio`` is the sequential audits' median bound over the fixed audits' (the same runs);
    ``control_ratio`` is the control audits' (fixed audits on other seeds) over the fixed audits':
    the noise floor of an unpaired comparison, what it shows when both sides are the same audit. Medians, because
    an audit's bound is bimodal on some entries (its event certifies nothing on some seeds)."""
    mech = np.asarray(rows["mechanism"])
    out = {k: [] for k in ("mechanism", "buggy", "fixed_refuted", "sequential_refuted", "fixed_runs",
                           "sequential_runs", "fixed_epsilon", "sequential_epsilon", "control_epsilon", "bound_ratio",
                           "control_ratio")}
    for name in dict.fromkeys(rows["mechanism"]):
        i = np.flatnonzero(mech == name)

        def med(key):
            return float(np.median(np.asarray(rows[key], dtype=float)[i]))

        fixed, seq, control = med("fixed_epsilon"), med("sequential_epsilon"), med("control_epsilon")
        out["mechanism"].append(name)
        out["buggy"].append(bool(rows["buggy"][i[0]]))
        out["fixed_refuted"].append(int(np.sum(np.asarray(rows["fixed_refuted"])[i])))
        out["sequential_refuted"].append(int(np.sum(np.asarray(rows["sequential_refuted"])[i])))
        out["fixed_runs"].append(med("fixed_runs"))
        out["sequential_runs"].append(med("sequential_runs"))
        out["fixed_epsilon"].append(fixed)
        out["sequential_epsilon"].append(seq)
        out["control_epsilon"].append(control)
        out["bound_ratio"].append(seq / fixed if fixed > 0 else float("nan"))
        out["control_ratio"].append(control / fixed if fixed > 0 else float("nan"))
    return out


def run_plans(grid: Grid, names: list, device, seed: int) -> dict:
    """For each entry: the plan's predicted runs at the pilot's effect and the runs fixed audits needed."""
    out = {k: [] for k in ("mechanism", "predicted_runs", "needed_runs", "ratio", "agrees", "pilot_runs")}
    for index, name in enumerate(names):
        entry = get_entry(name)
        spec = _spec(entry, grid.samples, _seed(seed, 500 + index, 0), device)
        plan = plan_budget(spec, budget_runs=grid.max_runs)
        predicted = plan.runs_at_pilot  # the fewest runs over its tests: an audit refutes when any test does
        cost = _runs_per_sample(spec)
        needed, tried = None, set()
        for runs in grid.plan_grid:
            samples = max(SMALLEST_SAMPLES, int(runs / cost))
            if samples in tried:  # a budget below the smallest audit's runs: that audit, already run
                continue
            tried.add(samples)
            refuted = sum(run_audit(_spec(entry, samples, _seed(seed, 700 + index, r), device)).refuted
                          for r in range(grid.seeds))
            if 2 * refuted >= grid.seeds:
                needed = max(runs, math.ceil(samples * cost))
                break
        ratio = float("nan") if predicted is None or needed is None else predicted / needed
        _progress(f"plan {name}: predicted {predicted} runs at the pilot's effect, needed {needed}")
        for key, value in (("mechanism", name), ("predicted_runs", predicted), ("needed_runs", needed),
                           ("ratio", ratio), ("agrees", plan_agrees(predicted, needed, grid.plan_grid[-1])),
                           ("pilot_runs", plan.pilot_runs)):
            out[key].append(value)
    return out


def _runs_per_sample(spec) -> float:
    """The runs per sample of ``spec``'s audits, as its plan counts them: the float-bit event test's runs where
    the outputs of a probe show float bits (:func:`audit.gating.look_runs.plans_float_runs`)."""
    with audit_runner(spec) as runner:
        return runs_per_sample(spec, plans_float_runs(spec, runner))


def plan_agrees(predicted, needed, largest: int) -> bool:
    """Whether a plan's prediction agrees with the runs fixed audits needed: within a factor of
    :data:`PLAN_FACTOR`, or both say no refutation within the grid's ``largest`` budget (the plan
    predicts none, or more than that; no budget of the grid refuted)."""
    if needed is None:
        return predicted is None or predicted > largest
    return predicted is not None and 1 / PLAN_FACTOR <= predicted / needed <= PLAN_FACTOR


def run_boundary(grid: Grid, seed: int) -> dict:
    """Sequential audits of randomized_response (exactly 1-LDP) at its claim: how many refute."""
    entry = get_entry("randomized_response")
    refuted = sum(run_sequential_audit(_spec(entry, 2000, _seed(seed, 900, r), "cpu"), grid.boundary_runs).refuted
                  for r in range(grid.boundary_audits))
    # The largest count consistent with a type-I error ≤ α (one-sided binomial test at 0.001).
    limit = int(stats.binom.ppf(0.999, grid.boundary_audits, ALPHA))
    return {"audits": [grid.boundary_audits], "refuted": [refuted], "rate": [refuted / grid.boundary_audits],
            "alpha": [ALPHA], "consistent_limit": [limit]}


def targets(grid: Grid, summary: dict, plans: dict, boundary: dict) -> dict:
    buggy = [i for i, b in enumerate(summary["buggy"]) if b]
    correct = [i for i, b in enumerate(summary["buggy"]) if not b]
    median_runs = float(np.median([summary["sequential_runs"][i] for i in buggy])) if buggy else float("nan")
    fixed_runs = float(np.median(summary["fixed_runs"]))
    speedup = fixed_runs / median_runs
    ratios = [summary["bound_ratio"][i] for i in correct if math.isfinite(summary["bound_ratio"][i])]
    controls = [summary["control_ratio"][i] for i in correct if math.isfinite(summary["control_ratio"][i])]
    within = sum(abs(r - 1) <= BOUND_TOLERANCE for r in ratios)
    control_within = sum(abs(r - 1) <= BOUND_TOLERANCE for r in controls)
    plan_within = sum(plans["agrees"])
    rate = boundary["rate"][0]

    def spread(values):
        return (f"median {np.median(values):.3f}, range {min(values):.3f}-{max(values):.3f}" if values
                else "no entries")

    return {
        "target": ["median runs to refute the buggy entries, fixed budget / sequential",
                   "correct entries' certified bound at the maximum budget within 5% of the fixed audit's on the "
                   "same runs (median over seeds, sequential / fixed)",
                   "the noise floor of an unpaired comparison: a fixed audit on other seeds against the fixed audit "
                   "(median over seeds)",
                   "type-I error at the boundary (randomized_response at its claim)",
                   "plan's predicted runs (pilot's effect) within 2x of the runs fixed audits needed, or both none "
                   "within the grid"],
        "measured": [f"{fixed_runs:.0f} / {median_runs:.0f} = {speedup:.1f}x",
                     f"{within} of {len(ratios)} entries ({spread(ratios)})",
                     f"{control_within} of {len(controls)} entries within 5% ({spread(controls)})",
                     f"{boundary['refuted'][0]} of {boundary['audits'][0]} audits ({rate:.3f})",
                     f"{plan_within} of {len(plans['agrees'])} buggy entries"],
        "threshold": [f">= {SPEEDUP_TARGET:g}x", f"all {len(ratios)}", "(reference, no target)",
                      f"<= alpha = {ALPHA} (count <= {boundary['consistent_limit'][0]})", f"all {len(plans['agrees'])}"],
        "result": ["PASS" if speedup >= SPEEDUP_TARGET else "FAIL",
                   "PASS" if within == len(ratios) else "FAIL",
                   "-",
                   "PASS" if boundary["refuted"][0] <= boundary["consistent_limit"][0] else "FAIL",
                   "PASS" if plan_within == len(plans["agrees"]) else "FAIL"],
    }


def _figure(summary: dict):
    figure, axes = new_figure(1, 2, width=6.0, height=4.4)
    x = np.arange(len(summary["mechanism"]))
    ax = axes[0, 0]
    ax.bar(x - 0.2, summary["fixed_runs"], 0.4, label="fixed budget")
    ax.bar(x + 0.2, summary["sequential_runs"], 0.4, label="sequential (median over seeds)")
    ax.set_yscale("log")
    ax.set_xticks(x, [n + (" *" if b else "") for n, b in zip(summary["mechanism"], summary["buggy"])], rotation=90,
                  fontsize=6)
    ax.set_ylabel("mechanism runs")
    ax.set_title("runs used (* buggy)")
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    ax.plot(x, summary["fixed_epsilon"], "o", ms=4, label="fixed")
    ax.plot(x, summary["sequential_epsilon"], "x", ms=5, label="sequential (last look)")
    ax.set_xticks(x, summary["mechanism"], rotation=90, fontsize=6)
    ax.set_ylabel("certified ε lower bound (median over seeds)")
    ax.legend(fontsize=6)
    return figure


def run(context) -> ExperimentOutput:
    grid = quick_grid() if context.quick else full_grid()
    started = time.perf_counter()
    rows = run_pairs(grid, context.device, context.seed)
    summary = summarize(rows)
    buggy = [n for n, b in zip(summary["mechanism"], summary["buggy"]) if b]
    plans = run_plans(grid, buggy, context.device, context.seed)
    boundary = run_boundary(grid, context.seed)
    goal = targets(grid, summary, plans, boundary)
    findings = [f"{t}: measured {m} (target {th}) -> **{r}**." for t, m, th, r in
                zip(goal["target"], goal["measured"], goal["threshold"], goal["result"])]
    outside = [f"{n} ({r:.3f}; other seeds {c:.3f})" for n, r, c, b in
               zip(summary["mechanism"], summary["bound_ratio"], summary["control_ratio"], summary["buggy"])
               if not b and math.isfinite(r) and abs(r - 1) > BOUND_TOLERANCE]
    if outside:
        findings.append("Correct entries whose median sequential bound is not within 5% of the fixed one on the same "
                        "runs (beside each, a fixed audit on other seeds against the fixed one): "
                        + ", ".join(outside) + ".")
    spent = [i for i, stop in enumerate(rows["sequential_stopped"]) if stop == "budget"]
    if spent:
        level = float(np.median([rows["sequential_last_alpha"][i] for i in spent]))
        reused = float(np.median([rows["sequential_last_reused"][i] /
                                  (rows["sequential_last_reused"][i] + rows["sequential_last_runs"][i]) for i in spent]))
        ratios = [rows["sequential_epsilon"][i] / rows["fixed_epsilon"][i] for i in spent
                  if not rows["buggy"][i] and rows["fixed_epsilon"][i] > 0]
        findings.append(f"An unrefuted sequential audit's last look is the fixed audit on the same runs at α_K = "
                        f"{level:.4g} of α = {ALPHA} (median), {100 * reused:.0f}% of its runs made by the earlier "
                        "looks and used again; per audit of a correct entry, its bound over the fixed one's: "
                        + (f"median {np.median(ratios):.4f}, range {min(ratios):.4f}-{max(ratios):.4f}"
                           if ratios else "none") + ".")
    missed = [f"{n} (predicted {p}, needed {q})" for n, p, q, a in zip(plans["mechanism"], plans["predicted_runs"],
                                                                     plans["needed_runs"], plans["agrees"]) if not a]
    if missed:
        findings.append("Plans that do not agree with the runs needed: " + ", ".join(missed) + ".")
    unrefuted = [n for n, k, b in zip(summary["mechanism"], summary["sequential_refuted"], summary["buggy"]) if b and k == 0]
    if unrefuted:
        findings.append("Buggy entries no sequential audit refuted within the budget: " + ", ".join(unrefuted) + ".")
    tables = [Table("sequential", summary), Table("sequential_runs", rows), Table("plans", plans),
              Table("boundary", boundary), Table("targets", goal)]
    settings = {**grid.to_dict(), "audits run in": f"{time.perf_counter() - started:.1f} s"}
    return ExperimentOutput(tables, _figure(summary), settings, findings)


EXPERIMENTS = [Experiment(
    name="sequential-audit",
    description="Sequential audits (nested looks) against the fixed budget over every DP catalog entry: runs to "
                "refute, bounds at the maximum budget against the fixed audit on the same runs, type-I error at the "
                "boundary, and budget plans against the runs needed",
    source="study (issue 30 §1, §3); α-spending after Lan and DeMets (1983) and Kim and DeMets (1987)",
    run=run,
    trains=True,
    full_runtime="942 s on the shared 2-core x86_64 CPU at load average 7.0-8.3 from other work (741 s at 2.1-5.9), "
                 "device cpu: 30 entries x 7 seeds (fixed, control and sequential audits), plans of the 10 buggy "
                 "entries against fixed audits on a grid of budgets, 500 boundary audits",
)]
