"""Where chunks run: in the audit's process, in local worker processes, or as Ray tasks.

Every backend offers the same small interface to :class:`~mechanisms.execution.runner.MechanismRunner`:
``submit(fn, task)`` returns a :class:`concurrent.futures.Future`; ``outcome(future)`` returns
the chunk's result or raises :class:`~mechanisms.errors.MechanismError` (the user code failed)
or :class:`WorkerLost` (the process running it died); ``restart()`` replaces dead workers;
``cancel()`` stops everything outstanding; ``close()`` releases the workers; ``slots`` is how
many chunks run at once and ``isolated_failures`` whether a dying worker fails only its own
chunk. Scheduling is the pool's or Ray's; the runner only keeps at most ``slots`` chunks in
flight.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import socket
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from estimators.validation import InputError

from ..errors import MechanismError
from .worker import MechanismReference, init_worker

#: Seconds a worker told to stop (SIGTERM) gets to kill its external programs and exit before SIGKILL.
WORKER_STOP_WAIT = 2.0

__all__ = ["InProcessBackend", "ProcessBackend", "RAY_CONNECT_TIMEOUT", "RayBackend", "WorkerLost", "check_ray_address",
           "make_backend"]


class WorkerLost(Exception):
    """The process running a chunk died (killed, out of memory, ``os._exit``, a crash, or the
    hard kill of a call stuck past ``--timeout``)."""


class InProcessBackend:
    """Chunks run one after another in the audit's own process (the default: nothing to start)."""

    slots = 1
    isolated_failures = True

    def __init__(self, reference: MechanismReference):
        self.reference = reference

    def submit(self, fn, task) -> Future:
        future = Future()
        try:
            future.set_result(fn(self.reference, task))
        except MechanismError as exc:
            future.set_exception(exc)
        return future

    def outcome(self, future: Future):
        return future.result()

    def restart(self):
        pass

    def cancel(self):
        pass

    def close(self):
        pass


def _check_sendable(reference: MechanismReference) -> None:
    try:
        pickle.dumps(reference)
    except Exception as exc:  # noqa: BLE001 - pickling fails with many exception types
        raise MechanismError(
            f"mechanism '{reference.label}' cannot be sent to worker processes: it was not loaded from a "
            f"specification (FILE.py:NAME or package.module:NAME) and cannot be pickled ({exc}); define it at the "
            "top level of a module (from Python: give the specification or [mechanism] table that loads it as "
            "AuditSpec(mechanism_source=...)), or run in process (--workers 1)", mechanism=reference.label) from None


class ProcessBackend:
    """Chunks run in ``workers`` local processes (started fresh: ``spawn``), the mechanism
    loaded once per process from its specification. A dying worker breaks the whole pool, so
    every chunk in flight fails with it (``isolated_failures = False``)."""

    isolated_failures = False

    def __init__(self, reference: MechanismReference, workers: int):
        _check_sendable(reference)
        self.reference, self.slots = reference, workers
        self._pool = None

    def submit(self, fn, task) -> Future:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.slots, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=init_worker, initargs=(os.getpid(),))
        return self._pool.submit(fn, self.reference, task, True)

    def outcome(self, future: Future):
        try:
            return future.result()
        except BrokenProcessPool as exc:
            raise WorkerLost(str(exc)) from None

    def _kill(self):
        if self._pool is None:
            return
        # The pool cannot stop a running task: end its processes (they ignore Ctrl-C, which
        # is the audit's to handle). ``_processes`` is the executor's own table of them. SIGTERM
        # first, so that each kills its external programs' process groups (worker._stop), then
        # SIGKILL for any that has not ended within WORKER_STOP_WAIT seconds.
        processes = [p for p in (getattr(self._pool, "_processes", None) or {}).values() if p.is_alive()]
        for process in processes:
            process.terminate()
        deadline = time.monotonic() + WORKER_STOP_WAIT
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None

    def restart(self):
        self._kill()

    def cancel(self):
        self._kill()

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


#: Seconds to wait for a Ray cluster's address to accept a connection: ``ray.init`` itself
#: retries an address where nothing listens for minutes (issue 32 B4).
RAY_CONNECT_TIMEOUT = 10.0


def check_ray_address(address: str, timeout: float = RAY_CONNECT_TIMEOUT) -> None:
    """Refuse a ``HOST:PORT`` (or ``ray://HOST:PORT``) where nothing accepts a connection within ``timeout`` s.

    ``"auto"`` and ``"local"`` (Ray finds or starts the cluster itself) are not checked.

    Raises
    ------
    InputError
        Naming ``ray_address`` (``--ray-address``), the address and why it cannot be reached.
    """
    if address in ("auto", "local"):
        return
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise InputError(f"argument 'ray_address' (--ray-address) must be HOST:PORT, ray://HOST:PORT or auto, "
                         f"got {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        reason = "no answer" if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
        raise InputError(f"argument 'ray_address' (--ray-address): no Ray cluster at {address} accepted a "
                         f"connection within {timeout:g} s ({reason}); start one with 'ray start --head' or check "
                         "the address") from None


class RayBackend:
    """Chunks run as Ray tasks on a local Ray instance or an existing cluster (``address``).

    Ray's own retries are off (``max_retries=0``): the runner retries, the same way for every
    backend. The mechanism travels once, through the object store, by reference. A dying
    worker fails only its own task (``isolated_failures = True``).
    """

    isolated_failures = True

    def __init__(self, reference: MechanismReference, address: str | None, cpus: int | None):
        _check_sendable(reference)
        if address:
            check_ray_address(address)
        try:
            import ray
        except ImportError:
            raise MechanismError("--backend ray needs Ray: pip install 'miaudit[ray]'",
                                 mechanism=reference.label) from None
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            # A local instance's workers import what this process can: its sys.path, as PYTHONPATH.
            path = os.pathsep.join(entry for entry in sys.path if entry)
            options = {"address": address} if address else {
                "num_cpus": cpus or os.cpu_count(), "runtime_env": {"env_vars": {"PYTHONPATH": path}}}
            ray.init(include_dashboard=False, configure_logging=False, log_to_driver=True, **options)
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._reference = ray.put(reference)
        self._remotes, self._refs = {}, {}

    def submit(self, fn, task) -> Future:
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._remotes[fn] = self._ray.remote(max_retries=0, num_cpus=1)(fn)
        ref = remote.remote(self._reference, task, True)
        future = ref.future()
        self._refs[future] = ref
        return future

    def outcome(self, future: Future):
        ray = self._ray
        self._refs.pop(future, None)
        try:
            return future.result()
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, MechanismError):
                raise cause from None
            raise WorkerLost(str(exc)) from None
        except ray.exceptions.RayError as exc:  # a worker or node died, an object was lost
            raise WorkerLost(f"{type(exc).__name__}: {exc}") from None

    def restart(self):
        pass  # Ray replaces dead workers itself

    def cancel(self):
        for ref in list(self._refs.values()):
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - a task that already finished cannot be cancelled
                pass
        self._refs.clear()

    def close(self):
        self._refs.clear()
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()


def make_backend(reference: MechanismReference, backend: str, workers: int, ray_address: str | None):
    """The backend an audit's execution settings ask for."""
    if backend == "ray":
        return RayBackend(reference, ray_address, workers if workers > 1 else None)
    if workers > 1:
        return ProcessBackend(reference, workers)
    return InProcessBackend(reference)
