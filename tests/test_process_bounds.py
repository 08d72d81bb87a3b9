"""Issue 32 B3/B4: processes and calls with bounds: no worker, program child or hang outlives the audit.

Real processes throughout (``integration``): an audit killed with SIGKILL or SIGTERM takes its
workers and multiprocessing's resource tracker with it; an external program's children die with
the batch, at its timeout or when it exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from mechanisms.calls.program import ProgramTimeout, run_program

pytestmark = pytest.mark.integration


def _children(pid: int) -> list:
    """Process ids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for PID 1 to reap it counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_dead(pids, seconds: float) -> list:
    stop = time.monotonic() + seconds
    while time.monotonic() < stop and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


_AUDIT_WITH_WORKERS = textwrap.dedent("""
    import numpy as np
    from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
    from mechanisms.adapters.loading import load_object

    if __name__ == "__main__":  # spawned workers import this file again
        source = "{source}"
        with MechanismRunner(load_object(source), "slow", ExecutionSettings(workers=2, chunk_size=10),
                             source=source) as runner:
            print("running", flush=True)
            runner.sample(np.zeros((100000, 2, 1)), np.random.default_rng(0))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_killed_audit_takes_its_workers_and_resource_tracker_along(tmp_path, how):
    module = tmp_path / "slow_mechanism.py"
    module.write_text("import time\n\ndef slow(dbs, rng):\n    time.sleep(0.05)\n    return dbs.sum(axis=1)\n")
    script = tmp_path / "audit.py"
    script.write_text(_AUDIT_WITH_WORKERS.replace("{source}", f"{module}:slow"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.getcwd()}
    audit = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env=env, cwd=os.getcwd())
    try:
        assert audit.stdout.readline().strip() == b"running"
        stop = time.monotonic() + 30
        while len(_children(audit.pid)) < 3 and time.monotonic() < stop:  # two workers and the tracker
            time.sleep(0.05)
        started = _children(audit.pid)
        assert len(started) >= 3, started
        audit.send_signal(how)
        audit.wait(timeout=10)
        assert _wait_dead(started, 5) == []
    finally:
        if audit.poll() is None:
            audit.kill()


def test_program_killed_at_its_timeout_takes_its_children_along(tmp_path):
    child_pid = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {child_pid}; sleep 30"
    started = time.monotonic()
    with pytest.raises(ProgramTimeout):
        run_program(["sh", "-c", script], b"", timeout=1.0)
    assert time.monotonic() - started < 10
    assert _wait_dead([int(child_pid.read_text())], 5) == []


def test_background_child_holding_stdout_neither_delays_the_batch_nor_survives_it(tmp_path):
    # The background sleep inherits stdout: waiting for end of file waited the full timeout.
    child_pid = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {child_pid}; echo 1.5; echo oops >&2"
    started = time.monotonic()
    status, stdout, stderr = run_program(["sh", "-c", script], b"", timeout=20.0)
    assert time.monotonic() - started < 10  # far below the timeout (the batch used to take all 20 s)
    assert (status, stdout, stderr) == (0, b"1.5\n", b"oops\n")
    assert _wait_dead([int(child_pid.read_text())], 5) == []


def test_program_reads_a_large_batch_and_writes_a_large_answer():
    # stdin and stdout both larger than a pipe's buffer: written and read in one loop, no deadlock.
    payload = b"x" * (1 << 20)
    code = "import sys; data = sys.stdin.buffer.read(); sys.stdout.buffer.write(data * 2)"
    status, stdout, _ = run_program([sys.executable, "-c", code], payload, timeout=30.0)
    assert status == 0 and stdout == payload * 2


def _miaudit(args, tmp_path, timeout=60):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.getcwd()}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "audit.cli.main", *args], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=timeout)
    return done, time.monotonic() - started


@pytest.mark.parametrize("head", ["", "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"],
                         ids=["plain", "ignoring-sigalrm"])
def test_import_time_hang_is_bounded_by_timeout(tmp_path, head):
    # Code ignoring SIGALRM ignores its own alarms, not the bound (mechanisms.calls.alarm).
    (tmp_path / "hang.py").write_text(head + "import time\nwhile True:\n    time.sleep(0.05)\n")
    done, _ = _miaudit(["audit", "--mechanism", "hang.py:mech", "--claim", "dp:1", "--n", "3",
                        "--prior", "builtin:bernoulli", "--timeout", "0.5"], tmp_path)
    assert done.returncode == 1  # a hung user function (the CLI reference), as when the alarm is ignored below
    assert done.stderr.strip().splitlines() == [
        "miaudit audit: error: --mechanism 'hang.py:mech': executing 'hang.py' did not return within 0.5 s "
        "(--timeout, else 60 s at load time); raise --timeout if it is merely slow"]


def test_code_ignoring_the_alarm_ends_the_program_with_one_line(tmp_path):
    # The interval timer cannot stop it (it swallows the interruption; a SIGALRM handler it installs, SIG_IGN
    # included, is for its own alarms only: mechanisms.calls.alarm); the watchdog ends the process STUCK_GRACE
    # seconds later.
    (tmp_path / "deaf.py").write_text("import time\nwhile True:\n    try:\n        time.sleep(0.05)\n"
                                      "    except BaseException:\n        pass\n")
    done, seconds = _miaudit(["audit", "--mechanism", "deaf.py:mech", "--claim", "dp:1", "--n", "3",
                              "--prior", "builtin:bernoulli", "--timeout", "0.5"], tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "miaudit: error: --mechanism 'deaf.py:mech': executing 'deaf.py' did not return within 0.5 s and ignored "
        "the interruption (it is stuck in compiled code, blocks SIGALRM, or catches every exception); the audit was "
        "stopped 5 s later"]
    assert seconds < 40


def test_code_ignoring_the_alarm_inside_another_call_is_named_in_the_line(tmp_path):
    # A statistic (unbounded itself) inside a mechanism's bounded call: the watchdog's line names the statistic.
    script = textwrap.dedent("""
        import time
        from mechanisms.calls import user_call, watchdog

        user_call.STUCK_GRACE = watchdog.STUCK_GRACE = 0.3  # the line 0.3 s past the bound, not 5 s
        watchdog.exit_when_stuck()

        def deaf(output):
            while True:
                try:
                    time.sleep(0.05)
                except BaseException:  # swallows the interruption
                    pass

        def release(db):
            return user_call.call_user_code(deaf, (db,), who="statistic 'deaf'")

        user_call.call_user_code(release, (0,), who="mechanism 'release'", timeout=0.2, where=" on database 0")
    """)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.getcwd()}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "miaudit: error: statistic 'deaf', running inside the call of mechanism 'release' on database 0, did not "
        "return within 0.2 s and ignored the interruption (it is stuck in compiled code, blocks SIGALRM, or "
        "catches every exception); the audit was stopped 0.3 s later"]


def test_user_thread_left_running_does_not_hold_the_program(tmp_path):
    # A non-daemon thread started by user code kept the interpreter waiting at exit, for ever.
    (tmp_path / "threads.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=lambda: time.sleep(3600), name='user-forever').start()\n"
        "def mech(dbs, rng):\n    return dbs.sum(axis=1)\n")
    done, _ = _miaudit(["audit", "--mechanism", "threads.py:mech", "--claim", "dp:1", "--n", "3",
                        "--prior", "builtin:bernoulli", "--samples", "10"], tmp_path)
    assert done.returncode == 2  # --samples 10 is refused after the file is loaded
    assert done.stderr.strip().splitlines()[-1] == (
        "miaudit: warning: user code left 1 thread(s) running (user-forever); exiting without waiting for them")


def test_prior_first_call_is_bounded_by_timeout_not_a_minute(tmp_path):
    from audit.config.building import build_spec
    from mechanisms.errors import MechanismError

    (tmp_path / "slow_prior.py").write_text("import time\ndef prior(m, rng):\n    time.sleep(3600)\n")
    config = {"mechanism": {"spec": "catalog:laplace_sum", "timeout": 0.5},
              "prior": {"spec": str(tmp_path / "slow_prior.py") + ":prior"}, "claim": {"notion": "dp", "epsilon": 1.0}}
    started = time.monotonic()
    with pytest.raises(MechanismError, match=r"did not return within 0.5 s when asked for 2 databases"):
        build_spec(config)
    assert time.monotonic() - started < 30  # not the minute of the default first-call bound


def _descendants(pid: int) -> list:
    """Every process below ``pid`` now (children, their children, ...), from /proc."""
    found, frontier = [], [pid]
    while frontier:
        children = [c for p in frontier for c in _children(p)]
        found += children
        frontier = children
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("mechanism", ["python", "program"])
def test_sigterm_ends_a_worker_audit_like_ctrl_c(tmp_path, mechanism):
    # `miaudit audit --workers 2` SIGTERMed mid-run (a CI runner's cancel): one line, status 143, no process left
    # (workers, resource tracker, an external program and its background child), no temporary file, the old report
    # untouched.
    from audit.report import write_reports
    from audit.result import AuditResult

    report = tmp_path / "out"
    write_reports(AuditResult("violation", "mi-dp", 0.5, 0.05, 0.6, 0.7, None, None, None, [], [], 10, 1.0, 0),
                  report, title="old")
    old = {p.name: p.read_bytes() for p in report.iterdir()}
    pids = tmp_path / "program.pids"
    if mechanism == "python":
        (tmp_path / "slow.py").write_text("import time\n\ndef slow(dbs, rng):\n    time.sleep(0.05)\n"
                                          "    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0, (len(dbs), 1))\n")
        source = ["--mechanism", "slow.py:slow", "--chunk-size", "10", "--notion", "mi-dp", "--epsilon", "1"]
    else:  # a program that leaves a background child running, and hangs
        (tmp_path / "hang.sh").write_text(f"sleep 300 &\necho $! >> {pids}\necho $$ >> {pids}\nsleep 300\n")
        source = ["--command", f"sh {tmp_path / 'hang.sh'}", "--claim", "dp:1", "--timeout", "600"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.getcwd()}
    audit = subprocess.Popen([sys.executable, "-m", "audit.cli.main", "audit", *source, "--prior", "builtin:bernoulli",
                              "--n", "3", "--k", "1", "--samples", "100000", "--slices", "0", "--workers", "2",
                              "--report", str(report / "report.html")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        stop = time.monotonic() + 60
        ready = (lambda: len(_children(audit.pid)) >= 3) if mechanism == "python" else (
            lambda: pids.exists() and len(pids.read_text().split()) >= 2)
        while not ready() and time.monotonic() < stop and audit.poll() is None:
            time.sleep(0.05)
        assert ready(), audit.communicate(timeout=10)
        started = _descendants(audit.pid) + ([int(p) for p in pids.read_text().split()] if pids.exists() else [])
        audit.send_signal(signal.SIGTERM)
        out, err = audit.communicate(timeout=30)
    finally:
        if audit.poll() is None:
            audit.kill()
    assert audit.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines() == ["miaudit audit: terminated by SIGTERM"] and out == ""
    assert _wait_dead(started, 5) == []
    assert {p.name: p.read_bytes() for p in report.iterdir()} == old  # no temporary file, the old report as it was


def test_sigterm_ends_the_program_promptly_after_its_line_whatever_it_holds(tmp_path):
    """After SIGTERM, freeing a large audit's objects at interpreter exit took about 3 s after the
    "terminated" line, past a CI runner's 5 s grace before SIGKILL (issue 43 §6): the program ends at
    once with 143 once its clean-up has run."""
    (tmp_path / "hold.py").write_text(
        "import pathlib, time\n"
        "HELD = [[i, str(i)] for i in range(3_000_000)]  # many objects, freed when the interpreter ends\n"
        "def mech(dbs, rng):\n    pathlib.Path('started').touch()\n    time.sleep(60)\n    return dbs.sum(axis=1)\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.getcwd()}
    audit = subprocess.Popen([sys.executable, "-m", "audit.cli.main", "audit", "--mechanism", "hold.py:mech",
                              "--claim", "dp:1", "--n", "3", "--prior", "builtin:bernoulli", "--quiet"],
                             stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        audit.send_signal(signal.SIGTERM)
        line = audit.stderr.readline()
        said = time.monotonic()
        audit.wait(timeout=30)
        ended = time.monotonic()
    finally:
        audit.kill()
    assert line.strip() == "miaudit audit: terminated by SIGTERM"
    assert audit.returncode == 128 + signal.SIGTERM
    assert ended - said < 1.0  # 3 to 6 s before, freeing 3,000,000 lists
