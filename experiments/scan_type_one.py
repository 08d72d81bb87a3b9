"""Study ``scan-type-one``: the family-wise type-I error of ``miaudit scan`` on entry points exactly at their claims.

``tests/planted_lib/_exact.py`` holds two entry points whose ε-DP claims are exactly true, met with equality on the
pair the scan gives each: randomized response (``Response``, outputs 0 and 1) and a count plus two-sided geometric
noise (``exact_count``). Each run scans that module (:func:`audit.scan.running.scan`, in process, ε = 1,
``max_runs`` = 3,000) at α = 0.3 on its own seed; every finding is false. The scan splits α over its 2 cases
(Bonferroni, :mod:`audit.scan.planning`: 0.15 each), each case's sequential audit spends its share over its looks
(power spending α·t², :mod:`audit.gating.sequential`) and, within a look, between its tests (event test, μ-GDP
certificate, float-bit event test, MI test: :func:`audit.certificates.claim_tests.plan_claim_tests`), so by the union
bound P(a scan has a finding) ≤ α, and each (case, look, test) component's rejection probability is at most the α
it was given.

The study records every look of every case (its level, each test's share, the tests that refuted: a context manager
wraps :func:`audit.engine._run_audit` to read them, changing nothing) and reports, with Clopper–Pearson 95% intervals
(Clopper and Pearson 1934): scans with a finding, each case's findings, and each (case, test) and (case, look, test)
component's refutations, beside the share of α the component was given (summed over the looks for a (case, test)).
A component whose interval lies wholly above its share spends more than it was given. The target: scans with a
finding at most Binomial(N, α)'s 99.9% point.

**The float-bit test's share** (``--grid float``, page ``docs/benchmarks/scan-type-one-float.md``). On
``planted_lib._exact`` the outputs are integers, so no float-bit statistic is fitted and the event test certifies at
its share and the float-bit test's together: the float-bit test spends nothing. ``--grid float`` scans
``tests/planted_lib/_float_exact.py`` instead (:data:`FLOAT_TARGET`): the same two releases plus a jitter v = u/2,
u = ``rng.random()``, drawn apart from the input (y = r ⊕ v in float64, ⌊y⌋ = r), exactly ε-DP as a law on doubles
(its docstring; enumerated in ``tests/test_scan_type_one_float.py``), whose outputs have bits below 2⁻³². There each
look of a case gives the float-bit test :data:`audit.certificates.claim_tests.FLOAT_TEST_SHARE` = 0.2 of the
event test's part of the look's level (at the last look 0.0299 of 0.1495), the event test the rest; the early look
too, where both tests refute a pair with one miss on its runs at their parts
(:func:`audit.certificates.claim_tests.early_float_test`), as at ε = 1 here: 23 runs per input each at
α_0 = 2.90·10⁻⁴ (float-bit test 5.81·10⁻⁵). A scan's audit stops at its first
refutation, so the float-bit test runs only where the event test did not refute; given the MI sample both choose
their events on, the two certify on independent fresh runs, so the float-bit test's refutations among the looks
where it ran are held to its share too (row "…, where it ran"), and by its certificate.

**The MI test** gets no share in a scan: every case is an ``mi-dp`` audit of a two-point prior on a neighbouring
pair with ``mi_critic`` left at ``auto``, so its critics are the event test's classifiers
(:func:`audit.audit_plan.resolve_mi_critic`) and :func:`audit.certificates.claim_tests.plan_claim_tests` gives the
event test all of α (the MI bound is a separate statement). No planted entry point changes that; its type-I error
within a scan is not measured here.

Seeds (either target): scan ``i`` of a run at ``--seed s`` has seed :data:`SEED_BASE` + 100,000·s + i, apart from the seeds 0, 1, …
of the slow test ``tests/test_scan_type1.py``.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scipy import stats

from audit.certificates.event_bounds import clopper_pearson

from .framework import Experiment, ExperimentOutput, Table, new_figure

#: The scan's family-wise error: large, so that an excess shows in hundreds of scans.
ALPHA = 0.3
TARGET = "planted_lib._exact"
EPSILONS = (1.0,)
MAX_RUNS, TIMEOUT = 3000, 30.0
#: Scan seeds start here (module docstring).
SEED_BASE = 10_000
#: Confidence of the intervals shown.
CONFIDENCE = 0.95
#: The target's quantile of Binomial(N, α).
TARGET_QUANTILE = 0.999
#: Where ``planted_lib`` is imported from.
TESTS = Path(__file__).resolve().parents[1] / "tests"


#: The ``--grid float`` target: entry points exactly at their claims with bits below 2⁻³², whose scan gives the
#: float-bit event test a share of α (module docstring).
FLOAT_TARGET = "planted_lib._float_exact"


@dataclass(frozen=True)
class Grid:
    scans: int
    target: str = TARGET


GRIDS = {"300": lambda: Grid(300), "float": lambda: Grid(1400, FLOAT_TARGET)}


def scan_seed(seed: int, index: int) -> int:
    return SEED_BASE + 100_000 * seed + index


@contextlib.contextmanager
def recorded_looks(sink: list):
    """Append one dict per look audited (:func:`audit.engine._run_audit` as a sequential audit calls it) to ``sink``:
    the case, the look's level, whether it is the early look, each test's share, the event tests that ran (a scan's
    audit stops at its first refutation: the float-bit test does not run where the event test refuted), the
    float-bit test's certificate and runs per input, and the tests that refuted."""
    import audit.engine as engine

    original = engine._run_audit

    def recording(spec, runner, early=False, stop_at_refutation=False, **settings):
        result = original(spec, runner, early=early, stop_at_refutation=stop_at_refutation, **settings)
        event, bits = result.event_test, result.float_event_test
        sink.append({"case": spec.name, "level": float(spec.alpha), "early": bool(early), "event_runs": int(spec.event_runs),
                     "certificate": None if event is None else event.certificate,
                     "shares": {k: float(v) for k, v in result.claim_alpha.items()},
                     "ran": [test for test, found in (("event", event), ("float", bits)) if found is not None],
                     "float_certificate": None if bits is None else bits.certificate,
                     "float_runs": 0 if bits is None else int(bits.runs_per_input),
                     "refuted": [r["test"] for r in result.refuted_by]})
        return result

    engine._run_audit = recording
    try:
        yield
    finally:
        engine._run_audit = original


def run_scans(count: int, seed: int, progress=None, target: str = TARGET) -> tuple:
    """(one row per (scan, case), one row per look) of ``count`` scans of ``target`` (module docstring)."""
    from audit.scan.running import scan

    cases, looks = [], []
    sys.path.insert(0, str(TESTS))
    try:
        for index in range(count):
            sink, started = [], time.process_time()
            with recorded_looks(sink):
                result = scan(target, epsilons=EPSILONS, alpha=ALPHA, max_runs=MAX_RUNS, timeout=TIMEOUT,
                              seed=scan_seed(seed, index), in_process=True)
            cpu = time.process_time() - started
            for outcome in result.outcomes:
                name = outcome["entry"]
                mine = [look for look in sink if look["case"] == name]
                cases.append({"scan": index, "seed": scan_seed(seed, index), "case": outcome["name"],
                              "status": outcome["status"], "case_alpha": float(outcome.get("alpha", float("nan"))),
                              "refuting_test": outcome.get("refuting_test") or "",
                              "refuting_alpha": float(outcome.get("refuting_alpha") or 0.0),
                              "refuting_look": len(mine) if outcome["status"] == "finding" else 0,
                              "certificate": outcome.get("certificate") or "",
                              "looks": len(mine), "looks_planned": int(outcome.get("looks_planned", 0)),
                              "runs": int(outcome.get("runs", 0)), "scan_cpu_seconds": cpu})
                for number, look in enumerate(mine, start=1):
                    looks.append({"scan": index, "case": outcome["name"], "look": number, "early": look["early"],
                                  "level": look["level"], "event_runs": look["event_runs"],
                                  "certificate": look["certificate"] or "", "shares": look["shares"],
                                  "ran": look["ran"], "float_certificate": look["float_certificate"] or "",
                                  "float_runs": look["float_runs"], "refuted": look["refuted"]})
            if progress is not None:
                progress(f"scan {index + 1}/{count} (seed {scan_seed(seed, index)}): "
                         f"{len(result.findings)} finding(s), {cpu:.1f} s CPU")
    finally:
        sys.path.remove(str(TESTS))
    return cases, looks


def boundary_sizes(runs: int, level: float, epsilon: float = 1.0) -> dict:
    """The exact probability that each certificate of the event test refutes an ε-DP claim met with equality: randomized
    response's event {output = a's value}, P = e^ε/(1 + e^ε) under a and 1/(1 + e^ε) under b, ``runs`` runs per input
    (the rate ratio's Poisson numbers of mean λ, P(Poisson(λ) > ``runs``) = 10⁻⁶), at ``level``; by enumeration of the
    counts with SciPy's laws, apart from miaudit's certificate code.

    - odds ratio (Cornfield 1956): given s = x₁ + x₂, x₁ is Fisher's noncentral hypergeometric at ψ = e^{2ε}; refuted
      where P_ψ(X₁ ≥ x₁ | s) < ``level``;
    - rate ratio (Przyborowski and Wilenski 1940): s ~ Poisson(λ) (the two probabilities sum to 1), x₁ | s ~
      Binomial(s, e^ε/(1 + e^ε)); refuted where P(X₁ ≥ x₁ | s) < ``level``;
    - Clopper–Pearson pair (Clopper and Pearson 1934), each bound at ``level``/2 (the even split): refuted where the
      event or its complement certifies more than ε (:func:`audit.certificates.event_bounds.certified_epsilon`'s
      rule, Dwork and Roth 2014, Definition 2.4): p̲₁ > e^ε p̄₂ or 1 − p̄₂ > e^ε (1 − p̲₁).
    """
    import math

    import numpy as np
    from scipy import optimize, special

    p_first, p_second = math.exp(epsilon) / (1 + math.exp(epsilon)), 1 / (1 + math.exp(epsilon))
    counts = np.arange(runs + 1)
    first, second = stats.binom.pmf(counts, runs, p_first), stats.binom.pmf(counts, runs, p_second)
    log_choose = special.gammaln(runs + 1) - special.gammaln(counts + 1) - special.gammaln(runs - counts + 1)
    odds = 0.0
    for total in range(2 * runs + 1):
        k = np.arange(max(0, total - runs), min(runs, total) + 1)
        joint = first[k] * second[total - k]
        if joint.sum() < 1e-16:
            continue
        weight = log_choose[k] + log_choose[total - k] + 2 * epsilon * k
        weight = np.exp(weight - weight.max())
        tail = np.cumsum((weight / weight.sum())[::-1])[::-1]  # P_ψ(X₁ ≥ k | s)
        odds += joint[tail < level].sum()
    mean = optimize.brentq(lambda lam: stats.poisson.sf(runs, lam) - 1e-6, 1e-9, runs + 1.0)
    rate = 0.0
    for total in range(int(mean + 12 * math.sqrt(mean)) + 10):
        k = np.arange(total + 1)
        refuted = stats.binom.sf(k - 1, total, p_first) < level
        rate += stats.poisson.pmf(total, mean) * stats.binom.pmf(k, total, p_first)[refuted].sum()
    lower = np.where(counts > 0, stats.beta.ppf(level / 2, np.maximum(counts, 1), runs - counts + 1), 0.0)
    upper = np.where(counts < runs, stats.beta.ppf(1 - level / 2, counts + 1, np.maximum(runs - counts, 1)), 1.0)
    low, high = lower[:, None], upper[None, :]
    refuted = (low > math.exp(epsilon) * high) | (1 - high > math.exp(epsilon) * (1 - low))
    pair = float((first[:, None] * second[None, :])[refuted].sum())
    return {"odds-ratio": float(odds), "rate-ratio": float(rate), "clopper-pearson": pair}


def _interval(k: int, n: int) -> tuple:
    low, high = clopper_pearson(k, n, (1 - CONFIDENCE) / 2)
    return float(low), float(high)


def summarize(cases: list, looks: list, scans: int) -> dict:
    """The rows of the summary table: overall, per case, per (case, test), per (case, look, test)."""
    rows = {k: [] for k in ("component", "refuted", "of", "rate", "ci_low", "ci_high", "alpha_share", "exceeds")}

    def add(component, k, share, n=scans):
        low, high = _interval(k, n)
        for key, value in (("component", component), ("refuted", k), ("of", n), ("rate", k / n),
                           ("ci_low", low), ("ci_high", high), ("alpha_share", share), ("exceeds", low > share)):
            rows[key].append(value)

    add("scans with a finding", len({c["scan"] for c in cases if c["status"] == "finding"}), ALPHA)
    names = sorted({c["case"] for c in cases})
    # Each (case, look) is planned before any run: its shares are the same in every scan that ran it.
    shares = {}
    for look in looks:
        for test, share in look["shares"].items():
            shares[look["case"], look["look"], test] = max(share, shares.get((look["case"], look["look"], test), 0.0))
    for name in names:
        mine = [c for c in cases if c["case"] == name]
        add(f"{name}: finding", sum(c["status"] == "finding" for c in mine), mine[0]["case_alpha"])
        tests = sorted({t for (case, _, t) in shares if case == name})
        for test in tests:
            share = sum(v for (case, _, t), v in shares.items() if case == name and t == test)
            refuted = sum(c["refuting_test"] == test for c in mine)
            add(f"{name}: {test} test, any look", refuted, share)
        # The event test's certificate is chosen on selection draws, apart from the certification runs: given the
        # choice, the test still rejects with probability at most its share (scans: the cases where it was chosen).
        for certificate in sorted({c["certificate"] for c in mine if c["certificate"]}):
            chosen = [c for c in mine if c["certificate"] == certificate]
            share = sum(v for (case, _, t), v in shares.items() if case == name and t == "event")
            add(f"{name}: event test by its {certificate} certificate", sum(c["refuting_test"] == "event"
                                                                         for c in chosen), share, len(chosen))
        for (case, number, test), share in sorted(shares.items()):
            if case != name:
                continue
            at_look = [look for look in looks if look["case"] == name and look["look"] == number]
            add(f"{name}: look {number}, {test} test", sum(test in look["refuted"] for look in at_look), share)
            # The audit stops at its first refutation: the float-bit test runs only where the event test did not
            # refute. Given the MI sample both choose their events on, the two certify on independent fresh runs,
            # so given that the event test did not refute, the float-bit test still rejects with probability at most
            # its share: the looks where it ran are a fair denominator, and a sharper check than all scans.
            ran = [look for look in at_look if test in look["ran"]]
            if test == "float" and len(ran) != scans:
                add(f"{name}: look {number}, {test} test, where it ran", sum(test in look["refuted"] for look in ran),
                    share, max(len(ran), 1))
            if test == "float":
                for certificate in sorted({look["float_certificate"] for look in ran}):
                    chosen = [look for look in ran if look["float_certificate"] == certificate]
                    add(f"{name}: look {number}, {test} test by its {certificate} certificate",
                        sum(test in look["refuted"] for look in chosen), share, len(chosen))
    return rows


def _figure(summary: dict):
    figure, axes = new_figure(width=9.0, height=4.8)
    ax = axes[0][0]
    labels = summary["component"]
    positions = range(len(labels))
    rate = summary["rate"]
    ax.errorbar(list(positions), rate, yerr=[[r - lo for r, lo in zip(rate, summary["ci_low"])],
                                             [hi - r for r, hi in zip(rate, summary["ci_high"])]],
                fmt="o", capsize=3, label=f"rejection rate ({CONFIDENCE:.0%} Clopper–Pearson)")
    ax.scatter(list(positions), summary["alpha_share"], marker="_", s=300, color="red", label="α share")
    ax.set_xticks(list(positions))
    ax.set_xticklabels(labels, rotation=75, ha="right", fontsize=6)
    ax.set_ylabel("probability")
    ax.legend(fontsize=7)
    return figure


def _progress(line: str) -> None:
    print(f"scan-type-one: {line}", file=sys.stderr, flush=True)


def _columns(rows: list, keys) -> dict:
    return {key: [row[key] for row in rows] for key in keys}


def _boundary(looks: list, case: str, tests=("event",)) -> tuple:
    """(the boundary table's columns, sizes by test) of ``case`` (randomized response) at its last look: each test's
    runs per input and share of α, as planned (the same in every scan), with :func:`boundary_sizes` there."""
    last = max((look for look in looks if look["case"] == case), key=lambda look: look["look"])
    columns, sizes = {k: [] for k in ("test", "certificate", "runs_per_input", "level", "exact_size",
                                      "two_cases_at_this_size")}, {}
    for test in tests:
        ran = [look for look in looks if look["case"] == case and look["look"] == last["look"] and test in look["ran"]]
        runs = last["event_runs"] if test == "event" else max((look["float_runs"] for look in ran), default=0)
        level = last["shares"].get(test, last["level"])
        if runs == 0:
            continue
        sizes[test] = boundary_sizes(runs, level)
        for certificate, size in sizes[test].items():
            for key, value in (("test", test), ("certificate", certificate), ("runs_per_input", runs),
                               ("level", level), ("exact_size", size), ("two_cases_at_this_size", 1 - (1 - size) ** 2)):
                columns[key].append(value)
    return columns, sizes, last


def _sizes_text(grid: Grid, sizes: dict, last: dict) -> str:
    """Where the measured rates sit, from :func:`_boundary`'s exact sizes."""
    event = sizes["event"]
    text = (f"Where these sit: randomized response's exact event at the last look ({last['event_runs']} runs per input, "
            f"the event test's level {last['shares'].get('event', last['level']):.4f}) is refuted with probability "
            f"{event['odds-ratio']:.4f} by the odds-ratio certificate, {event['rate-ratio']:.4f} by the rate-ratio one "
            f"and {event['clopper-pearson']:.4f} by the Clopper–Pearson pair (exact, by enumeration)")
    if grid.target == TARGET:
        return (text + f"; two independent cases at {event['rate-ratio']:.4f} give a finding in "
                f"{1 - (1 - event['rate-ratio']) ** 2:.3f} of scans, under the union bound's {ALPHA:g}. Exact "
                "conditional tests on hundreds of runs are near their level, so the scan's rate is near α, not far "
                "below it.")
    if "float" not in sizes:
        return text + "; the float-bit test ran in no scan."
    bits = sizes["float"]
    return (text + f". The float-bit test certifies at its own share, {last['shares'].get('float', 0):.4f}: where its "
            f"event is {{r = 0}} or its complement (the codes of y that r = 0 gives, {bits['odds-ratio']:.4f} by the "
            f"odds ratio, {bits['rate-ratio']:.4f} by the rate ratio); an event of a part of those codes (one binary "
            "exponent of u/2) has the same ratio of probabilities, e^ε, and a smaller odds ratio. Each test sits at "
            "its null's boundary.")


def run(context) -> ExperimentOutput:
    grid = GRIDS[context.grid]() if context.grid else Grid(12 if context.quick else 1000)
    scans = grid.scans
    started = time.perf_counter()
    cases, looks = run_scans(scans, context.seed, _progress, grid.target)
    seconds = time.perf_counter() - started
    summary = summarize(cases, looks, scans)
    findings_total = summary["refuted"][0]
    bound = int(stats.binom.ppf(TARGET_QUANTILE, scans, ALPHA))
    passed = findings_total <= bound
    low, high = summary["ci_low"][0], summary["ci_high"][0]
    target = {"target": [f"scans with a finding ≤ Binomial({scans}, {ALPHA:g})'s {TARGET_QUANTILE:.1%} point"],
              "measured": [findings_total], "bound": [bound], "result": ["PASS" if passed else "FAIL"]}
    exceeding = [c for c, e in zip(summary["component"], summary["exceeds"]) if e]
    cpu = sum({c["scan"]: c["scan_cpu_seconds"] for c in cases}.values())
    findings = [
        f"**Target {'PASS' if passed else 'FAIL'}**: {findings_total} of {scans} scans at α = {ALPHA:g} had a (false) "
        f"finding, rate {findings_total / scans:.3f} ({CONFIDENCE:.0%} Clopper–Pearson {low:.3f}–{high:.3f}); the "
        f"bound is Binomial({scans}, {ALPHA:g})'s {TARGET_QUANTILE:.1%} point, {bound}.",
        ("No component's interval lies wholly above the share of α it was given." if not exceeding else
         "Components whose interval lies wholly above their share of α: " + "; ".join(exceeding) + "."),
        f"{scans} scans in {seconds:.0f} s ({cpu:.0f} s of this process's CPU, {cpu / scans:.2f} s a scan).",
    ]
    response = "Response" if grid.target == TARGET else "JitteredResponse"
    boundary, sizes, last = _boundary(looks, response, ("event",) if grid.target == TARGET else ("event", "float"))
    if grid.target == TARGET:
        boundary.pop("test")  # one test has a share there
    findings.insert(1, _sizes_text(grid, sizes, last))
    look_rows = [{**look, "shares": "; ".join(f"{k} {v:.4g}" for k, v in look["shares"].items()),
                  "ran": " ".join(look["ran"]), "refuted": " ".join(look["refuted"])} for look in looks]
    source = f"tests/{grid.target.replace('.', '/')}.py"
    settings = {"target": f"{grid.target} ({source}), ε = 1, in process", "alpha": ALPHA,
                "scans": scans, "max_runs": MAX_RUNS, "timeout": TIMEOUT,
                "scan seeds": f"{scan_seed(context.seed, 0)}..{scan_seed(context.seed, scans - 1)}",
                "intervals": f"two-sided Clopper–Pearson, {CONFIDENCE:.0%}"}
    look_columns = ["scan", "case", "look", "early", "level", "event_runs", "certificate", "shares", "refuted"]
    if grid.target != TARGET:
        look_columns[-1:-1] = ["ran", "float_certificate", "float_runs"]
    tables = [Table("target", target), Table("components", summary),
              Table("cases", _columns(cases, list(cases[0]))),
              Table("boundary", boundary),
              Table("looks", _columns(look_rows, look_columns))]
    return ExperimentOutput(tables, _figure(summary), settings, findings)


EXPERIMENTS = [Experiment(
    name="scan-type-one",
    description="miaudit scan's family-wise type-I error on two entry points exactly at their ε-DP claims: scans "
                "with a finding, and each case's, test's and look's refutations against its share of α",
    source="study",
    run=run,
    full_runtime="780 s (541 s of CPU, 0.54 s a scan) on the shared 2-core x86_64 CPU, load average 0.4 at the start "
                 "and 3.4 at the end; --grid 300: about 190 s of CPU; --grid float (1,400 scans of "
                 "planted_lib._float_exact): 1,447 s (1,099 s of CPU, 0.78 s a scan), load average 2.7 "
                 "at the start and 2.6 at the end",
    grids=tuple(GRIDS),
)]
