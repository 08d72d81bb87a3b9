"""What a case leaves running ends with the case (:mod:`audit.scan.isolation`, "One process per case"): each case's
process leads a process group (a session) of its own, and the worker kills that group when the case ends, written or
killed as stuck. The planted entry points start a process that would sleep an hour: a subprocess a thread of the
case's waits on, and a subprocess started before the case goes deaf to its ``--timeout`` (a forked child that holds
the case's pipe: tests/test_scan_workers.py). Each is checked gone after the case, whatever the machine's load (a
process left running sleeps on)."""

from __future__ import annotations

import os
import signal
import time

import pytest

EPSILON = 1.0
#: The cases' --timeout and the hard kill's grace: the deaf case is killed 4 × 0.8 + 0.5 = 3.7 s after it started.
TIMEOUT, GRACE = 0.8, 0.5
#: Seconds a test waits, at most, for a killed process to be gone (it is, at once; the wait is for a loaded machine).
GONE_WITHIN = 60.0

LEFTOVERS = '''
import math
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np

__all__ = ["thread_holds_a_subprocess", "deaf_with_a_subprocess"]

STARTED = []


def _count(array, epsilon, random_state):
    rng = np.random.default_rng(random_state)
    p = math.exp(-epsilon)
    return float(np.sum(np.asarray(array) >= 5) + int(rng.geometric(1 - p)) - int(rng.geometric(1 - p)))


def _note(pid):
    with open(os.environ["LEFTOVER_PIDS"], "a") as handle:
        handle.write(f"{pid}\\n")


def _sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])


def thread_holds_a_subprocess(array, epsilon=1.0, random_state=None):
    """On its first call, a thread starts a subprocess and waits on it."""
    if not STARTED:
        process = _sleeper()
        STARTED.append(process.pid)
        _note(process.pid)
        threading.Thread(target=process.wait, daemon=True).start()
    return _count(array, epsilon, random_state)


def deaf_with_a_subprocess(array, epsilon=1.0, random_state=None):
    """Starts a subprocess, then blocks the alarm that bounds its call and sleeps: killed as stuck."""
    _note(_sleeper().pid)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(3600)
'''


def ended(pid: int) -> bool:
    """Whether the process ``pid`` has ended within :data:`GONE_WITHIN` seconds (at once where it was killed)."""
    waited = time.monotonic() + GONE_WITHIN
    while _alive(pid) and time.monotonic() < waited:
        time.sleep(0.05)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed and waiting for its reaper, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel (a zombie then counts as alive)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _run_case(tmp_path, plant, monkeypatch, name):
    """The outcome of the case ``name`` run as a scan's worker runs it, and the ids of the processes it started."""
    from audit.scan import isolation
    from audit.scan.case_audit import list_cases, source_of

    module = plant("leftovers", LEFTOVERS, on_path=False)
    pids = tmp_path / "pids"
    monkeypatch.setenv("LEFTOVER_PIDS", str(pids))
    monkeypatch.setattr(isolation, "_warm", lambda: None)
    monkeypatch.setattr(isolation, "HARD_KILL_GRACE", GRACE)
    case = next(c for c in list_cases(str(module), (EPSILON,))[1] if c.entry.name == name)
    task = isolation.CaseTask(0, case.id, 0.05, 1300, TIMEOUT, 7, None)
    outcome = isolation.run_case(isolation.ScanTarget("scan", source_of(str(module)), (EPSILON,)), task)
    return outcome, [int(line) for line in pids.read_text().split()] if pids.exists() else []


@pytest.mark.integration
@pytest.mark.skipif(not hasattr(os, "killpg") or not hasattr(os, "fork"), reason="POSIX process groups")
@pytest.mark.parametrize("name", ["thread_holds_a_subprocess", "deaf_with_a_subprocess"])
def test_what_a_case_started_ends_with_the_case(tmp_path, plant, monkeypatch, name):
    outcome, pids = _run_case(tmp_path, plant, monkeypatch, name)
    try:
        assert len(pids) == 1, pids
        if name == "deaf_with_a_subprocess":
            assert outcome["reason"].endswith("its process was killed while running leftovers.deaf_with_a_subprocess")
        else:
            assert outcome["status"] in ("control", "finding"), outcome.get("reason")
        assert ended(pids[0]), f"{name}'s process {pids[0]} outlived its case"
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_stopped_worker_ends_the_group_of_the_case_it_runs(monkeypatch):
    # The worker's SIGTERM handler (mechanisms.execution.worker._stop) kills the groups kill_running_programs knows:
    # the case's is among them while it runs (audit.scan.isolation._forked).
    from audit.scan import isolation
    from mechanisms.calls import program

    killed = []
    monkeypatch.setattr(program.os, "killpg", lambda group, number: killed.append((group, number)))
    assert isolation._RUNNING is program._RUNNING
    isolation._RUNNING.add(123456)
    try:
        program.kill_running_programs()
    finally:
        isolation._RUNNING.discard(123456)
    assert (123456, signal.SIGKILL) in killed
