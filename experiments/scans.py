"""``miaudit experiment scans``: ``miaudit scan`` of real libraries, each at a pinned version in its own venv.

Each library is installed at its pinned version (with the extra requirements its version needs) into a
virtual environment under the output folder, as ``real-bugs`` does (:func:`experiments.real_bugs._interpreter`:
``venvs/NAME-VERSION…``, reused when present), and scanned there by ``python -m audit.cli.main scan NAME``
with this checkout on ``PYTHONPATH``. The page (``scans.md``; ``docs/benchmarks/scans.md`` with ``--page``)
gives the date, the machine and its load, the versions, and per library the cases, findings, controls and
skipped cases with each finding's entry point, pair, counts and certified bound. ``--quick`` scans only the
libraries installed here at their pinned version, at ε = 1 and 2,000 runs per case.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .framework import Experiment, ExperimentOutput, Table, machine_description, new_figure, write_atomic
from .real_bugs import REPO_ROOT, BugCase, _installed, _interpreter


def _counts(outcome: dict) -> str:
    from audit.scan.report import _counts as counts

    return counts(outcome)


def _bound(outcome: dict) -> str:
    from audit.scan.report import _bound as bound

    return bound(outcome)


@dataclass(frozen=True)
class ScanTarget:
    """A library to scan: its profile's name, the pinned distribution and what else its version needs."""

    name: str
    package: str
    version: str
    extra_requirements: tuple = ()
    #: Why a run may leave it out (said on the page when ``MIAUDIT_SCANS`` does not select it).
    cost: str = ""

    def install_case(self) -> BugCase:
        """The venv recipe :func:`experiments.real_bugs._interpreter` builds (only the install fields are read)."""
        return BugCase(f"scan {self.name}", self.name, self.package, self.version, "", "", "", "", "", (), "",
                       extra_requirements=self.extra_requirements, isolated=bool(self.extra_requirements))


#: diffprivlib 0.6.6 passes ``multi_class`` to scikit-learn's LogisticRegression, which 1.6 removed; pure-ldp 1.2.0
#: imports statsmodels without declaring it; pure-ldp 1.2.0 and multi-freq-ldpy 0.2.5 hash a str with xxhash, which
#: 4 refuses ("Strings must be encoded before hashing").
TARGETS = (ScanTarget("diffprivlib", "diffprivlib", "0.6.6", ("scikit-learn<1.6",),
                      "its full scan takes 22 minutes on the 2-core machine at load 4-7 (233 cases)"),
           ScanTarget("pure-ldp", "pure-ldp", "1.2.0", ("statsmodels", "xxhash<4")),
           ScanTarget("multi-freq-ldpy", "multi-freq-ldpy", "0.2.5", ("xxhash<4",)),
           ScanTarget("opendp", "opendp", "0.16.0"),
           ScanTarget("python-dp", "python-dp", "1.1.5"),
           ScanTarget("pipeline-dp", "pipeline-dp", "0.3.1"))


def not_selected(target: ScanTarget, selected: list) -> str:
    """The page's line for a library ``MIAUDIT_SCANS`` leaves out, with what a run of it costs where known."""
    why = f"; {target.cost}" if target.cost else ""
    return f"{target.name} {target.version}: not selected (MIAUDIT_SCANS={','.join(selected)}{why})"


def _scan(target: ScanTarget, python: str, folder: Path, seed: int, quick: bool) -> dict:
    command = [python, "-m", "audit.cli.main", "scan", target.name, "--out", str(folder), "--json", "--quiet",
               "--seed", str(seed)] + (["--epsilons", "1", "--max-runs", "2000"] if quick else [])
    environment = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=folder.parent)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return {"library": target.name, "version": target.version, "error": done.stderr.strip()[-400:],
                "seconds": round(seconds, 1)}
    report = json.loads((folder / "scan.json").read_text(encoding="utf-8"))
    return {"library": target.name, "version": report["version"], "cases": report["cases"],
            "findings": report["findings"], "controls": report["controls"], "skipped": report["skipped"],
            "statement": report["statement"], "seconds": round(seconds, 1), "command": " ".join(command[1:4] + [
                target.name] + command[command.index("--seed"):])}


def _markdown(rows: list, machine: str, quick: bool) -> str:
    lines = ["# Scans of real libraries", "",
             f"Written by `miaudit experiment scans{' --quick' if quick else ''}` on {datetime.date.today().isoformat()} "
             f"— {machine}. Each library is installed at its pinned version into its own venv and scanned by "
             "`miaudit scan NAME` there (default flags: ε in {0.1, 1, 4}, at most 6,000 runs and 60 s per case).", "",
             "| library | version | cases | findings | controls | skipped | seconds |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['library']} | {row['version']} | scan failed: {row['error']} |  |  |  | {row['seconds']} |")
            continue
        lines.append(f"| {row['library']} | {row['version']} | {row['cases']} | {len(row['findings'])} | "
                     f"{len(row['controls'])} | {len(row['skipped'])} | {row['seconds']} |")
    for row in rows:
        if "error" in row:
            continue
        lines += ["", f"## {row['library']} {row['version']}", "", row["statement"], "",
                  "| finding | pair | claim (audited as) | event counts | certified ε | runs | library warned |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for o in row["findings"]:
            counts, bound = _counts(o), _bound(o)
            warned = "yes" if any(n.startswith("warned:") for n in o.get("notes", [])) else "no"
            lines.append(f"| `{o['entry']}({o['settings']})` | {o['pair']} | {o['claim']} ({o.get('audited_claim')}) | "
                         f"{counts} | {bound} | {o['runs']} | {warned} |")
        lines += ["", f"Controls (not refuted): {', '.join(sorted({o['entry'] for o in row['controls']})) or 'none'}.",
                  "", "Skipped: " + ("; ".join(f"`{s.get('id', s.get('what'))}`: {s['reason'][:160]}"
                                               for s in row["skipped"]) or "none") + "."]
    return "\n".join(lines) + "\n"


def run(context) -> ExperimentOutput:
    out = Path(context.out_dir) if getattr(context, "out_dir", None) else REPO_ROOT / "experiments-out" / "scans"
    out = out.resolve()  # absolute: each scan runs in its own folder, with its venv's python named by path
    venvs = out / "venvs"
    out.mkdir(parents=True, exist_ok=True)
    rows, not_run = [], []
    selected = [name.strip() for name in os.environ.get("MIAUDIT_SCANS", "").split(",") if name.strip()]
    for target in TARGETS:
        if selected and target.name not in selected:
            not_run.append(not_selected(target, selected))
            continue
        if context.quick and _installed(target.package) != target.version:
            not_run.append(f"{target.name} {target.version}: --quick installs nothing and it is not installed here")
            continue
        case = target.install_case()
        if context.quick:
            case = BugCase(case.name, case.library, case.package, case.version, "", "", "", "", "", (), "")
        python, how = _interpreter(case, venvs)
        if python is None:
            not_run.append(f"{target.name} {target.version}: {how}")
            continue
        rows.append(_scan(target, python, out / f"scan-{target.name}", context.seed, context.quick))
    machine = machine_description(None) + f", load average {os.getloadavg()[0]:.1f} at the end"
    page = _markdown(rows, machine, context.quick) + "".join(f"\nNot run: {line}.\n" for line in not_run)
    write_atomic(out / "scans.md", lambda handle: handle.write(page.encode("utf-8")))
    done = [row for row in rows if "error" not in row]
    table = Table("scans", {"library": [r["library"] for r in done], "version": [r["version"] for r in done],
                            "cases": [r["cases"] for r in done], "findings": [len(r["findings"]) for r in done],
                            "controls": [len(r["controls"]) for r in done], "skipped": [len(r["skipped"]) for r in done],
                            "seconds": [r["seconds"] for r in done]})
    rows_found = [(r, o) for r in done for o in r["findings"]]
    found = Table("scan_findings", {
        "library": [r["library"] for r, _ in rows_found], "entry point": [o["entry"] for _, o in rows_found],
        "parameters": [o["settings"] for _, o in rows_found], "pair": [o["pair"] for _, o in rows_found],
        "claim (audited as)": [f"{o['claim']} ({o.get('audited_claim')})" for _, o in rows_found],
        "event counts": [_counts(o) for _, o in rows_found],
        "certified ε": [_bound(o) for _, o in rows_found], "runs": [o["runs"] for _, o in rows_found],
        "library warned": ["yes" if any(n.startswith("warned:") for n in o.get("notes", [])) else "no"
                           for _, o in rows_found]})
    rows_kept = [(r, o) for r in done for o in r["controls"]]
    controls = Table("scan_controls", {
        "library": [r["library"] for r, _ in rows_kept], "entry point": [o["entry"] for _, o in rows_kept],
        "parameters": [o["settings"] for _, o in rows_kept], "pair": [o["pair"] for _, o in rows_kept],
        "claim (audited as)": [f"{o['claim']} ({o.get('audited_claim')})" for _, o in rows_kept],
        "certified ε": [_bound(o) for _, o in rows_kept]})
    rows_skipped = [(r, s) for r in done for s in r["skipped"]]
    skipped = Table("scan_skipped", {"library": [r["library"] for r, _ in rows_skipped],
                                     "case": [s.get("id", s.get("what")) for _, s in rows_skipped],
                                     "reason": [s["reason"][:200] for _, s in rows_skipped]})
    figure, axes = new_figure(width=6.0, height=0.6 + 0.5 * max(1, len(done)))
    axes[0, 0].barh([r["library"] for r in done], [len(r["findings"]) for r in done], color="tab:red")
    axes[0, 0].set_xlabel("findings (refuted claims)")
    findings = [f"{r['library']} {r['version']}: {r['cases']} cases, {len(r['findings'])} findings, {len(r['controls'])} "
                f"controls, {len(r['skipped'])} skipped, {r['seconds']} s" for r in done] + not_run
    return ExperimentOutput([table, found, controls, skipped], figure, {"quick": context.quick, "libraries": len(done),
                                                                       "scanned": ", ".join(r["library"] for r in done)}, findings)


EXPERIMENTS = [Experiment(
    name="scans",
    description="miaudit scan of real libraries (diffprivlib, pure-ldp, multi-freq-ldpy, OpenDP, python-dp, PipelineDP), "
                "each at a pinned version in its own venv: findings, "
                "controls and skipped cases",
    source="study (issue 40)",
    run=run,
    full_runtime="6,833 s on the shared 2-core x86_64 CPU, load 4-7 from other work during most of the run "
                 "(multi-freq-ldpy 2,098 s, python-dp 1,940 s, diffprivlib 1,333 s, OpenDP 774 s, PipelineDP 536 s, "
                 "pure-ldp 93 s)",
)]
