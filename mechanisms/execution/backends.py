"""Where chunks run: in the audit's process, in local worker processes, or as Ray tasks.

Every backend offers the same small interface to :class:`~mechanisms.execution.runner.MechanismRunner`:
``submit(fn, task)`` returns a :class:`concurrent.futures.Future`; ``outcome(future)`` returns
the chunk's result or raises :class:`~mechanisms.errors.MechanismError` (the user code failed)
or :class:`WorkerLost` (the process running it died); ``restart()`` replaces dead workers;
``cancel()`` stops everything outstanding; ``close()`` releases the workers; ``slots`` is how
many chunks run at once and ``isolated_failures`` whether a dying worker fails only its own
chunk. Scheduling is the pool's or Ray's; :func:`~mechanisms.execution.attempts.run_tasks` (re-exported here),
which the runner's chunks and a scan's cases (:mod:`audit.scan.isolation`) go through, keeps at most ``slots`` tasks
in flight, blames a dying worker on the one task that kills it, and decides which failed attempts are run again.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import secrets
import shutil
import socket
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext, suppress
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from estimators.validation import InputError

from mechanisms.calls.user_call import run_on_daemon_thread
from mechanisms.errors import MechanismError
# Re-exported: the runner's and the scan's tasks go through run_tasks, and the backends raise WorkerLost.
from mechanisms.execution.attempts import WorkerLost, failure_words, run_tasks
from mechanisms.execution.ray_guardian import Guardian, supported as guardian_supported
from mechanisms.execution.worker import (TOKEN_FILE, MechanismReference, init_worker, lost_in, run_in_ray_worker,
                                         run_reporting)
from mechanisms.outputs.encoding import encoder_of

#: Seconds a worker told to stop (SIGTERM) gets to kill its external programs and exit before SIGKILL.
WORKER_STOP_WAIT = 2.0

__all__ = ["InProcessBackend", "ProcessBackend", "RAY_CONNECT_TIMEOUT", "RAY_INIT_TIMEOUT", "RayBackend", "WorkerLost", "check_ray_address",
           "failure_words", "make_backend", "run_tasks"]


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
    """Raise where ``reference`` cannot be pickled, naming what cannot: the user's statistic that travels
    with it (:class:`~mechanisms.execution.worker.MechanismReference`) first, else the mechanism."""
    label = reference.label
    # A scan's case (audit.scan.isolation) is sent through here too, and holds no mechanism.
    statistic = getattr(encoder_of(getattr(reference, "mechanism", None)), "statistic", None)
    sent = [(reference, label, f"mechanism '{label}' cannot be sent to worker processes",
             "give the specification or [mechanism] table that loads it as AuditSpec(mechanism_source=...)")]
    if statistic is not None:
        who = f"statistic {statistic.name!r}"
        sent.insert(0, (statistic, who, f"{who} (--statistic) cannot be sent to worker processes with mechanism "
                                        f"'{label}', inside whose calls it runs", "UserStatistic.load(SPEC)"))
    for part, who, what, how in sent:
        try:
            pickle.dumps(part)
        except Exception as exc:  # noqa: BLE001 - pickling fails with many exception types
            raise MechanismError(
                f"{what}: it was not loaded from a specification (FILE.py:NAME or package.module:NAME) and cannot be "
                f"pickled ({exc}); define it at the top level of a module (from Python: {how}), or run in process "
                "(--workers 1)", mechanism=who) from None


class _TaskReports:
    """The report files of a backend's tasks (:func:`~mechanisms.execution.worker.run_reporting`): one a task, in a
    temporary folder made at the first, which also holds a random token (:data:`~mechanisms.execution.worker.TOKEN_FILE`)
    by which a task's process tells that it sees this folder (:func:`~mechanisms.execution.worker.run_reporting_where_seen`)."""

    def __init__(self):
        self.folder, self.token, self._sent, self._paths = None, secrets.token_hex(16), 0, {}

    def new(self) -> str:
        """A fresh report file's name in :attr:`folder` (made, with its token, where there is none)."""
        if self.folder is None:
            self.folder = tempfile.mkdtemp(prefix="miaudit-running-")
            with open(os.path.join(self.folder, TOKEN_FILE), "w", encoding="ascii") as file:
                file.write(self.token)
        self._sent += 1
        return str(self._sent)

    def keep(self, future: Future, name: str) -> None:
        self._paths[future] = os.path.join(self.folder, name)

    def lost(self, future: Future, message: str) -> WorkerLost:
        """The :class:`WorkerLost` of ``future``'s dead worker, with what its report says it ran."""
        return WorkerLost(message, *lost_in(self._paths.get(future)))

    def done(self, future: Future) -> None:
        """Forget ``future``'s report, removing its file."""
        path = self._paths.pop(future, None)
        if path is not None and os.path.exists(path):
            os.remove(path)

    def forget(self) -> None:
        """Forget every report, removing the folder (the tasks in flight are sent again, with files of their own)."""
        self._paths.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


class ProcessBackend:
    """Chunks run in ``workers`` local processes (started fresh: ``spawn``), the mechanism
    loaded once per process from its specification. A dying worker breaks the whole pool, so
    every chunk in flight fails with it (``isolated_failures = False``). Each task's worker
    reports, in a file of the task's in a folder of the backend's, the user code running inside
    the mechanism's call (:func:`~mechanisms.execution.worker.run_reporting`), which a
    :class:`WorkerLost` names."""

    isolated_failures = False

    def __init__(self, reference: MechanismReference, workers: int):
        _check_sendable(reference)
        self.reference, self.slots = reference, workers
        self._pool = None
        self._reports = _TaskReports()

    def submit(self, fn, task) -> Future:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.slots, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=init_worker, initargs=(os.getpid(),))
        name = self._reports.new()
        future = self._pool.submit(run_reporting, os.path.join(self._reports.folder, name), fn, self.reference, task,
                                   True)
        self._reports.keep(future, name)
        return future

    def outcome(self, future: Future):
        try:
            return future.result()
        except BrokenProcessPool as exc:
            raise self._reports.lost(future, str(exc)) from None
        finally:
            self._reports.done(future)

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
        self._reports.forget()

    def cancel(self):
        self._kill()
        self._reports.forget()

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._reports.forget()


#: Seconds to wait for a Ray cluster's address to accept a connection: ``ray.init`` itself
#: retries an address where nothing listens for minutes (issue 32 B4).
RAY_CONNECT_TIMEOUT = 10.0


def check_ray_address(address: str, timeout: float = RAY_CONNECT_TIMEOUT) -> None:
    """Refuse a ``HOST:PORT`` (or ``ray://HOST:PORT``) that is not a Ray cluster, within ``timeout`` s in all.

    Two checks, neither of which imports Ray: something accepts a TCP connection there, and it
    answers HTTP/2's connection preface with a SETTINGS frame, as the gRPC servers of a Ray
    cluster (its GCS, and the client server behind ``ray://``) do (RFC 9113, section 3.4). A port
    that accepts and says nothing, or answers something else, is refused here rather than left to
    ``ray.init``, which retries it for minutes. ``"auto"`` and ``"local"`` (Ray finds or starts
    the cluster itself) are not checked.

    Raises
    ------
    InputError
        Naming ``ray_address`` (``--ray-address``), the address and why it is not a Ray cluster.
    """
    if address in ("auto", "local"):
        return
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise InputError(f"argument 'ray_address' (--ray-address) must be HOST:PORT, ray://HOST:PORT or auto, "
                         f"got {address!r}")
    deadline = time.monotonic() + timeout
    try:
        connection = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    except OSError as exc:
        reason = "no answer" if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
        raise InputError(f"argument 'ray_address' (--ray-address): no Ray cluster at {address} accepted a "
                         f"connection within {timeout:g} s ({reason}); start one with 'ray start --head' or check "
                         "the address") from None
    answer = b""
    with connection:
        try:
            connection.sendall(_HTTP2_PREFACE + _HTTP2_EMPTY_SETTINGS)
            while len(answer) < 9:  # a frame header: 3 bytes of length, then the frame's type
                connection.settimeout(max(deadline - time.monotonic(), 1e-3))
                block = connection.recv(9 - len(answer))
                if not block:
                    break
                answer += block
        except socket.timeout:
            raise _not_ray(address, f"it accepted a connection but did not answer as a gRPC server within "
                                    f"{timeout:g} s") from None
        except OSError as exc:
            raise _not_ray(address, f"it accepted a connection, then {exc.strerror or exc}") from None
    if len(answer) < 9 or answer[3] != _HTTP2_SETTINGS:
        raise _not_ray(address, "it accepted a connection but did not answer as a gRPC server "
                       f"({'it closed the connection' if len(answer) < 9 else 'its answer is not HTTP/2'})")


def _not_ray(address: str, why: str) -> InputError:
    return InputError(f"argument 'ray_address' (--ray-address): {address} is not a Ray cluster: {why}; give the "
                      "address 'ray start --head' printed (its GCS port, 6379 by default) or ray://HOST:10001")


#: HTTP/2's client connection preface and an empty SETTINGS frame (RFC 9113, sections 3.4 and 6.5): a Ray
#: cluster's GCS and its client server speak gRPC, which is HTTP/2, and answer with a SETTINGS frame.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_HTTP2_SETTINGS = 0x4
_HTTP2_EMPTY_SETTINGS = bytes([0, 0, 0, _HTTP2_SETTINGS, 0, 0, 0, 0, 0])

#: Seconds ``ray.init`` may take to join a cluster at ``--ray-address`` before the audit gives up
#: (it retries on its own for minutes; issue 32 B4).
RAY_INIT_TIMEOUT = 60.0


def _init_ray_within(ray, address: str, timeout: float, **options) -> None:
    """``ray.init(address=address, **options)`` given at most ``timeout`` seconds (on a daemon thread,
    which is left behind, blocked, when time is up: the audit ends with an error then)."""
    _, exc, timed_out = run_on_daemon_thread(lambda: ray.init(address=address, **options), timeout,
                                             "miaudit-ray-init")
    if timed_out:
        raise InputError(f"argument 'ray_address' (--ray-address): could not join the Ray cluster at {address} "
                         f"within {timeout:g} s; check that it runs the same Ray version and is reachable")
    if exc is not None:
        raise InputError(f"argument 'ray_address' (--ray-address): could not join the Ray cluster at {address} "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None


#: How the notice begins that Ray's driver prints, on its stdout, for a worker that died running a task: its error
#: listener (``ray._private.worker.listen_error_messages``) prints every error the cluster publishes for the job,
#: whatever ``log_to_driver``, the logging levels or a ``RAY_`` setting say (Ray 2.60).
RAY_WORKER_DIED = "A worker died or was killed while executing a task"
#: Seconds :meth:`RayBackend.close` waits for the notices of the deaths it saw, to drop them (:class:`_QuietDeaths`).
RAY_NOTICE_WAIT = 5.0


class _QuietDeaths:
    """While a :class:`RayBackend` is open, Ray's driver drops its notice of a worker that died in a task
    (:data:`RAY_WORKER_DIED`), some ten lines on stdout, which would corrupt ``--json``: the audit says the death in one
    line of its own (:class:`WorkerLost`). Ray has no setting for it, so the function its error listener prints
    through, ``ray._private.worker.print_to_stdstream``, is wrapped, and given back when the last backend closes;
    where a Ray version has no such function, nothing is wrapped and the notice is printed. ``dropped`` counts the
    notices dropped."""

    opened, original, dropped = 0, None, 0

    @classmethod
    def open(cls) -> None:
        try:
            from ray._private import worker as driver
        except ImportError:
            return
        cls.opened += 1
        original = getattr(driver, "print_to_stdstream", None)
        if cls.original is not None or not callable(original):
            return

        def print_to_stdstream(data, *positional, **keywords):
            lines = data.get("lines") if isinstance(data, dict) and data.get("pid") == "raylet" else None
            if lines:
                kept = [line for line in lines if not str(line).startswith(RAY_WORKER_DIED)]
                cls.dropped += len(lines) - len(kept)
                if not kept:
                    return None
                data = {**data, "lines": kept}
            return original(data, *positional, **keywords)

        cls.original, driver.print_to_stdstream = original, print_to_stdstream

    @classmethod
    def close(cls) -> None:
        cls.opened = max(0, cls.opened - 1)
        if cls.opened or cls.original is None:
            return
        from ray._private import worker as driver

        driver.print_to_stdstream, cls.original = cls.original, None


#: How the warning begins that Ray 2.60's ``ray.init`` logs on stderr each time it starts a local instance while
#: ``RAY_AUTH_MODE`` is unset (or joins one found by ``address="auto"`` while this machine has a token): that it
#: turned token authentication on, as it does by default, and how to opt out. It reports Ray's default, not a
#: problem of the audit. Its logger, ``_RAY_TOKEN_LOGGER``, also warns when token authentication is *off*; that
#: warning, and every error (a missing or wrong token raises), is left as Ray gives it.
RAY_TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"
_RAY_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"


class _NoTokenNotice(logging.Filter):
    """Drops the one record that says Ray turned token authentication on by default (:data:`RAY_TOKEN_NOTICE`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(RAY_TOKEN_NOTICE)


@contextmanager
def _without_token_notice():
    """While the block runs, Ray does not print :data:`RAY_TOKEN_NOTICE`. A logging filter on the logger that emits
    it, not ``RAY_AUTH_MODE=token``: Ray reads that variable into its configuration when it is imported, so setting
    it before ``ray.init`` in a process that already imported Ray would leave the driver and the cluster it starts
    disagreeing on authentication. A Ray version that logs elsewhere prints the line, and nothing else changes."""
    logger, quiet = logging.getLogger(_RAY_TOKEN_LOGGER), _NoTokenNotice()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


class RayBackend:
    """Chunks run as Ray tasks on a local Ray instance or an existing cluster (``address``).

    Ray's own retries are off (``max_retries=0``): the runner retries, the same way for every
    backend. The mechanism travels once, through the object store, by reference. A dying
    worker fails only its own task (``isolated_failures = True``).

    What a dead task was running. Each task is given a report file's name in a temporary folder of the
    audit's, and a random token that the audit wrote in that folder
    (:func:`~mechanisms.execution.worker.run_reporting_where_seen`). A task whose process reads that token
    there (a local instance, or a node on the audit's machine) reports in the file, as a local worker does
    (:func:`~mechanisms.execution.worker.run_reporting`), the user code running inside the mechanism's call
    and the hard kill's deadline, and a :class:`WorkerLost` names them. A task that cannot read it (a node
    on another machine, a cluster behind ``ray://``) runs without a report, since nothing it wrote there
    would reach the audit: a worker dying in it is then blamed on the mechanism, as before a report existed.

    Each task first sets up its Ray worker as a local worker is set up, once per process
    (:func:`~mechanisms.execution.worker.init_ray_worker`), and while the backend is open Ray's driver does not
    print its own notice of a worker's death beside the audit's line (:class:`_QuietDeaths`). Starting or joining
    Ray, the backend keeps Ray's notice that it turned token authentication on by default off the terminal
    (:func:`_without_token_notice`). A local instance that it starts has a guardian process, which stops the
    instance's processes should the audit die without shutting it down (:mod:`~mechanisms.execution.ray_guardian`).
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
        self._ray, self._guardian = ray, None
        self._started = not ray.is_initialized()
        if self._started:
            # A local instance's workers import what this process can: its sys.path, as PYTHONPATH.
            path = os.pathsep.join(entry for entry in sys.path if entry)
            options = dict(include_dashboard=False, configure_logging=False, log_to_driver=True)
            # An instance the audit starts ("local" too) is stopped by a guardian if the audit dies (SIGKILL, out of
            # memory); a cluster it joins at an address is left alone.
            local = address in (None, "", "local")
            self._guardian = Guardian() if local and guardian_supported() else None
            try:
                with _without_token_notice(), self._guardian.marking() if self._guardian else nullcontext():
                    if local:  # on this thread: Ray ties the processes it starts to the starting thread's life
                        ray.init(address=address or None, num_cpus=cpus or os.cpu_count(),
                                 runtime_env={"env_vars": {"PYTHONPATH": path}}, **options)
                    else:
                        _init_ray_within(ray, address, RAY_INIT_TIMEOUT, **options)
            except BaseException:
                self._close_guardian()
                raise
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._reference = ray.put(reference)
        self._remote = ray.remote(max_retries=0, num_cpus=1)(run_in_ray_worker)
        self._refs, self._reports = {}, _TaskReports()
        _QuietDeaths.open()
        self._quiet, self._deaths, self._dropped = True, 0, _QuietDeaths.dropped  # deaths seen; notices dropped before

    def submit(self, fn, task) -> Future:
        name = self._reports.new()
        ref = self._remote.remote(self._reports.folder, self._reports.token, name, fn, self._reference, task, True)
        future = ref.future()
        self._refs[future] = ref
        self._reports.keep(future, name)
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
            raise self._reports.lost(future, str(exc)) from None
        except ray.exceptions.RayError as exc:  # a worker or node died, an object was lost
            self._deaths += isinstance(exc, ray.exceptions.WorkerCrashedError)
            raise self._reports.lost(future, f"{type(exc).__name__}: {exc}") from None
        finally:
            self._reports.done(future)

    def restart(self):
        pass  # Ray replaces dead workers itself

    def cancel_task(self, future: Future) -> bool:
        """Cancel ``future``'s task alone (:meth:`submit`'s; its outcome is never taken), ending the Ray worker process
        that runs it (``force``), and forget it; whether the backend held it (a task that had ended is left alone)."""
        ref = self._refs.pop(future, None)
        self._reports.done(future)
        if ref is not None:
            with suppress(Exception):  # a task that already finished cannot be cancelled
                self._ray.cancel(ref, force=True)
        return ref is not None

    def cancel(self):
        for future in list(self._refs):
            self.cancel_task(future)
        self._reports.forget()

    def close(self):
        self._refs.clear()
        self._reports.forget()
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()  # its error listener with it: no notice comes after
        elif self._quiet:  # Ray goes on: the notices of the deaths seen come a moment after the deaths
            waited = time.monotonic() + RAY_NOTICE_WAIT
            while _QuietDeaths.dropped - self._dropped < self._deaths and time.monotonic() < waited:
                time.sleep(0.05)
        self._close_guardian()  # after ray.shutdown: it finds nothing left to stop, and exits
        if self._quiet:
            self._quiet = False
            _QuietDeaths.close()

    def _close_guardian(self):
        if self._guardian is not None:
            self._guardian.close()
            self._guardian = None


def make_backend(reference, backend: str, workers: int, ray_address: str | None):
    """The backend an audit's execution settings ask for. ``reference`` is what every task is given
    first (a :class:`MechanismReference`, or any picklable object with a ``label``)."""
    if backend == "ray":
        return RayBackend(reference, ray_address, workers if workers > 1 else None)
    if workers > 1:
        return ProcessBackend(reference, workers)
    return InProcessBackend(reference)
