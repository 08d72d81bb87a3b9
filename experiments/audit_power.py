"""Study ``audit-power``: detection rate and type-I error of catalog audits against the sample budget,
and the audit table over the whole catalog (issue 5 §4, issue 6).

How a catalog entry is audited (as :mod:`audit.demo` does):

- A claimed ε-DP (or ε-LDP) guarantee implies min(ε, ε²/2)-MI DP (Pufferfish paper, Theorem 1),
  so the audit tests ``mi-dp`` at that level under the entry's exposing two-point prior; the
  critic's event test (DESIGN.md) gives a second, certified ε-DP lower bound, compared with the
  claimed ε at the claimed δ.
- A claimed ε-MI DP is tested as ``mi-dp`` at ε; a claimed ε-MI PP as ``mi-pp`` at ε with the
  record that differs in the exposing pair as the secret g (no public part).
- The entry counts as **flagged** when the audit's ``claim_verdict`` is ``refuted``: the
  certified MI lower bound above the MI level the claim implies, or the event test's certified
  pair outside the claim's privacy profile. The audit splits α between the routes that can
  fire (union bound, :mod:`audit.certificates.claim_tests`), so "flagged" has type-I error ≤ α.

Power: the fraction of ``repeats`` audits (independent seeds) that flag a buggy entry, per
sample budget. Type-I: the same fraction for correct entries, and for a boundary case where the
null holds with equality: the column mean of n N(0, 1) records released with the Gaussian noise
of Theorem 4 for ε-MI PP has I(mean; M) = ½ log(1 + (1/n)/σ²) = ε exactly (attribute privacy,
the audit's claim being ε-MI PP). Rates carry two-sided 95% Clopper–Pearson intervals.

The claim boundary count (issue 13, Tests): a mechanism exactly at its claim, audited against that
claim ``repeats`` times with independent seeds, must be refuted at a rate at most α (the claim
verdict's type-I error, over every test that can refute it). The mechanism is the one of the slow
test ``tests/test_claim_verdicts.py``: the column sum of 3 binary records plus N(0, 1) noise, claimed
1-GDP, which it is exactly (Dong, Roth and Su 2022, Theorem 2.7: the Gaussian mechanism with
sensitivity 1 and σ = 1 is 1-GDP, and its likelihood-ratio tests attain the trade-off curve G_1).
The output reports "refuted k/N at the claim boundary" with α and the one-sided 99% Clopper–Pearson
interval [L, 1] for the refuted rate (Clopper and Pearson 1934): L ≤ α is what the test requires
(the count is consistent with a rate ≤ α); the one-sided 99% upper bound says how small the rate
is shown to be.

Where MI-based auditing is weaker or stronger than DP-testing tools is discussed in the findings
(:data:`DISCUSSION`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from audit.bounds.pufferfish import pp_to_mipp
from audit.engine import run_audit
from audit.certificates.event_bounds import clopper_pearson
from audit.frameworks import PufferfishFramework, attribute_privacy, differential_privacy
from audit.spec import AuditSpec
from estimators.neural import CriticConfig
from mechanisms.calibration import gaussian_mi_pp
from mechanisms.catalog import catalog, get_entry
from mechanisms.snapping import snap
from mechanisms.claims.parsing import parse_claim
from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.priors import ProductBernoulli, ProductGaussian
from mechanisms.papers import PUFFERFISH

from .framework import Experiment, ExperimentOutput, Table, new_figure

ALPHA = 0.05
BOUNDARY = "theorem4_gaussian_boundary"  # I(mean; M) = ε exactly
BOUNDARY_EPSILON = 0.3
BOUNDARY_RECORDS = 5
CLAIM_BOUNDARY = "gaussian_count_at_1_gdp"  # exactly its claim, 1-GDP
CLAIM_BOUNDARY_CLAIM = "gdp:1"
CLAIM_BOUNDARY_RECORDS = 3
#: One-sided Clopper–Pearson level of the boundary count, as in tests/test_claim_verdicts.py.
CLAIM_BOUNDARY_CONFIDENCE = 0.99
#: The critic of the boundary audits (the slow test's: 200 steps).
CLAIM_BOUNDARY_CRITIC = CriticConfig(max_steps=200)

DISCUSSION = [
    "**Where MI-based auditing is weaker.** ε-DP only implies min(ε, ε²/2)-MI DP (Theorem 1), and the MI "
    "of a mechanism under a prior is usually far below that level: an ε-DP bug that raises the true ε "
    "moderately (e.g. 1 → 1.5 or 2) leaves the MI under min(ε, ε²/2) and the MI route cannot see it. "
    "The certified ε-DP lower bound the MI gives, √(2L), is also loose, since it inverts the worst case "
    "of Theorem 1. Those bugs are carried by the event test, which thresholds an estimated "
    "log-likelihood ratio (under a catalog entry's two-point prior a classifier's log-odds, the same "
    "classifiers that serve as the MI test's critics; otherwise the trained critic) and bounds the "
    "event's probabilities by Clopper–Pearson, as DP-testing tools do, or for pure DP their odds ratio "
    "or their ratio (audit.certificates.odds_ratio, audit.certificates.rate_ratio); the MI estimation is then the search for a "
    "good event.",
    "**Where it is stronger.** The MI test audits notions the DP tools do not speak to: structured "
    "Pufferfish secrets with public information, declared priors Θ, MI-DP and MI-PP claims (the "
    "calibrated entries and the Theorem 4 boundary case are audited directly at their ε, in nats). "
    "Its verdict has a type-I error ≤ α with no unknown constant (held-out DV certificate), unlike "
    "the paper's Proposition 4 threshold, and every per-record and per-slice bound is simultaneously "
    "valid. A certified MI lower bound is also a statement about average-case leakage under the prior, "
    "which a single worst-case event cannot give.",
    "**Published DP-testing numbers.** StatDP (Ding et al. 2018), DP-Sniper (Bichsel et al. 2021), "
    "DP-Opt and Delta-Siege report results on the same mechanism families (sparse vector variants, "
    "noisy max, histogram), but their tables are not available to this project offline and are not "
    "quoted from memory here; the numeric comparison of the DP ε lower bounds above with the "
    "published ones is left for when those tables are at hand. Note that the published bounds refer "
    "to their own neighbouring inputs, ε settings and sample counts, so a comparison must match them.",
]


@dataclass(frozen=True)
class ColumnMean:
    """The column mean of a batch ``(m, n, k) -> (m, k)``, or of a column ``(m, n) -> (m, 1)``."""

    def __call__(self, arr: np.ndarray) -> np.ndarray:
        return arr.mean(axis=1) if arr.ndim == 3 else arr.mean(axis=1, keepdims=True)


@dataclass(frozen=True)
class PowerGrid:
    """The settings of one run.

    Attributes
    ----------
    cases : tuple of str
        Catalog entry names for the power / type-I curves (plus :data:`BOUNDARY` if ``boundary``).
    boundary : bool
        Include the boundary case of the Pufferfish paper's Theorem 4 (:func:`boundary_spec`).
    budgets : tuple of int
        Databases drawn per audit (the event test uses as many fresh runs per input).
    repeats : int
        Independent audits per case and budget.
    table_entries : tuple of str or None
        Entries of the catalog table (``None``: the whole catalog).
    table_samples : int
        Budget of the catalog table's audits.
    slices : int
        Random slices per secret (candidates beside the full critic).
    critic : CriticConfig
    claim_boundary_repeats : int
        Independent audits of the claim boundary case (:data:`CLAIM_BOUNDARY`).
    claim_boundary_samples : int
        Their sample budget.
    """

    cases: tuple
    boundary: bool
    budgets: tuple
    repeats: int
    table_entries: tuple | None
    table_samples: int
    slices: int
    critic: CriticConfig
    claim_boundary_repeats: int
    claim_boundary_samples: int

    def to_dict(self) -> dict:
        return {"cases": list(self.cases) + ([BOUNDARY] if self.boundary else []), "budgets": list(self.budgets),
                "repeats": self.repeats,
                "catalog table": "whole catalog" if self.table_entries is None else list(self.table_entries),
                "catalog table samples": self.table_samples, "slices": self.slices, "alpha": ALPHA,
                "critic": f"{self.critic.architecture}, hidden {self.critic.hidden}, max_steps {self.critic.max_steps}",
                "claim boundary": (f"{CLAIM_BOUNDARY} claimed {CLAIM_BOUNDARY_CLAIM}: {self.claim_boundary_repeats} "
                                   f"audits of {self.claim_boundary_samples} samples, critic max_steps "
                                   f"{CLAIM_BOUNDARY_CRITIC.max_steps}, no slices")}


def quick_grid() -> PowerGrid:
    return PowerGrid(("histogram_buggy", "laplace_sum"), True, (600,), 3, ("histogram_buggy", "laplace_sum"), 600,
                     2, CriticConfig(hidden=16, max_steps=150, eval_every=25, patience=3), 6, 1500)


def full_grid() -> PowerGrid:
    # The claim boundary: the slow test's audits of 1,500 samples (about a second each), 100 of them
    # rather than its 30, so that a count of 0 bounds the refuted rate below α.
    return PowerGrid(("histogram_buggy", "mean_off_by_one_count", "svt4", "laplace_sum", "histogram"), True,
                     (500, 2000, 8000), 6, None, 8000, 4, CriticConfig(max_steps=600), 100, 1500)


def changed_record(entry) -> int:
    """Index of the record in which the entry's exposing pair differs."""
    pair = entry.pairs[0]
    return int(np.flatnonzero((pair.first != pair.second).any(axis=1))[0])


def catalog_spec(entry, samples: int, seed: int, critic: CriticConfig, slices: int, device) -> AuditSpec:
    """The audit of a catalog entry against its claim (see the module docstring)."""
    claim = entry.claimed
    settings = dict(mechanism=entry.mechanism, priors=[entry.prior], alpha=ALPHA, samples=samples, slices=slices,
                    event_runs=samples, claim=claim, name=entry.name, critic=critic, seed=seed, device=device)
    if claim.notion in ("dp", "ldp"):
        # Theorem 1: ε-DP ⇒ min(ε, ε²/2)-MI DP (applied by the cross-check only when δ = 0).
        return AuditSpec(notion="mi-dp", epsilon=pp_to_mipp(claim.epsilon), delta=claim.delta, **settings)
    if claim.notion == "mi-dp":
        return AuditSpec(notion="mi-dp", epsilon=claim.epsilon, **settings)
    if claim.notion == "mi-pp":
        record = changed_record(entry)
        # g = X(i, ·) as DP's framework defines it (Remark 2), here with no public part.
        secret = differential_privacy(*entry.record_shape).private[record]
        framework = PufferfishFramework(f"record {record} secret", (secret,), shape=entry.record_shape)
        return AuditSpec(notion="mi-pp", epsilon=claim.epsilon, framework=framework, **settings)
    raise ValueError(f"catalog entry {entry.name!r} claims no guarantee to audit")


def boundary_spec(samples: int, seed: int, critic: CriticConfig, slices: int, device) -> tuple[AuditSpec, float]:
    """The Gaussian of the Pufferfish paper's Theorem 4 on the column mean of N(0, 1) records: I(mean; M) = ε
    exactly.

    Returns the spec (claim: ε-MI PP, audited at that ε) and the exact MI
    ½ log(1 + (1/n)/σ²) (Gaussian channel; Var(mean) = 1/n).
    """
    n = BOUNDARY_RECORDS
    calibration = gaussian_mi_pp(BOUNDARY_EPSILON, [1.0 / n])
    truth = 0.5 * math.log1p((1.0 / n) / calibration.scale**2)
    spec = AuditSpec(mechanism=calibration.mechanism(ColumnMean()), priors=[ProductGaussian.iid_rows([0.0], [[1.0]], n)],
                     notion="mi-pp", epsilon=truth, framework=attribute_privacy(n, 1, statistic=ColumnMean()),
                     alpha=ALPHA, samples=samples, slices=slices, claim=Guarantee("mi-pp", truth, note=calibration.rule),
                     name=BOUNDARY, critic=critic, seed=seed, device=device)
    return spec, truth


def gaussian_count(dbs, rng):
    """The column sums plus N(0, 1): exactly 1-GDP for one changed binary record (Dong, Roth and Su 2022,
    Theorem 2.7), released on the catalog's 2^-32 grid (Mironov 2012, Section 5.2) so that the float64
    sum's low bits do not tell the sums apart (:mod:`mechanisms.snapping`)."""
    return snap(dbs.sum(axis=1) + rng.normal(size=(dbs.shape[0], dbs.shape[2])))


def claim_boundary_spec(samples: int, seed: int, device) -> AuditSpec:
    """The audit of :func:`gaussian_count` against its exact claim 1-GDP (record 0 of 3 binary records)."""
    return AuditSpec(mechanism=gaussian_count, priors=[ProductBernoulli(0.5, shape=(CLAIM_BOUNDARY_RECORDS, 1))],
                     claim=parse_claim(CLAIM_BOUNDARY_CLAIM), records=(0,), alpha=ALPHA, samples=samples, slices=0,
                     critic=CLAIM_BOUNDARY_CRITIC, name=CLAIM_BOUNDARY, seed=seed, device=device)


@dataclass(frozen=True)
class BoundaryCount:
    """How many of ``repeats`` audits refuted a claim that holds with equality.

    The bounds are one-sided Clopper–Pearson (Clopper and Pearson 1934) at ``confidence``:
    the refuted rate is ≥ ``lower`` and ≤ ``upper``, each with probability ≥ ``confidence``.
    ``within_alpha`` (``lower`` ≤ α) is the requirement of the claim verdict's type-I error.
    """

    refuted: int
    repeats: int
    alpha: float
    confidence: float

    @property
    def rate(self) -> float:
        return self.refuted / self.repeats

    @property
    def lower(self) -> float:
        return float(clopper_pearson(self.refuted, self.repeats, 1.0 - self.confidence)[0])

    @property
    def upper(self) -> float:
        return float(clopper_pearson(self.refuted, self.repeats, 1.0 - self.confidence)[1])

    @property
    def within_alpha(self) -> bool:
        return self.lower <= self.alpha

    def describe(self) -> str:
        level = f"{100 * self.confidence:g}%"
        verdict = ("consistent with a type-I error ≤ α" if self.within_alpha else
                   "the type-I error exceeds α at this confidence")
        return (f"Claim boundary ({CLAIM_BOUNDARY}: the Gaussian count audited at its exact claim "
                f"{CLAIM_BOUNDARY_CLAIM}): refuted {self.refuted}/{self.repeats} at the claim boundary, α = {self.alpha}; "
                f"one-sided {level} Clopper–Pearson interval for the refuted rate [{self.lower:.3g}, 1] "
                f"({verdict}); one-sided {level} upper bound {self.upper:.3f}.")

    def to_table(self) -> dict:
        return {"case": [CLAIM_BOUNDARY], "claim": [CLAIM_BOUNDARY_CLAIM], "refuted": [self.refuted],
                "repeats": [self.repeats], "rate": [self.rate], "alpha": [self.alpha], "confidence": [self.confidence],
                "rate_lower_one_sided": [self.lower], "rate_upper_one_sided": [self.upper],
                "within_alpha": [self.within_alpha]}


def run_claim_boundary(repeats: int, samples: int, device, seed: int) -> tuple[dict, BoundaryCount]:
    """``repeats`` audits of the claim boundary case with independent seeds: per-audit rows and the count."""
    runs: dict = {}
    for repeat in range(repeats):
        audit_seed = _seed(seed, 77, repeat)
        result = run_audit(claim_boundary_spec(samples, audit_seed, device))
        by_mi, by_event = flag_routes(result)
        row = {"case": CLAIM_BOUNDARY, "claim": CLAIM_BOUNDARY_CLAIM, "repeat": repeat, "seed": audit_seed,
               "samples_per_audit": samples, "claim_verdict": result.claim_verdict, "refuted": result.refuted,
               "refuted_by_mi": by_mi, "refuted_by_event": by_event, "seconds": result.seconds}
        for key, value in row.items():
            runs.setdefault(key, []).append(value)
    count = BoundaryCount(int(sum(runs["refuted"])), repeats, ALPHA, CLAIM_BOUNDARY_CONFIDENCE)
    return runs, count


def flag_routes(result) -> tuple[bool, bool]:
    """(flagged by the MI route, flagged by the event route): the tests that refuted the claim."""
    tests = {r["test"] for r in result.refuted_by}
    return "mi" in tests, "event" in tests


def _nan(value) -> float:
    return math.nan if value is None else float(value)


def _guarantee_epsilon(guarantee) -> float:
    return guarantee.epsilon if guarantee.private else math.inf


def audit_row(result, kind: str) -> dict:
    """The per-audit numbers shared by both tables."""
    by_mi, by_event = flag_routes(result)
    return {"kind": kind, "verdict": result.verdict, "flagged": by_mi or by_event, "flagged_by_mi": by_mi,
            "flagged_by_event": by_event, "audit_epsilon": result.epsilon, "mi_lower_bound": _nan(result.lower_bound),
            "mi_estimate": result.estimate, "dp_epsilon_lower_bound_mi": _nan(result.dp_epsilon_lower_bound_mi),
            "dp_epsilon_lower_bound_event": _nan(result.dp_epsilon_lower_bound_event), "samples": result.samples,
            "seconds": result.seconds}


def _seed(context_seed: int, *stream) -> int:
    return int(np.random.default_rng([context_seed, *stream]).integers(2**31))


def run_power(grid: PowerGrid, device, seed: int) -> tuple[dict, dict]:
    """Every audit of the power study (columns of ``power_runs``) and the results kept for the table."""
    runs: dict = {}
    kept: dict = {}
    cases = list(grid.cases) + ([BOUNDARY] if grid.boundary else [])
    for case_index, case in enumerate(cases):
        for budget in grid.budgets:
            for repeat in range(grid.repeats):
                audit_seed = _seed(seed, case_index, budget, repeat)
                if case == BOUNDARY:
                    spec, truth = boundary_spec(budget, audit_seed, grid.critic, grid.slices, device)
                    kind = "boundary"
                else:
                    entry = get_entry(case)
                    spec, truth = catalog_spec(entry, budget, audit_seed, grid.critic, grid.slices, device), math.nan
                    kind = "buggy" if entry.buggy else "correct"
                result = run_audit(spec)
                row = {"case": case, "budget": budget, "repeat": repeat, "seed": audit_seed, "truth_mi": truth,
                       **audit_row(result, kind)}
                for key, value in row.items():
                    runs.setdefault(key, []).append(value)
                if repeat == 0 and budget == grid.table_samples:
                    kept[case] = result
    return runs, kept


def summarize_power(runs: dict) -> dict:
    """Per case and budget: flagged count, rate and its two-sided 95% Clopper–Pearson interval."""
    case, budget, flagged = (np.asarray(runs[k]) for k in ("case", "budget", "flagged"))
    kind, seconds = np.asarray(runs["kind"]), np.asarray(runs["seconds"], dtype=float)
    out = {k: [] for k in ("case", "kind", "budget", "repeats", "flagged", "rate", "rate_lower_95", "rate_upper_95",
                           "alpha", "mean_seconds")}
    for name in dict.fromkeys(case.tolist()):
        for b in sorted(set(budget[case == name].tolist())):
            rows = (case == name) & (budget == b)
            k, r = int(flagged[rows].sum()), int(rows.sum())
            lower, upper = clopper_pearson(k, r, 0.025)
            for key, value in (("case", name), ("kind", kind[rows][0]), ("budget", b), ("repeats", r), ("flagged", k),
                               ("rate", k / r), ("rate_lower_95", float(lower)), ("rate_upper_95", float(upper)),
                               ("alpha", ALPHA), ("mean_seconds", float(seconds[rows].mean()))):
                out[key].append(value)
    return out


def run_table(grid: PowerGrid, device, seed: int, kept: dict) -> dict:
    """The catalog audit table (reusing an audit of the power study where it has the same budget)."""
    names = [e.name for e in catalog()] if grid.table_entries is None else list(grid.table_entries)
    columns: dict = {}
    for index, name in enumerate(names):
        entry = get_entry(name)
        result = kept.get(name)
        if result is None:
            result = run_audit(catalog_spec(entry, grid.table_samples, _seed(seed, 99, index), grid.critic,
                                            grid.slices, device))
        claim = entry.claimed
        row = {"mechanism": name, "buggy": entry.buggy, "claimed": claim.text, "claimed_notion": claim.notion,
               "claimed_epsilon": claim.epsilon, "claimed_delta": claim.delta, "true_guarantee": entry.true.text,
               "true_epsilon": _guarantee_epsilon(entry.true), "notion": result.notion,
               "mi_route": bool(any(c.implied_mi_upper_bound is not None for c in result.cross_checks)),
               **audit_row(result, "buggy" if entry.buggy else "correct")}
        for key, value in row.items():
            columns.setdefault(key, []).append(value)
    return columns


def _findings(summary: dict, table: dict, grid: PowerGrid, boundary: BoundaryCount) -> list:
    findings = [boundary.describe()]
    kind = np.asarray(summary["kind"])
    budgets = np.asarray(summary["budget"])
    top = max(grid.budgets)
    for label, which in (("Power (buggy entries flagged)", "buggy"), ("Type-I error (correct entries flagged)", "correct"),
                         ("Type-I error at the boundary I = ε", "boundary")):
        rows = np.flatnonzero((kind == which) & (budgets == top))
        if len(rows):
            parts = [f"{summary['case'][i]} {summary['flagged'][i]}/{summary['repeats'][i]}" for i in rows]
            findings.append(f"{label} at {top:,} samples per audit (α = {ALPHA}): " + "; ".join(parts) + ".")
    flagged = np.asarray(table["flagged"])
    buggy = np.asarray(table["buggy"])
    by_mi, by_event = np.asarray(table["flagged_by_mi"]), np.asarray(table["flagged_by_event"])
    findings.append(
        f"Catalog table ({len(flagged)} entries, {grid.table_samples:,} samples each, one seed): flagged "
        f"{int((flagged & buggy).sum())} of {int(buggy.sum())} buggy entries "
        f"({int((by_mi & buggy).sum())} by the MI route, {int((by_event & buggy).sum())} by the event test) and "
        f"{int((flagged & ~buggy).sum())} of {int((~buggy).sum())} correct ones.")
    missed = [n for n, f, b in zip(table["mechanism"], flagged, buggy) if b and not f]
    if missed:
        findings.append("Buggy entries not flagged at this budget: " + ", ".join(missed) + ".")
    event = np.asarray(table["dp_epsilon_lower_bound_event"], dtype=float)
    mi = np.asarray(table["dp_epsilon_lower_bound_mi"], dtype=float)
    both = np.isfinite(event) & np.isfinite(mi)
    if both.any():
        findings.append(f"The event-based ε-DP lower bound exceeds the MI-based one (√(2L), Theorem 1) on "
                        f"{int((event[both] > mi[both]).sum())} of {int(both.sum())} DP-notion audits.")
    true_eps = np.asarray(table["true_epsilon"], dtype=float)
    # Only a true DP/LDP ε is comparable with a DP ε bound (an MI level in nats is not).
    true_dp = np.array([text.endswith("DP") and "MI" not in text for text in table["true_guarantee"]])
    finite = np.isfinite(true_eps) & np.isfinite(event) & true_dp
    findings.append(f"Certified event bounds above the true DP ε: {int((event[finite] > true_eps[finite] + 1e-12).sum())} "
                    f"of {int(finite.sum())} entries with a finite true DP ε.")
    return findings + DISCUSSION


def _figure(summary: dict, table: dict):
    figure, axes = new_figure(1, 2, width=5.6, height=4.2)
    ax = axes[0, 0]
    case = np.asarray(summary["case"])
    for index, name in enumerate(dict.fromkeys(summary["case"])):
        rows = case == name
        b = np.asarray(summary["budget"])[rows]
        rate = np.asarray(summary["rate"])[rows]
        lo, hi = np.asarray(summary["rate_lower_95"])[rows], np.asarray(summary["rate_upper_95"])[rows]
        kind = np.asarray(summary["kind"])[rows][0]
        ax.errorbar(b, rate, yerr=[rate - lo, hi - rate], fmt="o-" if kind == "buggy" else "s--", ms=4, capsize=3,
                    color=f"C{index}", label=f"{name} ({kind})")
    ax.axhline(ALPHA, color="k", lw=0.8, ls=":", label=f"α = {ALPHA}")
    ax.set_xscale("log")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("samples per audit")
    ax.set_ylabel("fraction of audits flagging the claim")
    ax.set_title("power (buggy) and type-I error (correct, boundary)")
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    x = np.arange(len(table["mechanism"]))
    claimed = np.where(np.isin(table["claimed_notion"], ["dp", "ldp"]), table["claimed_epsilon"], np.nan)
    ax.plot(x, claimed, "k_", ms=12, mew=2, label="claimed ε")
    true_eps = np.asarray(table["true_epsilon"], dtype=float)
    ax.plot(x, np.where(np.isfinite(true_eps) & ~np.isnan(claimed), true_eps, np.nan), "r_", ms=12, mew=2,
            label="true ε (finite)")
    ax.plot(x, table["dp_epsilon_lower_bound_event"], "o", color="C0", ms=4, label="event-test ε lower bound")
    ax.plot(x, table["dp_epsilon_lower_bound_mi"], "^", color="C1", ms=4, label="MI ε lower bound √(2L)")
    ax.set_xticks(x, table["mechanism"], rotation=90, fontsize=6)
    ax.set_ylabel("ε (DP)")
    ax.set_title("catalog: certified ε-DP lower bounds")
    ax.legend(fontsize=6)
    return figure


def run(context) -> ExperimentOutput:
    grid = quick_grid() if context.quick else full_grid()
    started = time.perf_counter()
    runs, kept = run_power(grid, context.device, context.seed)
    summary = summarize_power(runs)
    table = run_table(grid, context.device, context.seed, kept)
    boundary_runs, boundary = run_claim_boundary(grid.claim_boundary_repeats, grid.claim_boundary_samples,
                                                 context.device, context.seed)
    settings = {**grid.to_dict(), "unit": "nats (MI); ε-DP bounds are DP parameters",
                "boundary truth": f"I = ε = {BOUNDARY_EPSILON} nats (n = {BOUNDARY_RECORDS})",
                "audits run in": f"{time.perf_counter() - started:.1f} s"}
    tables = [Table("catalog_audit", table), Table("power", summary), Table("power_runs", runs),
              Table("claim_boundary", boundary.to_table()), Table("claim_boundary_runs", boundary_runs)]
    return ExperimentOutput(tables, _figure(summary, table), settings, _findings(summary, table, grid, boundary))


EXPERIMENTS = [Experiment(
    name="audit-power",
    description=("Catalog audits: power and type-I error vs sample budget, the audit table over the whole catalog, "
                 "and the refuted count of a claim audited at its exact boundary"),
    source="study (issue 6; catalog audit table of issue 5 §4); " + PUFFERFISH.cite("Theorem 1 and Theorem 4"),
    run=run,
    trains=True,
    full_runtime=("78 s on a 2-core x86_64 CPU (load average 0.4), device cpu "
                  "(6 repeats x 3 budgets x 6 cases, 34-entry table, 100 claim boundary audits)"),
)]
