"""A scan's cases on worker processes or Ray tasks, each case in a process of its own.

The cases go to the audit's backends (:func:`mechanisms.execution.backends.make_backend`: ``workers``
local processes started fresh, or Ray tasks) through the same scheduler as an audit's chunks
(:func:`mechanisms.execution.backends.run_tasks`). A worker receives the scan's target, not its
cases: it lists the cases itself, once per process, as the scan did, each of the library's calls bounded by
:data:`WORKER_LISTING_TIMEOUTS` × ``timeout`` (:func:`audit.scan.case_audit.list_cases`),
and checks that the case it is sent has the id the scan gave it.

**One process per case.** Where the platform can fork (Linux, macOS), a worker runs each case in a
child forked from it (:func:`run_case`): the child starts from the worker's state after loading the
target, never from what an earlier case left (a global a library call changed, a generator it
seeded, a thread it left running), so each case's outcome depends on its seed alone and the
report is the same for any number of workers and either backend. The child's memory may grow
by at most ``memory_limit`` bytes (:func:`audit.scan.processes.cap_memory`), so an allocation without bound fails
in it with ``MemoryError`` (a skipped case with that reason). A child that dies (a signal, ``os._exit``, an
abort in compiled code) or that is still running past what its own bounds allow (code stuck in a
compiled call, which the per-call ``timeout`` cannot interrupt; it is killed, :func:`hard_limit`) costs its
case only: the case is skipped with the reason, and the worker goes on. A child that ends with its outcome written
while a process it started still holds its pipe open (a pool it never closed) is seen to have ended within
:data:`_EXIT_POLL` seconds, and its outcome taken. The child leads a process group of its own, which the worker kills
as the case ends, written or killed: what the case started ends with it (:mod:`audit.scan.processes`). Without
``fork`` the case runs in the worker itself, where no hard kill reaches it and nothing it starts is ended with it: a
case stuck where ``timeout`` cannot interrupt it holds its worker, and the scan, for as long as it runs; a worker
that dies then (:class:`~mechanisms.execution.backends.WorkerLost`: on Ray a ``WorkerCrashedError``) also costs only
the case it ran, and a fresh worker replaces it.

**The hard kill's limit** is what the case's own bounds allow, plus
:data:`~mechanisms.execution.worker.HARD_KILL_GRACE` (``g``, 10 s); :func:`hard_limit`. Until its probe has run, a
case may run :data:`HARD_LIMIT_TIMEOUTS` × ``timeout`` + ``g`` (the build of its call and its two probe calls, each
bounded by ``timeout``, and one ``timeout`` more). Once its probe has run, before any other call, the case tells the
worker, through memory the two processes share, the seconds the rest may take
(:func:`audit.scan.case_audit.seconds_after_probe`): twice its looks' bound, which every look, the first included, is
started only while predicted to end within (``timeout``, or 4 × its probe's slower call × ``max_runs``, at most 10 ×
``timeout``), plus ``timeout`` for the audit's own work, and, for a case that opts in to raises as outputs whose
probe calls both raised, first the bound of its check that it raises on every call
(:func:`audit.scan.case_audit.raise_check_limit`: 100 calls bounded as one chunk of them, at most 10 × ``timeout``);
it may run until that long + ``g`` after its probe ended, never less than the first limit. So a case of slow but
legitimate calls (python-dp's ``BoundedMean`` without bounds: 20–60 ms a call, 75–235 s a case) is audited, and a
slow case that raises on every call is skipped as one, neither killed at 4 × ``timeout`` as stuck. A case stuck where
``timeout`` cannot reach is killed by its probe's end (itself within the first limit) + min(max(2 × ``timeout``, 8 ×
its probe's slower call × ``max_runs``), 20 × ``timeout``) + ``timeout`` + ``g`` (+ its raise check's bound), where
that is past the first limit: a case whose calls are quick is killed 4 × ``timeout`` + ``g`` after it started (250 s
at the default 60 s), and none runs more than 25 × ``timeout`` + 2 × ``g`` seconds (1,520 s at the default), 35 ×
``timeout`` + 2 × ``g`` (2,120 s) with a raise check, whatever ``max_runs``.

Only the scan's own process writes the state file and the report; the outcomes are merged in case order.
A worker's first task lists the cases (:func:`list_in_worker`), each of the library's calls bounded by
:data:`WORKER_LISTING_TIMEOUTS` × the scan's ``listing_timeout`` and, where one is stuck past that + ``g`` where the
bound cannot interrupt it (compiled code), hard-killed with its worker: every case is then skipped, naming the
module or name the listing was at (a worker that cannot list the cases cannot audit them). The scan's process bounds
the listing as a whole, the worker's start included, and each case's task, from outside
(:class:`audit.scan.processes.BoundedPool`): a worker stuck as it starts, or whose listing goes on call after call,
is stopped past that bound and its cases skipped (:func:`_listing_overdue`, :func:`_overdue_outcome`). A worker that
dies before it otherwise, as one does when the Python script that called the scan has no ``if __name__ == "__main__":``
guard (each ``spawn`` worker imports that script, which would start a scan of its own), stops the scan with one
error saying so.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import mmap
import os
import pickle
import select
import signal
import struct
import time
from dataclasses import dataclass

from mechanisms.calls.program import running_group
from mechanisms.errors import MechanismError
from mechanisms.execution.worker import CRASH_SIGNALS, HARD_KILL_GRACE, hard_kill_within

from audit.scan.cases import LISTING_HINT
from audit.scan.limits import WORKER_LISTING_TIMEOUTS  # read here under this module's name (audit.scan.limits)
from audit.scan.case_audit import (CHUNK_TIMEOUT_FACTOR, COMPUTE_TIMEOUTS, audit_case, list_cases, skipped_outcome,
                                   stuck_outcome)
from audit.scan import processes
from audit.scan.processes import (BoundedPool, WorkerOverdue, cap_memory, died, end_case, end_with_parent, exited,
                                  kill_case, listing_bound)

__all__ = ["HARD_LIMIT_TIMEOUTS", "WORKER_LISTING_TIMEOUTS", "CaseTask", "ListingTimedOut", "ScanTarget", "hard_limit",
           "list_in_worker", "run_case", "run_cases"]

#: A case's process is killed when it is still running this many ``timeout`` (plus
#: :data:`~mechanisms.execution.worker.HARD_KILL_GRACE` seconds) after it started, unless its probe has run and
#: its own bounds allow more (:func:`hard_limit`): the build of its call and its two probe calls are each bounded by
#: ``timeout``.
HARD_LIMIT_TIMEOUTS = 4

#: The exit status of a case's process that a BaseException (not an Exception) ended, having written its name.
_ESCAPED = 70


@dataclass(frozen=True)
class ScanTarget:
    """What a worker needs to list a scan's cases: the target, the ε grid and the scan's ``listing_timeout``, which
    bounds the listing's calls of the library (:func:`list_in_worker`; ``label`` names it in messages), and what the
    scan's bound on its tasks needs (:func:`run_cases`)."""

    label: str
    target: str
    epsilons: tuple
    listing_timeout: float | None = None
    #: Seconds the scan's own process took to list the cases: the scan's bound on a worker's listing grows with it
    #: (:func:`audit.scan.processes.listing_bound`).
    listed_seconds: float = 0.0
    #: A folder of the scan's where a local worker marks each case whose process it starts (:func:`run_cases`).
    marks: str | None = None


@dataclass(frozen=True)
class CaseTask:
    """One case to audit: its position in the scan's list, its id (checked in the worker), and its settings."""

    position: int
    case_id: str
    alpha: float
    max_runs: int
    timeout: float
    seed: int
    memory_limit: int | None


_CASES: dict = {}
#: What this process's listing of a target skipped because it did not return within its bound, by target.
_TIMED_OUT: dict = {}


class ListingTimedOut(MechanismError):
    """A case its worker did not list because a call of the listing ran out of time there: the case is skipped
    without any run, to be audited again by a resumed scan (:data:`audit.scan.case_audit.RETRY`)."""


def _case(target: ScanTarget, task: CaseTask):
    """The task's case, from the cases this process listed for ``target`` (listed once per process)."""
    list_in_worker(target)
    key = (target.target, target.epsilons)
    case = _CASES[key].get(task.case_id)  # by id: --only keeps some of the cases
    if case is None and _TIMED_OUT.get(key):
        raise ListingTimedOut(f"the worker's listing of the cases did not list it: {_TIMED_OUT[key][0]}"[:400],
                              mechanism=target.label)
    if case is None:
        raise MechanismError(f"the worker listed other cases than the scan (case {task.position + 1}, "
                             f"{task.case_id}, is not among them): the target's entry points are not the same in a "
                             "fresh process; scan it with --in-process", mechanism=target.label)
    return case


#: What every case's audit imports, imported once in the worker before it forks the first case: else each
#: case's process would import them again (PyTorch and scikit-learn take seconds).
WARM_MODULES = ("audit.engine", "audit.gating.assertions", "audit.gating.sequential", "audit.statistics.classifier",
                "mechanisms.adapters.callables", "mechanisms.execution.runner", "mechanisms.outputs.encoding",
                "sklearn.linear_model")


def _warm() -> None:
    """Import :data:`WARM_MODULES`, then freeze the worker's objects (``gc.freeze``): a case's collector then
    never walks them, so the child does not copy the worker's memory page by page (a full collection in a
    case's process took 0.7 s with PyTorch loaded, on the 2-core test machine under load; 0.07 s frozen)."""
    import gc
    import importlib

    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional dependency: its case imports it (or not) itself
            pass
    gc.freeze()


def hard_limit(timeout: float, started: float, probe_ended: float | None = None,
               allowed: float | None = None) -> float:
    """The moment (``time.monotonic``) past which a case's process that started at ``started`` is killed (module
    docstring): ``started`` + :data:`HARD_LIMIT_TIMEOUTS` × ``timeout`` + the grace, or, once its probe ended at
    ``probe_ended`` and the case said its own bounds allow ``allowed`` seconds more
    (:func:`audit.scan.case_audit.seconds_after_probe`), ``probe_ended`` + ``allowed`` + the grace where that is
    later."""
    first = started + HARD_LIMIT_TIMEOUTS * timeout + HARD_KILL_GRACE
    if probe_ended is None or allowed is None:
        return first
    return max(first, probe_ended + allowed + HARD_KILL_GRACE)


def most_case_seconds(timeout: float, grace: float) -> float:
    """The most a case's process runs before its worker kills it (:func:`hard_limit`): its probe
    ends within the first limit (4 × ``timeout`` + g), then its own bounds allow at most 2 × 10 × ``timeout``
    (:func:`audit.scan.case_audit.seconds_after_probe`) + ``timeout`` + a raise check's 10 × ``timeout``
    (:func:`audit.scan.case_audit.raise_check_limit`) + g: 35 × ``timeout`` + 2 × g (g: ``grace``, the hard
    kill's)."""
    return (HARD_LIMIT_TIMEOUTS + 3 * CHUNK_TIMEOUT_FACTOR + COMPUTE_TIMEOUTS) * timeout + 2 * grace


#: The layout of the memory a case's process shares with its worker: when its probe ended (``time.monotonic``, a
#: clock all processes share) and the seconds its bounds allow after it; both 0 until the probe has run.
_BOUNDS = struct.Struct("dd")


def _audit(target: ScanTarget, task: CaseTask, bounds: mmap.mmap | None = None) -> dict:
    case = _case(target, task)

    def tell(allowed: float) -> None:
        bounds[:_BOUNDS.size] = _BOUNDS.pack(time.monotonic(), allowed)

    try:
        return audit_case(case, alpha=task.alpha, max_runs=task.max_runs, timeout=task.timeout, seed=task.seed,
                          on_bounds=None if bounds is None else tell)
    except Exception as exc:  # noqa: BLE001 - whatever escapes the audit costs this case, not the scan
        return skipped_outcome(case, task.seed, f"failed during the audit: {type(exc).__name__}: {exc}"[:400])


def _child(target: ScanTarget, task: CaseTask, pipe: int, worker: int, bounds: mmap.mmap) -> None:
    """The forked process of one case: audit it, write the pickled outcome to ``pipe``, and end."""
    code = 0
    try:
        faulthandler.disable()
        for number in CRASH_SIGNALS:  # a crashing case dies quietly (mechanisms.execution.worker)
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the scan's: it stops the workers
        os.setsid()  # a group of its own: what it starts ends with it (audit.scan.processes)
        end_with_parent()  # Linux: killed with its worker, its group then killed by its guard
        if os.getppid() != worker:  # the worker ended before the request above was made
            os._exit(1)
        if task.memory_limit is not None:
            cap_memory(task.memory_limit)
        data = pickle.dumps(_audit(target, task, bounds))
        with os.fdopen(pipe, "wb") as handle:
            handle.write(data)
    except BaseException as exc:  # noqa: BLE001 - nothing may run on: the exit status tells the worker
        code = _ESCAPED
        try:  # what escaped (KeyboardInterrupt, GeneratorExit raised by the entry point), for the skipped reason
            os.write(pipe, (type(exc).__name__ + (f": {exc}" if str(exc) else ""))[:300].encode())
        except BaseException:  # noqa: BLE001 - the pipe is closed: the exit status alone says it
            pass
    finally:
        os._exit(code)


def _forked(target: ScanTarget, task: CaseTask) -> dict:
    """Audit the case in a child forked from this worker (module docstring); its outcome, or a skipped one."""
    case = _case(target, task)
    bounds = mmap.mmap(-1, _BOUNDS.size)  # anonymous and shared: the child writes its bounds in it after its probe
    read_end, write_end = os.pipe()
    worker = os.getpid()
    _mark(target, task)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(target, task, write_end, worker, bounds)
    os.close(write_end)
    data, stopped, told, probed, ended = bytearray(), False, (None, None), False, False
    deadline = hard_limit(task.timeout, started)
    try:
        with running_group(pid):  # the worker told to stop (SIGTERM, worker._stop) ends this case's group too
            while True:
                left = deadline - time.monotonic()
                if left <= 0:  # the case may have told a later one since: read it only now, as the deadline passes
                    probe_ended, allowed = _BOUNDS.unpack(bounds[:_BOUNDS.size])
                    if allowed > 0:
                        told = (probe_ended, allowed)
                        deadline = hard_limit(task.timeout, started, *told)
                        left = deadline - time.monotonic()
                if left <= 0:
                    kill_case(pid)
                    stopped = True
                    break
                ready, _, _ = select.select([read_end], [], [], min(left, _EXIT_POLL))
                if ready:
                    block = os.read(read_end, 1 << 16)
                    if not block:
                        break
                    data += block
                    continue
                if exited(pid):  # it ended, its pipe still open: held by a process it started (a pool left open)
                    ended = True
                    data += _unread(read_end)
                    break
    finally:
        os.close(read_end)
        status = end_case(pid, ended)  # reaped after running_group's block: its id, then free, is forgotten
        probed = _BOUNDS.unpack(bounds[:_BOUNDS.size])[1] > 0  # its probe ended: its looks may have begun
        bounds.close()
    entry = case.entry.qualified
    if stopped:  # killed before its probe ended, it spent none of its α: a resumed scan audits it again
        return (skipped_outcome if probed else stuck_outcome)(case, task.seed,
                                                              _stuck(task.timeout, started, deadline, told, entry))
    if status == 0 and data:
        return pickle.loads(bytes(data))
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _ESCAPED and data:
        return skipped_outcome(case, task.seed, f"{entry} raised {bytes(data).decode(errors='replace')}, a "
                               "BaseException that is not an Exception: user code must raise an Exception to fail")
    return skipped_outcome(case, task.seed, died(status, entry))


#: Seconds a worker waits on a case's pipe before it checks whether the case's process has ended (:func:`_forked`):
#: a process the case started may hold the pipe open after the case's process ended, its outcome written.
_EXIT_POLL = 1.0


def _mark(target: ScanTarget, task: CaseTask) -> None:
    """Mark, in the scan's folder, that this worker starts the task's case's process: past the scan's bound on the
    task, a case marked may have begun its looks, one unmarked made no run (:func:`_overdue_outcome`)."""
    if target.marks is not None:
        try:
            with open(os.path.join(target.marks, str(task.position)), "w", encoding="ascii"):
                pass
        except OSError as exc:  # unmarked, the case might be taken for one that made no run: it is not run
            raise MechanismError(f"the worker could not mark that it starts the case ({exc})",
                                 mechanism=target.label) from None


def _unread(pipe: int) -> bytes:
    """What is left to read in ``pipe`` now, without waiting for its writers to close it."""
    os.set_blocking(pipe, False)
    data = bytearray()
    while True:
        try:
            block = os.read(pipe, 1 << 16)
        except BlockingIOError:
            return bytes(data)
        if not block:
            return bytes(data)
        data += block


def _stuck(timeout: float, started: float, deadline: float, told: tuple, entry: str) -> str:
    """Why a case's process was killed at ``deadline``: the limit its bounds allowed (:func:`hard_limit`)."""
    if deadline == hard_limit(timeout, started):
        allowed = f"{HARD_LIMIT_TIMEOUTS} × --timeout + {HARD_KILL_GRACE:g} s"
    else:
        allowed = (f"its probe ended at {told[0] - started:.3g} s, then the {told[1]:.3g} s its own bounds allow + "
                   f"{HARD_KILL_GRACE:g} s")
    return (f"still running {deadline - started:.4g} s after it started ({allowed}), stuck where --timeout cannot "
            f"interrupt it: its process was killed while running {entry}")


def run_case(target: ScanTarget, task: CaseTask, _hard_kill: bool = True) -> dict:
    """Audit one case in this worker: in a forked child where the platform can fork, else here. (The backends
    pass ``_hard_kill``, as to an audit's chunks: a fresh worker that replaced a dead one lists the cases first, within
    its hard kill, :func:`list_in_worker`; a case's own bound is :func:`hard_limit`.)"""
    list_in_worker(target, None, _hard_kill)
    if hasattr(os, "fork"):
        return _forked(target, task)
    return _audit(target, task)  # pragma: no cover - platforms without fork (Windows)


def run_cases(target: ScanTarget, tasks: list, cases: list, *, workers: int, backend: str, ray_address=None,
              on_done=None) -> list:
    """Every task's outcome, in task order, run on ``workers`` local processes or Ray tasks (module docstring).

    A worker that dies while running a case (:class:`~mechanisms.execution.backends.WorkerLost`) costs that
    case, skipped with the reason; the others go on, on fresh workers. ``on_done(position, outcome)`` is
    called in the scan's process as each case ends (it writes the state file).
    """
    import shutil
    import tempfile

    from mechanisms.execution.backends import ProcessBackend, make_backend, run_tasks

    def give_up(position, exc, attempts):
        case = cases[position]
        if isinstance(exc, WorkerOverdue):
            return _overdue_outcome(target, tasks[position], case, exc)
        stuck = _listing_stuck(target, exc)  # a fresh worker's listing: the only hard kill a scan's worker arms
        if stuck is not None or isinstance(exc, ListingTimedOut):  # no run made: a resumed scan audits it again
            return stuck_outcome(case, tasks[position].seed, stuck or str(exc)[:400])
        if isinstance(exc, MechanismError):
            return skipped_outcome(case, tasks[position].seed, str(exc)[:400])
        return skipped_outcome(case, tasks[position].seed, f"the worker process died while running "
                               f"{case.entry.qualified} (killed, out of memory, os._exit or a crash in compiled "
                               f"code): {exc}"[:400])

    # A local worker marks each case whose process it starts (_mark): a Ray task may run where this folder is not.
    marks = tempfile.mkdtemp(prefix="miaudit-scan-") if backend == "local" else None
    target = dataclasses.replace(target, marks=marks)
    bound = listing_bound(target.listing_timeout, target.listed_seconds, WORKER_LISTING_TIMEOUTS,
                          HARD_KILL_GRACE)

    def bound_of(fn, task):  # the scan's own bound on each task (audit.scan.processes)
        if bound is None:
            return None
        if fn is list_in_worker:
            return bound, _listing_overdue(target, bound)
        case = most_case_seconds(task.timeout, HARD_KILL_GRACE)
        return bound + case + HARD_KILL_GRACE, (
            f"case {task.position + 1} ({task.case_id}): its worker did not end it within "
            f"{bound + case + HARD_KILL_GRACE:.4g} s ({bound:.4g} s for a fresh "
            f"worker to start and list the cases, + {case:.4g} s, the most a case's process runs at --timeout "
            f"{task.timeout:g}, + {HARD_KILL_GRACE:g} s): the worker process was stopped")

    # One process per case needs at least one worker process: the local backend's in-process form runs
    # none, so a single worker is a pool of one.
    pool = BoundedPool(ProcessBackend(target, workers) if backend == "local" else
                       make_backend(target, backend, workers, ray_address), bound_of)
    try:
        listed, = run_tasks(pool, list_in_worker, [None], retries=0,
                            give_up=lambda position, exc, attempts: _listing_given_up(target, exc))
        if isinstance(listed, str):  # the listing was stuck: no worker lists the cases, so none is audited
            return [_given(on_done, position, stuck_outcome(case, task.seed, _unlisted(listed)))
                    for position, (task, case) in enumerate(zip(tasks, cases))]
        return run_tasks(pool, run_case, tasks, retries=0, give_up=give_up, on_done=on_done)
    finally:
        pool.close()
        if marks is not None:
            shutil.rmtree(marks, ignore_errors=True)


def _listing_overdue(target: ScanTarget, bound: float) -> str:
    """Why no worker listed the cases within the scan's ``bound`` on it (:func:`audit.scan.processes.listing_bound`),
    the bound said in words; each case's reason says so (:func:`_unlisted`)."""
    return (f"the worker did not start and list the cases within {bound:.4g} s, the scan's bound on a fresh worker: "
            f"{WORKER_LISTING_TIMEOUTS} times the sum of --listing-timeout ({target.listing_timeout:g} s) and what the "
            f"scan's own listing took ({target.listed_seconds:.3g} s), plus {processes.WORKER_START_SECONDS:g} s for "
            f"the worker to start and {HARD_KILL_GRACE:g} s of grace; stuck as it started (the script that called the "
            "scan, which each worker imports, or a start-up hook) or as it listed (importing the target or its "
            "library); the worker process was stopped")


def _unlisted(listed: str) -> str:
    """The reason of every case where no worker listed the cases (``listed``: why): one text, so that the report
    says it once for an entry point's cases (:func:`audit.scan.words.skipped_items`), which name themselves."""
    return f"not audited, as no worker listed the cases: {listed}"


def _overdue_outcome(target: ScanTarget, task: CaseTask, case, exc) -> dict:
    """The outcome of a case whose worker did not end it within the scan's bound (``exc``): to be audited again by a
    resumed scan where its worker never started its process (no run made: no mark, :func:`_mark`), else kept."""
    if target.marks is not None and not os.path.exists(os.path.join(target.marks, str(task.position))):
        return stuck_outcome(case, task.seed, f"{exc.reason}; its case's process had not started (no run made)"[:400])
    why = ("its case's process had started, so its looks may have begun" if target.marks is not None else
           "on Ray, whether its case's process had started is not known")
    return skipped_outcome(case, task.seed, f"{exc.reason}; {why}: a resumed scan keeps this outcome"[:400])


def list_in_worker(target: ScanTarget, _task=None, _hard_kill: bool = False) -> int:
    """A worker's first task: list the target's cases (:func:`_case`'s list) and say how many there are, each of the
    library's calls bounded by :data:`WORKER_LISTING_TIMEOUTS` × the scan's ``listing_timeout``, and, with
    ``_hard_kill`` (as the backends run it), ending this worker where a call is still running
    :data:`~mechanisms.execution.worker.HARD_KILL_GRACE` seconds past that (stuck in compiled code, where the bound's
    interruption cannot reach: :func:`mechanisms.execution.worker.hard_kill_within`), its task's report naming the
    module or name it was at (:func:`_listing_stuck`)."""
    key = (target.target, target.epsilons)
    if key not in _CASES:
        timeout = None if target.listing_timeout is None else WORKER_LISTING_TIMEOUTS * target.listing_timeout
        skipped, cases = list_cases(target.target, target.epsilons, timeout=timeout,
                                    hard_kill=_hard_killed if _hard_kill else None)
        _CASES[key] = {case.id: case for case in cases}
        _TIMED_OUT[key] = [s.reason for s in skipped if LISTING_HINT in s.reason]
        _warm()
    return len(_CASES[key])


def _hard_killed(who: str, seconds: float):
    """The hard kill of one of a worker's listing calls, bounded by ``seconds``: that + the grace."""
    return hard_kill_within(seconds + HARD_KILL_GRACE, who)


def _listing_stuck(target: ScanTarget, exc) -> str | None:
    """Why no case is audited where a worker's listing was hard-killed (:func:`list_in_worker`; ``exc``, its
    :class:`~mechanisms.execution.backends.WorkerLost`, says so, naming the call it was at where its report does);
    None where ``exc`` is another failure."""
    if not getattr(exc, "stuck", False) or target.listing_timeout is None:
        return None
    bound = WORKER_LISTING_TIMEOUTS * target.listing_timeout + HARD_KILL_GRACE
    return (f"{exc.running or 'a call of the library'} was still running {bound:.4g} s after it started in a worker's "
            f"listing of the cases ({WORKER_LISTING_TIMEOUTS} × --listing-timeout + {HARD_KILL_GRACE:g} s), stuck "
            "where --listing-timeout cannot interrupt it: the worker process was killed")


def _given(on_done, position: int, outcome: dict) -> dict:
    if on_done is not None:
        on_done(position, outcome)
    return outcome


def _listing_given_up(target: ScanTarget, exc) -> str:
    """The reason every case is skipped where a worker's listing was hard-killed or overdue (:class:`WorkerOverdue`);
    else :func:`_never_started`."""
    if isinstance(exc, WorkerOverdue):
        return exc.reason
    return _listing_stuck(target, exc) or _never_started(0, exc, 1)


def _never_started(position, exc, attempts):
    """A worker that dies before its first task: the script that called the scan, re-imported by each worker
    process (``spawn``), starting a scan itself, or a target that kills the interpreter as it is imported."""
    raise MechanismError(
        f"the scan's worker process ended before it could run any case ({exc}): a Python script that calls "
        "audit.scan.scan must do so under `if __name__ == \"__main__\":` (each worker process imports the script "
        "that started it), or pass in_process=True", mechanism="scan") from None
