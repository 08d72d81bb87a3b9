"""``miaudit scan TARGET``: audit a library's whole API unattended (:mod:`audit.scan`)."""

from __future__ import annotations

from audit.cli.main import check_seed
from audit.config.flag_values import StoreOnce, integer, number, with_flag_names

#: The scan's keyword arguments and the flags that carry them, so an error names what the user typed.
FLAGS = {"alpha": "--alpha", "max_runs": "--max-runs", "timeout": "--timeout", "epsilons": "--epsilons",
         "workers": "--workers", "backend": "--backend", "ray_address": "--ray-address", "memory_limit": "--memory-limit",
         "only": "--only", "listing_timeout": "--listing-timeout"}

#: Units of ``--memory-limit`` (binary: 1K = 1024 bytes).
UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}

HELP = ("audit every public DP entry point of a library (diffprivlib, pure-ldp, multi-freq-ldpy, opendp, python-dp, "
        "pipeline-dp, smartnoise-sql) or of your module (FILE.py, package.module) "
        "over a small parameter grid; findings with reproductions, controls and skipped cases in one report")


def _epsilons(text: str) -> tuple:
    from estimators.validation import InputError

    try:
        values = tuple(number(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"argument '--epsilons' must be numbers separated by commas, got {text!r}") from None
    if any(not (0 < v < float("inf")) for v in values):
        raise InputError(f"argument '--epsilons' must be positive finite numbers, got {text!r}")
    return values


def _workers(text: str):
    """``--workers``: ``auto`` or a whole number in ASCII digits (an argparse ``type``)."""
    return "auto" if text == "auto" else integer(text)


def _memory_limit(text: str):
    """``--memory-limit``: bytes, or a number with K, M, G or T (binary units), or ``none``."""
    from estimators.validation import InputError

    word = text.strip().lower()
    if word in ("none", "auto"):
        return None if word == "none" else "auto"
    cleaned = text.upper().removesuffix("IB").removesuffix("B")
    unit = cleaned[-1:] if cleaned[-1:] in UNITS else ""
    try:
        value = number(cleaned[:len(cleaned) - len(unit)]) * UNITS[unit]
    except (ValueError, InputError):
        value = float("nan")
    if not (0 < value < float("inf")):
        raise InputError(f"argument '--memory-limit' must be a size such as 2G, 512M or 1000000 (bytes), or none, "
                         f"got {text!r}")
    return int(value)


def _listing_timeout_help() -> str:
    """``--listing-timeout``'s help, its numbers read from the constants that set them (as the command is configured):
    the factor of each worker's calls, the default and the start allowance from :mod:`audit.scan.limits` (which
    imports nothing: the help imports no module of the scan), and the grace of a hard kill
    (:data:`mechanisms.execution.bounds.HARD_KILL_GRACE`, which imports nothing either); the whole listing's constant
    part is the start allowance + the grace (:func:`audit.scan.processes.listing_bound`)."""
    from mechanisms.execution.bounds import HARD_KILL_GRACE

    from audit.scan import limits
    from audit.scan.limits import LISTING_TIMEOUT, WORKER_LISTING_TIMEOUTS

    return (f"seconds each call of the library made to list the cases may take (a module's import, reading a public "
            f"name, a family's grid, building a grid point), {WORKER_LISTING_TIMEOUTS} × that in each worker; one "
            f"that does not end in time is skipped (default: the larger of --timeout and {LISTING_TIMEOUT:g}). A "
            f"worker's whole start and listing is bounded once: {WORKER_LISTING_TIMEOUTS} × (S + the seconds the "
            f"scan's own listing took) + {limits.WORKER_START_SECONDS + HARD_KILL_GRACE:g} s, past which its cases "
            "are skipped, to be audited again by --resume")


def configure(parser) -> None:
    parser.add_argument("target", metavar="TARGET",
                        help="a library with a profile (diffprivlib, pure-ldp, multi-freq-ldpy, opendp, python-dp, pipeline-dp, "
                             "smartnoise-sql), a FILE.py, a module or a package")
    parser.add_argument("--out", default="miaudit-scan", metavar="DIR",
                        help="report folder: scan.md, scan.json, findings/, scan-state.jsonl (default: miaudit-scan)")
    parser.add_argument("--alpha", type=number, action=StoreOnce, default=None,
                        help="the scan's family-wise type-I error, split over its cases that can refute within --max-runs (default 0.05)")
    parser.add_argument("--max-runs", type=integer, action=StoreOnce, default=None, metavar="N",
                        help="mechanism runs per case at most (default 6000, or the library profile's: 20000 for multi-freq-ldpy "
                             "and pipeline-dp, 2100 for smartnoise-sql, 60000 for diffprivlib's Bingham cases)")
    parser.add_argument("--timeout", type=number, action=StoreOnce, default=None, metavar="S",
                        help="seconds each call of an entry point may take (default 60); a case's chunks of calls "
                             "and its whole audit are bounded by multiples of it (the scan how-to)")
    parser.add_argument("--listing-timeout", type=number, action=StoreOnce, default=None, metavar="S",
                        help=_listing_timeout_help())
    parser.add_argument("--epsilons", action=StoreOnce, default=None, metavar="E1,E2,...",
                        help="the ε grid (default 0.1,1,4)")
    parser.add_argument("--only", action="append", default=None, metavar="PATTERN",
                        help="audit only the cases whose id (module.Name(settings) / pair) matches this shell pattern "
                             "anywhere in it (PCA, 'tools.mean(*/ ends'); repeat it for several; α is split over the "
                             "cases kept")
    parser.add_argument("--resume", action="store_true",
                        help="continue the scan recorded in DIR/scan-state.jsonl: no case audited twice")
    parser.add_argument("--workers", type=_workers, action=StoreOnce, default=None, metavar="N|auto",
                        help="worker processes auditing cases side by side, each case in a process of its own "
                             "(default 1; auto: one per core); the report is the same for any N")
    parser.add_argument("--backend", action=StoreOnce, default=None, metavar="local|ray",
                        help="local (default) or ray: the cases as Ray tasks (pip install 'miaudit[ray]')")
    parser.add_argument("--ray-address", action=StoreOnce, default=None, metavar="ADDR",
                        help="--backend ray: address of an existing Ray cluster (default: start a local Ray instance)")
    parser.add_argument("--memory-limit", action=StoreOnce, default=None, metavar="SIZE",
                        help="memory one case may add to its worker (2G, 512M, bytes, or none); past it the case is "
                             "skipped (default: the available memory shared by the workers)")
    parser.add_argument("--in-process", action="store_true",
                        help="audit the cases in the scan's own process (for a debugger): a case that crashes the "
                             "interpreter or allocates without bound then ends the scan")


def run(args):
    from pathlib import Path

    from audit.report import check_output_location
    from audit.scan.report import write_scan_report
    from audit.scan.words import alpha_words, cost_words, finding_line, plural, skipped_items, verdict_words
    from audit.scan.running import ALPHA, TIMEOUT, scan
    from audit.scan.profiles.base import EPSILONS

    import os
    import sys

    check_seed(args.seed)
    if os.getcwd() not in sys.path and "" not in sys.path:  # a module TARGET is found as `python -m` finds it
        sys.path.insert(0, os.getcwd())
    out = check_output_location(args.out, "--out", folder=True)
    Path(out).mkdir(parents=True, exist_ok=True)
    from estimators.validation import InputError

    try:
        result = scan(args.target, epsilons=EPSILONS if args.epsilons is None else _epsilons(args.epsilons),
                      alpha=ALPHA if args.alpha is None else args.alpha, max_runs=args.max_runs,
                      timeout=TIMEOUT if args.timeout is None else args.timeout, seed=args.seed,
                      state_file=Path(out) / "scan-state.jsonl", resume=args.resume, quiet=args.quiet or args.json,
                      workers=1 if args.workers is None else args.workers,
                      backend="local" if args.backend is None else args.backend, ray_address=args.ray_address,
                      in_process=args.in_process,
                      memory_limit=_memory_limit("auto" if args.memory_limit is None else args.memory_limit),
                      only=args.only, listing_timeout=args.listing_timeout)
    except InputError as exc:
        raise InputError(with_flag_names(str(exc), FLAGS)) from None
    paths = write_scan_report(result, out)
    payload = {"target": result.target, "version": result.version, "cases": result.cases,
               "findings": len(result.findings), "controls": len(result.controls),
               "skipped": len(result.skipped_cases) + len(result.skipped), "statement": result.statement(),
               "reports": {"markdown": str(paths["markdown"]), "json": str(paths["json"])}}
    text = (f"miaudit scan {result.target} {result.version}: {plural(result.cases, 'case')}, "
            f"{plural(len(result.findings), 'finding')}, {plural(len(result.controls), 'control')}, "
            f"{payload['skipped']} skipped, {result.seconds:.0f} s\n  ({verdict_words(result)})\n"
            f"{result.statement()}\n" + (f"  {alpha_words(result)}\n" if result.cases else "")
            + (f"{cost_words(result)}\n" if result.cases else "")
            + f"report: {paths['markdown']} (scan.json for programs)")
    if args.resume:  # the cases kept from the state file, and those audited again (audit.scan.running, "Resume")
        payload.update(resumed=result.settings["resumed_cases"], retried=result.settings["retried_cases"])
        text += (f"\nresumed: {payload['resumed']} cases kept from {Path(out) / 'scan-state.jsonl'}, "
                 f"{payload['retried']} audited again (they had ended stuck or out of time before their first look)")
        if "kept_undecided" in result.settings:  # a state file from before its rows said which to audit again
            payload.update(retried_from_reasons=result.settings["retried_from_reasons"],
                           kept_undecided=result.settings["kept_undecided"])
            text += ("\nthe state file predates the marks of the cases to audit again: "
                     f"{payload['retried_from_reasons']} were found from their reasons")
            if payload["kept_undecided"]:
                text += (f"; {payload['kept_undecided']} more, killed as stuck, are kept as they ended (their reasons "
                         "do not say whether their looks had begun: a second audit could spend their α/K twice); a "
                         "scan without --resume audits them")
    for outcome, folder in zip(result.findings, paths["findings"]):
        text += "\n" + finding_line(outcome, folder)
    text += "".join(f"\n  skipped: {item}" for item in skipped_items(result))
    return payload, text
