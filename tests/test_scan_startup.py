"""The scan's own bound on each task it sends a worker (:mod:`audit.scan.processes`, "A worker's task, seen from the
scan"): a worker stuck as it starts, or whose listing goes on call after call, no longer holds the scan. The listing
(its start included) has one bound, 4 × (--listing-timeout + what the scan's own listing took) + a start allowance +
the grace; a case, that + the most its process runs + the grace. The tests set the bounds small or drive them with
futures that never end: none waits on a margin of real time (a planted hang sleeps an hour)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import pytest

from audit.scan import isolation, processes
from audit.scan.case_audit import RETRY


class _NeverEnds:
    """A backend whose tasks never end (a worker stuck as it starts), or end at once with ``value`` where given."""

    slots, isolated_failures = 1, False

    def __init__(self, value=None):
        self.value, self.sent, self.restarts = value, [], 0

    def submit(self, fn, task):
        self.sent.append(task)
        future = Future()
        if self.value is not None:
            future.set_result(self.value)
        return future

    def outcome(self, future):
        return future.result()

    def restart(self):
        self.restarts += 1

    def cancel(self):
        pass

    def close(self):
        pass


def test_a_task_its_worker_never_ends_is_given_up_at_the_scans_bound():
    # The backend's future never ends: without the bound run_tasks would wait on it for ever. The bound (a hundredth
    # of a second here) ends it with WorkerOverdue, the task is given up with its reason and the pool restarted.
    from mechanisms.execution.backends import run_tasks

    pool = _NeverEnds()
    bounded = processes.BoundedPool(pool, lambda fn, task: (0.01, f"task {task} overdue"))
    given = []
    results = run_tasks(bounded, len, ["a", "b"], retries=0,
                        give_up=lambda position, exc, attempts: given.append(exc) or exc.reason)
    assert results == ["task a overdue", "task b overdue"]
    assert all(isinstance(exc, processes.WorkerOverdue) for exc in given)
    assert pool.sent == ["a", "b"] and pool.restarts == 2  # each lost worker stopped (a local pool: restarted)


def test_a_task_that_ends_in_time_gives_its_result_and_disarms_its_bound():
    from mechanisms.execution.backends import run_tasks

    bounded = processes.BoundedPool(_NeverEnds(value=7), lambda fn, task: (3600.0, "never"))
    assert run_tasks(bounded, len, ["a"], retries=0, give_up=None) == [7]
    assert bounded._timers == {} and bounded._inner == {}
    unbounded = processes.BoundedPool(_NeverEnds(value=8), lambda fn, task: None)
    assert run_tasks(unbounded, len, ["a"], retries=0, give_up=None) == [8]


def test_the_listing_bound_is_one_bound_for_the_whole_listing(monkeypatch):
    # 4 × (--listing-timeout + the scan's own listing) + the start allowance + the grace, computed here apart:
    # 4 × (60 + 5) + 60 + 10 = 330 s, however many calls the listing makes (each bounded by 4 × 60 s within it).
    assert processes.listing_bound(60.0, 5.0, 4, 10.0) == 4 * 65.0 + 60.0 + 10.0
    assert processes.listing_bound(None, 5.0, 4, 10.0) is None
    monkeypatch.setattr(processes, "WORKER_START_SECONDS", 1.0)
    assert processes.listing_bound(0.25, 0.5, 4, 0.5) == 4 * 0.75 + 1.0 + 0.5
    monkeypatch.undo()
    # The command's help states the bound's constant part, the start allowance + the grace, read from the constants
    # (the scan's own in audit.scan.limits, which the scan's modules re-export and read under their own names).
    from mechanisms.execution import bounds, worker

    from audit.scan import limits, running

    assert processes.WORKER_START_SECONDS == limits.WORKER_START_SECONDS and isolation.HARD_KILL_GRACE == worker.HARD_KILL_GRACE
    assert worker.HARD_KILL_GRACE == bounds.HARD_KILL_GRACE
    assert (isolation.WORKER_LISTING_TIMEOUTS, running.LISTING_TIMEOUT) == (limits.WORKER_LISTING_TIMEOUTS,
                                                                            limits.LISTING_TIMEOUT)
    assert f"+ {processes.WORKER_START_SECONDS + worker.HARD_KILL_GRACE:g} s, past which" in _scan_help()
    monkeypatch.setattr(limits, "WORKER_START_SECONDS", 1.5)
    monkeypatch.setattr(bounds, "HARD_KILL_GRACE", 2.0)  # the help reads it where it is defined, not from the worker
    monkeypatch.setattr(limits, "WORKER_LISTING_TIMEOUTS", 3)
    help_text = _scan_help()
    assert "+ 3.5 s, past which" in help_text and "3 × (S + the seconds" in help_text
    monkeypatch.undo()
    # The most a case's process runs: 4 × t + g to its probe, then 2 × 10 × t + t + 10 × t + g.
    assert isolation.most_case_seconds(60.0, 10.0) == (4 + 20 + 1 + 10) * 60.0 + 2 * 10.0


def test_each_case_a_worker_never_listed_names_itself_and_the_bound_in_words(plant, monkeypatch):
    # A local pool whose worker never ends its listing (a future that never ends): past the scan's bound on it, every
    # case is skipped, each reason naming its case and entry point, then the bound: 4 × (0.01 s + 0 s) + 0.01 s to
    # start + 0.01 s of grace = 0.06 s, computed here apart from listing_bound.
    from mechanisms.execution import backends

    from audit.scan.case_audit import list_cases

    module = plant("unlisted_tools", "import numpy as np\n\n\ndef noisy_sum(array, epsilon=1.0, random_state=None):\n"
                   "    return float(np.sum(array) + np.random.default_rng(random_state).laplace(1 / epsilon))\n",
                   on_path=False)
    cases = list_cases(str(module), (0.1, 1.0))[1]
    tasks = [isolation.CaseTask(position, case.id, 0.025, 2000, 1.0, 7, None) for position, case in enumerate(cases)]
    monkeypatch.setattr(backends, "ProcessBackend", lambda target, workers: _NeverEnds())
    monkeypatch.setattr(processes, "WORKER_START_SECONDS", 0.01)
    monkeypatch.setattr(isolation, "HARD_KILL_GRACE", 0.01)
    target = isolation.ScanTarget("scan", str(module), (0.1, 1.0), 0.01, 0.0)
    outcomes = isolation.run_cases(target, tasks, cases, workers=1, backend="local")
    bound = 4 * (0.01 + 0.0) + 0.01 + 0.01
    assert [o["id"] for o in outcomes] == ["unlisted_tools.noisy_sum(epsilon=0.1) / ends",
                                           "unlisted_tools.noisy_sum(epsilon=1.0) / ends"]
    for outcome in outcomes:
        assert outcome["status"] == "skipped" and outcome[RETRY] is True
        assert outcome["reason"] == (
            "not audited, as no worker listed the cases:"
            f" the worker did not start and list the cases within {bound:g} s, the scan's bound on "
            "a fresh worker: 4 times the sum of --listing-timeout (0.01 s) and what the scan's own listing took (0 s), "
            "plus 0.01 s for the worker to start and 0.01 s of grace; stuck as it started (the script that called the "
            "scan, which each worker imports, or a start-up hook) or as it listed (importing the target or its "
            "library); the worker process was stopped")
    # One reason for every case, so the report says it once for the entry point's cases, each named.
    from types import SimpleNamespace

    from audit.scan.words import skipped_items
    rows = skipped_items(SimpleNamespace(skipped_cases=outcomes, skipped=[]))
    assert len(rows) == 1 and rows[0].startswith(", ".join(o["id"] for o in outcomes) + ": not audited, as no worker")


def _scan_help() -> str:
    import contextlib
    import io

    from audit.cli.main import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit):
        main(["scan", "--help"])
    return " ".join(printed.getvalue().split())


def test_a_case_overdue_is_audited_again_only_where_its_process_never_started(tmp_path, plant):
    # Its worker marks a case's process as it starts it (isolation._mark): unmarked, it made no run (retried on
    # --resume at its α/K); marked, its looks may have begun (kept); on Ray, not known (kept).
    from audit.scan.case_audit import list_cases

    module = plant("overdue_tools", "import numpy as np\n\n\ndef noisy_sum(array, epsilon=1.0, random_state=None):\n"
                   "    return float(np.sum(array) + np.random.default_rng(random_state).laplace(1 / epsilon))\n",
                   on_path=False)
    case = list_cases(str(module), (1.0,))[1][0]
    task = isolation.CaseTask(3, case.id, 0.05, 2000, 1.0, 7, None)
    local = isolation.ScanTarget("scan", str(module), (1.0,), 1.0, 0.0, str(tmp_path))
    overdue = processes.WorkerOverdue("case 4: its worker did not end it")
    unmarked = isolation._overdue_outcome(local, task, case, overdue)
    assert unmarked[RETRY] is True and unmarked["reason"].endswith("its case's process had not started (no run made)")
    isolation._mark(local, task)
    marked = isolation._overdue_outcome(local, task, case, overdue)
    assert RETRY not in marked and "its looks may have begun: a resumed scan keeps this outcome" in marked["reason"]
    on_ray = isolation._overdue_outcome(isolation.ScanTarget("scan", str(module), (1.0,), 1.0), task, case, overdue)
    assert RETRY not in on_ray and "on Ray, whether its case's process had started is not known" in on_ray["reason"]


#: A script that scans, guarded, but whose module-level code blocks in each worker that imports it (``spawn`` runs it
#: as ``__mp_main__``): a lock, a network call at import. The scan's bounds are set small in the scan's process.
SCRIPT = '''
import json
import sys
import time

if __name__ == "__mp_main__":  # each worker imports this script as it starts: it never gets further
    time.sleep(3600)

if __name__ == "__main__":
    from audit.scan import isolation, processes
    from audit.scan.running import scan

    processes.WORKER_START_SECONDS = 1.0
    isolation.HARD_KILL_GRACE = 0.5
    result = scan(sys.argv[1], epsilons=(1.0,), max_runs=2000, timeout=2, listing_timeout=0.25, workers=1,
                  state_file=sys.argv[2])
    print(json.dumps({"outcomes": result.outcomes}))
'''


@pytest.mark.integration
def test_a_worker_stuck_as_it_starts_costs_the_scan_its_bound_not_its_end(tmp_path, plant):
    module = plant("two_tools", '''
        import numpy as np

        __all__ = ["noisy_sum", "noisy_max"]


        def noisy_sum(array, epsilon=1.0, random_state=None):
            return float(np.sum(array) + np.random.default_rng(random_state).laplace(scale=10.0 / epsilon))


        def noisy_max(array, epsilon=1.0, random_state=None):
            return float(np.max(array) + np.random.default_rng(random_state).laplace(scale=10.0 / epsilon))
        ''', on_path=False)
    script = tmp_path / "stuck_start.py"
    script.write_text(SCRIPT, encoding="utf-8")
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, str(script), str(module), str(tmp_path / "state.jsonl")],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": root})
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = json.loads(done.stdout.splitlines()[-1])["outcomes"]
    assert len(outcomes) >= 2 and {o["status"] for o in outcomes} == {"skipped"}
    for outcome in outcomes:  # every case, none of which made a run: audited again on resume
        assert outcome[RETRY] is True
        assert outcome["reason"].startswith(
            "not audited, as no worker listed the cases: the worker did not start and list the cases within ")
        assert "4 times the sum of --listing-timeout (0.25 s) and what the scan's own listing took (" in outcome["reason"]
        assert "plus 1 s for the worker to start and 0.5 s of grace; stuck as it started" in outcome["reason"]
    lines = (tmp_path / "state.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)[RETRY] for line in lines[1:]] == [True] * len(outcomes)


#: A module of many public names, each of whose reading hangs in a worker (where LISTING_HANGS is set), not in the
#: scan's own process: each reading is bounded there by 4 × --listing-timeout, and the listing as a whole by the scan.
MANY_NAMES = 600
SLOW_LISTING = f'''
import os
import time

import numpy as np

__all__ = ["noisy_sum"] + [f"lazy_{{number}}" for number in range({MANY_NAMES})]


def noisy_sum(array, epsilon=1.0, random_state=None):
    return float(np.sum(array) + np.random.default_rng(random_state).laplace(scale=10.0 / epsilon))


def __getattr__(name):
    if name.startswith("lazy_") and os.environ.get("LISTING_HANGS"):
        time.sleep(3600)
    raise AttributeError(name)
'''


@pytest.mark.integration
def test_a_worker_listing_call_after_call_is_stopped_at_the_bound_of_the_whole(plant, monkeypatch):
    # In the worker each of the 600 readings ends at its own bound (4 × 0.25 s): 600 s of listing, each call within
    # its bound. The whole listing's bound, with the start allowance set to 1 s, is a few seconds (the scan's own
    # listing, S, is quick): the worker is stopped there, during its start or its listing (the same outcome either
    # way), and the scan ends far inside the 600 s, its case skipped to be audited again.
    from audit.scan.running import scan

    module = plant("slow_listing", SLOW_LISTING, on_path=False)
    monkeypatch.setattr(processes, "WORKER_START_SECONDS", 1.0)
    monkeypatch.setattr(isolation, "HARD_KILL_GRACE", 0.5)
    result = _scan_with_hanging_workers(scan, module, monkeypatch)
    assert [(o["entry"], o["status"], o[RETRY]) for o in result.outcomes] == [
        ("slow_listing.noisy_sum", "skipped", True)]
    reason = result.outcomes[0]["reason"]
    assert reason.startswith("not audited, as no worker listed the cases: the worker did "
                             "not start and list the cases within ")
    assert "plus 1 s for the worker to start and 0.5 s of grace;" in reason


def _scan_with_hanging_workers(scan, module, monkeypatch):
    """The scan of ``module``, LISTING_HANGS set once the scan's own listing is done: its workers, started after,
    see it (the scan imports ``run_cases`` from :mod:`audit.scan.isolation` as it runs the cases)."""
    run_cases = isolation.run_cases

    def hanging(*arguments, **keywords):
        monkeypatch.setenv("LISTING_HANGS", "1")
        return run_cases(*arguments, **keywords)

    monkeypatch.setattr(isolation, "run_cases", hanging)
    return scan(str(module), epsilons=(1.0,), max_runs=3000, timeout=2, listing_timeout=0.25, workers=1)


class _FakeRay:
    """What :class:`~mechanisms.execution.backends.RayBackend` asks of Ray to cancel a task: ``cancel``, recorded."""

    def __init__(self, refuses=False):
        self.cancelled, self.refuses = [], refuses

    def cancel(self, ref, force=False):
        if self.refuses:
            raise ValueError("the task has ended")
        self.cancelled.append((ref, force))


def _ray_backend(ray, refs: dict):
    """A RayBackend holding ``refs`` (future -> task reference) without a Ray instance: only its tables are set."""
    from mechanisms.execution import backends

    backend = object.__new__(backends.RayBackend)
    backend._ray, backend._refs, backend._reports = ray, dict(refs), backends._TaskReports()
    return backend


def test_the_ray_backend_cancels_one_task_and_forgets_it():
    slow, quick = Future(), Future()
    ray = _FakeRay()
    backend = _ray_backend(ray, {slow: "slow-ref", quick: "quick-ref"})
    assert backend.cancel_task(slow) is True
    assert ray.cancelled == [("slow-ref", True)]  # forced: the worker process running it ends
    assert list(backend._refs) == [quick]  # the other task runs on
    assert backend.cancel_task(slow) is False and ray.cancelled == [("slow-ref", True)]  # forgotten: not twice
    refused = _ray_backend(_FakeRay(refuses=True), {slow: "slow-ref"})  # the task had ended: Ray's refusal is quiet
    assert refused.cancel_task(slow) is True and refused._refs == {}


def test_a_bounded_pool_on_ray_cancels_the_overdue_task_alone():
    # A backend whose failures are isolated (Ray) is not restarted: the scan's bound cancels the overdue task through
    # its backend's cancel_task, and run_tasks gives it up.
    from mechanisms.execution.backends import run_tasks

    class _RayNeverEnds(_NeverEnds):
        isolated_failures = True

        def __init__(self):
            super().__init__()
            self.cancelled = []

        def submit(self, fn, task):
            future = super().submit(fn, task)
            self.sent[-1] = (task, future)
            return future

        def cancel_task(self, future):
            self.cancelled.append(future)
            return True

    pool = _RayNeverEnds()
    bounded = processes.BoundedPool(pool, lambda fn, task: (0.01, f"task {task} overdue"))
    results = run_tasks(bounded, len, ["a"], retries=0, give_up=lambda position, exc, attempts: exc.reason)
    assert results == ["task a overdue"] and pool.restarts == 0
    assert pool.cancelled == [pool.sent[0][1]]  # the backend's own future of that task


#: A task for a Ray worker: it writes its process's id to the file ``task`` names, then sleeps where that name says so.
RAY_TASKS = '''
import os
import time


def note_then_sleep(reference, task, hard_kill=False):
    with open(task + ".part", "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    os.replace(task + ".part", task)
    time.sleep(3600 if task.endswith("slow") else 0)
    return os.getpid()
'''

#: Seconds the test waits, at most, for a Ray worker to start a task (a loaded machine; not a margin).
RAY_PATIENCE = 300.0


@pytest.mark.integration
@pytest.mark.ray
def test_a_ray_task_cancelled_alone_ends_its_worker_and_the_backend_runs_on(tmp_path, plant):
    pytest.importorskip("ray")
    import importlib
    import time

    from test_scan_leftovers import ended

    from mechanisms.execution.backends import RayBackend

    plant("ray_cancel_tasks", RAY_TASKS)  # on sys.path before Ray starts: its workers import it from there
    note_then_sleep = importlib.import_module("ray_cancel_tasks").note_then_sleep
    backend = RayBackend(isolation.ScanTarget("scan", "ray_cancel_tasks", (1.0,)), None, 2)
    try:
        slow = backend.submit(note_then_sleep, str(tmp_path / "slow"))
        waited = time.monotonic() + RAY_PATIENCE
        while not (tmp_path / "slow").exists() and time.monotonic() < waited:
            time.sleep(0.1)
        pid = int((tmp_path / "slow").read_text(encoding="ascii"))
        assert backend.cancel_task(slow) is True
        assert backend.cancel_task(slow) is False  # forgotten
        assert ended(pid), "the cancelled task's Ray worker process still runs"
        quick = backend.submit(note_then_sleep, str(tmp_path / "quick"))
        assert backend.outcome(quick) == int((tmp_path / "quick").read_text(encoding="ascii"))
    finally:
        backend.close()


#: The scan's modules that ``miaudit scan --help`` does not import: its numbers come from audit.scan.limits.
SCAN_MODULES = ("audit.scan.isolation", "audit.scan.running", "audit.scan.processes", "audit.scan.case_audit",
                "audit.scan.cases", "audit.scan.profiles", "scipy", "torch")


@pytest.mark.integration
def test_the_scan_help_imports_no_module_of_the_scan():
    """``miaudit scan --help`` states the listing's bound from audit.scan.limits (and the hard kill's grace from
    mechanisms.execution.worker), importing none of the scan's modules: 0.30 s → 0.20 s to print it (at load 5)."""
    code = ("import sys, contextlib, io\nfrom audit.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        status = main(sys.argv[1:])\n    except SystemExit as exc:\n        status = exc.code\n"
            f"print(status, [m for m in {SCAN_MODULES!r} if m in sys.modules], 'audit.scan.limits' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code, "scan", "--help"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.stdout.split("\n")[-2] == "0 [] True", done.stdout + done.stderr
