"""Every call of the scanned library's code outside a case's audited calls is bounded (:mod:`audit.scan.cases`,
:func:`audit.scan.case_audit.audit_case`): a module whose import hangs, a public name whose reading hangs (a module's
``__getattr__``), a family's grid or grid point that calls a library that hangs (each by the scan's
``--listing-timeout``), and a case whose call's build (its family's setup) hangs (by ``--timeout``) are each skipped
naming it, in the scan's own process (where no worker's hard kill reaches) and with ``in_process=True``, within a
bound far below the planted sleep; in a worker, a listing stuck where its bound cannot interrupt it is hard-killed."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from audit.scan.case_audit import audit_case, list_cases
from audit.scan.cases import EntryPoint, build_cases
from audit.scan.profiles.base import ArrayTool
from audit.scan.running import scan

#: What a planted call sleeps: far past the tests' bound (TIMEOUT), so a test that ends in HANG / 2 saw the bound.
HANG = 120.0
TIMEOUT = 0.5

MODULE = f'''
"""Entry points of a user's module, one of which hangs as the scan reads it (a lazy ``__getattr__``)."""
import time

import numpy as np

__all__ = ["noisy_sum", "lazy_tool"]

HANG = {HANG}


def noisy_sum(array, epsilon=1.0, random_state=None):
    return float(np.sum(array) + np.random.default_rng(random_state).laplace(scale=10.0 / epsilon))


def hanging_calibration():
    time.sleep(HANG)


def __getattr__(name):
    if name == "lazy_tool":  # a lazy import that never ends
        time.sleep(HANG)
    raise AttributeError(name)
'''


@pytest.fixture
def planted(plant):
    return plant("planted_bounds", MODULE)


def test_a_public_name_whose_reading_hangs_is_skipped_naming_it(planted):
    started = time.perf_counter()
    result = scan(str(planted), epsilons=(1.0,), max_runs=20, timeout=TIMEOUT, listing_timeout=TIMEOUT,
                  in_process=True)
    assert time.perf_counter() - started < HANG / 2
    reasons = {row["what"]: row["reason"] for row in result.skipped}
    assert reasons["planted_bounds.lazy_tool"] == (
        f"planted_bounds.lazy_tool did not return within {TIMEOUT:g} s as the scan read it and its signature (the "
        "scan's --listing-timeout); it was skipped")
    # The rest of the module is still listed: noisy_sum's case (left out of the split at 20 runs, without a run).
    assert any(row["what"].startswith("planted_bounds.noisy_sum(") for row in result.skipped)


@pytest.mark.integration
def test_a_worker_lists_within_a_bound_too(planted):
    # A worker lists the cases again (audit.scan.isolation.list_in_worker), where the same name hangs: bounded there
    # too (WORKER_LISTING_TIMEOUTS × --listing-timeout), it skips it as the scan did and audits the case it is sent.
    started = time.perf_counter()
    result = scan(str(planted), epsilons=(1.0,), max_runs=3000, timeout=TIMEOUT, listing_timeout=TIMEOUT, workers=1)
    assert time.perf_counter() - started < HANG / 2
    assert [o["entry"] for o in result.outcomes] == ["planted_bounds.noisy_sum"]
    assert [row["what"] for row in result.skipped] == ["planted_bounds.lazy_tool"]


def test_a_worker_bounds_its_listing_by_a_multiple_of_the_timeout(monkeypatch):
    # What the scan's process listed in time, a fresh worker must list too: its bound is a multiple of the scan's.
    from audit.scan import isolation

    given = []
    monkeypatch.setattr(isolation, "list_cases",
                        lambda target, epsilons, timeout, hard_kill: given.append(timeout) or ([], []))
    monkeypatch.setattr(isolation, "_warm", lambda: None)
    monkeypatch.setattr(isolation, "_CASES", {})
    isolation.list_in_worker(isolation.ScanTarget("scan", "lib", (1.0,), 2.5))
    isolation.list_in_worker(isolation.ScanTarget("scan", "other", (1.0,)))
    assert given == [isolation.WORKER_LISTING_TIMEOUTS * 2.5, None] and isolation.WORKER_LISTING_TIMEOUTS > 1


def test_a_module_whose_import_hangs_is_skipped_naming_it(plant, monkeypatch):
    # The bound of the listing's own import (a library with a profile is imported without a trial import first).
    from audit.scan.profiles.base import Profile

    plant("hangs_on_import", f"import time\ntime.sleep({HANG})\n")
    profile = Profile(name="hangs", modules=("hangs_on_import",), families=(ArrayTool(),))
    monkeypatch.setattr("audit.scan.case_audit.profile_for", lambda target: profile)
    started = time.perf_counter()
    skipped, cases = list_cases("hangs", (1.0,), timeout=TIMEOUT)
    assert time.perf_counter() - started < HANG / 2
    assert not cases and [(s.what, s.reason) for s in skipped] == [
        ("hangs_on_import", f"module hangs_on_import did not return within {TIMEOUT:g} s as it was imported (the "
                            "scan's --listing-timeout); it was skipped")]


def test_a_user_module_whose_import_hangs_only_after_its_trial_is_skipped_naming_it(tmp_path, plant):
    # Its trial import (a forked process, audit.scan.processes.import_blocked) ends, leaving a mark; the scan's own
    # import, finding the mark, sleeps: bounded by --listing-timeout there too, the module is skipped, the scan ends.
    mark = tmp_path / "imported-once"
    plant("hangs_second_time",
          f"import pathlib, time\nmark = pathlib.Path({str(mark)!r})\nif mark.exists():\n    time.sleep({HANG})\n"
          "mark.touch()\n")
    started = time.perf_counter()
    result = scan("hangs_second_time", epsilons=(1.0,), max_runs=2000, timeout=TIMEOUT, listing_timeout=2.0)
    assert time.perf_counter() - started < HANG / 2
    assert result.cases == 0 and result.skipped == [{
        "what": "hangs_second_time", "reason": "module hangs_second_time did not return within 2 s as it was imported "
                                               "(the scan's --listing-timeout); it was skipped"}]


@dataclass(frozen=True)
class CalibratedTool(ArrayTool):
    """An array tool whose family calls the library to build its grid (as OpenDP's calibration does)."""

    def settings(self, obj, epsilons=(1.0,)):
        __import__("planted_bounds").hanging_calibration()
        return ArrayTool.settings(self, obj, epsilons)


@dataclass(frozen=True)
class MappedTool(ArrayTool):
    """An array tool whose family reads each grid point's claim from the library (as OpenDP's privacy map)."""

    def claim(self, obj, settings):
        __import__("planted_bounds").hanging_calibration()
        return ArrayTool.claim(self, obj, settings)


def test_a_grid_or_grid_point_whose_build_hangs_is_skipped_naming_it(planted):
    import planted_bounds

    entries = [EntryPoint("planted_bounds", "noisy_sum", planted_bounds.noisy_sum, family)
               for family in (CalibratedTool(), MappedTool())]
    started = time.perf_counter()
    cases, skipped = build_cases(entries, (1.0,), timeout=TIMEOUT)
    assert time.perf_counter() - started < HANG / 2
    assert not cases
    assert [(s.what, s.reason) for s in skipped] == [
        ("planted_bounds.noisy_sum", f"entry point planted_bounds.noisy_sum did not return within {TIMEOUT:g} s as its "
                                     "parameter grid was built (the scan's --listing-timeout); it was skipped"),
        ("planted_bounds.noisy_sum(epsilon=1.0)",
         f"entry point planted_bounds.noisy_sum(epsilon=1.0) did not return within {TIMEOUT:g} s as its case was "
         "built (the scan's --listing-timeout); it was skipped")]


@dataclass(frozen=True)
class SetUpTool(ArrayTool):
    """An array tool built once per case from the library (as OpenDP's measurement): its setup hangs."""

    def setup_source(self, obj, settings):
        return "__import__('planted_bounds').hanging_calibration()"


def test_a_case_whose_call_hangs_as_it_is_built_is_skipped_naming_it(planted):
    # audit_case is what scan(..., in_process=True) runs, where no worker's hard kill reaches.
    import planted_bounds

    (case, *_), _ = build_cases([EntryPoint("planted_bounds", "noisy_sum", planted_bounds.noisy_sum, SetUpTool())],
                                (1.0,))
    started = time.perf_counter()
    outcome = audit_case(case, alpha=0.05, max_runs=100, timeout=TIMEOUT, seed=0)
    assert time.perf_counter() - started < HANG / 2
    assert outcome["status"] == "skipped" and outcome["reason"] == (
        f"hangs or exits: entry point planted_bounds.noisy_sum did not return within {TIMEOUT:g} s while its call was "
        "built (the family's preamble and setup) (the scan's --timeout)")


def test_a_module_slower_to_import_than_the_timeout_is_listed_within_the_listing_timeout(plant, monkeypatch):
    # The import sleeps 1 s, past a --timeout of TIMEOUT = 0.5 s: the listing is bounded by --listing-timeout (here its
    # default, max(--timeout, LISTING_TIMEOUT), LISTING_TIMEOUT lowered to 30 s: 30 × the sleep), not by --timeout.
    from audit.scan import running

    plant("slow_import", "import time\n\nimport numpy as np\n\ntime.sleep(1.0)\n\n\n"
          "def noisy_sum(array, epsilon=1.0, random_state=None):\n"
          "    return float(np.sum(array) + np.random.default_rng(random_state).laplace(scale=10.0 / epsilon))\n")
    monkeypatch.setattr(running, "LISTING_TIMEOUT", 30.0)
    assert running.listing_timeout_default(TIMEOUT) == 30.0
    result = scan("slow_import", epsilons=(1.0,), max_runs=20, timeout=TIMEOUT, in_process=True)
    assert result.settings["listing_timeout"] == 30.0
    # Listed: noisy_sum's case, left out of the split at 20 runs (no run made), never the module skipped.
    assert [row["what"] for row in result.skipped] == ["slow_import.noisy_sum(epsilon=1.0) / ends"]


def test_the_listing_timeout_is_checked_naming_its_argument(tmp_path, capsys):
    from audit.cli.main import main
    from estimators.validation import InputError

    with pytest.raises(InputError, match="argument 'listing_timeout' must be > 0"):
        scan("slow_import", listing_timeout=0)
    for value in ("0", "-1"):
        assert main(["scan", "slow_import", "--out", str(tmp_path / "report"), "--listing-timeout", value]) == 2
        assert f"argument '--listing-timeout' must be > 0, got {float(value)}" in capsys.readouterr().err


#: A module whose import, in a worker process (or everywhere, where the environment says so), blocks the alarm that
#: bounds it and sleeps: stuck where the listing's bound cannot interrupt it, as in compiled code (the scan's own
#: process, and its trial import's forked child, import it at once).
DEAF_IMPORT = '''
import multiprocessing
import os
import signal
import time

import numpy as np

if os.environ.get("DEAF_IMPORT") == "everywhere" or multiprocessing.parent_process() is not None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(3600)


def noisy_sum(array, epsilon=1.0, random_state=None):
    return float(np.sum(array) + np.random.default_rng(random_state).laplace(scale=10.0 / epsilon))
'''


def test_a_worker_listing_stuck_where_its_bound_cannot_reach_is_hard_killed_naming_the_module(tmp_path, plant,
                                                                                             monkeypatch):
    # The worker's listing as a backend runs it (its task's report, its hard kill), in a forked child: each call is
    # bounded by 4 × --listing-timeout = 1 s, which the import's blocked alarm cannot interrupt, and the worker ends
    # itself 1 s + the grace (0.5 s here) after the import started, its report naming the module and its hard kill due.
    import faulthandler
    import os

    from audit.scan import isolation
    from mechanisms.execution.backends import WorkerLost
    from mechanisms.execution.worker import lost_in, run_reporting

    plant("deaf_import", DEAF_IMPORT)
    monkeypatch.setenv("DEAF_IMPORT", "everywhere")
    monkeypatch.setattr(isolation, "HARD_KILL_GRACE", 0.5)
    monkeypatch.setattr(isolation, "_CASES", {})
    target, report = isolation.ScanTarget("scan", "deaf_import", (1.0,), 0.25), tmp_path / "report"
    # pytest's own faulthandler timeout (faulthandler_timeout), armed in this process, would leave a forked child's
    # faulthandler waiting on a watchdog thread it does not have; a spawned worker, the scan's, has none.
    faulthandler.cancel_dump_traceback_later()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the worker
        try:
            run_reporting(str(report), isolation.list_in_worker, target, None, True)
        finally:
            os._exit(0)
    while not os.waitpid(pid, os.WNOHANG)[0]:
        if time.monotonic() - started > HANG / 4:  # without the hard kill: the test fails, not hangs
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the worker's listing was not hard-killed")
        time.sleep(0.05)
    assert lost_in(str(report)) == ("module deaf_import", True)
    assert isolation._listing_stuck(target, WorkerLost("died", "module deaf_import", True)) == (
        "module deaf_import was still running 1.5 s after it started in a worker's listing of the cases (4 × "
        "--listing-timeout + 0.5 s), stuck where --listing-timeout cannot interrupt it: the worker process was killed")


@pytest.mark.integration
def test_a_scan_whose_worker_listing_is_stuck_skips_every_case_naming_the_module(tmp_path, plant, monkeypatch):
    # The scan's process lists the module at once; its worker (spawned: the import blocks there) is hard-killed at
    # 4 × 0.25 s + the grace (10 s) and every case is skipped with the reason, the report written, not hung.
    from mechanisms.execution.worker import HARD_KILL_GRACE

    plant("deaf_import", DEAF_IMPORT)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{__import__('os').environ.get('PYTHONPATH', '')}")
    started = time.perf_counter()
    state = tmp_path / "scan-state.jsonl"
    result = scan("deaf_import", epsilons=(1.0,), max_runs=3000, timeout=TIMEOUT, listing_timeout=0.25, workers=1,
                  state_file=state)
    assert time.perf_counter() - started < HANG / 2
    assert [(o["entry"], o["status"], o["reason"]) for o in result.outcomes] == [(
        "deaf_import.noisy_sum", "skipped",
        f"not audited, as no worker listed the cases: module deaf_import was still running {1 + HARD_KILL_GRACE:g} s after it started in a worker's listing of the "
        f"cases (4 × --listing-timeout + {HARD_KILL_GRACE:g} s), stuck where --listing-timeout cannot interrupt it: "
        "the worker process was killed")]
    # No run was made: resumed once the module imports in a worker, the case is audited, at the scan's α (K = 1).
    (tmp_path / "deaf_import.py").write_text(DEAF_IMPORT.replace("time.sleep(3600)", "pass"), encoding="utf-8")
    resumed = scan("deaf_import", epsilons=(1.0,), max_runs=3000, timeout=30, workers=1, state_file=state,
                   resume=True)  # the bounds are not the state's: generous ones here, for a loaded machine
    assert [(o["status"] in ("control", "finding"), o.get("alpha")) for o in resumed.outcomes] == [(True, 0.05)]
    assert (resumed.settings["resumed_cases"], resumed.settings["retried_cases"]) == (0, 1)


#: A module one of whose public names, as the scan reads it, blocks the alarm that bounds the reading and sleeps: stuck
#: in the scan's own process where its bound cannot interrupt it, as in compiled code.
DEAF_NAME = '''
import signal
import time

import numpy as np

__all__ = ["noisy_sum", "deaf_tool"]


def noisy_sum(array, epsilon=1.0, random_state=None):
    return float(np.sum(array) + np.random.default_rng(random_state).laplace(scale=10.0 / epsilon))


def __getattr__(name):
    if name == "deaf_tool":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(3600)
    raise AttributeError(name)
'''


@pytest.mark.integration
def test_a_python_scan_stuck_in_its_own_process_ends_with_exit_when_stuck_as_the_command_does(tmp_path):
    # Without exit_when_stuck the scan would wait the planted hour (as it did, before the option, from Python). With
    # it the watchdog the command line turns on ends the process 0.5 s (its grace, set small) past the 0.5 s bound,
    # naming the call: the subprocess ends at all, far inside the hour, with the line and exit status 1.
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "deaf_name.py").write_text(DEAF_NAME, encoding="utf-8")
    code = ("import mechanisms.calls.user_call as call, mechanisms.calls.watchdog as watchdog\n"
            "call.STUCK_GRACE = watchdog.STUCK_GRACE = 0.5\n"
            "from audit.scan.running import scan\n"
            "if __name__ == '__main__':\n"
            f"    scan({str(tmp_path / 'deaf_name.py')!r}, epsilons=(1.0,), max_runs=2000, listing_timeout=0.5,"
            " exit_when_stuck=True)\n"
            "    print('returned')\n")
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 1 and "returned" not in done.stdout, done.stderr[-2000:]
    assert ("miaudit: error: deaf_name.deaf_tool did not return within 0.5 s as the scan read it and its signature "
            "and ignored the interruption (it is stuck in compiled code, blocks SIGALRM, or catches every exception); "
            "the audit was stopped 0.5 s later") in done.stderr, done.stderr[-2000:]


def test_exit_when_stuck_holds_for_the_scan_alone_and_is_checked(monkeypatch):
    from audit.scan import running
    from estimators.validation import InputError
    from mechanisms.calls.watchdog import WATCHDOG

    seen = []

    def fake(target, **settings):
        seen.append(WATCHDOG.enabled)
        raise RuntimeError("planted")

    monkeypatch.setattr(running, "_scan", fake)
    monkeypatch.setattr(WATCHDOG, "enabled", False)
    for given in (True, False):
        with pytest.raises(RuntimeError, match="planted"):
            scan("planted", exit_when_stuck=given)
        assert WATCHDOG.enabled is False  # a library caller's process is ended only while its scan asks
    assert seen == [True, False]
    with pytest.raises(InputError, match="argument 'exit_when_stuck' must be True or False, got 'yes'"):
        scan("planted", exit_when_stuck="yes")
