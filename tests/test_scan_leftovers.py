"""What a case leaves running ends with the case (:mod:`audit.scan.isolation`, "One process per case"): each case's
process leads a process group (a session) of its own, and the worker kills that group when the case ends, written or
killed as stuck. The planted entry points start a process that would sleep an hour: a subprocess a thread of the
case's waits on, and a subprocess started before the case goes deaf to its ``--timeout`` (a forked child that holds
the case's pipe: tests/test_scan_workers.py). Each is checked gone after the case, whatever the machine's load (a
process left running sleeps on)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
    # the case's is among them while it runs (audit.scan.isolation._forked, through program.running_group).
    from mechanisms.calls import program

    killed = []
    monkeypatch.setattr(program.os, "killpg", lambda group, number: killed.append((group, number)))
    with program.running_group(123456) as group:
        assert group == 123456
        program.kill_running_programs()
    assert killed == [(123456, signal.SIGKILL)]
    program.kill_running_programs()  # the block ended: the group is forgotten
    assert killed == [(123456, signal.SIGKILL)]
    with pytest.raises(RuntimeError), program.running_group(654321):
        raise RuntimeError("the block ends with an exception")
    program.kill_running_programs()  # forgotten however the block ended
    assert killed == [(123456, signal.SIGKILL)]


#: A worker as a scan's runs one case (audit.scan.isolation.run_case), in a process the test can kill with SIGKILL. Its
#: --timeout is 600 s: its hard kill (4 × 600 s + the grace) is never what ends the deaf case here.
WORKER = """
import sys

from audit.scan import isolation
from audit.scan.case_audit import list_cases, source_of

isolation._warm = lambda: None
case = next(c for c in list_cases(sys.argv[1], (1.0,))[1] if c.entry.name == "deaf_with_a_subprocess")
task = isolation.CaseTask(0, case.id, 0.05, 1300, 600.0, 7, None)
isolation.run_case(isolation.ScanTarget("scan", source_of(sys.argv[1]), (1.0,)), task)
"""

#: Seconds the test waits, at most, for the worker to start its case and the case its subprocess (a loaded machine).
STARTED_WITHIN = 300.0


@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG: Linux only")
def test_a_worker_killed_outright_ends_its_case_and_what_the_case_started(tmp_path, plant):
    # The worker is SIGKILLed while its case sleeps, deaf, beside the subprocess it started: the kernel kills the
    # case's process with its worker (PR_SET_PDEATHSIG), and the case's guard kills the rest of its group.
    module = plant("leftovers", LEFTOVERS, on_path=False)
    pids, script = tmp_path / "pids", tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    env = {**os.environ, "LEFTOVER_PIDS": str(pids), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with open(tmp_path / "worker.err", "wb") as errors:
        worker = subprocess.Popen([sys.executable, str(script), str(module)], env=env, stdout=subprocess.DEVNULL,
                                  stderr=errors)
    started = []
    try:
        waited = time.monotonic() + STARTED_WITHIN
        while not started and worker.poll() is None and time.monotonic() < waited:
            time.sleep(0.1)
            started = [int(line) for line in pids.read_text().split()] if pids.exists() else []
        assert started and worker.poll() is None, (tmp_path / "worker.err").read_text()[-2000:]
        (case,) = [pid for pid, (parent, group) in _processes().items() if parent == worker.pid and group == pid]
        assert _alive(case) and _alive(started[0])
        worker.kill()
        worker.wait()
        assert ended(case), "the case's process outlived its worker"
        assert ended(started[0]), "what the case started outlived its worker"
    finally:
        worker.kill()
        worker.wait()
        for pid in started:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _processes() -> dict:
    """Every process now, as id -> (its parent's id, its process group's id), read from /proc (proc(5))."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = Path(f"/proc/{name}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            found[int(name)] = (int(fields[1]), int(fields[2]))
    return found


def test_without_the_kernels_request_no_guard_is_forked(monkeypatch):
    # Off Linux (no prctl), or where the request fails, end_with_parent says so and forks nothing: the fallback is a
    # worker's own kill of its case's group, which a SIGKILL of the worker skips.
    from audit.scan import processes

    forked = []
    monkeypatch.setattr(processes, "parent_death_signal", lambda number: False)
    monkeypatch.setattr(processes.os, "fork", lambda: forked.append(1) or 0)
    assert processes.end_with_parent() is False and forked == []
    monkeypatch.undo()
    monkeypatch.setattr(processes.sys, "platform", "darwin")
    assert processes.parent_death_signal(signal.SIGKILL) is False  # nothing asked where the call does not exist
