"""Run an external program on one batch, bounded in time, leaving none of its processes behind.

:func:`subprocess.run` with a timeout kills only the program it started: children the program
started (a shell's pipeline, a background helper) kept running after the timeout, and a
background child that inherited the program's stdout kept the pipe open, so every batch waited
the full timeout for an end of file and left one more child behind (issue 32 B4).

Here the program starts in a session of its own (``start_new_session``: it leads its own
process group), the batch is written and the outputs read through one selector loop, and the
moment the program itself exits, or its time is up, its whole process group is killed while
the exited program's process id still holds the group (it is waited for without being
reaped: ``waitid(..., WNOWAIT)``), so a reused process id is never hit. What the program
wrote before it exited is kept: the pipes are drained for at most :data:`PIPE_GRACE` seconds
once its group is gone (a descendant that left the session on purpose may hold them longer;
it is not waited for).

The groups of the programs running now are kept (:func:`kill_running_programs`), so that a
worker process told to stop (SIGTERM from the audit, or its parent's death) kills them before it
exits: a worker's SIGKILL runs no ``finally``, and its program would outlive the audit. Other code
that starts a process group of its own in a worker (a scan's case, :mod:`audit.scan.isolation`)
adds it there for as long as it runs (:func:`running_group`).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time

__all__ = ["PIPE_GRACE", "ProgramTimeout", "kill_running_programs", "run_program", "running_group"]

#: Seconds the pipes are drained after the program's process group is killed.
PIPE_GRACE = 0.5

#: Seconds between checks that the program has exited, while its pipes are quiet.
_POLL = 0.02


#: Process group ids of the programs :func:`run_program` is running now (in this process), and of the groups added
#: by :func:`running_group`.
_RUNNING = set()


@contextlib.contextmanager
def running_group(group: int):
    """Count the process group ``group`` among those running now while the ``with`` block runs.

    :func:`kill_running_programs`, which a worker told to stop runs (:func:`mechanisms.execution.worker._stop`),
    then kills it with the external programs' groups; the group is forgotten as the block ends, however it ends
    (what ended it is the caller's to kill, where it should).

    Parameters
    ----------
    group : int
        The id of a process group this process started (its leader's process id), which must stay valid while the
        block runs: its leader is not reaped before the block ends.
    """
    _RUNNING.add(group)
    try:
        yield group
    finally:
        _RUNNING.discard(group)


def kill_running_programs() -> None:
    """Kill the process groups of the programs running now; safe in a signal handler or another thread."""
    for group in list(_RUNNING):
        _kill_group(group)


class ProgramTimeout(Exception):
    """The program did not exit within its time; it and its process group were killed."""


def _exited(pid: int) -> bool:
    """Whether ``pid`` (our child) has exited, without reaping it (its id keeps its group alive)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is empty already


def run_program(command, payload: bytes, *, timeout: float, env=None) -> tuple[int, bytes, bytes]:
    """Run ``command`` with ``payload`` on stdin; return ``(exit status, stdout, stderr)``.

    The program gets ``timeout`` seconds to exit; then (or when it exits) its process group
    is killed, so none of its children outlive the batch.

    Raises
    ------
    ProgramTimeout
        The program had not exited within ``timeout`` seconds.
    OSError
        The program could not be started.
    """
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env, start_new_session=True)
    _RUNNING.add(process.pid)
    deadline = time.monotonic() + timeout
    received = {process.stdout.fileno(): [], process.stderr.fileno(): []}
    pending = memoryview(payload)
    stdin_fd = process.stdin.fileno()
    exited = False
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            selector.register(stream.fileno(), selectors.EVENT_READ)
        if pending:
            os.set_blocking(stdin_fd, False)
            selector.register(stdin_fd, selectors.EVENT_WRITE)
        else:
            process.stdin.close()
        try:
            drain_until = None
            while selector.get_map():
                now = time.monotonic()
                if drain_until is None:
                    exited = _exited(process.pid)
                    if exited or now >= deadline:
                        _kill_group(process.pid)  # its leftovers, or the hung program with them
                        drain_until = now + PIPE_GRACE
                        continue
                    wait = min(_POLL, deadline - now)
                elif now >= drain_until:
                    break  # a descendant outside the group holds a pipe: do not wait for it
                else:
                    wait = drain_until - now
                for key, _ in selector.select(wait):
                    fd = key.fd
                    if fd == stdin_fd:
                        try:
                            written = os.write(fd, pending[:65536])
                        except (BrokenPipeError, BlockingIOError, OSError) as exc:
                            if isinstance(exc, BlockingIOError):
                                continue
                            written = len(pending)  # the program stopped reading: its exit says why
                        pending = pending[written:]
                        if not pending:
                            selector.unregister(fd)
                            process.stdin.close()
                        continue
                    block = os.read(fd, 65536)
                    if block:
                        received[fd].append(block)
                    else:
                        selector.unregister(fd)
            while drain_until is None and not exited and time.monotonic() < deadline:
                time.sleep(_POLL)  # the pipes closed before the program exited
                exited = _exited(process.pid)
        finally:
            _kill_group(process.pid)
            _RUNNING.discard(process.pid)
            for stream in (process.stdin, process.stdout, process.stderr):
                try:
                    stream.close()
                except OSError:
                    pass
            process.wait()
    if not exited:
        raise ProgramTimeout(f"did not exit within {timeout:g} s")
    stdout, stderr = (b"".join(received[fd]) for fd in received)
    return process.returncode, stdout, stderr
