"""One case of a scan: the case audited against its own claim, in whatever process runs it.

**One case** (:func:`audit_case`) is a sequential audit (:func:`audit.gating.sequential.run_sequential_audit`:
nested looks at growing prefixes of one stream of runs, α_case spent over the looks, stopping at the
first look that refutes) of the entry point, called as its family says, against the claim its own
parameters state, on the case's pair, within ``max_runs`` mechanism runs. The call is built (the family's preamble
and setup, which may call the library: OpenDP's measurement) within ``timeout``, then probed
once on each database of the pair within ``timeout`` seconds (:func:`mechanisms.calls.user_call.call_user_code`);
a call that raises, exits or does not return is a skipped case with its reason, and so is an audit
that fails (every later chunk of the audit's calls is bounded by ``timeout``, or by a multiple of what the
probe's calls took where a chunk of such calls takes longer, :func:`chunk_timeout`, and is not run again; a
look, the first included, is started only while it is predicted to end within the same rule for ``max_runs`` calls,
:mod:`audit.gating.look_time`, the looks before the first timed one at the probe's faster call: a case whose
first look would not has its call timed again, up to :data:`RETIME_CALLS` calls, and where one is less than half
the probe's faster call, a busy moment of the machine having slowed both probe calls, the audit starts again at
that rate within what is left of the looks' bound; a case whose first look still would not is skipped, saying
so). A case run in a process of its own tells the worker, once its probe has run and before any other call, how long
the rest may take under these bounds (:func:`seconds_after_probe`, plus :func:`raise_check_limit` where an opted-in
case checks that it raises on every call): the worker's hard kill of a case stuck where ``timeout`` cannot
interrupt it comes only past that (:func:`audit.scan.isolation.hard_limit`), so a slow case is reported as what it
is, never as stuck.
What an entry point prints is captured, never written to the scan's stdout, and its warnings are recorded on the
case.

:func:`list_cases` lists the cases of a target, the same in the scan's process and in each worker.
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from estimators.validation import InputError
from mechanisms.calls.printed import NOTE_WORDS as PRINTED_NOTE_WORDS
from mechanisms.errors import MechanismError, MechanismWarning

from audit.scan.cases import Skipped, bounded_listing, build_cases, discover
from audit.scan.profiles import profile_for


#: A case's early looks see up to this fraction of its last look's samples (a third, and its rounding): where the
#: float-bit test's runs are planned, the smallest look that can refute at α/K is a third of the last (2,000 runs of
#: 6,000), which the sequential audit's default fraction (0.2) drops, so a finding visible in tens of runs cost all
#: 6,000. It spends α_case·(1/3)² = α_case/9 (power spending, :func:`audit.gating.sequential.power_alpha_spending`).
LOOK_FRACTION = 0.34
#: A chunk of a case's runs may take this many times what the probe's calls say it takes (:func:`chunk_timeout`) ...
CHUNK_SLACK = 4.0
#: ... and at most this many times the case's ``timeout``.
CHUNK_TIMEOUT_FACTOR = 10.0
#: A case's hard kill allows its audit's own work (its tests' fits, its certificates) this many ``timeout`` beyond its
#: looks' bound (:func:`seconds_after_probe`).
COMPUTE_TIMEOUTS = 1.0


#: The dict releases of each database of a case's pair kept (its first ones), from which a float-bit finding names the
#: keys whose bits differ most (:func:`_bit_parts`): as many as the float-bit test's pilot runs.
KEPT_RELEASES = 2000


class _Captured:
    """Call ``function(db, rng)`` on a copy of ``db``, with its stdout captured and its warnings recorded (first
    of each), and whether it changed the copy (diffprivlib 0.6.6's PCA centres its X in place: the probe's
    pair, changed so, was no longer a neighbouring pair and the case was skipped). Given the case's ``pair``, it keeps
    the first :data:`KEPT_RELEASES` dict releases of more than one key of each of its databases (``kept``)."""

    def __init__(self, function, pair=None):
        self.function = function
        self.printed = ""
        self.warned = []
        self.mutates = False
        self.pair = pair
        self.kept = ([], [])
        self.calls = 0  # every call, the probes' and the raising ones included (the case's probe_calls)

    def __call__(self, db, rng):
        self.calls += 1
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
        if isinstance(value, dict) and len(value) > 1 and self.pair is not None:
            for kept, database in zip(self.kept, (self.pair.first, self.pair.second)):
                if len(kept) < KEPT_RELEASES and np.array_equal(db, database, equal_nan=True):
                    kept.append(value)
                    break
        return value


#: The key, set True, of a skipped outcome that ended stuck or out of time before its audit's first look, so before it
#: spent any of its share of α (the build of its call, its probe, its raise check timed out; its process killed as
#: stuck before its probe ended; its worker's listing stuck; its first look predicted too slow): a resumed scan audits
#: it again, at the same share (:mod:`audit.scan.running`, "Resume"). A case whose looks had begun keeps its outcome.
RETRY = "retry_on_resume"


def stuck_outcome(case, seed: int, reason: str, started: tuple | None = None, **extra) -> dict:
    """:func:`skipped_outcome` of a case stuck or out of time before its first look: marked :data:`RETRY`."""
    return skipped_outcome(case, seed, reason, started, **{RETRY: True}, **extra)


def _hung(exc: MechanismError):
    """The outcome maker of a case whose bounded call raised ``exc`` before its first look: :func:`stuck_outcome`
    where the call ran out of time, else :func:`skipped_outcome` (it exited: a definite failure)."""
    return stuck_outcome if exc.timed_out else skipped_outcome


def skipped_outcome(case, seed: int, reason: str, started: tuple | None = None, **extra) -> dict:
    """The outcome of a case that was not audited, with its reason (and its times from ``started``, the two
    clocks' readings when it began, where this process ran it)."""
    return {"id": case.id, "status": "skipped", "reason": reason, **_described(case, seed),
            **(_times(started) if started is not None else {}), **extra}


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
               else {}), **(_raised_described(case) if case.raised_as_output else {})}


def _raised_described(case) -> dict:
    """An opted-in case's reproduction needs ``released`` (:mod:`audit.scan.raised`) atop its files."""
    from audit.scan.raised import PREAMBLE

    return {"raised_as_output": True, "setup": case.setup,
            "preamble": "\n\n".join(p for p in (case.entry.family.preamble, PREAMBLE) if p)}


def _global_generator_state() -> tuple:
    """NumPy's global generator's whole state, comparable with ``==``: the Mersenne Twister's key and its position in
    it (and the cached Gaussian), since a draw that does not use up the key moves only the position."""
    _, key, position, has_gauss, cached = np.random.get_state()
    return key.tobytes(), int(position), int(has_gauss), float(cached)


def global_generator_note(family, obj) -> str:
    """The note on an entry point ``obj`` of ``family`` whose call changed NumPy's global generator: it names the seed
    or generator parameter(s) the call gives it (:meth:`~audit.scan.profiles.base.Family.generator_parameters`), or
    says that it takes none of the family's."""
    given = family.generator_parameters(obj)
    if given:
        return (f"draws from NumPy's global generator, not from the {' or '.join(given)} it is given (the audit's "
                "runner seeds and restores it per chunk)")
    names = (family.seed_name,) + tuple(family.generator_names)
    return (f"draws from NumPy's global generator, and takes no seed or generator to draw from instead (no parameter "
            f"{' or '.join(names)}; the audit's runner seeds and restores the global one per chunk)")


def audit_case(case, *, alpha: float, max_runs: int, timeout: float, seed: int, on_bounds=None) -> dict:
    """The outcome of one case (module docstring): a JSON-able dict with ``status`` "finding", "control" or "skipped".

    ``on_bounds``, where given, is called once the probe has run, before any other call, with the seconds the rest of
    the case may take under its own bounds (:func:`seconds_after_probe`, and for an opted-in case whose probe calls
    both raised, first the check that it raises on every call, :func:`raise_check_limit`): the worker that runs the
    case in a child process of its own sets its hard kill from it (:func:`audit.scan.isolation.hard_limit`).

    Every call of the entry point the case made is counted (:class:`_Captured`): an audited case's outcome says those
    outside its audit's ``runs`` as ``probe_calls`` (at most :func:`probe_calls_bound`), a skipped one all of its own
    as ``calls``, where its call was built.
    """
    built = []  # the case's _Captured, once its call is built: it counts the calls
    outcome = _audit_case(case, alpha, max_runs, timeout, seed, on_bounds, built)
    if built and outcome["status"] == "skipped":
        outcome["calls"] = built[0].calls
    elif built:
        outcome["probe_calls"] = built[0].calls - outcome["runs"]
    return outcome


#: The calls a case makes to probe its call before its audit (:func:`audit_case`): one on each database of its pair.
SCAN_PROBE_CALLS = 2
#: The calls of the audit's runner's own probe, outside its counted runs: twice on one database with one seed, a third
#: time where the two outputs differ (:func:`mechanisms.execution.worker.run_probe`).
RUNNER_PROBE_CALLS = 3


def probe_calls_bound(raised_as_output: bool = False) -> int:
    """The most calls of its entry point an audited case makes beyond its ``max_runs``, its ``probe_calls``: the
    scan's probe (:data:`SCAN_PROBE_CALLS`) and the audit's runner's (:data:`RUNNER_PROBE_CALLS`); where the probe
    predicted the first look too slow, the calls that time it again (:data:`RETIME_CALLS`) and the first audit left
    before its first look (its runner's probe and the float-bit probe's runs,
    :data:`audit.gating.look_runs.FLOAT_PROBE_RUNS`; the audit run again makes its own probe); for an opted-in case
    (``raised_as_output``) the check that it raises on every call (2 × :data:`audit.scan.raised.ALWAYS_CALLS`). 178
    for an opted-in case, 78 for any other; an audit's runs are at most ``max_runs``
    (:func:`audit.gating.sequential.run_sequential_audit`'s call limit)."""
    from audit.gating.look_runs import FLOAT_PROBE_RUNS
    from audit.scan.raised import ALWAYS_CALLS

    left = RUNNER_PROBE_CALLS + FLOAT_PROBE_RUNS  # the audit left as too slow, before its first look
    return (SCAN_PROBE_CALLS + RUNNER_PROBE_CALLS + RETIME_CALLS + left
            + (2 * ALWAYS_CALLS if raised_as_output else 0))


def _audit_case(case, alpha: float, max_runs: int, timeout: float, seed: int, on_bounds, built: list) -> dict:
    """:func:`audit_case`'s work; ``built`` gets the case's :class:`_Captured` once its call is built."""
    from mechanisms.adapters.callables import PerDatabaseMechanism
    from mechanisms.calls.user_call import call_user_code
    from mechanisms.execution.runner import ExecutionSettings
    from mechanisms.outputs.encoding import OutputEncoder

    from audit.gating.assertions import claim_spec
    from audit.gating.look_time import FirstLookPastTimeLimit
    from audit.gating.sequential import run_sequential_audit

    started = (time.perf_counter(), time.process_time())
    who = f"entry point {case.entry.qualified}"
    try:
        # The family's preamble and setup run the library's code (OpenDP's constructor builds the measurement):
        # bounded here, for a scan run in its own process too (no hard kill there), with a message naming it.
        function = _Captured(call_user_code(case.function, who=who, timeout=timeout,
                                            where=" while its call was built (the family's preamble and setup)",
                                            hint="(the scan's --timeout)"), case.pair)
        built.append(function)
        if case.raised_as_output:  # counts each database's raises (audit.scan.raised)
            from audit.scan.raised import RaiseCounter

            function = RaiseCounter(function, case.pair.first, case.pair.second)
    except MechanismError as exc:
        return _hung(exc)(case, seed, f"hangs or exits: {exc}", started)
    except Exception as exc:  # noqa: BLE001 - the source is built from the profile; say what failed
        return skipped_outcome(case, seed, f"the call could not be built: {type(exc).__name__}: {exc}", started)
    global_state = _global_generator_state()
    probe_calls, probed = [], []  # the probe's two calls' seconds (what one call costs here and now), and values
    for name, db in (("first", case.pair.first), ("second", case.pair.second)):
        called = time.perf_counter()
        try:
            probed.append(call_user_code(function, (db, np.random.default_rng(seed)), who=who, timeout=timeout,
                                         where=f" on the {name} database", hint="(the scan's --timeout)"))
        except MechanismError as exc:
            return _hung(exc)(case, seed, f"hangs or exits: {exc}", started)
        except Exception as exc:  # noqa: BLE001 - a library may raise anything at a grid point
            return skipped_outcome(case, seed, f"the call raised {type(exc).__name__} on the {name} database: {exc}"[:400],
                            started)
        probe_calls.append(time.perf_counter() - called)
    # The slower call bounds the chunks (a first call's one-off costs included); the faster predicts the looks' calls.
    probe_seconds, call_seconds = max(probe_calls), min(probe_calls)
    check_limit = raise_check_limit(case, probed, timeout, probe_seconds)
    if on_bounds is not None:  # before the raise check: the worker's hard kill must allow it too
        on_bounds(check_limit + seconds_after_probe(timeout, probe_seconds, max_runs))
    if check_limit:
        from audit.scan.raised import ALWAYS_CALLS, PREFIX, always_raises

        # Up to 2 × ALWAYS_CALLS more calls, bounded as a chunk of that many: a call may hang after raising.
        try:
            category = call_user_code(always_raises, (function, case.pair.first, case.pair.second, seed), who=who,
                                      timeout=check_limit, where=" while checking whether it raises on every call",
                                      hint="(the scan's --timeout)")
        except MechanismError as exc:
            return _hung(exc)(case, seed, f"hangs or exits: {exc}", started)
        if category is not None:
            return skipped_outcome(case, seed, f"the call raised on each of {ALWAYS_CALLS} calls on each database "
                                   f"(a raise on every call is no random output): {category[len(PREFIX):]}"[:400],
                                   started)
    looks_limit = chunk_timeout(timeout, probe_seconds, max_runs)
    probe_ended, retimed = time.perf_counter(), None
    notes = []
    if global_state != _global_generator_state():
        notes.append(global_generator_note(case.entry.family, case.entry.obj))
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
            # A finding needs one refutation: within a look the tests after the first that refutes are not run.
            try:
                audit = run_sequential_audit(spec, max_runs, time_limit=looks_limit, seconds_per_run=call_seconds,
                                             look_fraction=LOOK_FRACTION, stop_at_refutation=True)
            except FirstLookPastTimeLimit:
                # Both probe calls may have met a busy moment of the machine (diffprivlib's LogisticRegression: 0.43 s
                # a fit at load 3, 3 ms alone): timed again, a much faster call retries within what is left of the
                # looks' bound, so the case's bounds after its probe (seconds_after_probe) still hold.
                retimed = _fastest_call(function, case, seed, who, timeout, budget=looks_limit / 4)
                left = looks_limit - (time.perf_counter() - probe_ended)
                if not (retimed < call_seconds / 2 and left > 0):
                    raise
                audit = run_sequential_audit(spec, max_runs, time_limit=left, seconds_per_run=retimed,
                                             look_fraction=LOOK_FRACTION, stop_at_refutation=True)
        for warning in said:
            text = str(warning.message)
            if issubclass(warning.category, MechanismWarning) and text not in notes:
                notes.append(text)
            elif not issubclass(warning.category, MechanismWarning):
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    except MechanismError as exc:
        return skipped_outcome(case, seed, f"failed during the audit: {exc}"[:400], started, notes=notes)
    except FirstLookPastTimeLimit as exc:
        again = "" if retimed is None else f"; timed again, {retimed:.3g} s"
        return stuck_outcome(case, seed, f"too slow to audit: its first look would end {exc.predicted:.3g} s after "
                             f"its audit started (its probe's faster call took {call_seconds:.3g} s{again}), past "
                             f"the {looks_limit:.3g} s its looks may take at --timeout {timeout:g}", started,
                             notes=notes)
    except InputError as exc:
        return skipped_outcome(case, seed, f"could not be audited: {exc}"[:400], started, notes=notes)
    captured = function.function if case.raised_as_output else function
    if captured.printed:
        notes.append(f"prints to stdout (captured): {captured.printed!r}")
    # What reached the streams past the capture above (stderr: a library's logging), counted by the audit's runner.
    notes += [note for note in audit.result.notes if PRINTED_NOTE_WORDS in note]
    if captured.mutates:
        notes.append("changes the database it is given in place (each call of the scan gets a copy of its own)")
    notes += [f"warned: {w}" for w in captured.warned]
    raised = {}
    if case.raised_as_output:
        from audit.scan.raised import finding_note

        raised = {"raises": function.summary()}
        notes.append(finding_note(raised["raises"]) if audit.refuted and any(raised["raises"]["raised"])
                     else function.note())
    evidence = _evidence(audit)
    if evidence.get("refuting_test") == "float":
        event = audit.result.refuting_event_test
        evidence.update(_bit_parts(captured.kept, (event.event or {}).get("statistic") if event else None))
    return {"id": case.id, "status": "finding" if audit.refuted else "control", **_described(case, seed),
            **evidence, "alpha": alpha, "max_runs": int(max_runs), **_times(started), "notes": notes, **raised}


def _bit_parts(kept: tuple, label: str | None) -> dict:
    """``{"bit_parts": [...]}``: the keys of a dict release whose floating-point bits differ most between the pair's
    databases (:func:`audit.search.event_candidates.bit_parts`, ``["y{'sum'}"]``), read by the refuting float-bit
    statistic (``label``) fitted on the releases kept (``kept``, :class:`_Captured`); {} where none is named. Said of
    a finding already made: it spends no α and no run."""
    from mechanisms.outputs.encoding import OutputEncoder

    from audit.search.event_candidates import bit_parts
    from audit.statistics.float_bits import FLOAT_STATISTICS

    if min(len(k) for k in kept) < 2:
        return {}
    encoder = OutputEncoder()
    try:
        first, second = (np.array([encoder(release) for release in releases]) for releases in kept)
    except Exception:  # noqa: BLE001 - a release the encoder refuses (too many keys) names no key; the finding stands
        return {}
    kinds = [kind for kind, _, name, _ in FLOAT_STATISTICS if name == label] or [k for k, *_ in FLOAT_STATISTICS]
    for kind in kinds:
        fitted = kind.fit(first, second)
        names = [] if fitted is None else bit_parts(fitted, first, second, encoder)
        if names:
            return {"bit_parts": names}
    return {}


def chunk_timeout(timeout: float, probe_seconds: float, calls: int | None = None) -> float:
    """Seconds ``calls`` calls of a case may take (default: one chunk of the audit's runs,
    :data:`~mechanisms.execution.settings.DEFAULT_CHUNK_SIZE`): ``timeout``, or, where the probe's slower call says
    that they take longer here (a slow fit, a machine others load), :data:`CHUNK_SLACK` times that, at most
    :data:`CHUNK_TIMEOUT_FACTOR` × ``timeout``. The bound only stops a hang (a chunk's) or a case far slower than its
    probe (the looks'); the runs are the same whatever it is."""
    from mechanisms.execution.runner import DEFAULT_CHUNK_SIZE

    calls = DEFAULT_CHUNK_SIZE if calls is None else calls
    return min(max(timeout, CHUNK_SLACK * probe_seconds * calls), CHUNK_TIMEOUT_FACTOR * timeout)


def seconds_after_probe(timeout: float, probe_seconds: float, max_runs: int) -> float:
    """Seconds a case may run after its probe under its own bounds: twice its looks' bound, :func:`chunk_timeout` for
    its ``max_runs`` calls (``timeout``, or :data:`CHUNK_SLACK` × the probe's slower call × ``max_runs``, at most
    :data:`CHUNK_TIMEOUT_FACTOR` × ``timeout``), plus :data:`COMPUTE_TIMEOUTS` × ``timeout``. Every look, the first
    included, starts only while predicted to end within the looks' bound (:mod:`audit.gating.look_time`); twice it
    leaves the look started last as long again (the calls slower than predicted, more calls than planned), and the
    ``timeout`` added is for the audit's own work that the looks before the first timed one are not predicted to take
    (their fits and certificates). At most (2 × :data:`CHUNK_TIMEOUT_FACTOR` + :data:`COMPUTE_TIMEOUTS`) ×
    ``timeout``, whatever ``max_runs``: 1,260 s at the scan's default 60 s."""
    return 2 * chunk_timeout(timeout, probe_seconds, max_runs) + COMPUTE_TIMEOUTS * timeout


def raise_check_limit(case, probed: list, timeout: float, probe_seconds: float) -> float:
    """Seconds the check that an opted-in case raises on every call may take (:func:`audit.scan.raised.always_raises`,
    up to 2 × :data:`~audit.scan.raised.ALWAYS_CALLS` calls bounded as one chunk of them, :func:`chunk_timeout`),
    where both its probe calls raised (``probed``: their releases); 0 where the check is not made."""
    from audit.scan.raised import ALWAYS_CALLS, is_raised

    if not (case.raised_as_output and all(is_raised(value) for value in probed)):
        return 0.0
    return chunk_timeout(timeout, probe_seconds, 2 * ALWAYS_CALLS)


#: Calls at most that time a case's call again when its probe predicts its first look too slow (:func:`_fastest_call`).
RETIME_CALLS = 6


def _fastest_call(function, case, seed: int, who: str, timeout: float, budget: float) -> float:
    """The fastest of up to :data:`RETIME_CALLS` more calls of the case's ``function`` (on its two databases in turn,
    each bounded by ``timeout``), stopping once they have taken ``budget`` seconds."""
    from mechanisms.calls.user_call import call_user_code

    fastest, started = math.inf, time.perf_counter()
    for index in range(RETIME_CALLS):
        name, db = (("first", case.pair.first), ("second", case.pair.second))[index % 2]
        called = time.perf_counter()
        try:
            call_user_code(function, (db, np.random.default_rng([seed, 1, index])), who=who, timeout=timeout,
                           where=f" on the {name} database (timed again)", hint="(the scan's --timeout)")
        except MechanismError:
            raise
        except Exception:  # noqa: BLE001 - a call that raises times nothing; the audit's own runs will say why
            break
        fastest = min(fastest, time.perf_counter() - called)
        if time.perf_counter() - started >= budget:
            break
    return fastest


def _with_timeout(spec, timeout, settings_type):
    import dataclasses

    # A chunk that fails or passes its bound is not run again: on the same seed a library fails the same way, and a
    # hang would cost the bound three times over.
    return dataclasses.replace(spec, execution=settings_type(timeout=timeout, retries=0))


#: The claim's tests in words, as a finding names the one that refuted it (``refuting_test``).
TEST_NAMES = {"event": "event test", "float": "float-bit event test", "gdp": "event test's μ-GDP certificate",
              "mi": "MI test"}


def refuting_test(result) -> str | None:
    """The test whose certificate a finding shows (:data:`TEST_NAMES`): the event test (or its μ certificate) where
    it refuted the claim, else the float-bit event test, else the MI test; None for a control. Within a look a
    scan runs the tests in that order and stops at the first that refutes (:func:`audit.engine._run_audit`)."""
    tests = [r.get("test") for r in result.refuted_by]
    return next((test for test in ("event", "gdp", "float", "mi") if test in tests), None)


def _evidence(audit) -> dict:
    """The sequential audit's evidence, as the report shows it: the test that refuted the claim
    (:func:`refuting_test`), with the share of α it was certified at, and the event test whose pair and counts are
    shown: the float-bit one (reading the output's bits, for float noise) where it refuted, else the event test.
    Where the MI test alone refuted, its certified MI lower bound is the certificate."""
    result, event = audit.result, audit.result.refuting_event_test
    test = refuting_test(result)
    out = {"runs": int(audit.runs), "looks": len(audit.looks), "looks_planned": len(audit.schedule),
           "refuted_by": [r["detail"] for r in result.refuted_by], "runs_to_refute": audit.runs_to_refute,
           "audited_claim": (result.claim or {}).get("label")}
    if test is not None:
        out.update({"refuting_test": test, "refuting_alpha": result.claim_alpha.get(test)})
    if test == "mi":
        out.update({"certificate": "MI lower bound", "mi_lower_bound": _finite(result.lower_bound)})
    if event is not None and test != "mi":
        runs = list(event.runs_made or [event.runs_per_input, event.runs_per_input])
        out.update({"event": event.description, "runs_per_input": [int(r) for r in runs],
                    "hits": [int(round(p * n)) for p, n in zip((event.p_first, event.p_second), runs)],
                    "certificate": event.certificate, "epsilon_lower_bound": _finite(event.epsilon_lower_bound),
                    "delta_lower_bound": _finite(event.delta_lower_bound),
                    "support_differences": list(event.support_differences or []),
                    "unbounded_differences": list(event.unbounded_differences or [])})
    return out


def _finite(value):
    return None if value is None or not math.isfinite(value) else float(value)


def source_of(target: str) -> str:
    """What the cases are listed from: a ``FILE.py`` by its absolute path (workers may start elsewhere)."""
    return str(Path(target).resolve()) if target.endswith(".py") else target


def list_cases(target: str, epsilons, profile=None, timeout: float | None = None, hard_kill=None) -> tuple:
    """(skipped, cases) of ``target`` at ``epsilons`` (through ``profile``, default its own): the scan's cases,
    listed before any run, in the scan's process and again, the same, in each worker (:mod:`audit.scan.isolation`).
    Each import, public name, grid and grid point the listing reads runs within ``timeout`` seconds (the scan's
    ``--listing-timeout``; None: no bound), or is skipped naming it (:func:`audit.scan.cases.discover`); in a worker,
    within its hard kill ``hard_kill`` too (:func:`audit.scan.cases.bounded_listing`). So does the import of a user's
    module ``target`` that finds its profile (a package's submodules) where ``profile`` is not given (a worker's)."""
    if profile is None:
        try:
            profile = bounded_listing(profile_for, (target,), f"module {target}", timeout, " as it was imported",
                                      hard_kill)
        except MechanismError as exc:
            return [Skipped(target, str(exc))], []
    entries, skipped = discover(profile, source_of(target) if target.endswith(".py") else None, timeout, hard_kill)
    cases, unbuilt = build_cases(entries, epsilons, timeout, hard_kill)
    return skipped + unbuilt, cases


