"""``miaudit scan`` on worker processes and Ray tasks: a library call that crashes, hangs, prints, mutates a
global or allocates without bound costs its own case, never the scan, and the report does not depend on
how many workers ran it (:mod:`audit.scan.isolation`).

The planted module's entry points are tools on an array (the user-module profile): a count of the records
≥ 5 plus two-sided geometric noise of scale Δ/ε. On the scan's "ends" pair the count differs by exactly one,
so a tool calibrated to sensitivity Δ is exactly (1/Δ)·ε-DP there: the law of the noise shifted by one has
likelihood ratio p^(−1) = e^(ε/Δ) at every output, p = e^(−ε/Δ) (Ghosh, Roughgarden and Sundararajan 2009).
"""

from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import pytest

from audit.scan.running import scan

EPSILON = 1.0
MEMORY_LIMIT = 256 * 2**20

MODULE = '''
"""Entry points that misbehave, shaped as a user's tools on an array."""
import math
import os
import signal
import time

import numpy as np

__all__ = ["exact_count", "loose_count", "exits", "segfaults", "allocates", "hangs", "prints", "poisons",
           "scaled_count"]

SCALE = {"sensitivity": 1.0}


def _noise(epsilon, sensitivity, random_state):
    rng = np.random.default_rng(random_state)
    p = math.exp(-epsilon / sensitivity)
    return int(rng.geometric(1 - p)) - int(rng.geometric(1 - p))


def exact_count(array, epsilon=1.0, random_state=None):
    return float(np.sum(np.asarray(array) >= 5) + _noise(epsilon, 1.0, random_state))


def loose_count(array, epsilon=1.0, random_state=None):
    """BUG: calibrated to sensitivity 1/4; the count's is 1."""
    return float(np.sum(np.asarray(array) >= 5) + _noise(epsilon, 0.25, random_state))


def exits(array, epsilon=1.0, random_state=None):
    os._exit(3)


def segfaults(array, epsilon=1.0, random_state=None):
    os.kill(os.getpid(), signal.SIGSEGV)


def allocates(array, epsilon=1.0, random_state=None):
    blocks = []
    while True:
        blocks.append(np.empty(2**24))  # 128 MiB of address space a block, never touched: fails at once


def hangs(array, epsilon=1.0, random_state=None):
    while True:
        time.sleep(0.05)


def prints(array, epsilon=1.0, random_state=None):
    print("counting", len(array), "records")
    import sys
    print("logged", len(array), "records", file=sys.stderr)
    return exact_count(array, epsilon, random_state)


def poisons(array, epsilon=1.0, random_state=None):
    """Correct itself, but it leaves the module's sensitivity at 1/100 for whatever runs after it."""
    SCALE["sensitivity"] = 0.01
    return exact_count(array, epsilon, random_state)


def scaled_count(array, epsilon=1.0, random_state=None):
    """Correct while the module's sensitivity is left as it was loaded."""
    return float(np.sum(np.asarray(array) >= 5) + _noise(epsilon, SCALE["sensitivity"], random_state))
'''

#: The sensitivity each audited entry point calibrates its noise to (as loaded: poisons runs in its own process).
SENSITIVITY = {"exact_count": 1.0, "loose_count": 0.25, "prints": 1.0, "poisons": 1.0, "scaled_count": 1.0}


def exact_epsilon(outcome) -> float:
    """ε of count + two-sided geometric noise on the case's pair: |shift| · ε / Δ (module docstring)."""
    first, second = (np.asarray(outcome[k]) for k in ("first", "second"))
    shift = abs(int(np.sum(second >= 5)) - int(np.sum(first >= 5)))
    return shift * EPSILON / SENSITIVITY[outcome["name"]]


def comparable(outcomes) -> list:
    """The outcomes without the seconds each took (wall and CPU): everything else the report says of a case."""
    return [{k: v for k, v in outcome.items() if k not in ("seconds", "cpu_seconds")} for outcome in outcomes]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The planted module scanned on one worker (``scan``) and on two (``miaudit scan --workers 2``): the
    first scan's result and state file, the second's printed payload and report folder."""
    import contextlib
    import io

    from audit.cli.main import main

    folder = tmp_path_factory.mktemp("hostile")
    module = folder / "hostile_tools.py"
    module.write_text(textwrap.dedent(MODULE), encoding="utf-8")
    state = folder / "scan-state.jsonl"
    one = scan(str(module), epsilons=(EPSILON,), max_runs=2000, timeout=3, seed=7, state_file=state,
               memory_limit=MEMORY_LIMIT)
    out, printed = folder / "two-workers", io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(["scan", str(module), "--epsilons", "1", "--max-runs", "2000", "--timeout", "3", "--seed", "7",
                       "--out", str(out), "--json", "--workers", "2", "--memory-limit", "256M", "--alpha", "0.05",
                       "--backend", "local"])
    assert status == 0
    return (one, state), (json.loads(printed.getvalue()), out)


def state_outcomes(state) -> list:
    """The outcomes a state file holds, in the order of the cases its first line lists."""
    header, *lines = state.read_text(encoding="utf-8").splitlines()
    outcomes = {outcome["id"]: outcome for outcome in map(json.loads, lines)}
    assert len(outcomes) == len(lines)  # each case once
    return [outcomes[case] for case in json.loads(header)["cases"]]


@pytest.mark.integration
def test_each_hostile_entry_point_costs_its_own_case_and_the_scan_goes_on(hostile):
    (result, state), _ = hostile
    by_name = {o["name"]: o for o in result.outcomes}
    assert result.cases == len(by_name) == 9
    reasons = {name: by_name[name].get("reason", "") for name in ("exits", "segfaults", "allocates", "hangs")}
    assert all(by_name[name]["status"] == "skipped" for name in reasons)
    assert reasons["exits"] == ("hangs or exits: entry point hostile_tools.exits called os._exit(3) on the first "
                                "database; user code must return its output or raise an exception")
    assert reasons["segfaults"] == ("the interpreter exited with signal 11 (SIGSEGV) while running "
                                    "hostile_tools.segfaults")
    assert "MemoryError" in reasons["allocates"]
    assert "did not return within 3 s" in reasons["hangs"]
    audited = {name: o for name, o in by_name.items() if name in SENSITIVITY}
    assert {name for name, o in audited.items() if o["status"] == "finding"} == {"loose_count"}
    for name, outcome in audited.items():
        true = exact_epsilon(outcome)
        if outcome["status"] == "finding":
            assert true > EPSILON and outcome["epsilon_lower_bound"] <= true, (name, true)
        else:
            assert outcome["status"] == "control" and true <= EPSILON + 1e-12, (name, true)
    assert any(note.startswith("prints to stdout (captured): 'counting ") for note in by_name["prints"]["notes"])
    # Its stderr, past that capture, is counted by the audit's runner (mechanisms.calls.printed) and noted on the case.
    [logged] = [note for note in by_name["prints"]["notes"] if " printed " in note]
    assert "while the audit ran it" in logged and "'logged 3 records'" in logged
    # the scan's process alone wrote the state file: its header, then each case once
    assert [o["id"] for o in state_outcomes(state)] == [o["id"] for o in result.outcomes]


@pytest.mark.integration
def test_the_report_is_the_same_for_one_and_two_workers(hostile):
    (one, state), (payload, out) = hostile
    assert comparable(one.outcomes) == comparable(state_outcomes(state)) == comparable(
        state_outcomes(out / "scan-state.jsonl"))
    assert (payload["cases"], payload["findings"], payload["skipped"]) == (9, 1, 4)
    assert payload["statement"] == one.statement()  # --alpha 0.05 given once: accepted, the same split
    report = json.loads((out / "scan.json").read_text(encoding="utf-8"))
    assert report["settings"] == one.settings
    assert "signal 11 (SIGSEGV)" in (out / "scan.md").read_text(encoding="utf-8")


@pytest.mark.integration
def test_a_global_one_case_changes_does_not_reach_the_next_in_process_it_does(plant):
    """Run alone in this process, poisons leaves the sensitivity at 1/100 for scaled_count, which is then
    exactly 100·ε-DP on its pair: the isolated scan keeps it a control, the in-process one refutes it."""
    import sys

    module = plant("poisoned_tools", textwrap.dedent(MODULE).replace(
        '__all__ = ["exact_count", "loose_count", "exits", "segfaults", "allocates", "hangs", "prints", "poisons",\n'
        '           "scaled_count"]', '__all__ = ["poisons", "scaled_count"]'), on_path=False)
    try:
        isolated = scan(str(module), epsilons=(EPSILON,), max_runs=2000, timeout=10, seed=7)
        together = scan(str(module), epsilons=(EPSILON,), max_runs=2000, timeout=10, seed=7, in_process=True)
    finally:
        sys.modules.pop("poisoned_tools", None)
    assert [o["status"] for o in isolated.outcomes] == ["control", "control"]
    assert [o["status"] for o in together.outcomes] == ["control", "finding"]


def test_the_scan_command_refuses_bad_execution_flags_before_any_case(tmp_path, plant, capsys):
    from audit.cli.main import main

    module = plant("one_tool", MODULE, on_path=False)
    out = tmp_path / "report"
    for flag, value in (("--memory-limit", "lots"), ("--workers", "0"), ("--backend", "spark")):
        assert main(["scan", str(module), "--out", str(out), flag, value]) == 2
        assert flag in capsys.readouterr().err
    assert main(["scan", str(module), "--out", str(out), "--in-process", "--workers", "2"]) == 2
    assert "--in-process" in capsys.readouterr().err
    assert main(["scan", str(module), "--out", str(out), "--in-process", "--memory-limit", "1G"]) == 2
    assert "--memory-limit" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.ray
def test_ray_tasks_give_the_same_outcomes_and_a_crash_costs_its_case(plant):
    pytest.importorskip("ray")
    killer = textwrap.dedent(WORKER_KILLERS).split("def kills_worker")[1].split("\n\n\n")[0]
    module = plant("ray_tools", textwrap.dedent(MODULE).replace(
        '__all__ = ["exact_count", "loose_count", "exits", "segfaults", "allocates", "hangs", "prints", "poisons",\n'
        '           "scaled_count"]', '__all__ = ["exact_count", "loose_count", "segfaults", "kills_worker"]')
        + "\n\ndef kills_worker" + killer + "\n", on_path=False)
    options = {"epsilons": (EPSILON,), "max_runs": 2000, "timeout": 10, "seed": 7, "memory_limit": MEMORY_LIMIT}
    on_ray = scan(str(module), backend="ray", workers=2, **options)
    local = scan(str(module), **options)
    assert comparable(on_ray.outcomes)[:3] == comparable(local.outcomes)[:3]
    assert [o["status"] for o in on_ray.outcomes] == ["control", "finding", "skipped", "skipped"]
    assert "signal 11 (SIGSEGV) while running ray_tools.segfaults" in on_ray.outcomes[2]["reason"]
    # the Ray worker itself killed: Ray's WorkerCrashedError costs that case only
    assert on_ray.outcomes[3]["reason"].startswith("the worker process died while running ray_tools.kills_worker")
    assert "WorkerCrashedError" in on_ray.outcomes[3]["reason"]


#: What the two modules of misbehaving calls below share: the count they noise, one too slow, one deaf.
COUNTS = '''
import math
import os
import signal
import time

import numpy as np


def _count(array, epsilon, random_state):
    rng = np.random.default_rng(random_state)
    p = math.exp(-epsilon)
    return float(np.sum(np.asarray(array) >= 5) + int(rng.geometric(1 - p)) - int(rng.geometric(1 - p)))


def slower_count(array, epsilon=1.0, random_state=None):
    """10 ms a call: too slow for a look within 10 × a --timeout of 0.1 s."""
    time.sleep(0.01)
    return _count(array, epsilon, random_state)


def deaf(array, epsilon=1.0, random_state=None):
    """Blocks the alarm that bounds a call, then sleeps: --timeout cannot interrupt it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(3600)
'''

WORKER_KILLERS = COUNTS + '''

def kills_worker(array, epsilon=1.0, random_state=None):
    """Kills the process it runs in and the worker that forked it."""
    os.kill(os.getppid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def geometric_count(array, epsilon=1.0, random_state=None):
    return _count(array, epsilon, random_state)
'''


@pytest.mark.integration
def test_a_call_deaf_to_the_timeout_or_that_kills_its_worker_costs_its_case(plant):
    module = plant("worker_killers", WORKER_KILLERS, on_path=False)
    result = scan(str(module), epsilons=(EPSILON,), max_runs=2000, timeout=1, seed=7, workers=2)
    by_name = {o["name"]: o for o in result.outcomes}
    # kills_worker breaks the pool of two under deaf (or geometric_count): each case in flight then runs
    # again alone, and only the one that kills its worker is blamed
    assert by_name["geometric_count"]["status"] == "control"
    assert by_name["deaf"]["reason"] == ("still running 14 s after it started (4 × --timeout + 10 s), stuck where "
                                         "--timeout cannot interrupt it: its process was killed while running "
                                         "worker_killers.deaf")
    assert by_name["kills_worker"]["reason"].startswith("the worker process died while running "
                                                        "worker_killers.kills_worker")


@pytest.mark.integration
def test_a_script_that_scans_without_a_main_guard_is_told_so(tmp_path, plant):
    """Each worker process imports the script that started it (``spawn``): unguarded, the script would scan again
    there, and every case was listed as skipped for a dead worker; the scan now stops with what to do."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    module = plant("one_tool", textwrap.dedent(MODULE).replace(
        '__all__ = ["exact_count", "loose_count", "exits", "segfaults", "allocates", "hangs", "prints", "poisons",\n'
        '           "scaled_count"]', '__all__ = ["exact_count"]'), on_path=False)
    script = tmp_path / "unguarded.py"
    script.write_text(f"from audit.scan import scan\n\nscan({str(module)!r}, epsilons=(1.0,), max_runs=2000)\n",
                      encoding="utf-8")
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": root})
    assert done.returncode != 0
    assert ("the scan's worker process ended before it could run any case" in done.stderr
            and 'under `if __name__ == "__main__":`' in done.stderr), done.stderr[-2000:]


SLOW_OR_STUCK = COUNTS + '''
CALLS = [0]


def slow_count(array, epsilon=1.0, random_state=None):
    """3 ms a call: slow, and legitimate."""
    time.sleep(0.003)
    return _count(array, epsilon, random_state)


LEFT = []


def leaves_a_process(array, epsilon=1.0, random_state=None):
    """On its first call, starts a process that outlives the case holding what it inherited (as a pool of forked
    processes never closed does), its id written to $LEFT_PROCESS for the test to end it."""
    if not LEFT:
        LEFT.append(os.fork())
        if LEFT[0] == 0:
            time.sleep(3600)
            os._exit(0)
        with open(os.environ["LEFT_PROCESS"], "w") as handle:
            handle.write(str(LEFT[0]))
    return _count(array, epsilon, random_state)


def deaf_after_probe(array, epsilon=1.0, random_state=None):
    """Answers its probe's two calls, then is deaf as ``deaf`` on its first call of the audit."""
    CALLS[0] += 1
    if CALLS[0] > 2:
        deaf(array)
    return _count(array, epsilon, random_state)
'''

#: The timeout, runs and grace of the hard-kill tests: 1,300 runs, the fewest a look refutes with at α = 0.05.
TIMEOUT, RUNS, GRACE = 0.8, 1300, 0.5


def _run_alone(plant, monkeypatch, name, timeout=TIMEOUT):
    """(outcome, seconds) of the case ``name`` of SLOW_OR_STUCK run as a scan's worker runs it (a forked child, its
    hard kill's grace shortened to GRACE)."""
    import importlib
    import time

    from audit.scan import isolation
    from audit.scan.case_audit import list_cases, source_of

    module = plant("slow_or_stuck", SLOW_OR_STUCK, on_path=False)
    for warm in isolation.WARM_MODULES:  # as a worker does before its first case (not its gc.freeze, in pytest)
        importlib.import_module(warm)
    monkeypatch.setattr(isolation, "_warm", lambda: None)
    monkeypatch.setattr(isolation, "HARD_KILL_GRACE", GRACE)
    case = next(c for c in list_cases(str(module), (EPSILON,))[1] if c.entry.name == name)
    task = isolation.CaseTask(0, case.id, 0.05, RUNS, timeout, 7, None)
    started = time.monotonic()
    outcome = isolation.run_case(isolation.ScanTarget("scan", source_of(str(module)), (EPSILON,)), task)
    return outcome, time.monotonic() - started


@pytest.mark.integration
def test_a_case_of_slow_calls_that_its_own_bounds_allow_is_audited_not_killed(plant, monkeypatch):
    """1,300 calls of 3 ms: 3.9 s of calls, past 4 × --timeout + grace = 3.7 s (the hard kill's first limit), within
    each chunk's bound (256 calls, 0.8 s, of the 10 × 0.8 s = 8 s a chunk may take) and the hard kill's limit after
    the probe (twice the looks' 8 s bound + 0.8 s): the case is audited, all its runs made."""
    from audit.gating import sequential as gating

    # The hard kill alone is tested here: on a loaded machine the looks' own time rule (audit.gating.look_time, the
    # next test) may stop the audit before its last look, so the looks run without it in this (forked) case.
    sequential = gating.run_sequential_audit
    monkeypatch.setattr(gating, "run_sequential_audit",
                        lambda *args, time_limit=None, **kwargs: sequential(*args, time_limit=None, **kwargs))
    outcome, seconds = _run_alone(plant, monkeypatch, "slow_count")
    assert outcome["status"] == "control", outcome.get("reason")
    assert seconds > 0.003 * RUNS > 4 * TIMEOUT + GRACE
    assert outcome["runs"] == RUNS


def test_a_case_whose_first_look_cannot_end_within_its_looks_bound_is_skipped_before_it(plant, monkeypatch):
    """Calls of 10 ms, --timeout 0.1 s: the looks' bound is 10 × 0.1 s = 1 s (4 × 10 ms × 1,300 runs = 52 s held
    there). Before its first look the case has spent at least the float-bit probe's 64 calls (0.64 s), and that look
    plans about a hundred runs more (1 s at the probe's faster call): it would end past 1 s, so no look runs
    (audit.gating.look_time) and the case is skipped as too slow, not killed. The chunks' own bound (also 1 s) is
    raised to 30 s here: on a loaded machine the probe's 64 calls alone may pass 1 s, and this tests the looks' rule."""
    from audit.scan import case_audit
    from audit.scan.case_audit import audit_case, list_cases

    with_timeout = case_audit._with_timeout
    monkeypatch.setattr(case_audit, "_with_timeout", lambda spec, timeout, settings: with_timeout(spec, 30.0, settings))
    module = plant("slow_or_stuck", SLOW_OR_STUCK, on_path=False)
    case = next(c for c in list_cases(str(module), (EPSILON,))[1] if c.entry.name == "slower_count")
    outcome = audit_case(case, alpha=0.05, max_runs=RUNS, timeout=0.1, seed=7)
    assert outcome["status"] == "skipped"
    assert re.fullmatch(r"too slow to audit: its first look would end \S+ s after its audit started \(its probe's "
                        r"faster call took \S+ s; timed again, \S+ s\), past the 1 s its looks may take at --timeout "
                        r"0.1", outcome["reason"])
    assert outcome["retry_on_resume"] is True  # no look ran: a resumed scan audits it again


def test_a_case_whose_probe_calls_met_a_busy_moment_is_timed_again_and_audited(plant, monkeypatch):
    """The probe's two calls take 50 ms each (a busy moment), the later calls microseconds: at 50 ms a call the first
    look (hundreds of runs) would end past the looks' 1 s bound at --timeout 0.1, so the case's call is timed again,
    the fastest of those calls is far below half the probe's faster call, and the audit starts again at that rate:
    audited, not skipped. The chunks' own bound is raised to 30 s as in the test above (a loaded machine)."""
    from audit.scan import case_audit
    from audit.scan.case_audit import audit_case, list_cases

    with_timeout = case_audit._with_timeout
    monkeypatch.setattr(case_audit, "_with_timeout", lambda spec, timeout, settings: with_timeout(spec, 30.0, settings))
    module = plant("slow_probe", COUNTS + SLOW_PROBE, on_path=False)
    case = next(c for c in list_cases(str(module), (EPSILON,))[1] if c.entry.name == "slow_first_calls_count")
    outcome = audit_case(case, alpha=0.05, max_runs=RUNS, timeout=0.1, seed=7)
    assert outcome["status"] in ("control", "finding"), outcome.get("reason")
    assert outcome["runs"] > 0
    # Every call is counted: beyond its runs, the probe's 2, at least one timing it again and the runner's probe of the
    # audit started again (2), within the stated bound.
    assert case.entry.obj.__globals__["CALLS"][0] == outcome["runs"] + outcome["probe_calls"]
    assert 2 + 1 + 2 <= outcome["probe_calls"] <= case_audit.probe_calls_bound(), outcome["probe_calls"]


SLOW_PROBE = '''
CALLS = [0]


def slow_first_calls_count(array, epsilon=1.0, random_state=None):
    """50 ms on each of its first two calls (the probe's), then as fast as _count."""
    CALLS[0] += 1
    if CALLS[0] <= 2:
        time.sleep(0.05)
    return _count(array, epsilon, random_state)
'''


@pytest.mark.integration
def test_a_case_that_leaves_a_process_holding_its_pipe_is_not_taken_for_stuck(tmp_path, plant, monkeypatch):
    """The case's process ends with its outcome written, but a process it started holds its pipe open: the worker takes
    the outcome once the case's process has ended (it waited for the pipe to close, past the case's hard limit, then
    killed it as stuck, its outcome lost), and kills that process with the case's group."""
    import os
    import signal

    from test_scan_leftovers import ended

    left = tmp_path / "left-process"
    monkeypatch.setenv("LEFT_PROCESS", str(left))
    try:
        outcome, _ = _run_alone(plant, monkeypatch, "leaves_a_process", timeout=5.0)
        # The process it left is in the case's group, killed as the case ended (audit.scan.processes).
        assert ended(int(left.read_text())), "the process the case left ran on past it"
    finally:
        if left.exists():
            try:
                os.kill(int(left.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert outcome["status"] in ("control", "finding"), outcome.get("reason")


@pytest.mark.integration
@pytest.mark.parametrize("name", ["deaf", "deaf_after_probe"])
def test_a_case_stuck_where_the_timeout_cannot_reach_is_still_killed_within_its_bound(plant, monkeypatch, name):
    """Stuck in its probe: killed at 4 × --timeout + grace. Stuck in its first chunk, after a probe of fast calls:
    killed once its probe ended + what its bounds allow + grace, within 25 × --timeout + 2 × grace of its start
    (isolation's stated bound: the first limit, then twice 10 × --timeout and one --timeout)."""
    outcome, seconds = _run_alone(plant, monkeypatch, name)
    assert outcome["status"] == "skipped"
    assert outcome["reason"].endswith(f"stuck where --timeout cannot interrupt it: its process was killed while "
                                      f"running slow_or_stuck.{name}")
    first = 4 * TIMEOUT + GRACE
    most = 25 * TIMEOUT + 2 * GRACE  # 21 s
    assert first <= seconds <= most + 1.0  # + the fork and the wait for the killed process
    # Killed in its probe, it made no run of its audit (a resumed scan audits it again); killed in a chunk, it has.
    assert outcome.get("retry_on_resume", False) is (name == "deaf")
    if name == "deaf":
        assert outcome["reason"].startswith(f"still running {first:g} s after it started (4 × --timeout + 0.5 s)")
    else:
        assert "its own bounds allow" in outcome["reason"] or "(4 × --timeout + 0.5 s)" in outcome["reason"]
