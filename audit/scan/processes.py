"""The processes of a scan's cases: each case's process group, and the scan's own bound on each worker's task.

**A case's group.** Where the platform has process groups (POSIX), a case's process, forked from its worker
(:func:`audit.scan.isolation.run_case`), makes itself the leader of a session of its own as it starts; whatever it
starts (a child it forks, a subprocess a thread of its waits on, a pool it never closes) is in that group, unless it
leaves it itself (``setsid``, a daemon's double fork). When the case ends, its outcome written or its process killed as
stuck, its worker kills the group (:func:`end_case`), so nothing the case started runs on into the next case or past
the scan. While the case runs its group is among those the worker's stop kills
(:func:`mechanisms.calls.program.running_group`; :func:`~mechanisms.calls.program.kill_running_programs`, which a
worker's SIGTERM runs): a worker the scan stops ends its case's group too. A worker killed outright (``SIGKILL``, once
:data:`~mechanisms.execution.backends.WORKER_STOP_WAIT` has passed; the kernel's out-of-memory killer) runs nothing of
its own: on Linux the kernel then kills its case's process (``PR_SET_PDEATHSIG``), and a guard the case's process
forked into its group as it started, told by the kernel of that death, kills the rest of the group
(:func:`end_with_parent`, which says what is not covered). Elsewhere (macOS) such a worker leaves its case's
process and group running. Without ``fork`` (Windows) a case runs in its worker's own process, where nothing it
starts is ended with it.

**A worker's task, seen from the scan.** A worker's own bounds (each listing call's, a case's hard kill) act only once
it runs: a worker stuck as it starts (the script that called the scan, which each ``spawn`` worker imports, blocking at
its module level; an interpreter start-up hook that hangs) or whose listing, call after call each within its bound,
goes on and on, would hold the scan without end. So the scan's process gives each task it sends a bound of its own
(:class:`BoundedPool`), past which the task counts as lost and its worker is stopped (local workers: the pool is
restarted; a Ray task is cancelled):

- a worker's listing of the cases, its start included (:func:`listing_bound`):
  :data:`~audit.scan.isolation.WORKER_LISTING_TIMEOUTS` × (``listing_timeout`` + S) + :data:`WORKER_START_SECONDS` + g,
  S being the seconds the scan's own process took to list the cases and g
  :data:`~mechanisms.execution.worker.HARD_KILL_GRACE`. A fresh worker lists what the scan's process listed in S
  seconds; each of its calls may take four times as long on a loaded machine (the factor that bounds each call), and
  a call that ran out of time in the scan's process counts ``listing_timeout`` in S, so four times that in the bound;
  the rest is a fresh interpreter's start and its imports (:data:`~audit.scan.isolation.WARM_MODULES`), and one call
  slower in the worker than any in the scan. At the defaults (``listing_timeout`` 60 s) that is 4 × S + 310 s;
- a case: that listing bound (a fresh worker, replacing one that died, lists the cases first), plus the most any case's
  process runs before its worker kills it (:func:`audit.scan.isolation.most_case_seconds`: 35 × ``timeout``
  + 2 × g) and g.

The whole of a worker's listing is so bounded once, not call by call: without it a listing of n calls could take
n × (4 × ``listing_timeout`` + g). On Ray the bound counts from when the task is sent, a wait for the cluster's
resources included.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import time
from concurrent.futures import Future, InvalidStateError

from mechanisms.execution.backends import WorkerLost
from mechanisms.execution.worker import parent_death_signal

from audit.scan.limits import WORKER_START_SECONDS  # read here under this module's name (audit.scan.limits)

__all__ = ["WORKER_START_SECONDS", "BoundedPool", "WorkerOverdue", "cap_memory", "died", "end_case", "end_with_parent",
           "exited", "import_blocked", "kill_case", "listing_bound"]


def listing_bound(listing_timeout: float | None, listed_seconds: float, factor: int, grace: float) -> float | None:
    """Seconds a worker may take, from when its listing is sent, to start and list the cases (module docstring):
    ``factor`` × (``listing_timeout`` + ``listed_seconds``) + :data:`WORKER_START_SECONDS` + ``grace``; None where
    ``listing_timeout`` is (no bound)."""
    if listing_timeout is None:
        return None
    return factor * (listing_timeout + listed_seconds) + WORKER_START_SECONDS + grace


class WorkerOverdue(WorkerLost):
    """A task its worker did not end within the scan's own bound (:class:`BoundedPool`): the worker was stopped.
    ``reason`` says which bound, for the outcome of the task's cases."""

    def __init__(self, reason: str):
        super().__init__(reason, None, False)
        self.reason = reason


class BoundedPool:
    """A backend of :mod:`mechanisms.execution.backends` (``pool``) whose every task is given up at a bound of the
    scan's (module docstring): ``bound_of(fn, task)`` is (seconds, the reason to give) or None (no bound). The task's
    future, as :func:`~mechanisms.execution.backends.run_tasks` waits on it, ends then with :class:`WorkerOverdue`;
    the worker is stopped as a lost one is (``run_tasks`` restarts a local pool; a Ray task is cancelled here, by its
    backend's ``cancel_task``)."""

    def __init__(self, pool, bound_of):
        self.pool, self.bound_of = pool, bound_of
        self.slots, self.isolated_failures = pool.slots, pool.isolated_failures
        self._inner, self._timers = {}, {}

    def submit(self, fn, task) -> Future:
        inner, proxy = self.pool.submit(fn, task), Future()
        self._inner[proxy] = inner
        bound = self.bound_of(fn, task)
        if bound is not None:
            timer = threading.Timer(bound[0], _settle, (proxy, WorkerOverdue(bound[1])))
            timer.daemon = True
            self._timers[proxy] = timer
            timer.start()
        inner.add_done_callback(lambda _: _settle(proxy, None))
        return proxy

    def outcome(self, proxy: Future):
        timer = self._timers.pop(proxy, None)
        if timer is not None:
            timer.cancel()
        inner = self._inner.pop(proxy)
        overdue = proxy.exception()
        if isinstance(overdue, WorkerOverdue):
            self._drop(inner)
            raise overdue
        return self.pool.outcome(inner)

    def _drop(self, inner: Future) -> None:
        """Stop ``inner``'s task where its worker is not stopped with the pool (``isolated_failures``: Ray, whose
        backend cancels that one task, :meth:`~mechanisms.execution.backends.RayBackend.cancel_task`)."""
        cancel_task = getattr(self.pool, "cancel_task", None) if self.isolated_failures else None
        if cancel_task is not None:
            cancel_task(inner)

    def _forget(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._inner.clear()
        self._timers.clear()

    def restart(self):
        self._forget()  # run_tasks sends the tasks in flight again
        self.pool.restart()

    def cancel(self):
        self._forget()
        self.pool.cancel()

    def close(self):
        self._forget()
        self.pool.close()


def _settle(proxy: Future, overdue: WorkerOverdue | None) -> None:
    """End ``proxy``: its task ended (None), or its bound passed first (``overdue``)."""
    try:
        if overdue is None:
            proxy.set_result(None)
        else:
            proxy.set_exception(overdue)
    except InvalidStateError:  # the other came first
        pass


def kill_case(pid: int) -> None:
    """Kill the case's process ``pid``, not yet reaped, and every process of its group (the case's process made
    itself the group's leader as it started; one killed before it did is killed alone)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        os.kill(pid, signal.SIGKILL)


def _kill_group(pid: int) -> None:
    """Kill what is left of the group of the case's process ``pid`` (none left: nothing to do)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


#: The wait statuses of case processes that :func:`exited` reaped to see them end (no ``waitid``), by id.
_REAPED: dict = {}


def exited(pid: int) -> bool:
    """Whether the case's process ``pid`` has ended, without reaping it where the platform can (``waitid`` with
    ``WNOWAIT``): while it is not reaped its id is not reused, so its group can be killed by that id."""
    if hasattr(os, "waitid"):
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    done, status = os.waitpid(pid, os.WNOHANG)  # pragma: no cover - macOS before Python 3.13
    if done:  # pragma: no cover
        _REAPED[pid] = status
    return bool(done)  # pragma: no cover


def end_case(pid: int, ended: bool) -> int:
    """Wait for the case's process ``pid`` to end (it has, where ``ended``), kill what is left of its group (what it
    started and left running), and reap it: its wait status.

    The group is killed before the case's process is reaped, so that its id, the group's, cannot be reused meanwhile;
    without ``waitid`` (macOS before Python 3.13) it is reaped first and the group killed just after."""
    if hasattr(os, "waitid"):
        if not ended:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        _kill_group(pid)
        return os.waitpid(pid, 0)[1]
    status = _REAPED.pop(pid) if pid in _REAPED else os.waitpid(pid, 0)[1]  # pragma: no cover - no waitid
    _kill_group(pid)  # pragma: no cover
    return status  # pragma: no cover


#: The exit statuses of :func:`import_blocked`'s child: the import ran out of memory, or ended the interpreter
#: (``sys.exit``, ``KeyboardInterrupt``) as it ran.
_IMPORT_OUT_OF_MEMORY, _IMPORT_EXITED = 71, 72


def _public_submodules(module) -> list:
    import pkgutil

    path = getattr(module, "__path__", None)
    return [] if path is None else [m.name for m in pkgutil.iter_modules(path) if not m.name.startswith("_")]


def import_blocked(target: str, timeout: float, memory_limit: int | None) -> str | None:
    """Why a user's ``target`` (a ``FILE.py`` path or a module) cannot be imported into the scan's process, or None.

    The scan imports a user's module (a package: and its public submodules) into its own process to list the
    cases (:func:`audit.scan.cases.discover`), where no hard kill or ``--memory-limit`` holds: a module that
    hangs, ends the interpreter (``os._exit``, ``sys.exit``, a crash) or allocates without bound as it is imported
    would end or stall the whole scan with no report. So it is first imported in a forked child, with its output
    discarded, at most ``timeout`` seconds (the scan's ``--listing-timeout``) and ``memory_limit`` bytes
    (:func:`cap_memory`), in a group of its own that is killed as it ends (what the import started
    ends with it); where that child fails so, the reason is returned and the scan lists the module as skipped with it.
    An import that raises an exception returns None: the scan's own import raises it again and lists it
    (``import error: ...``). Without ``fork`` (Windows) there is no trial: None.
    """
    if not hasattr(os, "fork"):  # pragma: no cover - platforms without fork
        return None
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
        code = 0
        try:
            os.setsid()  # a group of its own: what its import starts ends with it
            end_with_parent()
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            if memory_limit is not None:
                cap_memory(memory_limit)
            from audit.scan.cases import load_module

            module = load_module(target)
            for name in _public_submodules(module):  # a package: the scan imports these too (user_profile)
                try:
                    importlib.import_module(f"{target}.{name}")
                except MemoryError:
                    raise
                except Exception:  # noqa: BLE001 - listed by the scan's own import
                    pass
        except MemoryError:
            code = _IMPORT_OUT_OF_MEMORY
        except Exception:  # noqa: BLE001 - the scan's own import raises it again and lists it
            code = 0
        except BaseException:  # noqa: BLE001 - SystemExit, KeyboardInterrupt: it would end the scan
            code = _IMPORT_EXITED
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while not exited(pid):
        if time.monotonic() >= deadline:
            kill_case(pid)
            end_case(pid, False)
            return f"importing it did not end within {timeout:g} s (the scan's --listing-timeout); it was not imported"
        time.sleep(0.02)
    status = end_case(pid, True)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return None
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _IMPORT_OUT_OF_MEMORY:
        return (f"importing it ran out of the memory one case may add (--memory-limit, {memory_limit} bytes); it was "
                "not imported")
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _IMPORT_EXITED:
        return "importing it called sys.exit (or raised KeyboardInterrupt); it was not imported"
    return f"{died(status, 'its import')}; it was not imported"


def cap_memory(extra: int) -> None:
    """Let this process's memory grow by at most ``extra`` bytes beyond its present size.

    ``RLIMIT_DATA`` where the kernel counts every private writable mapping in it (Linux ≥ 4.7: the heap,
    NumPy's arrays, thread stacks), measured from ``VmData``; it leaves out the read-only code of the
    shared libraries a case may still load (PyTorch's alone maps gigabytes of address space). Elsewhere
    ``RLIMIT_AS``, from ``VmSize``.
    """
    import resource

    sizes = {}
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                if name in ("VmData", "VmSize"):
                    sizes[name] = int(value.split()[0]) * 1024
    except OSError:
        pass
    which, size = ((resource.RLIMIT_DATA, sizes["VmData"]) if "VmData" in sizes
                   else (resource.RLIMIT_AS, sizes.get("VmSize", 0)))
    _, hard = resource.getrlimit(which)
    soft = size + extra
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))


#: The signal by which the kernel tells a guard (:func:`end_with_parent`) that the process it guards has died; the
#: guard acts on it only once its parent is gone (the same signal sent by anything else is ignored).
_GUARD_SIGNAL = getattr(signal, "SIGUSR1", None)


def end_with_parent() -> bool:
    """End this process, and the process group it leads, when its parent dies.

    Called by a case's process (:func:`audit.scan.isolation.run_case`) or a trial import's (:func:`import_blocked`)
    as it starts, once it leads a session of its own, before it runs any user code. On Linux the kernel kills this
    process when its parent (the worker, or the scan's process) dies however it dies (:func:`parent_death_signal`:
    ``SIGKILL``), and a guard forked here, in this process's group, is told by the kernel when this process dies
    (:data:`_GUARD_SIGNAL`) and then kills the group: what the case started ends too, where a ``SIGKILL`` of its
    worker runs none of the worker's own clean-up (the group's kill, :func:`end_case`, or
    :func:`mechanisms.calls.program.kill_running_programs`). The guard holds none of this process's files (the
    outcome's pipe closes as this process ends), waits in ``sigwait`` and costs one fork (8-10 ms, median, at load 7).

    Not covered: a process the case started that left its group (``setsid``, a daemon's double fork); a group whose
    guard the case itself killed (a signal sent to its own group). The guard is a child of this process: code of the
    case's that waits for every child (``os.wait()`` until none is left) finds it among them.

    Returns
    -------
    bool
        Whether the group is guarded. False off Linux (macOS: no ``prctl``), where nothing is set up: a worker killed
        outright leaves its case's process and group running until they end by themselves (a worker stopped with
        ``SIGTERM`` still kills its case's group, :func:`mechanisms.calls.program.running_group`); False too where
        no process could be forked, this process then ending with its parent alone.
    """
    if _GUARD_SIGNAL is None or not parent_death_signal(signal.SIGKILL):
        return False
    guarded = os.getpid()
    try:
        guard = os.fork()
    except OSError:  # no process to spare: the case's process still dies with its parent
        return False
    if guard == 0:  # pragma: no cover - the guard (its coverage is not collected)
        _guard(guarded)
    return True


def _guard(guarded: int) -> None:
    """The guard of the process ``guarded``, its parent (:func:`end_with_parent`): wait until the kernel says that
    ``guarded`` died, then kill the group. Never returns."""
    try:
        os.closerange(3, _open_files_limit())  # the case's pipe among them: its worker sees the case end as it ends
        signal.pthread_sigmask(signal.SIG_BLOCK, {_GUARD_SIGNAL})
        if not parent_death_signal(_GUARD_SIGNAL):
            os._exit(0)
        while os.getppid() == guarded:  # not yet reparented: the signal came from elsewhere, or has not come
            signal.sigwait({_GUARD_SIGNAL})
        os.killpg(0, signal.SIGKILL)  # this guard among them
    finally:
        os._exit(0)


def _open_files_limit() -> int:
    """One past the highest file descriptor this process may hold."""
    try:
        return max(3, os.sysconf("SC_OPEN_MAX"))
    except (ValueError, OSError):
        return 1 << 16


def died(status: int, entry: str) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = f" ({signal.Signals(number).name})"
        except ValueError:
            name = ""
        return f"the interpreter exited with signal {number}{name} while running {entry}"
    return f"the interpreter exited with code {os.WEXITSTATUS(status)} while running {entry}"
