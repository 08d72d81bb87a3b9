"""``miaudit experiment scans``: ``miaudit scan`` of real libraries, each at a pinned version in its own venv.

Each library is installed at its pinned version (with the extra requirements its version needs) into a
virtual environment under the output folder, as ``real-bugs`` does (:func:`experiments.real_bugs._interpreter`:
``venvs/NAME-VERSION…``, reused when present), and scanned there by ``python -m audit.cli.main scan NAME``
with this checkout on ``PYTHONPATH``. ``MIAUDIT_SCANS=NAME,…`` scans only the libraries named.

Each scanned library's run is kept as a record, ``NAME.json`` (:func:`build_record`: the version, cases, every
finding, control and skipped case as the page shows them, the scan's statement, seconds and command, and the
run's UTC date, machine and load average), in the folder named after the page's stem beside the page: with
``--page docs/benchmarks/scans.md``, ``docs/benchmarks/scans/``; without ``--page``, ``scans/`` beside
``scans.md`` in the output folder. As ``real-bugs`` writes its own page, this experiment writes its page itself
(:attr:`experiments.framework.Experiment.writes_page`), from every record there (:func:`page_markdown`), after
each library: a library not selected keeps its record and its section, one never run is listed with the
command that runs it. ``python -m experiments.scans --records FOLDER`` rebuilds ``FOLDER.md`` from the records;
``--import OUT`` first records the libraries scanned by a run whose output folder is ``OUT``
(:func:`import_run`). ``--quick`` scans only the libraries installed here at their pinned version, at ε = 1
and 2,000 runs per case.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from estimators.validation import InputError

from .framework import (Experiment, ExperimentOutput, Table, load_average, machine_description, new_figure,
                        page_argument, write_atomic)
from .real_bugs import REPO_ROOT, BugCase, _installed, _interpreter


def _counts(outcome: dict) -> str:
    from audit.scan.report import _counts as counts

    return counts(outcome)


def _bound(outcome: dict) -> str:
    from audit.scan.words import certified_bound as bound

    return bound(outcome)


@dataclass(frozen=True)
class ScanTarget:
    """A library to scan: its profile's name, the pinned distribution and what else its version needs."""

    name: str
    package: str
    version: str
    extra_requirements: tuple = ()
    #: Why a run may leave it out (said in the run's summary when ``MIAUDIT_SCANS`` does not select it, and on the
    #: page while it has no record).
    cost: str = ""

    def install_case(self) -> BugCase:
        """The venv recipe :func:`experiments.real_bugs._interpreter` builds (only the install fields are read)."""
        return BugCase(f"scan {self.name}", self.name, self.package, self.version, "", "", "", "", "", (), "",
                       extra_requirements=self.extra_requirements, isolated=bool(self.extra_requirements))


#: diffprivlib 0.6.6 passes ``multi_class`` to scikit-learn's LogisticRegression, which 1.6 removed; pure-ldp 1.2.0
#: imports statsmodels without declaring it; pure-ldp 1.2.0 and multi-freq-ldpy 0.2.5 hash a str with xxhash, which
#: 4 refuses ("Strings must be encoded before hashing"). smartnoise-sql 1.0.10 requires opendp>=0.14.1,<0.15 (miaudit's
#: tests use another OpenDP): its own venv, where its requirements install it.
TARGETS = (ScanTarget("diffprivlib", "diffprivlib", "0.6.6", ("scikit-learn<1.6",),
                      "its full scan takes 18 minutes on the 2-core machine at load 0.5-3 (245 cases)"),
           ScanTarget("pure-ldp", "pure-ldp", "1.2.0", ("statsmodels", "xxhash<4")),
           ScanTarget("multi-freq-ldpy", "multi-freq-ldpy", "0.2.5", ("xxhash<4",)),
           ScanTarget("opendp", "opendp", "0.16.0"),
           ScanTarget("python-dp", "python-dp", "1.1.5"),
           ScanTarget("pipeline-dp", "pipeline-dp", "0.3.1"),
           ScanTarget("smartnoise-sql", "smartnoise-sql", "1.0.10", (),
                      "its 9 cases of up to 2,100 runs took 35 minutes on the 2-core machine at load 4-5 (0.1-0.2 s a "
                      "call)"))


def not_selected(target: ScanTarget, selected: list) -> str:
    """The run summary's line for a library ``MIAUDIT_SCANS`` leaves out (its record, if any, stays on the page),
    with what a run of it costs where known."""
    why = f"; {target.cost}" if target.cost else ""
    return f"{target.name} {target.version}: not selected (MIAUDIT_SCANS={','.join(selected)}{why})"


#: ``miaudit scan``'s flags under ``--quick``: ε = 1 and 2,000 runs per case.
QUICK_FLAGS = ("--epsilons", "1", "--max-runs", "2000")


def scan_command(name: str, seed: int, quick: bool) -> str:
    """The ``miaudit scan`` command a record says ran (in the library's venv; ``--out``, ``--json`` and ``--quiet``
    left out: they change where the report goes, not what it says)."""
    return " ".join(["miaudit", "scan", name, "--seed", str(seed), *(QUICK_FLAGS if quick else ())])


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _utc_text(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load(value) -> float | None:
    """A load average as a record keeps it: 2 decimals, ``None`` where the platform has none (NaN is not JSON)."""
    return None if value is None or value != value else round(float(value), 2)


def build_record(name: str, report: dict, seconds: float, command: str, run_info: dict) -> dict:
    """A library's run record: what its section of the page shows, taken from its ``scan.json`` (``report``).

    Parameters
    ----------
    name : str
        The library's name in :data:`TARGETS`.
    report : dict
        The scan's ``scan.json`` (:func:`audit.scan.report.write_scan_report`).
    seconds : float
        The scan's wall time (its interpreter's start included).
    command : str
        :func:`scan_command`.
    run_info : dict
        ``date`` (UTC, ``YYYY-MM-DDTHH:MM:SSZ``, the scan's end), ``machine``, ``load_average`` ([start, end]) and
        ``load_over`` (``"scan"``: this library's scan; ``"experiment run"``: the whole run, for an imported record).
    """
    def audited(o):
        return {"entry": o["entry"], "settings": o["settings"], "pair": o["pair"], "claim": o["claim"],
                "audited_claim": o.get("audited_claim"), "bound": _bound(o)}

    findings = [{**audited(o), "counts": _counts(o), "runs": o["runs"],
                 "warned": any(str(n).startswith("warned:") for n in o.get("notes") or [])} for o in report["findings"]]
    return {"library": name, "version": report["version"], "cases": report["cases"], "statement": report["statement"],
            "seconds": round(float(seconds), 1), "command": command, "run": dict(run_info), "findings": findings,
            "controls": [audited(o) for o in report["controls"]],
            "skipped": [{"id": s.get("id") or s.get("what"), "reason": s["reason"]} for s in report["skipped"]]}


def write_record(folder: Path, record: dict) -> Path:
    """Write ``record`` to ``folder/LIBRARY.json`` (sorted keys, one space of indent: the same record, the same
    bytes, so a rerun's diff shows only what changed)."""
    path = Path(folder) / f"{record['library']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    write_atomic(path, lambda handle: handle.write(text.encode("utf-8")))
    return path


def read_records(folder: Path) -> dict:
    """The records in ``folder`` of the libraries in :data:`TARGETS`: name → record (a library without one is left
    out)."""
    records = {}
    for target in TARGETS:
        path = Path(folder) / f"{target.name}.json"
        if not path.is_file():
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise InputError(f"argument '--records': {path} is not a scan record (JSON: {error})") from None
        if not isinstance(record, dict) or record.get("library") != target.name:
            raise InputError(f"argument '--records': {path} is not the record of {target.name}")
        records[target.name] = record
    return records


def _rerun(names: str, page: str) -> str:
    return f"MIAUDIT_SCANS={names} miaudit experiment scans --seed 0 --page {page}"


def _run_text(record: dict) -> str:
    run = record["run"]
    start, end = run["load_average"]
    over = "this scan" if run["load_over"] == "scan" else \
        "the experiment's whole run (all its libraries; the record was imported from the run's folder)"
    load = "load average not recorded" if start is None else \
        f"load average {start:.2f} at the start and {end:.2f} at the end of {over}"
    resumed = (f" ({run['resumed_cases']} of its cases were audited by an earlier, interrupted run of the "
               f"experiment and kept, `--resume`: their time is not in these seconds)") if run.get("resumed_cases") else ""
    return (f"Run: finished {run['date'].replace('T', ' ').replace('Z', ' UTC')}, {record['seconds']} s{resumed}, on "
            f"{run['machine']}, {load}; command `{record['command']}` in the library's venv.")


def _section(record: dict, target: ScanTarget) -> list:
    from .docs_page import markdown_table

    pin = "" if record["version"] == target.version else \
        f" (the pin is now {target.version}: this record is of an earlier pin; rescan it)"
    findings, controls, skipped = record["findings"], record["controls"], record["skipped"]
    lines = ["", f"## {record['library']} {record['version']}{pin}", "", _run_text(record), "", record["statement"],
             "", f"### Findings ({len(findings)})", ""]
    if findings:
        lines.append(markdown_table({
            "entry point": [f"`{o['entry']}({o['settings']})`" for o in findings],
            "pair": [o["pair"] for o in findings],
            "claim (audited as)": [f"{o['claim']} ({o['audited_claim']})" for o in findings],
            "event counts": [o["counts"] for o in findings], "certified ε": [o["bound"] for o in findings],
            "runs": [str(o["runs"]) for o in findings],
            "library warned": ["yes" if o["warned"] else "no" for o in findings]}, max_rows=len(findings)).rstrip("\n"))
    else:
        lines.append("None.")
    per_entry = {}
    for o in controls:
        per_entry[o["entry"]] = per_entry.get(o["entry"], 0) + 1
    entries = ", ".join(f"`{entry}` ({count})" for entry, count in sorted(per_entry.items()))
    lines += ["", f"### Controls ({len(controls)} cases not refuted, {len(per_entry)} entry points)", "",
              entries + "." if per_entry else "None.", "",
              f"### Skipped ({len(skipped)})", ""]
    lines.append(markdown_table({"case": [f"`{s['id']}`" for s in skipped], "reason": [s["reason"] for s in skipped]},
                                max_rows=len(skipped)).rstrip("\n") if skipped else "None.")
    return lines


def page_markdown(records: dict, page: str) -> str:
    """The page: the summary table, then per library its run, every finding, its controls' entry points and every
    skipped case; a library without a record is listed as not run yet, with the command that runs it.

    Parameters
    ----------
    records : dict
        Name → record (:func:`read_records`).
    page : str
        The page as a reader types it (its records are in the folder of its stem beside it).
    """
    folder = page[:-3] if page.endswith(".md") else page
    lines = ["# Scans of real libraries", "",
             "Each library is installed at its pinned version into its own venv and scanned there by `miaudit scan "
             "NAME` (the command in its section); a finding is a claim refuted at the scan's family-wise α, a control "
             "a case not refuted. Each library's run is kept as a record, "
             f"`{folder}/NAME.json`, and this page is built from the records, each section stating its own run. "
             f"`{_rerun('NAME,…', page)}` rescans the libraries named (every library without `MIAUDIT_SCANS`) "
             "and rewrites the page from every record; "
             f"`python -m experiments.scans --records {folder}` rebuilds the page alone; "
             f"`python -m experiments.scans --import OUT --records {folder}` records the libraries scanned by a run "
             "whose output folder is OUT. Do not edit this page by hand.", "",
             "| library | version | cases | findings | controls | skipped | seconds | run finished (UTC) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for target in TARGETS:
        r = records.get(target.name)
        lines.append(f"| {target.name} | {target.version} | not run yet |  |  |  |  |  |" if r is None else
                     f"| {r['library']} | {r['version']} | {r['cases']} | {len(r['findings'])} | "
                     f"{len(r['controls'])} | {len(r['skipped'])} | {r['seconds']} | "
                     f"{r['run']['date'].replace('T', ' ').rstrip('Z')} |")
    for target in TARGETS:
        if target.name in records:
            lines += _section(records[target.name], target)
        else:
            cost = f" ({target.cost})" if target.cost else ""
            lines += ["", f"## {target.name} {target.version}", "",
                      f"Not run yet: `{_rerun(target.name, page)}`{cost}."]
    return "\n".join(lines) + "\n"


def write_page(page: Path) -> Path:
    """Rewrite ``page`` (``FOLDER.md``) from every record in ``FOLDER`` (the folder of its stem, beside it)."""
    page = Path(page)
    text = page_markdown(read_records(page.parent / page.stem), page_argument(page))
    write_atomic(page, lambda handle: handle.write(text.encode("utf-8")))
    return page


def _selected() -> list:
    """The libraries ``MIAUDIT_SCANS`` names (none: every library); an unknown name is an error."""
    selected = [name.strip() for name in os.environ.get("MIAUDIT_SCANS", "").split(",") if name.strip()]
    unknown = [name for name in selected if name not in {target.name for target in TARGETS}]
    if unknown:
        raise InputError(f"MIAUDIT_SCANS names {', '.join(unknown)}, not a library of the experiment (it scans "
                         f"{', '.join(target.name for target in TARGETS)})")
    return selected


def resumed_cases(folder: Path) -> int:
    """The cases an interrupted scan recorded in ``folder/scan-state.jsonl`` (its first line is the scan's settings,
    each case's last line its outcome), which ``miaudit scan --resume`` does not audit again: not those marked to be
    audited again (:data:`audit.scan.case_audit.RETRY`), nor a line cut short; 0 where there is no such file."""
    from audit.scan.case_audit import RETRY

    path = Path(folder) / "scan-state.jsonl"
    if not path.is_file():
        return 0
    last = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        try:
            outcome = json.loads(line)
        except json.JSONDecodeError:  # cut short by the interruption: audited again
            continue
        last[outcome["id"]] = outcome
    return sum(not outcome.get(RETRY) for outcome in last.values())


def _scan(target: ScanTarget, python: str, folder: Path, seed: int, quick: bool, workers: int = 1) -> tuple:
    """Scan ``target`` with ``python``: (its ``scan.json``, or None, seconds, the error where it failed). With
    ``workers`` > 1 the scan audits its cases in that many processes (its report is the same for any number); a
    ``folder`` that holds an interrupted scan's state is resumed (``--resume``: the cases it recorded are kept)."""
    command = [python, "-m", "audit.cli.main", "scan", target.name, "--out", str(folder), "--json", "--quiet",
               "--seed", str(seed), *(QUICK_FLAGS if quick else ()),
               *(["--workers", str(workers)] if workers > 1 else []),
               *(["--resume"] if (folder / "scan-state.jsonl").is_file() and not (folder / "scan.json").is_file()
                 else [])]
    environment = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=folder.parent)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return None, seconds, done.stderr.strip()[-400:]
    return json.loads((folder / "scan.json").read_text(encoding="utf-8")), seconds, ""


def _summary_run(folder: Path) -> dict:
    """The machine and load average that the framework's ``summary.md`` in a run's ``folder`` gives (the whole
    run's), or what stands in for them where the run wrote none (it was cut short or is still running)."""
    path = folder / "summary.md"
    machine, loads = "a machine not recorded (the run's folder has no summary.md)", [None, None]
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("- device: "):
                machine = line[len("- device: "):]
            elif line.startswith("- load average (1 minute): "):
                found = re.search(r"(\S+) at the start, (\S+) at the end", line)
                loads = [_load(float(found[1])), _load(float(found[2]))] if found else loads
    return {"machine": machine, "load_average": loads, "load_over": "experiment run"}


def import_run(folder, records_folder) -> list:
    """Record each library scanned by a run of ``miaudit experiment scans`` from its output ``folder``.

    Reads ``scan-NAME/scan.json`` (a library without one, or whose scan has not ended, is left out), the seconds in
    ``scans.csv`` (the scan's own, from ``scan.json``, where the run has not written it yet), and the machine and
    load average in ``summary.md`` (the whole run's); the date is ``scan.json``'s modification time (the scan's
    end). Where the run wrote ``scans.csv``, only the libraries it lists are the run's: a ``scan-NAME`` folder left
    in ``folder`` by an earlier run (``MIAUDIT_SCANS`` selecting others this time) would otherwise be recorded with
    this run's seconds and load. Writes nothing into ``folder``.

    Returns
    -------
    list of dict
        The records written into ``records_folder`` (:func:`write_record`), in :data:`TARGETS` order.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"argument '--import': {folder} is not a folder (give the --out folder of a run of "
                         "miaudit experiment scans)")
    seconds = {}
    if (folder / "scans.csv").is_file():
        with open(folder / "scans.csv", newline="", encoding="utf-8") as handle:
            seconds = {row["library"]: float(row["seconds"]) for row in csv.DictReader(handle)}
    common, written = _summary_run(folder), []
    for target in TARGETS:
        path = folder / f"scan-{target.name}" / "scan.json"
        if not path.is_file() or (seconds and target.name not in seconds):
            continue
        report = json.loads(path.read_text(encoding="utf-8"))
        if report.get("target") != target.name:
            raise InputError(f"argument '--import': {path} is a scan of {report.get('target')!r}, not of {target.name}")
        settings = report["settings"]
        quick = [float(e) for e in settings["epsilons"]] == [float(QUICK_FLAGS[1])] and \
            settings["max_runs"] == int(QUICK_FLAGS[3])
        ended = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
        record = build_record(target.name, report, seconds.get(target.name, report["seconds"]),
                              scan_command(target.name, settings["seed"], quick), {**common, "date": _utc_text(ended)})
        write_record(records_folder, record)
        written.append(record)
    return written


def _tables(done: list) -> list:
    """The run's CSV tables, from the records of the libraries it scanned."""
    table = Table("scans", {"library": [r["library"] for r in done], "version": [r["version"] for r in done],
                            "cases": [r["cases"] for r in done], "findings": [len(r["findings"]) for r in done],
                            "controls": [len(r["controls"]) for r in done],
                            "skipped": [len(r["skipped"]) for r in done],
                            "seconds": [r["seconds"] for r in done]})
    rows_found = [(r, o) for r in done for o in r["findings"]]
    found = Table("scan_findings", {
        "library": [r["library"] for r, _ in rows_found], "entry point": [o["entry"] for _, o in rows_found],
        "parameters": [o["settings"] for _, o in rows_found], "pair": [o["pair"] for _, o in rows_found],
        "claim (audited as)": [f"{o['claim']} ({o['audited_claim']})" for _, o in rows_found],
        "event counts": [o["counts"] for _, o in rows_found], "certified ε": [o["bound"] for _, o in rows_found],
        "runs": [o["runs"] for _, o in rows_found],
        "library warned": ["yes" if o["warned"] else "no" for _, o in rows_found]})
    rows_kept = [(r, o) for r in done for o in r["controls"]]
    controls = Table("scan_controls", {
        "library": [r["library"] for r, _ in rows_kept], "entry point": [o["entry"] for _, o in rows_kept],
        "parameters": [o["settings"] for _, o in rows_kept], "pair": [o["pair"] for _, o in rows_kept],
        "claim (audited as)": [f"{o['claim']} ({o['audited_claim']})" for _, o in rows_kept],
        "certified ε": [o["bound"] for _, o in rows_kept]})
    rows_skipped = [(r, s) for r in done for s in r["skipped"]]
    skipped = Table("scan_skipped", {"library": [r["library"] for r, _ in rows_skipped],
                                     "case": [s["id"] for _, s in rows_skipped],
                                     "reason": [s["reason"][:200] for _, s in rows_skipped]})
    return [table, found, controls, skipped]


def run(context) -> ExperimentOutput:
    out = Path(context.out_dir) if getattr(context, "out_dir", None) else REPO_ROOT / "experiments-out" / "scans"
    out = out.resolve()  # absolute: each scan runs in its own folder, with its venv's python named by path
    page = Path(context.page) if getattr(context, "page", None) else out / "scans.md"
    records = page.parent / page.stem
    venvs = out / "venvs"
    out.mkdir(parents=True, exist_ok=True)
    done, not_run = [], []
    selected = _selected()
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
        load_start, folder = load_average(), out / f"scan-{target.name}"
        if (folder / "scan.json").is_file():  # an earlier run's ended scan: scanned again from the start
            (folder / "scan.json").unlink()
            (folder / "scan-state.jsonl").unlink(missing_ok=True)
        resumed = resumed_cases(folder)
        report, seconds, error = _scan(target, python, folder, context.seed, context.quick,
                                       getattr(context, "workers", 1))
        if report is None:  # its record (if any) stays: the page keeps the last run that ended
            not_run.append(f"{target.name} {target.version}: scan failed after {seconds:.1f} s: {error}")
            continue
        record = build_record(target.name, report, seconds, scan_command(target.name, context.seed, context.quick),
                              {"date": _utc_text(_utc_now()), "machine": machine_description(None),
                               "load_average": [_load(load_start), _load(load_average())], "load_over": "scan",
                               **({"resumed_cases": resumed} if resumed else {})})
        write_record(records, record)
        write_page(page)  # after each library: a run cut short leaves a page of what it recorded
        done.append(record)
    write_page(page)
    figure, axes = new_figure(width=6.0, height=0.6 + 0.5 * max(1, len(done)))
    axes[0, 0].barh([r["library"] for r in done], [len(r["findings"]) for r in done], color="tab:red")
    axes[0, 0].set_xlabel("findings (refuted claims)")
    findings = [f"{r['library']} {r['version']}: {r['cases']} cases, {len(r['findings'])} findings, "
                f"{len(r['controls'])} controls, {len(r['skipped'])} skipped, {r['seconds']} s" for r in done] + not_run
    findings.append(f"page {page_argument(page)}, built from the records in {page_argument(records)}/")
    return ExperimentOutput(_tables(done), figure, {"quick": context.quick, "libraries": len(done),
                                                    "scanned": ", ".join(r["library"] for r in done)}, findings)


EXPERIMENTS = [Experiment(
    name="scans",
    description="miaudit scan of real libraries (diffprivlib, pure-ldp, multi-freq-ldpy, OpenDP, python-dp, PipelineDP, "
                "SmartNoise SQL), "
                "each at a pinned version in its own venv: findings, "
                "controls and skipped cases",
    source="study (issue 40)",
    run=run,
    parallel=True,
    writes_page=True,
    full_runtime="per library, the libraries scanned side by side on the shared 2-core x86_64 CPU at load 4-10: "
                 "multi-freq-ldpy 4,105 s, diffprivlib 4,090 s, OpenDP 2,039 s, python-dp 1,693 s (--workers 2, 40 of "
                 "its cases resumed from an earlier run), PipelineDP 1,051 s, pure-ldp 65 s; SmartNoise SQL 2,083 s alone "
                 "at load 4-5",
)]


def main(argv=None) -> int:
    """``python -m experiments.scans [--import OUT] --records FOLDER``: record the libraries a run scanned (from its
    output folder OUT), then rebuild the page ``FOLDER.md`` from every record in FOLDER."""
    parser = argparse.ArgumentParser(prog="python -m experiments.scans", description=main.__doc__)
    parser.add_argument("--import", dest="source", metavar="OUT", default=None,
                        help="the --out folder of a run of miaudit experiment scans: record each library it scanned")
    parser.add_argument("--records", metavar="FOLDER", default="docs/benchmarks/scans",
                        help="the records' folder; the page is FOLDER.md (default: docs/benchmarks/scans)")
    options = parser.parse_args(argv)
    records = Path(options.records)
    try:
        imported = [] if options.source is None else import_run(options.source, records)
        page = write_page(records.with_name(records.name + ".md"))
    except InputError as error:
        parser.error(str(error))
    for record in imported:
        print(f"recorded {record['library']} {record['version']}: {len(record['findings'])} findings, "
              f"{len(record['controls'])} controls, {len(record['skipped'])} skipped, {record['seconds']} s")
    print(f"wrote {page} from {len(read_records(records))} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
