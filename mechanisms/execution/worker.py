"""What runs a chunk, in the audit's process, in a worker process or in a Ray task.

The mechanism reaches a worker by reference: the specification that loaded it
(``FILE.py:NAME`` with an absolute path, ``package.module:NAME`` or ``catalog:NAME``), or the
whole ``[mechanism]`` table for a library mechanism (OpenDP, diffprivlib), an external program
or catalog parameters, loaded once per worker process. A library's object is never pickled:
an OpenDP measurement holds C pointers, a diffprivlib mechanism built without ``random_state``
the system's entropy source, and a query loaded from a file lives in a module that exists only
in the process that ran the file. Only a mechanism built in code with no specification (a
library user's object) is pickled; a closure or lambda cannot be, and the error says so.

A user's statistic given to the mechanism's output encoder (``--statistic`` with a per-database
function, :mod:`mechanisms.adapters.user_statistic`) runs inside the mechanism's calls, so it
travels with the reference: as its own specification where it was loaded from one, else pickled.
The worker gives it to the encoder of the mechanism it loaded, and the rows a worker returns are
those the audit's process would return for the chunk's seed: the statistic's columns included.

What runs in a worker when it dies. A worker that dies (the hard kill of code stuck in compiled code, a crash)
takes its record of the user code in progress with it, and the audit's process would know only the task it
sent. So each task runs with a small file of its own (:func:`run_reporting`), memory-mapped: the worker writes
in it the innermost user code running inside the mechanism's call whenever that changes
(:func:`mechanisms.calls.user_call.report_running_to`: a statistic inside a per-database function's call), and
the audit's process reads it when the worker died (:func:`lost_in`) and names that code; the worker also
writes there when its hard kill is due, so that a worker stopped stuck is told from one that crashed. A Ray task
does the same where it sees the audit's files (:func:`run_reporting_where_seen`), and runs without a report
elsewhere (a node on another machine), where its death names the mechanism.
"""

from __future__ import annotations

import faulthandler
import json
import mmap
import os
import signal
import struct
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np

from mechanisms.base import draws_only_from_rng, mechanism_name, run_on_batch
from mechanisms.calls.printed import Printed, captured_prints
from mechanisms.calls.user_call import report_running_to
from mechanisms.errors import MechanismError
# Re-exported, and read here under this module's name (the module docstring of mechanisms.execution.bounds).
from mechanisms.execution.bounds import HARD_KILL_GRACE
from mechanisms.execution.chunks import ChunkTask, chunk_generator, seed_global_generators
from mechanisms.outputs.encoding import encoder_of

__all__ = ["CRASH_SIGNALS", "HARD_KILL_GRACE", "ChunkOutput", "MechanismReference", "init_ray_worker", "init_worker",
           "run_chunk", "hard_kill_within", "run_in_ray_worker", "run_probe", "lost_in", "run_reporting",
           "run_reporting_where_seen"]

_LOADED: dict = {}


@dataclass(frozen=True)
class MechanismReference:
    """How to obtain the mechanism in any process.

    Attributes
    ----------
    label : str
        Its name in messages.
    source : str or mapping, optional
        The specification that loads it (``FILE.py:NAME``, ``package.module:NAME``,
        ``catalog:NAME[?KEY=VALUE]``), or the ``[mechanism]`` table that loads it (``spec`` or
        ``command``, with ``query``, ``params``, ``sensitivity``, ... and absolute paths), as
        :func:`mechanisms.adapters.recognition.load_mechanism` reads it; when given, workers load it and
        the object itself never travels.
    mechanism : callable, optional
        The object (used in the audit's own process, and sent pickled when ``source`` is None).
    travelled : bool
        This reference was sent to another process (pickled): there the mechanism's encoder gets
        the statistic that travelled with it (:attr:`statistic`).
    statistic : UserStatistic, optional
        Where the reference travelled: the user's statistic the audit's process gave the
        mechanism's output encoder (module docstring), None if none.
    """

    label: str
    source: str | Mapping | None = None
    mechanism: object = None
    travelled: bool = False
    statistic: object = None

    def __getstate__(self):
        # By reference when possible: a worker loads the specification itself, and the statistic its own.
        encoder = encoder_of(self.mechanism)
        return {"label": self.label, "source": self.source, "mechanism": None if self.source else self.mechanism,
                "travelled": True, "statistic": None if encoder is None else encoder.statistic}

    def __setstate__(self, state):
        for key, value in state.items():
            object.__setattr__(self, key, value)

    def resolve(self):
        """The mechanism: the object at hand, else the one loaded from ``source`` (once per process); where
        the reference travelled, with the statistic that travelled with it given to its output encoder.

        Raises
        ------
        InputError
            Where the mechanism's or the statistic's specification does not load in this process.
        """
        if self.mechanism is not None:
            mechanism = self.mechanism
        else:
            key = self.source if isinstance(self.source, str) else json.dumps(self.source, sort_keys=True, default=str)
            if key not in _LOADED:
                _LOADED[key] = _load(self.source)
            mechanism = _LOADED[key]
        if self.travelled:
            encoder = encoder_of(mechanism)
            if encoder is not None:  # a pickled mechanism's encoder holds the statistic already: this one is it
                encoder.statistic = None if self.statistic is None else self.statistic.here()
        return mechanism


def _load(source):
    table = {"spec": source} if isinstance(source, str) else source
    spec = table.get("spec") or ""
    if spec.startswith("catalog:"):
        from mechanisms.catalog import get_entry

        mechanism = get_entry(spec.split(":", 1)[1], table.get("params")).mechanism
        if table.get("trainer") is None:
            return mechanism
        from mechanisms.training.torch_dpsgd import on_device  # the audit's trainer (trainer_source)

        return on_device(mechanism, table["trainer"])
    from mechanisms.adapters.recognition import load_mechanism  # wraps a library's object as the audit's process did

    return load_mechanism(table).mechanism


#: Seconds between a worker's checks that the audit that started it is still alive.
PARENT_CHECK_INTERVAL = 0.5

#: prctl option: the signal the kernel sends a process when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def parent_death_signal(number: int) -> bool:
    """Ask the kernel to send this process the signal ``number`` when its parent dies; whether it will.

    Linux alone has the request (``prctl(PR_SET_PDEATHSIG)``; "the parent" is the thread that forked this process,
    whose end counts). Elsewhere nothing is asked and the answer is False: the caller's fallback applies. Audit
    workers (:func:`_die_with_parent`) and a scan's case processes (:mod:`audit.scan.processes`) ask it.

    Parameters
    ----------
    number : int
        The signal to send, such as ``signal.SIGKILL``.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(number), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _die_with_parent(parent: int) -> None:
    """End this worker when the audit process ``parent`` ends, however it ends (issue 32 B4).

    A SIGKILL of the audit runs none of its clean-up, and the workers were left running,
    reparented to PID 1. On Linux the kernel sends the worker SIGTERM when its parent dies
    (``prctl(PR_SET_PDEATHSIG, SIGTERM)``; :func:`_stop` then ends it and the external programs it
    runs); everywhere a daemon thread checks every :data:`PARENT_CHECK_INTERVAL` seconds that the
    parent is still the parent and does the same otherwise (also where the signal's handler waits
    on a long C call).
    """
    parent_death_signal(signal.SIGTERM)  # where it cannot be asked, the watch below still ends the worker
    if os.getppid() != parent:  # the audit died before the request above was made
        _stop()

    def watch():
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_INTERVAL)
        _stop()

    threading.Thread(target=watch, name="miaudit-parent-watch", daemon=True).start()


def _stop(*_signal) -> None:
    """End this worker now, killing the process groups of the external programs it runs
    (:func:`mechanisms.calls.program.kill_running_programs`) first: ``os._exit`` runs no
    ``finally``, and a mechanism's non-daemon threads must not keep the worker alive."""
    from mechanisms.calls.program import kill_running_programs

    kill_running_programs()
    os._exit(1)


def init_worker(parent: int | None = None) -> None:
    """Set up a worker process: Ctrl-C is the audit's to handle (it cancels the workers), SIGTERM
    (the audit stopping its workers, or the parent's death) ends it with its external programs
    (:func:`_stop`), the mechanism's prints go to stderr, so that stdout keeps only the result
    (``--json``), and the worker ends when the audit process ``parent`` ends (:func:`_die_with_parent`)."""
    signal.signal(signal.SIGTERM, _stop)
    if parent is not None:
        _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())


#: Signals a crashing process dies of quietly where it takes their default action, not a handler a library or Ray
#: installed (Ray's and ``faulthandler``'s print a stack for each crash).
CRASH_SIGNALS = tuple(getattr(signal, name) for name in ("SIGSEGV", "SIGBUS", "SIGABRT", "SIGFPE", "SIGILL")
                      if hasattr(signal, name))

#: Whether this process, a Ray worker, was set up (:func:`init_ray_worker`).
_RAY_WORKER_SET_UP = False


def init_ray_worker() -> None:
    """Set up the Ray worker running this task as :func:`init_worker` sets up a local one, where that applies, once
    per process (each of the audit's Ray tasks calls it first, :func:`run_in_ray_worker`; it runs on the worker's
    main thread, which alone may set signal handlers). Ctrl-C is the audit's to handle (it cancels the tasks); the
    mechanism's prints go to stderr, so that the driver's stdout, where Ray forwards a worker's stdout, keeps only the
    result (``--json``); SIGTERM (Ray stopping the worker) first ends the external programs the worker runs
    (:func:`mechanisms.calls.program.kill_running_programs`), then Ray's own handler ends it; and a crash ends it
    quietly, as it ends a local worker (:data:`CRASH_SIGNALS`), not with Ray's stack dump forwarded to the driver's
    stderr beside the audit's one line. Not the parent watch: a Ray worker's parent is its node's raylet, not the
    audit, and Ray itself ends a job's workers when its driver ends (the local instance the audit starts shares its
    fate, and a raylet's workers end with it)."""
    global _RAY_WORKER_SET_UP
    if _RAY_WORKER_SET_UP or threading.current_thread() is not threading.main_thread():
        return
    _RAY_WORKER_SET_UP = True
    from mechanisms.calls.program import kill_running_programs

    ray_handler = signal.getsignal(signal.SIGTERM)

    def stop(number, frame):
        kill_running_programs()
        if callable(ray_handler):
            ray_handler(number, frame)
        else:
            os._exit(1)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.disable()
    for number in CRASH_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())


def run_in_ray_worker(folder: str, token: str, name: str, fn, reference, task, hard_kill: bool = False):
    """An audit's Ray task: :func:`init_ray_worker`, then :func:`run_reporting_where_seen` with these arguments."""
    init_ray_worker()
    return run_reporting_where_seen(folder, token, name, fn, reference, task, hard_kill)


@dataclass(frozen=True)
class ChunkOutput:
    """What one chunk's run returns to the runner, from whichever process ran it.

    Attributes
    ----------
    outputs : ndarray
        The validated outputs, one row per database.
    printed : Printed
        What the mechanism printed during the chunk (:func:`mechanisms.calls.printed.captured_prints`).
    with_nan : int
        Of the chunk's outputs, those that held a NaN, which the mechanism's output encoder made a category
        (:class:`mechanisms.outputs.encoding.OutputEncoder`); 0 without an encoder.
    seconds : float
        Wall-clock seconds of the mechanism's call: the probe's bound the later chunks without ``--timeout``
        (:func:`mechanisms.execution.chunks.bounded_by_first_calls`).
    """

    outputs: np.ndarray
    printed: Printed = Printed()
    with_nan: int = 0
    seconds: float = 0.0


def run_chunk(reference: MechanismReference, task: ChunkTask, hard_kill: bool = False) -> ChunkOutput:
    """Run the mechanism on one chunk with the chunk's generator; return its validated outputs, what it printed
    (counted, the first lines kept, none of it on the terminal) and how many of its outputs held a NaN.

    Parameters
    ----------
    reference : MechanismReference
        The mechanism.
    task : ChunkTask
        The chunk.
    hard_kill : bool
        In a worker process: end the process when the call outlives ``task.timeout`` by
        :data:`HARD_KILL_GRACE` seconds (code stuck in a compiled call never sees the
        ordinary interruption).

    Raises
    ------
    MechanismError
        Naming the mechanism and the chunk's databases, with how it failed apart from where
        (:attr:`~mechanisms.errors.MechanismError.failure`: the runner stops retrying a chunk that fails so twice) and
        what the attempt printed (which the runner says if it gives the chunk up: nothing is said here). A task that
        locates a hang (:attr:`ChunkTask.locate_hang`) always raises (:func:`_locate_hang`).
    """
    label = reference.label
    try:
        mech = reference.resolve()
    except Exception as exc:  # noqa: BLE001 - loading user code may fail in a fresh process
        raise MechanismError(f"mechanism '{label}' could not be loaded in a worker process: {exc}",
                             mechanism=label) from None
    rng = chunk_generator(task.job_seed, task.index, task.purpose)
    if hard_kill and task.timeout is not None:
        _arm_hard_kill(task.timeout + HARD_KILL_GRACE)
    if not draws_only_from_rng(mech):
        seed_global_generators(task.job_seed, task.index, task.purpose, task.global_key)
    encoder = encoder_of(mech)
    nan_before = 0 if encoder is None else encoder.with_nan
    name = label or mechanism_name(mech)
    capture = None
    try:
        # The runner checked the job's whole batch (MechanismRunner.sample); the chunk is a slice of it.
        # What a failing attempt printed is said once, by the runner when it gives the chunk up (not once an attempt).
        with captured_prints(f"mechanism '{name}'", say_failure=False) as capture:
            if task.locate_hang:
                raise _locate_hang(mech, task, rng, name)
            started = time.perf_counter()
            outputs = run_on_batch(mech, task.dbs, rng, name=name, locate=task.last_attempt, timeout=task.timeout,
                                   allow_nan=task.allow_nan, hint=task.timeout_hint)
            seconds = time.perf_counter() - started
        return ChunkOutput(outputs, capture.printed, 0 if encoder is None else encoder.with_nan - nan_before, seconds)
    except MechanismError as exc:
        # Both travel back with the error (MechanismError.__reduce__): the runner counts a failed attempt's prints,
        # and tells one failure from another by its words.
        if capture is not None:
            exc.printed = capture.printed
        exc.failure = failure_words(exc)
        raise
    finally:
        if hard_kill and task.timeout is not None:
            _arm_hard_kill(None)


def failure_words(exc: MechanismError) -> str:
    """How the attempt that raised ``exc`` failed, apart from where (:attr:`~mechanisms.errors.MechanismError.failure`):
    the type and message of the user code's own exception that ``exc`` reports (its cause: what a batch's call raised,
    whichever database a later attempt locates it on), else ``exc``'s own (a timeout, a ``sys.exit``, a wrong
    output)."""
    source = exc.__cause__ if exc.__cause__ is not None else exc
    return f"{type(source).__name__}: {source}"


def _locate_hang(mech, task: ChunkTask, rng, name: str) -> MechanismError:
    """The error of a chunk whose calls ran out of ``task.timeout`` twice (:attr:`ChunkTask.locate_hang`): its
    databases run one at a time, in order, all within that one bound (so this attempt takes no longer than one at the
    whole chunk), and the first to run out of what is left of it is named (its ``database_index``, in the chunk).
    Where none does, ``database_index`` is None: the hang needs them together. A database that fails otherwise alone
    is passed over: this looks for where the time goes. Either way the error is a timeout's (``timed_out``)."""
    who, deadline = f"mechanism '{name}'", time.monotonic() + task.timeout
    bound = f"{task.timeout:g} s"
    for index in range(task.size):
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise MechanismError(who, mechanism=who)  # out of time before its call: it is the one
            run_on_batch(mech, task.dbs[index:index + 1], rng, name=name, locate=False, timeout=left,
                         allow_nan=task.allow_nan, hint=task.timeout_hint)
        except MechanismError as exc:
            if left > 0 and not exc.timed_out:
                continue
            error = MechanismError(f"{who} did not return within {bound} on a batch of {task.size} databases, nor on "
                                   f"database {index} alone, run after the databases before it returned alone within "
                                   f"that bound {task.timeout_hint}", mechanism=who, database_index=index)
            error.timed_out = True
            return error
    error = MechanismError(f"{who} did not return within {bound} on a batch of {task.size} databases, though none of "
                           f"them ran out of that bound alone {task.timeout_hint}", mechanism=who)
    error.timed_out = True
    return error


def run_probe(reference: MechanismReference, task: ChunkTask, hard_kill: bool = False):
    """Run the mechanism on the same chunk with the same ``rng`` seed twice, in one process, the global generators
    (numpy.random, random, torch) seeded otherwise the second time; where the two outputs differ, a third time seeded
    as the first.

    Returns the calls' :class:`ChunkOutput`: the first two are equal when the mechanism draws only from its ``rng``;
    where they differ, the third equals the first when it draws from the global generators (which the chunks seed,
    so its audit is reproducible) and differs when it draws from elsewhere (its own generator, ``os.urandom``, ...).
    A mechanism that draws nothing from ``rng`` in the common case costs no third call. Where a later call fails, its
    error carries what the calls before it printed too (:attr:`MechanismError.printed`).
    """
    calls = [run_chunk(reference, task, hard_kill)]
    try:
        calls.append(run_chunk(reference, replace(task, global_key=2), hard_kill))
        if not np.array_equal(calls[0].outputs, calls[1].outputs):
            calls.append(run_chunk(reference, task, hard_kill))
    except MechanismError as exc:
        exc.printed = sum((call.printed for call in calls), Printed()) + (exc.printed or Printed())
        raise
    return tuple(calls)


#: Bytes of a task's report file (:func:`run_reporting`): the hard kill's deadline (a float64, 0 when none is
#: armed), then a name of user code, cut to fit, then a NUL.
REPORT_BYTES = 1024

_DEADLINE = struct.Struct("d")

#: The report file of the task this worker runs (:func:`run_reporting`), None between tasks.
_REPORT = None


class _TaskReport:
    """A task's report file, memory-mapped: written as a slice of shared memory (no system call), which the
    audit's process reads whatever ends this one next."""

    def __init__(self, path: str):
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(descriptor, REPORT_BYTES)
            self.memory = mmap.mmap(descriptor, REPORT_BYTES)
        finally:
            os.close(descriptor)
        self.outer = ""  # what runs where no user code inside a bounded call does (hard_kill_within)

    def running(self, who: str) -> None:
        data = (who or self.outer).encode("utf-8", errors="replace")[:REPORT_BYTES - _DEADLINE.size - 1] + b"\0"
        try:
            self.memory[_DEADLINE.size:_DEADLINE.size + len(data)] = data
        except ValueError:  # closed: a thread the task left behind ends a call after the task did
            pass

    def hard_kill_at(self, deadline: float) -> None:
        """The hard kill is armed for ``deadline`` (``time.monotonic()``, the same clock in every process of the
        machine); 0: disarmed."""
        self.memory[:_DEADLINE.size] = _DEADLINE.pack(deadline)


#: Where the hard kill's stack dump goes: nowhere. The audit reports the stuck call in one line naming it
#: (:func:`lost_in`); faulthandler's dump of every thread's stack would print some thirty lines before it.
_DUMP_SINK = None


def _arm_hard_kill(seconds: float | None) -> None:
    """End this process ``seconds`` from now (None: disarm), writing the deadline in the task's report."""
    global _DUMP_SINK
    if seconds is None:
        faulthandler.cancel_dump_traceback_later()
    else:
        if _DUMP_SINK is None:
            _DUMP_SINK = open(os.devnull, "w")  # kept open for the process: faulthandler writes to its descriptor
        faulthandler.dump_traceback_later(seconds, exit=True, file=_DUMP_SINK)
    if _REPORT is not None:
        _REPORT.hard_kill_at(0.0 if seconds is None else time.monotonic() + seconds)


@contextmanager
def hard_kill_within(seconds: float, who: str):
    """Within the block, end this worker process ``seconds`` from now, as a chunk's hard kill ends it (code stuck in
    a compiled call, which its bound's interruption cannot reach), its task's report naming ``who`` while no user code
    inside a bounded call is named (:func:`lost_in`): a worker's own work that runs a library's code outside any
    chunk (a scan's listing of its cases, :func:`audit.scan.isolation.list_in_worker`)."""
    report = _REPORT
    if report is not None:
        previous, report.outer = report.outer, who
        report.running("")
    _arm_hard_kill(seconds)
    try:
        yield
    finally:
        _arm_hard_kill(None)
        if report is not None:
            report.outer = previous
            report.running("")


def run_reporting(report_path: str, fn, reference, task, hard_kill: bool = False):
    """``fn(reference, task, hard_kill)``, writing in the file ``report_path`` the user code running inside
    its bounded calls and the hard kill's deadline (module docstring, "What runs in a worker when it dies"), for
    :func:`lost_in`."""
    global _REPORT
    _REPORT = report = _TaskReport(report_path)
    previous = report_running_to(report.running)
    try:
        return fn(reference, task, hard_kill)
    finally:
        report_running_to(previous)
        _REPORT = None
        report.memory.close()


#: The file, in a folder of report files, whose content a task compares with the token it was given
#: (:func:`run_reporting_where_seen`).
TOKEN_FILE = "token"


def run_reporting_where_seen(folder: str, token: str, name: str, fn, reference, task, hard_kill: bool = False):
    """``fn(reference, task, hard_kill)`` as :func:`run_reporting` runs it, with the report file ``name`` in
    ``folder``, where this process sees the audit's files: ``folder``'s :data:`TOKEN_FILE` holds ``token``, which
    the audit's process wrote there; elsewhere (a Ray task on another machine, or behind ``ray://``) plainly,
    with no report, and the audit names the mechanism where the task's worker dies.

    Why a token and not Ray's node id: what the report needs is that the audit's process reads what this one
    writes in ``folder``, which a node id does not tell (two nodes may share a machine, and behind ``ray://``
    the driver is on the cluster, not on the audit's machine). A process on the audit's machine passes; one on
    another machine fails, ``folder`` being a fresh temporary folder of the audit's machine (its ``TMPDIR``),
    unless that is on a file system both machines mount: the report is then read as far as that file system
    shows one machine's writes to the other, but the hard kill's deadline is of the writer's ``time.monotonic``
    clock, so a worker stopped stuck may be said to have died, or the reverse.
    """
    try:
        with open(os.path.join(folder, TOKEN_FILE), encoding="ascii") as file:
            seen = file.read() == token
    except (OSError, UnicodeDecodeError):
        seen = False
    if not seen:
        return fn(reference, task, hard_kill)
    return run_reporting(os.path.join(folder, name), fn, reference, task, hard_kill)


def lost_in(report_path: str | None) -> tuple[str | None, bool]:
    """What a dead worker's task was running, as its report file (:func:`run_reporting`) says: the user code
    inside the mechanism's call (a ``who``, ``"statistic 'stats.py:fn'"``; None where none was, or the file was
    never written), and whether the hard kill's deadline had come (the worker was stopped stuck)."""
    try:
        with open(report_path, "rb") as file:
            data = file.read(REPORT_BYTES)
    except (OSError, TypeError):  # TypeError: no file was given
        return None, False
    if len(data) < _DEADLINE.size:
        return None, False
    (deadline,) = _DEADLINE.unpack(data[:_DEADLINE.size])
    who = data[_DEADLINE.size:].split(b"\0", 1)[0].decode("utf-8", errors="replace")
    return who or None, 0 < deadline <= time.monotonic()
