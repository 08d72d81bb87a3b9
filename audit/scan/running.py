"""``audit.scan.scan``: audit every case of a library unattended, with one family-wise error for the scan.

**α across a scan.** The cases are listed before any run (:func:`audit.scan.cases.build_cases`);
then, still before any run, the cases that cannot refute within ``max_runs`` at their share are left out
of the split (:func:`audit.scan.planning.plan_split`, from each case's audit spec alone): the number K of
cases audited is fixed then, and each is audited at α/K (Bonferroni: by the union bound the
probability that any of the K audits refutes a claim its entry point meets is at most K · α/K = α,
whatever the dependence between the cases). A case skipped during its audit leaves its share unspent.
So the report states: with probability ≥ 1 − α no finding of this scan is false.

**One case** is :func:`audit.scan.case_audit.audit_case`.

**Where cases run.** Each case runs in a process of its own, forked from a worker process that loaded
the target (``workers`` local processes or Ray tasks: :mod:`audit.scan.isolation`): a call that
crashes the interpreter, allocates past ``memory_limit`` or is stuck where ``timeout`` cannot reach
costs its case (skipped with the reason), and no case sees what another left behind, so the outcomes,
and the report, do not depend on the number of workers or the backend. ``in_process=True`` runs the
cases here, one after another, without that protection. Wherever the scan calls the library outside a
case's audited calls, each call is bounded, with or without ``in_process``, and one that does not return in time is
skipped naming it: listing the cases (importing a target's modules, reading its public names, a family's grid and
each grid point's build, here and in each worker; :mod:`audit.scan.cases`) by ``listing_timeout``
(:func:`listing_timeout_default`: max(``timeout``, :data:`LISTING_TIMEOUT`) unless given), building a case's call by
``timeout`` (:func:`audit.scan.case_audit.audit_case`, and to plan the α split :func:`audit.scan.planning.case_spec`).
A library's import takes seconds (diffprivlib's, on a loaded machine), so a small ``timeout``, meant for each call of
an entry point, does not skip its modules.

**Resume.** With a state file, each case's outcome is appended to it as one JSON line when the case
ends (by this process only, whatever runs the cases); the first line holds the scan's target, α, seed,
budget and the ids of the K cases. A resumed scan checks the first line against its own and audits only
the cases with no line, so no case is audited twice and the report is whole, and the cases whose line says they
ended stuck or out of time before their first look (:data:`audit.scan.case_audit.RETRY`: the build of the call, the
probe or the raise check timed out, the case's process was killed as stuck before its probe ended, its worker's
listing was stuck or timed out, its first look was predicted too slow), which it audits again; ``settings`` and the
command's output say how many (``retried_cases``). α is not spent twice: K, and each case's α/K, are those of the
first line (the same cases, fixed before any run), and a case retried had made no run its verdict could rest on (its
α/K unspent: a sequential audit spends α only in its looks), so each of the K cases still has at most one audit that
can refute, at α/K, and the union bound still gives α. A case whose looks had begun keeps its outcome (timed out or
killed then, it is not retried: a second audit would be a second chance at α/K). The last line of a case is its
outcome. Where the cases listed and planned now differ from the first line's (a call of the listing, or a case's build
while planning the split, out of time in one run and not in the other), the first line's K cases are still the
scan's, each at α/K: one not listed now is skipped (:data:`NOT_LISTED_NOW`), to be audited by a later resume, and one
listed now that is not among them is skipped taking no share (:data:`NOT_IN_FIRST_RUN`); the target, α, seed, budget,
ε grid and ``only`` must be the first line's. A state file written before its rows were marked (its first line
without :data:`MARKED`) is read from its rows' reasons (:func:`retry_from_reason`): the cases whose reasons say they
ended out of time or stuck before their first look are audited again, and those killed as stuck whose reasons do not
say whether their probe had ended are kept (their looks may have begun), counted in ``settings`` (``kept_undecided``)
and the command's output.
"""

from __future__ import annotations

import fnmatch
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from estimators.progress import progress_bar
from estimators.validation import InputError, check_int, check_positive
from mechanisms.errors import MechanismError

from audit.scan.case_audit import (LOOK_FRACTION, RETRY, audit_case, chunk_timeout,  # noqa: F401 - re-exported
                                   list_cases, source_of)
from audit.scan.cases import Skipped, bounded_listing
from audit.scan.limits import LISTING_TIMEOUT  # read here under this module's name (audit.scan.limits)
from audit.scan.planning import plan_split
from audit.scan.profiles import LIBRARIES, profile_for
from audit.scan.profiles.user_module import user_profile
from audit.scan.profiles.base import EPSILONS

#: The default α of a scan: the family-wise error over all its cases.
ALPHA = 0.05
#: Mechanism runs of one case at most (its last look's).
MAX_RUNS = 6000
#: Seconds one case may take (each call of the entry point, and the looks in all).
TIMEOUT = 60.0
#: The smallest ``memory_limit`` (bytes): below it a case's process cannot start its threads.
MIN_MEMORY_LIMIT = 64 * 2**20


@dataclass
class ScanResult:
    """A scan's cases and outcomes: what the reports are written from (:mod:`audit.scan.report`)."""

    target: str
    version: str
    alpha: float
    cases: int
    outcomes: list
    skipped: list
    settings: dict
    seconds: float
    notes: list = field(default_factory=list)
    #: The cases audited side by side at most (the workers, or a Ray instance's tasks): what the cost line's seconds,
    #: summed over the cases, are read against (:func:`audit.scan.words.cost_words`); not in the JSON, which is the same
    #: for any number of workers.
    side_by_side: int = 1
    #: Whether the cases ran in worker processes (False with ``in_process``): what the cost line says the scan's own
    #: start was; not in the JSON either.
    in_workers: bool = True

    @property
    def findings(self) -> list:
        return [o for o in self.outcomes if o["status"] == "finding"]

    @property
    def controls(self) -> list:
        return [o for o in self.outcomes if o["status"] == "control"]

    @property
    def skipped_cases(self) -> list:
        return [o for o in self.outcomes if o["status"] == "skipped"]

    def statement(self) -> str:
        """The scan's family-wise error, as the report prints it."""
        if not self.cases:
            why = ("no entry point could be listed: see the skipped rows" if self.skipped else
                   "no public entry point of the target takes a privacy parameter this scan's profiles know")
            return f"No case was audited ({why}), so the scan claims nothing."
        left_out = self.settings.get("left_out_of_split", 0)
        return (f"With probability ≥ 1 − {self.alpha:g} no finding of this scan is false: each of the {self.cases} "
                f"cases listed before any run was audited at α/{self.cases} = {self.alpha / max(self.cases, 1):.3g} "
                "(Bonferroni), spent over its sequential looks"
                + (f"; {left_out} more cannot refute within the run budget at their share and take none (listed as "
                   "skipped)." if left_out else "."))


def _patterns(only) -> tuple:
    patterns = (only,) if isinstance(only, str) else tuple(only) if isinstance(only, (list, tuple)) else None
    if not patterns or not all(isinstance(p, str) and p.strip() for p in patterns):
        raise InputError(f"argument 'only' must be a shell pattern or a list of them, got {only!r}")
    return patterns


def _selected(text: str, patterns: tuple) -> bool:
    return any(fnmatch.fnmatchcase(text, f"*{pattern}*") for pattern in patterns)


def select_cases(cases, only) -> list:
    """The cases whose id (``module.Name(settings) / pair``) matches one of the shell patterns ``only`` (a
    pattern or a list of them) anywhere in it: ``"PCA"``, ``"tools.mean(*/ ends"``, ``["Laplace", "Gaussian"]``;
    an error naming ``only`` where none does."""
    patterns = _patterns(only)
    kept = [case for case in cases if _selected(case.id, patterns)]
    if not kept:
        raise InputError(f"argument 'only': no case of the scan matches {' or '.join(map(repr, patterns))} (a "
                         "case's id is module.Name(settings) / pair)")
    return kept


def library_version(profile) -> str:
    from importlib.metadata import PackageNotFoundError, version

    if not profile.distribution:
        return "(a user's module)"
    try:
        return version(profile.distribution)
    except PackageNotFoundError:
        return "(not installed)"


#: The key, set True, of a state file's first line where each of its rows says whether a resume audits the case again
#: (:data:`RETRY`); a state file without it may predate those marks (:func:`retry_from_reason`).
MARKED = "retry_marked"


def _header(target, alpha, seed, max_runs, epsilons, cases, only=None) -> dict:
    return {"scan": target, "alpha": alpha, "seed": seed, "max_runs": max_runs, "epsilons": list(epsilons),
            "cases": [c.id for c in cases], **({"only": list(_patterns(only))} if only is not None else {}),
            MARKED: True}


def retry_from_reason(outcome: dict) -> bool | None:
    """Whether a resume audits again the case of ``outcome``, a row of a state file that predates the :data:`RETRY`
    marks, as far as its reason says (module docstring, "Resume"): True where it ended out of time or stuck before its
    first look (the build of its call, its probe or its raise check did not return in time, ``hangs or exits: ... did
    not return within``; its first look predicted too slow; its worker's listing stuck or out of time), None where its
    process was killed as stuck and the reason does not say whether its probe had ended (its looks may have begun:
    kept, and the resume says how many), False otherwise (kept)."""
    reason = outcome.get("reason") or ""
    if outcome.get("status") != "skipped":
        return False
    if (reason.startswith("hangs or exits: ") and " did not return within " in reason) or \
            reason.startswith("too slow to audit: its first look would end ") or \
            reason.startswith("the worker's listing of the cases did not list it") or \
            "in a worker's listing of the cases" in reason:
        return True
    if "stuck where --timeout cannot interrupt it: its process was killed" in reason and \
            "its probe ended at" not in reason:
        return None
    return False


#: Why a case listed by a resumed scan, but not among its first run's cases, is skipped (module docstring, "Resume").
NOT_IN_FIRST_RUN = ("listed only when the scan was resumed, not among the cases of its first run (a call of the "
                    "listing, or of planning the α split, out of time in one run and not in the other): the α split "
                    "was fixed over those before any run, so it takes no share; a scan without --resume audits it")
#: Why a case of a resumed scan's first run that it does not list now is skipped, to be audited by a later resume.
NOT_LISTED_NOW = ("not listed when the scan was resumed (see the skipped rows: a call of the listing did not return in "
                  "time); a later --resume audits it, at its share of α")


def _read_state(path: Path, header: dict) -> tuple:
    """(the first run's case ids, each case's last outcome, whether its rows are marked :data:`RETRY` where a resume
    audits them again, :data:`MARKED`) of the state file at ``path``; an error where it is of another scan (its
    target, α, seed, budget, ε grid or ``only`` differ from ``header``'s)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        return header["cases"], {}, True
    stored = json.loads(lines[0])
    same = lambda line: {k: v for k, v in line.items() if k not in ("cases", MARKED)}  # noqa: E731
    if same(stored) != same(header):
        raise InputError(f"argument 'resume': the state file {path} is of another scan (its target, α, seed, budget, "
                         "ε grid or --only differ); give another --out or leave out --resume")
    done = {}
    for line in lines[1:]:
        try:
            outcome = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by the interruption: that case is run again
            continue
        done[outcome["id"]] = outcome
    return stored["cases"], done, bool(stored.get(MARKED))


def _first_run_cases(first: list, listed: list, audited: list) -> tuple:
    """(cases, not in the first run) of a resumed scan whose cases differ from its first run's ``first`` (ids): those,
    fixed before any of its runs, each at α/len(``first``), as the Case ``listed`` now or None where it is not; and
    the cases ``audited`` by this run's own plan that are not among them (module docstring, "Resume")."""
    by_id = {case.id: case for case in listed}
    return [by_id.get(key) for key in first], [case for case in audited if case.id not in set(first)]


def memory_limit_default(slots: int) -> int | None:
    """The default ``memory_limit``: the memory available at the start of the scan, shared by the workers."""
    from mechanisms.execution.memory import available_memory

    available = available_memory()
    return None if available is None else max(available // max(slots, 1), MIN_MEMORY_LIMIT)


def listing_timeout_default(timeout: float) -> float:
    """The default bound on each call of a scan's listing (module docstring): max(``timeout``,
    :data:`LISTING_TIMEOUT`), so that a ``timeout`` set small for quick entry points still lets a library import."""
    return max(timeout, LISTING_TIMEOUT)


def case_runs(case, given: int | None, default: int) -> int:
    """Mechanism runs at most of ``case``: ``--max-runs`` where given, else its family's own budget
    (:attr:`audit.scan.profiles.base.Family.max_runs`), else ``default`` (the profile's or :data:`MAX_RUNS`)."""
    return given or getattr(case.entry.family, "max_runs", None) or default


def scan(target: str, *, epsilons=EPSILONS, alpha: float = ALPHA, max_runs: int | None = None,
         timeout: float = TIMEOUT, seed: int = 0, state_file=None, resume: bool = False,
         quiet: bool = True, progress=None, workers=1, backend: str = "local", ray_address: str | None = None,
         in_process: bool = False, memory_limit="auto", only=None, listing_timeout: float | None = None,
         exit_when_stuck: bool = False) -> ScanResult:
    """Scan ``target``'s entry points: every (entry point, parameters, pair) case audited against its own claim.

    **What is bounded.** Each case's audit runs in a process of its own (unless ``in_process``): every call within
    ``timeout``, and the process killed past what its own bounds allow, even where a call is stuck in compiled code
    (:mod:`audit.scan.isolation`); so is each worker's listing of the cases, and a user's module is first imported
    in a forked process killed at ``listing_timeout``. In the process that calls this function, the library's code
    still runs to list the cases (importing its modules, reading their public names, building each grid point:
    ``listing_timeout``), to plan the α split (building each case's call: ``timeout``) and, with ``in_process``, to
    audit every case (``timeout``): on the main thread each such call is interrupted at its bound (``SIGALRM``), but
    one that ignores the interruption (stuck in compiled code, SIGALRM blocked, a loop catching every exception)
    cannot be stopped from inside the process, and the scan then waits for it, without end if it never returns (off
    the main thread a call is run on a thread of its own and left running there at its bound, which no code can
    stop either).
    ``exit_when_stuck=True`` gives this function the bound ``miaudit scan`` has, through the same watchdog
    (:func:`mechanisms.calls.watchdog.exit_when_stuck`): such a call ends this process
    :data:`~mechanisms.calls.watchdog.STUCK_GRACE` seconds past its bound, with one line on stderr naming it and
    exit status 1, and no report (where the call was an ``in_process`` case's, the state file keeps the cases that
    had ended, for ``resume``). The calling process is then not kept alive: to keep it, run ``miaudit scan`` as a
    subprocess, bounded the same way.

    Parameters
    ----------
    target : str
        A library with a profile (:data:`audit.scan.profiles.LIBRARIES`), a ``FILE.py``, a module or a
        package (with its public submodules).
    epsilons : sequence of float
        The ε grid (default 0.1, 1, 4).
    alpha : float
        The scan's family-wise error: each of the K cases that can refute within ``max_runs`` at its share gets α/K
        (module docstring; :mod:`audit.scan.planning`).
    max_runs : int, optional
        Mechanism runs per case at most; None: the profile's (:attr:`audit.scan.profiles.base.Profile.max_runs`),
        else :data:`MAX_RUNS`.
    timeout : float
        Seconds per case (each call of the entry point, and its looks in all).
    listing_timeout : float, optional
        Seconds each call of the listing may take (a module's import, a public name's reading, a family's grid, a
        grid point's build), in this process and, four times that, in each worker (:mod:`audit.scan.isolation`);
        None: max(``timeout``, :data:`LISTING_TIMEOUT`) (:func:`listing_timeout_default`).
    seed : int
        The scan's seed; each case's is derived from it and the case's id.
    state_file : path, optional
        The JSON-lines state file each outcome is appended to (module docstring).
    resume : bool
        Continue the scan recorded in ``state_file``: the cases with no outcome there are audited, and those that
        ended stuck or out of time before their first look are audited again (module docstring, "Resume").
    quiet : bool
        No progress bar.
    progress : callable, optional
        Called with one line per case.
    workers : int or "auto"
        Worker processes (or, with ``backend="ray"``, Ray tasks in flight) that audit the cases, each
        case in a process of its own (:mod:`audit.scan.isolation`); the outcomes, and so the report, do
        not depend on it. Default 1: one worker process.
    backend : {"local", "ray"}
        ``ray`` runs the cases as Ray tasks, on a local Ray instance or the cluster at ``ray_address``.
    ray_address : str, optional
        An existing Ray cluster's address (``backend="ray"`` only).
    in_process : bool
        Audit the cases one after another in this process instead, as a debugger needs: a case that
        crashes the interpreter, or allocates without bound, then ends the scan.
    memory_limit : int, "auto" or None
        Bytes of address space one case's process may add to its worker's; past it its allocations fail
        (``MemoryError``: the case is skipped). "auto": the memory available at the start, divided
        among the workers (:func:`memory_limit_default`); None: no limit. Not with ``in_process``.
    only : str or sequence of str, optional
        Audit only the cases whose id (``module.Name(settings) / pair``) matches one of these shell patterns
        anywhere in it (:func:`select_cases`); K and each case's α/K are of the cases kept.
    exit_when_stuck : bool
        While the scan runs, end this process where a call of the library in it ignores its bound's interruption
        ("What is bounded" above; what ``miaudit scan`` does). Default False: the scan waits for such a call.

    Returns
    -------
    ScanResult
    """
    from mechanisms.calls.watchdog import WATCHDOG

    if not isinstance(exit_when_stuck, bool):
        raise InputError(f"argument 'exit_when_stuck' must be True or False, got {exit_when_stuck!r}")
    before = WATCHDOG.enabled  # the command line's, on for its whole process; a caller's, on for this scan
    WATCHDOG.enabled = before or exit_when_stuck
    try:
        return _scan(target, epsilons=epsilons, alpha=alpha, max_runs=max_runs, timeout=timeout, seed=seed,
                     state_file=state_file, resume=resume, quiet=quiet, progress=progress, workers=workers,
                     backend=backend, ray_address=ray_address, in_process=in_process, memory_limit=memory_limit,
                     only=only, listing_timeout=listing_timeout)
    finally:
        WATCHDOG.enabled = before


def _scan(target, *, epsilons, alpha, max_runs, timeout, seed, state_file, resume, quiet, progress, workers, backend,
          ray_address, in_process, memory_limit, only, listing_timeout) -> ScanResult:
    """:func:`scan`'s work, its arguments as given there."""
    if not isinstance(target, str) or not target:
        raise InputError(f"argument 'target' must be a library name, FILE.py or a module, got {target!r}")
    if not 0 < alpha < 1:
        raise InputError(f"argument 'alpha' must be in (0, 1), got {alpha!r}")
    max_runs = None if max_runs is None else check_int(max_runs, "max_runs", 1)
    timeout = check_positive(timeout, "timeout")
    listing_timeout = listing_timeout_default(timeout) if listing_timeout is None else \
        check_positive(listing_timeout, "listing_timeout")
    epsilons = tuple(check_positive(float(e), "epsilons") for e in epsilons)
    if resume and state_file is None:
        raise InputError("argument 'resume' needs a state file (--out)")
    from mechanisms.execution.runner import ExecutionSettings

    execution = ExecutionSettings(workers=workers, backend=backend, ray_address=ray_address)  # checks the three
    if in_process and (execution.workers > 1 or backend != "local"):
        raise InputError("argument 'in_process' (--in-process) runs the cases in this process: not with more than "
                         "one worker or --backend ray")
    # a local Ray instance's tasks: one per core unless workers says
    slots = 1 if in_process else (os.cpu_count() or 1) if backend == "ray" and execution.workers == 1 \
        else execution.workers
    if memory_limit == "auto":
        memory_limit = None if in_process else memory_limit_default(slots)
    elif memory_limit is not None:
        if in_process:
            raise InputError("argument 'memory_limit' (--memory-limit) applies to worker processes: not with "
                             "--in-process")
        memory_limit = check_int(memory_limit, "memory_limit", MIN_MEMORY_LIMIT)
    started = time.perf_counter()
    blocked = profile = None
    if target not in LIBRARIES:  # a user's module: imported here only where a bounded trial import ends well
        from audit.scan.processes import import_blocked

        blocked = import_blocked(source_of(target), listing_timeout,
                                 memory_limit_default(1) if in_process else memory_limit)
        if blocked is None:  # its import here bounded as the listing's calls are: one that ended may not end twice
            try:
                profile = bounded_listing(profile_for, (target,), f"module {target}", listing_timeout,
                                          " as it was imported")
            except MechanismError as exc:
                blocked = str(exc)
    if profile is None:
        profile = profile_for(target) if blocked is None else user_profile(target, imported=False)
    given_runs, max_runs = max_runs, max_runs or profile.max_runs or MAX_RUNS
    skipped, cases = list_cases(target, epsilons, profile, listing_timeout) if blocked is None else \
        ([Skipped(profile.modules[0], blocked)], [])
    listed_seconds = time.perf_counter() - started  # a worker's listing is bounded by a multiple of it (isolation)
    if only is not None:  # K, and each case's α/K, are of the cases kept
        cases, skipped = select_cases(cases, only), [s for s in skipped if _selected(s.what, _patterns(only))]
    listed = cases
    runs_of = lambda case: case_runs(case, given_runs, max_runs)  # noqa: E731 - one rule for plan and audits
    # before any run: α is shared by the cases that can refute
    plan = plan_split(cases, alpha, max_runs, runs_of, timeout)
    cases, case_alpha = plan.audited, plan.case_alpha  # fixed here, before any run, whatever runs the cases
    skipped = [{"what": s.what, "reason": s.reason} for s in skipped] + \
        [{"what": case.id, "reason": reason} for case, reason in plan.left_out]
    header = _header(target, alpha, seed, max_runs, epsilons, cases, only)
    done, ids, later, marked = {}, header["cases"], [], True
    if state_file is not None:
        state_file = Path(state_file)
        if resume and state_file.exists():
            ids, done, marked = _read_state(state_file, header)
        else:
            state_file.write_text(json.dumps(header) + "\n", encoding="utf-8")
    if ids != header["cases"]:  # the first run's K cases and α/K hold: α was split over them before any run
        cases, later = _first_run_cases(ids, listed, cases)
        case_alpha = alpha / max(len(ids), 1)
        skipped = [row for row in skipped if row["what"] not in set(ids)] + \
            [{"what": case.id, "reason": NOT_IN_FIRST_RUN} for case in later]
    retried = {key for key, outcome in done.items() if outcome.get(RETRY)}  # no run made: audited again (docstring)
    # A state file from before the marks: its rows' reasons say which made no run, or that they cannot tell (kept).
    read = {} if marked else {key: retry_from_reason(o) for key, o in done.items() if RETRY not in o and key in ids}
    inferred, undecided = {key for key, v in read.items() if v is True}, sum(v is None for v in read.values())
    retried |= inferred
    outcomes = [None if key in retried else done.get(key) for key in ids]
    for number, key in enumerate(ids):
        if cases[number] is None and outcomes[number] is None:  # not listed now: skipped, for a later resume
            outcomes[number] = {"id": key, "status": "skipped", "entry": key.split("(")[0], "reason": NOT_LISTED_NOW,
                                RETRY: True}
    todo = [number for number, outcome in enumerate(outcomes) if outcome is None]
    bar = progress_bar(len(cases), f"scan {target}", quiet=quiet)
    bar.update(len(cases) - len(todo))

    def finished(number, outcome):  # in this process only: the state file has one writer
        outcomes[number] = outcome
        if state_file is not None:
            with state_file.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(outcome) + "\n")
        bar.update(1)
        if progress is not None:
            progress(f"case {number + 1}/{len(cases)}: {cases[number].id}: {outcome['status']}")

    try:
        if in_process:
            for number in todo:
                case = cases[number]
                finished(number, audit_case(case, alpha=case_alpha, max_runs=runs_of(case), timeout=timeout,
                                            seed=case.seed(seed)))
        elif todo:
            from audit.scan.isolation import CaseTask, ScanTarget, run_cases

            tasks = [CaseTask(number, cases[number].id, case_alpha, runs_of(cases[number]), timeout,
                              cases[number].seed(seed),
                              memory_limit) for number in todo]
            run_cases(ScanTarget(f"scan {target}", source_of(target), epsilons, listing_timeout, listed_seconds), tasks,
                      [cases[n] for n in todo],
                      workers=execution.workers, backend=execution.backend, ray_address=execution.ray_address,
                      on_done=lambda position, outcome: finished(todo[position], outcome))
    finally:
        bar.close()
    own_runs = {case.entry.qualified: runs_of(case) for case in cases
                if case is not None and runs_of(case) != max_runs}
    settings = {"epsilons": list(epsilons), "max_runs": max_runs, "timeout": timeout,
                "listing_timeout": listing_timeout, "seed": seed,
                **({"entry_max_runs": own_runs} if own_runs else {}),
                "resumed_cases": sum(key in done and key not in retried for key in ids),
                "retried_cases": sum(ids[number] in retried for number in todo),
                **({"retried_from_reasons": sum(ids[number] in inferred for number in todo),
                    "kept_undecided": undecided} if not marked else {}),
                **({"listed_on_resume": len(later)} if later else {}),
                "left_out_of_split": sum(case.id not in set(ids) for case, _ in plan.left_out),
                **({"only": list(_patterns(only))} if only is not None else {})}
    return ScanResult(target, library_version(profile), alpha, len(cases), outcomes, skipped, settings,
                      time.perf_counter() - started, side_by_side=min(slots, max(len(todo), 1)),
                      in_workers=not in_process)
