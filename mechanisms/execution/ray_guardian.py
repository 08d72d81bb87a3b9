"""The guardian of a local Ray instance that the audit starts: it stops that instance's processes when the audit dies.

Ray 2.60 ties the instance's head processes (GCS, raylet, monitors) to the process that called ``ray.init`` where the
kernel allows it (``PR_SET_PDEATHSIG`` on Linux), but not the raylet's children: killed with SIGKILL (or by the
out-of-memory killer), the audit took its head processes with it at once, while its workers went on for some 2-5 s
and its dashboard and runtime-environment agents for about 60 s (measured; with the guardian, every process of the
instance had ended 2.1 s after the kill: tests/test_ray_orphans.py). Ray's own reaper
(``ray._private.ray_process_reaper``) is not started where Ray fate-shares through the kernel.

The guardian is a small process of its own (:func:`main`, standard library only, in a session of its own so that a
signal to the audit's process group does not reach it). It waits on a pipe whose write end only the audit holds, so it
reads end-of-file however the audit ends: from :meth:`Guardian.close` after ``ray.shutdown``, or from the kernel when
the audit dies. It then stops the instance's processes (:func:`stop_cluster`): SIGTERM (a Ray worker of the audit's
ends the external programs it runs then: :func:`~mechanisms.execution.worker.init_ray_worker`), then SIGKILL to those
still running :data:`STOP_WAIT` seconds later. The instance's processes are those that carry its mark, an environment
variable (:data:`CLUSTER_VARIABLE`) with a random token, which the audit sets only while ``ray.init`` starts the
instance, and every process these start (:func:`cluster_processes`), which the guardian looks for while it waits. A
cluster the audit joins at an address is never marked, so never stopped. Processes are found through ``/proc``, so the
guardian runs on Linux only.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

#: The environment variable whose value marks the processes of the local Ray instance a :class:`Guardian` watches.
CLUSTER_VARIABLE = "MIAUDIT_RAY_CLUSTER"
#: Seconds the marked processes get after SIGTERM before SIGKILL (as a local worker: ``backends.WORKER_STOP_WAIT``).
STOP_WAIT = 2.0
#: Seconds the guardian waits for the processes it sent SIGKILL to end (their parents reap them) before it looks again.
KILL_WAIT = 1.0
#: Rounds of finding and stopping marked processes (one that a dying process started while it was stopped is found
#: by the next).
STOP_ROUNDS = 3
#: Seconds between the guardian's looks for the instance's processes while the audit runs.
WATCH_INTERVAL = 1.0
#: Seconds :meth:`Guardian.close` waits for the guardian to stop what is left and exit before it kills it.
CLOSE_WAIT = STOP_ROUNDS * STOP_WAIT + 5.0

__all__ = ["CLUSTER_VARIABLE", "Guardian", "cluster_processes", "stop_cluster", "supported"]


def supported() -> bool:
    """Whether a guardian can find processes here: Linux, with ``/proc``."""
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self")


def _marked(pid: int, mark: bytes) -> bool:
    """Whether process ``pid``'s environment, as ``/proc`` shows it, has ``mark`` (False where it is gone or another
    user's)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            return mark in file.read().split(b"\0")
    except OSError:
        return False


def _stat(pid: int) -> tuple | None:
    """(its state, its parent's id, its start time in clock ticks after boot) of process ``pid``, from
    ``/proc/PID/stat`` (proc(5): fields 3, 4 and 22); None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[19])


def _processes() -> dict:
    """Every live process: its id -> (its parent's id, its start time) (:func:`_stat`). A zombie has ended, and is
    left out."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None and stat[0] != b"Z":
                table[int(name)] = stat[1:]
    return table


def cluster_processes(token: str, parent: int | None = None, known: dict | None = None) -> dict:
    """The processes of the instance marked with ``token``, as process id -> start time: those whose environment has
    ``CLUSTER_VARIABLE=token`` (children of ``parent`` only, where given: the cheap look of :func:`main`'s watch), those
    of ``known`` still running (the same id and start time), and every descendant of these; never this process.

    The environment alone would not do: a Ray worker or agent that sets its process title (``ray::IDLE``) may
    overwrite the start of the environment that ``/proc`` shows, and the mark with it, so the processes that the
    marked ones start are found as their descendants while these run (:func:`main` looks every
    :data:`WATCH_INTERVAL` seconds), and are then known by id and start time after their parent has died.
    """
    table, mark = _processes(), f"{CLUSTER_VARIABLE}={token}".encode()
    roots = [pid for pid, start in (known or {}).items() if table.get(pid, (None, None))[1] == start]
    roots += [pid for pid, (ppid, _) in table.items() if (parent is None or ppid == parent) and _marked(pid, mark)]
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found = {}
    while roots:
        pid = roots.pop()
        if pid not in found:
            found[pid] = table[pid][1]
            roots.extend(children.get(pid, ()))
    found.pop(os.getpid(), None)
    return found


def _running(pid: int, start: int) -> bool:
    """Whether process ``pid`` runs and is the one that started at ``start`` (not a later one given its id)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != b"Z" and stat[2] == start


def stop_cluster(token: str, known: dict | None = None, wait: float = STOP_WAIT, rounds: int = STOP_ROUNDS) -> int:
    """Stop the processes of the instance marked with ``token`` (:func:`cluster_processes`, with ``known``): SIGTERM,
    then SIGKILL to those still running after ``wait`` seconds, for at most ``rounds`` rounds while any is found.
    Returns how many processes were signalled."""
    signalled, known = set(), dict(known or {})
    for _ in range(rounds):
        found = cluster_processes(token, None, known)
        if not found:
            break
        known.update(found)
        for stop in (signal.SIGTERM, signal.SIGKILL):
            for pid, start in found.items():
                if _running(pid, start):
                    try:
                        os.kill(pid, stop)
                        signalled.add(pid)
                    except OSError:  # it ended since it was found
                        pass
            deadline = time.monotonic() + (wait if stop == signal.SIGTERM else min(wait, KILL_WAIT))
            while True:
                found = {pid: start for pid, start in found.items() if _running(pid, start)}
                if not found or time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
            if not found:
                break
    return len(signalled)


def main(argv: list) -> int:
    """The guardian: ``ray_guardian.py FD TOKEN``, started by the audit. Until end-of-file on pipe ``FD`` it looks, every
    :data:`WATCH_INTERVAL` seconds, for the instance's processes (:func:`cluster_processes`); then it stops them
    (:func:`stop_cluster`). Ctrl-C is the audit's, which shuts Ray down itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    descriptor, token, audit = int(argv[1]), argv[2], os.getppid()
    known = {}
    while True:  # not os.getppid() == 1: the audit may be a container's first process
        try:
            ready, _, _ = select.select([descriptor], [], [], WATCH_INTERVAL)
            if ready and not os.read(descriptor, 4096):
                break
        except OSError:
            break
        known = {pid: start for pid, start in known.items() if _running(pid, start)}
        known.update(cluster_processes(token, audit, known))
    stop_cluster(token, known)
    return 0


class Guardian:
    """The guardian process of one local Ray instance (see the module's docstring), started at once.

    Use :meth:`marking` around the ``ray.init`` that starts the instance, and :meth:`close` after ``ray.shutdown``:
    the guardian then stops what is left (nothing, after a clean shutdown) and exits before :meth:`close` returns.
    """

    def __init__(self):
        import secrets

        self.token = secrets.token_hex(16)
        read, self._write = os.pipe()  # neither inheritable: only the guardian is given the read end
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", os.path.abspath(__file__), str(read), self.token], pass_fds=(read,),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, env={key: value for key, value in os.environ.items()
                                             if key != CLUSTER_VARIABLE})
        except BaseException:
            os.close(self._write)
            raise
        finally:
            os.close(read)

    @property
    def pid(self) -> int:
        return self._process.pid

    @contextmanager
    def marking(self):
        """While the block runs, this process's environment marks what it starts (:data:`CLUSTER_VARIABLE`)."""
        saved = os.environ.get(CLUSTER_VARIABLE)
        os.environ[CLUSTER_VARIABLE] = self.token
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop(CLUSTER_VARIABLE, None)
            else:
                os.environ[CLUSTER_VARIABLE] = saved

    def close(self, wait: float = CLOSE_WAIT) -> None:
        """Tell the guardian to stop what is left of the instance, and wait ``wait`` s for it to exit (then kill it)."""
        if self._write is not None:
            os.close(self._write)
            self._write = None
        try:
            self._process.wait(wait)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
