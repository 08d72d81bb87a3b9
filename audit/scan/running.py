"""``audit.scan.scan``: audit every case of a library unattended, with one family-wise error for the scan.

**α across a scan.** The cases are listed before any run (:func:`audit.scan.cases.build_cases`);
their number K is fixed then, and each case is audited at α/K (Bonferroni: by the union bound the
probability that any of the K audits refutes a claim its entry point meets is at most K · α/K = α,
whatever the dependence between the cases). A case skipped during its audit leaves its share unspent.
So the report states: with probability ≥ 1 − α no finding of this scan is false.

**One case** (:func:`audit_case`) is a sequential audit (:func:`audit.gating.sequential.run_sequential_audit`:
nested looks at growing prefixes of one stream of runs, α_case spent over the looks, stopping at the
first look that refutes) of the entry point, called as its family says, against the claim its own
parameters state, on the case's pair, within ``max_runs`` mechanism runs. The call is first probed
once on each database of the pair within ``timeout`` seconds (:func:`mechanisms.calls.user_call.call_user_code`);
a call that raises, exits or does not return is a skipped case with its reason, and so is an audit
that fails (every later chunk of the audit's calls is bounded by ``timeout``, or by a multiple of what the
probe's calls took where a chunk of such calls takes longer, :func:`chunk_timeout`, and is not run again; the
looks after the first are bounded in all by the same rule for ``max_runs`` calls). What an entry point prints is captured, never written to the scan's stdout, and
its warnings are recorded on the case.

**Resume.** With a state file, each case's outcome is appended to it as one JSON line when the case
ends; the first line holds the scan's target, α, seed, budget and the ids of the K cases. A resumed
scan checks the first line against its own and audits only the cases with no line, so no case is
audited twice and the report is whole.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import math
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from estimators.progress import progress_bar
from estimators.validation import InputError, check_int, check_positive
from mechanisms.errors import MechanismError, MechanismWarning

from audit.scan.cases import build_cases, discover
from audit.scan.profiles import profile_for
from audit.scan.profiles.base import EPSILONS

#: The default α of a scan: the family-wise error over all its cases.
ALPHA = 0.05
#: Mechanism runs of one case at most (its last look's).
MAX_RUNS = 6000
#: Seconds one case may take (each call of the entry point, and the looks in all).
TIMEOUT = 60.0
#: A case's early looks see up to this fraction of its last look's samples (a third, and its rounding): where the
#: float-bit test's runs are planned, the smallest look that can refute at α/K is a third of the last (2,000 runs of
#: 6,000), which the sequential audit's default fraction (0.2) drops, so a finding visible in tens of runs cost all
#: 6,000. It spends α_case·(1/3)² = α_case/9 (power spending, :func:`audit.gating.sequential.power_alpha_spending`).
LOOK_FRACTION = 0.34
#: A chunk of a case's runs may take this many times what the probe's calls say it takes (:func:`chunk_timeout`) ...
CHUNK_SLACK = 4.0
#: ... and at most this many times the case's ``timeout``.
CHUNK_TIMEOUT_FACTOR = 10.0


class _Captured:
    """Call ``function(db, rng)`` on a copy of ``db``, with its stdout captured and its warnings recorded (first
    of each), and whether it changed the copy (diffprivlib 0.6.6's PCA centres its X in place: the probe's
    pair, changed so, was no longer a neighbouring pair and the case was skipped)."""

    def __init__(self, function):
        self.function = function
        self.printed = ""
        self.warned = []
        self.mutates = False

    def __call__(self, db, rng):
        sink = io.StringIO()
        given = np.array(db, copy=True)
        with contextlib.redirect_stdout(sink), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = self.function(given, rng)
        if not self.mutates and not np.array_equal(given, db, equal_nan=True):
            self.mutates = True
        if sink.getvalue() and not self.printed:
            self.printed = sink.getvalue()[:200]
        for warning in caught:
            text = f"{warning.category.__name__}: {warning.message}"
            if text not in self.warned and len(self.warned) < 3:
                self.warned.append(text)
        return value


def _skipped(case, seed: int, reason: str, started: tuple, **extra) -> dict:
    return {"id": case.id, "status": "skipped", "reason": reason, **_described(case, seed), **_times(started), **extra}


def _times(started: tuple) -> dict:
    """The case's wall-clock seconds and this process's CPU seconds since ``started`` (both clocks): the CPU
    seconds say what a case costs on a machine that others load."""
    return {"seconds": time.perf_counter() - started[0], "cpu_seconds": time.process_time() - started[1]}


def _import_root(module_name: str) -> str | None:
    """The folder a user's module is imported from (None for an installed library): the reproduction
    files put it on ``sys.path``."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if path is None or "site-packages" in path:
        return None
    depth = len(module_name.split(".")) + (Path(path).name == "__init__.py")
    return str(Path(path).resolve().parents[depth - 1])


def _described(case, seed: int) -> dict:
    return {"seed": int(seed), "import_root": _import_root(case.entry.module), "entry": case.entry.qualified, "module": case.entry.module, "name": case.entry.name,
            "source_file": case.entry.source_file, "family": case.entry.family.kind, "settings": case.settings_text,
            "pair": case.pair.family, "pair_why": case.pair.why, "relation": case.relation, "claim": case.claim,
            "source": case.source, "first": case.pair.first.tolist(), "second": case.pair.second.tolist(),
            **({"preamble": case.entry.family.preamble, "setup": case.setup} if case.setup or case.entry.family.preamble
               else {})}


def audit_case(case, *, alpha: float, max_runs: int, timeout: float, seed: int) -> dict:
    """The outcome of one case (module docstring): a JSON-able dict with ``status`` "finding", "control" or "skipped"."""
    from mechanisms.adapters.callables import PerDatabaseMechanism
    from mechanisms.calls.user_call import call_user_code
    from mechanisms.execution.runner import ExecutionSettings
    from mechanisms.outputs.encoding import OutputEncoder

    from audit.gating.assertions import claim_spec
    from audit.gating.sequential import run_sequential_audit

    started = (time.perf_counter(), time.process_time())
    try:
        function = _Captured(case.function())
    except Exception as exc:  # noqa: BLE001 - the source is built from the profile; say what failed
        return _skipped(case, seed, f"the call could not be built: {type(exc).__name__}: {exc}", started)
    who = f"entry point {case.entry.qualified}"
    global_state = np.random.get_state()[1].copy()
    probe_seconds = 0.0  # the slower of the two probe calls: what one call costs here and now
    for name, db in (("first", case.pair.first), ("second", case.pair.second)):
        called = time.perf_counter()
        try:
            call_user_code(function, (db, np.random.default_rng(seed)), who=who, timeout=timeout,
                           where=f" on the {name} database", hint="(the scan's --timeout)")
        except MechanismError as exc:
            return _skipped(case, seed, f"hangs or exits: {exc}", started)
        except Exception as exc:  # noqa: BLE001 - a library may raise anything at a grid point
            return _skipped(case, seed, f"the call raised {type(exc).__name__} on the {name} database: {exc}"[:400],
                            started)
        probe_seconds = max(probe_seconds, time.perf_counter() - called)
    notes = []
    if not np.array_equal(global_state, np.random.get_state()[1]):
        notes.append("draws from NumPy's global generator, not from the random_state it is given (the audit's "
                     "runner seeds and restores it per chunk)")
    mechanism = PerDatabaseMechanism(function, case.entry.qualified, encoder=OutputEncoder())
    if not case.entry.family.seeded:  # as the library's own adapter declares (OpenDPMechanism)
        object.__setattr__(mechanism, "seeded", False)
        object.__setattr__(mechanism, "independent_across_processes", True)
        notes.append(f"draws from {case.entry.module.split('.')[0]}'s own generator, which takes no seed: the runs "
                     "cannot be reproduced from the seed (the verdict, within α, can)")
    try:
        with warnings.catch_warnings(record=True) as said:  # miaudit's own warnings on the case become its notes
            warnings.simplefilter("always", MechanismWarning)
            spec = claim_spec(mechanism, case.claim, pairs=[(case.pair.first, case.pair.second)],
                              relation=case.relation, alpha=alpha, seed=seed, name=case.entry.qualified)
            spec = _with_timeout(spec, chunk_timeout(timeout, probe_seconds), ExecutionSettings)
            # The looks' bound as a chunk's: a case of slow calls (a model's fit, a loaded machine) is not cut short
            # before its last look, as the time its early looks took would have it at ``timeout``.
            audit = run_sequential_audit(spec, max_runs, time_limit=chunk_timeout(timeout, probe_seconds, max_runs),
                                         look_fraction=LOOK_FRACTION)
        for warning in said:
            text = str(warning.message)
            if issubclass(warning.category, MechanismWarning) and text not in notes:
                notes.append(text)
            elif not issubclass(warning.category, MechanismWarning):
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    except MechanismError as exc:
        return _skipped(case, seed, f"failed during the audit: {exc}"[:400], started, notes=notes)
    except InputError as exc:
        return _skipped(case, seed, f"could not be audited: {exc}"[:400], started, notes=notes)
    if function.printed:
        notes.append(f"prints to stdout (captured): {function.printed!r}")
    if function.mutates:
        notes.append("changes the database it is given in place (each call of the scan gets a copy of its own)")
    notes += [f"warned: {w}" for w in function.warned]
    return {"id": case.id, "status": "finding" if audit.refuted else "control", **_described(case, seed),
            **_evidence(audit), "alpha": alpha, **_times(started), "notes": notes}


def chunk_timeout(timeout: float, probe_seconds: float, calls: int | None = None) -> float:
    """Seconds ``calls`` calls of a case may take (default: one chunk of the audit's runs,
    :data:`~mechanisms.execution.runner.DEFAULT_CHUNK_SIZE`): ``timeout``, or, where the probe's slower call says
    that they take longer here (a slow fit, a machine others load), :data:`CHUNK_SLACK` times that, at most
    :data:`CHUNK_TIMEOUT_FACTOR` × ``timeout``. The bound only stops a hang (a chunk's) or a case far slower than its
    probe (the looks'); the runs are the same whatever it is."""
    from mechanisms.execution.runner import DEFAULT_CHUNK_SIZE

    calls = DEFAULT_CHUNK_SIZE if calls is None else calls
    return min(max(timeout, CHUNK_SLACK * probe_seconds * calls), CHUNK_TIMEOUT_FACTOR * timeout)


def _with_timeout(spec, timeout, settings_type):
    import dataclasses

    # A chunk that fails or passes its bound is not run again: on the same seed a library fails the same way, and a
    # hang would cost the bound three times over.
    return dataclasses.replace(spec, execution=settings_type(timeout=timeout, retries=0))


def _evidence(audit) -> dict:
    """The sequential audit's evidence, as the report shows it: the event test that refuted the claim (the
    float-bit one, reading the output's bits, for float noise), else the event test."""
    result, event = audit.result, audit.result.refuting_event_test
    out = {"runs": int(audit.runs), "looks": len(audit.looks), "looks_planned": len(audit.schedule),
           "refuted_by": [r["detail"] for r in result.refuted_by], "runs_to_refute": audit.runs_to_refute,
           "audited_claim": (result.claim or {}).get("label")}
    if event is not None:
        runs = list(event.runs_made or [event.runs_per_input, event.runs_per_input])
        out.update({"event": event.description, "runs_per_input": [int(r) for r in runs],
                    "hits": [int(round(p * n)) for p, n in zip((event.p_first, event.p_second), runs)],
                    "certificate": event.certificate, "epsilon_lower_bound": _finite(event.epsilon_lower_bound),
                    "delta_lower_bound": _finite(event.delta_lower_bound),
                    "support_differences": list(event.support_differences or [])})
    return out


def _finite(value):
    return None if value is None or not math.isfinite(value) else float(value)


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
            return ("No case was audited (no public entry point of the target takes a privacy parameter this "
                    "scan's profiles know), so the scan claims nothing.")
        return (f"With probability ≥ 1 − {self.alpha:g} no finding of this scan is false: each of the {self.cases} "
                f"cases listed before any run was audited at α/{self.cases} = {self.alpha / max(self.cases, 1):.3g} "
                "(Bonferroni), spent over its sequential looks.")


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


def _header(target, alpha, seed, max_runs, epsilons, cases) -> dict:
    return {"scan": target, "alpha": alpha, "seed": seed, "max_runs": max_runs, "epsilons": list(epsilons),
            "cases": [c.id for c in cases]}


def _read_state(path: Path, header: dict) -> dict:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        return {}
    stored = json.loads(lines[0])
    if stored != header:
        raise InputError(f"argument 'resume': the state file {path} is of another scan (its target, α, seed, budget "
                         "or cases differ); give another --out or leave out --resume")
    done = {}
    for line in lines[1:]:
        try:
            outcome = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by the interruption: that case is run again
            continue
        done[outcome["id"]] = outcome
    return done


def scan(target: str, *, epsilons=EPSILONS, alpha: float = ALPHA, max_runs: int = MAX_RUNS,
         timeout: float = TIMEOUT, seed: int = 0, state_file=None, resume: bool = False,
         quiet: bool = True, progress=None, only=None) -> ScanResult:
    """Scan ``target``'s entry points: every (entry point, parameters, pair) case audited against its own claim.

    Parameters
    ----------
    target : str
        A library with a profile (:data:`audit.scan.profiles.LIBRARIES`), a ``FILE.py``, a module or a
        package (with its public submodules).
    epsilons : sequence of float
        The ε grid (default 0.1, 1, 4).
    alpha : float
        The scan's family-wise error: each of the K cases gets α/K (module docstring).
    max_runs : int
        Mechanism runs per case at most.
    timeout : float
        Seconds per case (each call of the entry point, and its looks in all).
    seed : int
        The scan's seed; each case's is derived from it and the case's id.
    state_file : path, optional
        The JSON-lines state file each outcome is appended to (module docstring).
    resume : bool
        Continue the scan recorded in ``state_file``.
    quiet : bool
        No progress bar.
    progress : callable, optional
        Called with one line per case.
    only : str or sequence of str, optional
        Audit only the cases whose id (``module.Name(settings) / pair``) matches one of these shell patterns
        anywhere in it (:func:`select_cases`); K and each case's α/K are of the cases kept.

    Returns
    -------
    ScanResult
    """
    if not isinstance(target, str) or not target:
        raise InputError(f"argument 'target' must be a library name, FILE.py or a module, got {target!r}")
    if not 0 < alpha < 1:
        raise InputError(f"argument 'alpha' must be in (0, 1), got {alpha!r}")
    max_runs = check_int(max_runs, "max_runs", 1)
    timeout = check_positive(timeout, "timeout")
    epsilons = tuple(check_positive(float(e), "epsilons") for e in epsilons)
    if resume and state_file is None:
        raise InputError("argument 'resume' needs a state file (--out)")
    started = time.perf_counter()
    profile = profile_for(target)
    entries, skipped = discover(profile, target if target.endswith(".py") else None)
    cases, unbuilt = build_cases(entries, epsilons)
    if only is not None:
        cases, unbuilt = select_cases(cases, only), [s for s in unbuilt if _selected(s.what, _patterns(only))]
    skipped = [{"what": s.what, "reason": s.reason} for s in skipped + unbuilt]
    count = max(len(cases), 1)
    case_alpha = alpha / count
    header = _header(target, alpha, seed, max_runs, epsilons, cases)
    done = {}
    if state_file is not None:
        state_file = Path(state_file)
        if resume and state_file.exists():
            done = _read_state(state_file, header)
        else:
            state_file.write_text(json.dumps(header) + "\n", encoding="utf-8")
    outcomes = []
    bar = progress_bar(len(cases), f"scan {target}", quiet=quiet)
    try:
        for number, case in enumerate(cases, start=1):
            outcome = done.get(case.id)
            if outcome is None:
                outcome = audit_case(case, alpha=case_alpha, max_runs=max_runs, timeout=timeout,
                                     seed=case.seed(seed))
                if state_file is not None:
                    with state_file.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps(outcome) + "\n")
            outcomes.append(outcome)
            bar.update(1)
            if progress is not None:
                progress(f"case {number}/{len(cases)}: {case.id}: {outcome['status']}")
    finally:
        bar.close()
    settings = {"epsilons": list(epsilons), "max_runs": max_runs, "timeout": timeout, "seed": seed,
                "resumed_cases": len(done), **({"only": list(_patterns(only))} if only is not None else {})}
    return ScanResult(target, library_version(profile), alpha, len(cases), outcomes, skipped, settings,
                      time.perf_counter() - started)
