"""A local Ray instance that the audit starts does not outlive the audit, however it dies
(:mod:`mechanisms.execution.ray_guardian`), and a normal run leaves no guardian behind.

Without the guardian, an audit killed with SIGKILL took Ray's head processes with it at once (Ray's own fate-sharing),
but its workers lived on for some 2-5 s and its dashboard and runtime-environment agents for about 60 s.
"""

import json
import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mechanisms.execution import ray_guardian

pytestmark = pytest.mark.skipif(not ray_guardian.supported(), reason="the guardian finds processes through /proc")

REPO = Path(__file__).resolve().parents[1]
SOURCE = str(REPO / "tests" / "fixtures" / "execution_mechanisms.py")
#: Seconds a test waits at most for what it expects (a bound for a loaded machine, not a measured margin).
PATIENCE = 30.0


def _start(pid: int):
    """Process ``pid``'s start time (proc(5), field 22), or None where it has ended (a zombie has)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == b"Z" else int(fields[19])


def _descendants(root: int) -> dict:
    """``root`` and every process below it, as process id -> start time (independent of the module's walk)."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                parents[int(name)] = int(Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError):
                pass
    found, stack = {}, [root]
    while stack:
        pid = stack.pop()
        start = _start(pid)
        if pid not in found and start is not None:
            found[pid] = start
            stack.extend(child for child, parent in parents.items() if parent == pid)
    return found


def _still_running(processes: dict) -> dict:
    return {pid: start for pid, start in processes.items() if _start(pid) == start}


def _wait_until_ended(processes: dict, patience: float = PATIENCE) -> dict:
    """Poll until none of ``processes`` runs, at most ``patience`` seconds; what still runs then."""
    deadline = time.monotonic() + patience
    left = _still_running(processes)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _still_running(processes)
    return left


def _kill_all(processes: dict) -> None:
    for pid in _still_running(processes):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.integration
def test_the_guardian_stops_the_marked_processes_and_their_children_once_its_audit_dies(tmp_path):
    """A stand-in for the audit starts a guardian, a marked process (in a session of its own, so that it outlives
    the stand-in, as Ray's agents do) whose child drops the mark, and an unmarked process; SIGKILLed, the stand-in
    leaves the first two to its guardian, which stops them, and the third alone."""
    script = tmp_path / "audit.py"
    script.write_text(textwrap.dedent("""
        import json, os, subprocess, sys, time

        from mechanisms.execution.ray_guardian import Guardian

        guardian = Guardian()
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        with guardian.marking():
            marked = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                                       "child = subprocess.Popen(sys.argv[1:], env={}); print(child.pid, flush=True); "
                                       "time.sleep(600)", *sleeper], start_new_session=True, stdout=subprocess.PIPE)
        child = int(marked.stdout.readline())
        other = subprocess.Popen(sleeper, start_new_session=True)
        print(json.dumps({"guardian": guardian.pid, "marked": marked.pid, "child": child, "other": other.pid}),
              flush=True)
        time.sleep(600)
    """), encoding="utf-8")
    audit = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    started = {}
    try:
        pids = json.loads(audit.stdout.readline())
        started = {name: (pid, _start(pid)) for name, pid in pids.items()}
        assert all(start is not None for _, start in started.values()), started
        audit.kill()
        audit.wait()
        stopped = {pid: start for name, (pid, start) in started.items() if name != "other"}
        assert _wait_until_ended(stopped) == {}
        assert _start(started["other"][0]) == started["other"][1]  # not the cluster's: left alone
    finally:
        audit.kill()
        audit.wait()
        _kill_all(dict(started.values()))


@pytest.mark.integration
def test_processes_are_known_by_id_and_start_time_and_only_this_tokens_marked_ones_are_found(tmp_path):
    token, other_token, unused = (secrets.token_hex(16) for _ in range(3))  # unique to this run
    marked = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                              env={**os.environ, ray_guardian.CLUSTER_VARIABLE: token})
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             env={**os.environ, ray_guardian.CLUSTER_VARIABLE: other_token})
    try:
        deadline = time.monotonic() + PATIENCE
        while _start(marked.pid) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        start = _start(marked.pid)
        assert ray_guardian.cluster_processes(token) == {marked.pid: start}
        assert ray_guardian.cluster_processes(token, parent=os.getpid()) == {marked.pid: start}
        assert ray_guardian.cluster_processes(token, parent=1) == {}  # not a child of init
        other_start = _start(other.pid)
        assert ray_guardian.cluster_processes(unused, known={other.pid: other_start}) == {other.pid: other_start}
        assert ray_guardian.cluster_processes(unused, known={other.pid: other_start + 1}) == {}  # its id, reused
        assert ray_guardian.stop_cluster(token, wait=PATIENCE) == 1
        assert marked.wait(PATIENCE) == -signal.SIGTERM
        assert other.poll() is None
    finally:
        for process in (marked, other):
            process.kill()
            process.wait()


def _audit_command() -> list:
    return [sys.executable, "-m", "audit.cli.main", "audit", "--mechanism", f"{SOURCE}:announces_then_sleeps",
            "--prior", "builtin:bernoulli", "--n", "3", "--notion", "mi-dp", "--epsilon", "0.1", "--samples", "2000",
            "--backend", "ray", "--workers", "1", "--quiet"]


@pytest.mark.integration
@pytest.mark.ray
def test_an_audit_killed_with_sigkill_leaves_no_process_of_the_ray_instance_it_started(tmp_path):
    """The audit's mechanism announces itself from a Ray worker (Ray is up), the audit is SIGKILLed, and every process
    that was below it (Ray's head processes, agents and workers, and the guardian) ends within :data:`PATIENCE` s."""
    pytest.importorskip("ray")
    marker = tmp_path / "pids"
    env = {**os.environ, "MIAUDIT_TEST_MARKER": str(marker), "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    audit = subprocess.Popen(_audit_command(), env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    below = {}
    try:
        deadline = time.monotonic() + 240  # starting Ray on a loaded machine
        while not (marker.exists() and marker.read_text().strip()) and audit.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert audit.poll() is None and marker.read_text().strip(), audit.stderr.read() if audit.poll() else ""
        worker = int(marker.read_text().split()[0])
        below = _descendants(audit.pid)
        below.pop(audit.pid)
        assert worker in below and len(below) >= 4, below  # the guardian, Ray's head processes, the worker
        audit.kill()
        audit.wait()
        assert _wait_until_ended(below) == {}
    finally:
        audit.kill()
        audit.wait()
        _kill_all(below)


@pytest.mark.integration
@pytest.mark.ray
@pytest.mark.parametrize("address", [None, "local"])
def test_a_backend_closed_normally_shuts_ray_down_and_leaves_no_guardian(address, tmp_path):
    """Opened, the backend has a guardian that finds the instance's processes by its mark, and Ray runs a task;
    closed, neither the guardian nor any process of the instance runs. ``--ray-address local`` starts the instance as
    no address does (Ray started it on the thread that joins an address within a bound, whose end killed it)."""
    pytest.importorskip("ray")
    script = tmp_path / "open_and_close.py"
    script.write_text(textwrap.dedent("""
        import json
        import sys

        import ray

        from mechanisms.execution import backends, ray_guardian
        from mechanisms.execution.worker import MechanismReference

        address = json.loads(sys.argv[1])
        backend = backends.RayBackend(MechanismReference("laplace_sum", "catalog:laplace_sum"), address, 1)
        guardian = backend._guardian
        marked = ray_guardian.cluster_processes(guardian.token)
        answer = ray.get(ray.remote(lambda: 6 * 7).remote(), timeout=120)
        backend.close()
        print(json.dumps({"guardian": guardian.pid, "marked": marked, "token": guardian.token, "answer": answer,
                          "exit": guardian._process.returncode, "closed": backend._guardian is None}))
    """), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, str(script), json.dumps(address)], capture_output=True, text=True, timeout=300, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert len(result["marked"]) >= 2 and result["answer"] == 42, result  # at least the GCS server and the raylet
    assert result["exit"] == 0 and result["closed"]  # it had ended when close returned
    assert _start(result["guardian"]) is None
    left = {int(pid): start for pid, start in result["marked"].items()}
    assert _still_running(left) == {}
    assert ray_guardian.cluster_processes(result["token"]) == {}
