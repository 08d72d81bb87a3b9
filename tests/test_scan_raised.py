"""A raise as one of a case's outputs (audit.scan.raised), on the planted entry points of tests/planted_lib/_raising.py:
a family that opts in audits the exception's category with the value; one that does not is built as before."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from audit.scan.case_audit import audit_case
from audit.scan.cases import EntryPoint, build_cases
from audit.scan.profiles.base import ArrayTool
from audit.scan.raised import ALWAYS_CALLS, PREAMBLE, is_raised
from audit.scan.report import finding_files

TESTS = Path(__file__).resolve().parent
ALPHA, RUNS = 0.05, 2000


@dataclass(frozen=True)
class RaisingTool(ArrayTool):
    """The user profile's array tool, opted in at every grid point."""

    def raises_as_output(self, obj, settings):
        return True


@pytest.fixture(scope="module")
def raising():
    sys.path.insert(0, str(TESTS))
    try:
        import planted_lib._raising as module
        yield module
    finally:
        sys.path.remove(str(TESTS))


def _case(module, name, family):
    cases, unbuilt = build_cases([EntryPoint(module.__name__, name, getattr(module, name), family)], (1.0,))
    assert not unbuilt and [c.pair.family for c in cases] == ["ends"]  # record 0 at 0 vs 10 of three records at 0
    return cases[0]


def test_the_released_helper_turns_a_raise_into_its_category():
    namespace = {}
    exec(PREAMBLE, namespace)  # noqa: S102
    assert namespace["released"](lambda: 3.5) == 3.5
    def fails():
        raise KeyError  # no message: the category ends with the type

    category = namespace["released"](lambda: np.array([1, 2]).reshape(3))
    assert category == "raised: ValueError: cannot reshape array of size 2 into shape (3,)" and is_raised(category)
    assert namespace["released"](fails) == "raised: KeyError: "


def test_without_the_opt_in_a_case_is_built_as_before(raising):
    case = _case(raising, "raises_with_data", ArrayTool())
    assert not case.raised_as_output and case.source == "entry(db[:, 0], epsilon=1.0, random_state=int(rng.integers(2**31)))"
    assert _case(raising, "raises_with_data", RaisingTool()).source == f"released(lambda: {case.source})"


def test_a_raise_whose_probability_depends_on_the_data_is_a_finding(raising, tmp_path, capsys):
    # P(raise) is 0.05 with record 0 at 0 and 0.5 at 10: the event "raised" has ε = ln(0.5/0.05) = ln 10 ≈ 2.30 > 1.
    # At the expected counts of half the runs per database (50 and 500 of 1000), the one-sided 97.5% Clopper-Pearson
    # bounds (Clopper and Pearson 1934) give ln(p_high⁻ / p_low⁺) well above the claim's 1: the audit's power is ≈ 1.
    from scipy.stats import beta

    n = RUNS // 2
    low_upper = beta.ppf(1 - ALPHA / 4, 0.05 * n + 1, n - 0.05 * n)
    high_lower = beta.ppf(ALPHA / 4, 0.5 * n, n - 0.5 * n + 1)
    assert math.log(high_lower / low_upper) > 1.5
    outcome = audit_case(_case(raising, "raises_with_data", RaisingTool()), alpha=ALPHA, max_runs=RUNS, timeout=30,
                         seed=5)
    assert outcome["status"] == "finding", outcome
    (k1, k2), (n1, n2) = outcome["raises"]["raised"], outcome["raises"]["calls"]
    assert abs(k1 - 0.05 * n1) < 5 * math.sqrt(n1 * 0.05 * 0.95) and abs(k2 - 0.5 * n2) < 5 * math.sqrt(n2 * 0.25)
    assert outcome["raises"]["categories"][1] == {"raised: ValueError: unlucky draw": k2}  # the first line only
    assert any(note.startswith("the event is the exception") and f"{k1} of {n1}" in note for note in outcome["notes"])
    files = finding_files(outcome, SimpleNamespace(target="planted_lib._raising", version="planted"))
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    exec(compile(files["reproduce.py"], str(tmp_path / "reproduce.py"), "exec"),  # noqa: S102
         {"__file__": str(tmp_path / "reproduce.py"), "__name__": "__main__"})
    printed = capsys.readouterr().out
    assert "the call raised on" in printed and "of 20000 runs on the second database" in printed


def test_a_raise_as_likely_on_both_databases_is_no_finding(raising):
    # P(raise) = 0.2 on both: the release's distribution is the same on both databases (exactly 0-DP), so a finding
    # would be a false one, at most α = 0.05 over the seeds; at seed 5 there is none.
    outcome = audit_case(_case(raising, "raises_evenly", RaisingTool()), alpha=ALPHA, max_runs=RUNS, timeout=30, seed=5)
    assert outcome["status"] == "control", outcome
    (k1, k2), (n1, n2) = outcome["raises"]["raised"], outcome["raises"]["calls"]
    for k, n in ((k1, n1), (k2, n2)):
        assert abs(k - 0.2 * n) < 5 * math.sqrt(n * 0.2 * 0.8)
    assert any(note.startswith("the call's exception is one of its outputs") for note in outcome["notes"])


def test_a_raise_on_every_call_is_a_skipped_case_not_a_finding(raising):
    outcome = audit_case(_case(raising, "always_raises", RaisingTool()), alpha=ALPHA, max_runs=RUNS, timeout=30, seed=5)
    assert outcome["status"] == "skipped"
    assert outcome["reason"] == (f"the call raised on each of {ALWAYS_CALLS} calls on each database (a raise on every "
                                 "call is no random output): RuntimeError: never works")
    # Without the opt-in the probe's first raise skips it, as before.
    plain = audit_case(_case(raising, "always_raises", ArrayTool()), alpha=ALPHA, max_runs=RUNS, timeout=30, seed=5)
    assert plain["status"] == "skipped" and "the call raised RuntimeError on the first database" in plain["reason"]


def test_a_call_that_hangs_after_raising_is_skipped_within_its_bound(raising):
    # The probe's two calls raise, the every-call check's third raises too, and the fifth call sleeps 600 s: the
    # check is bounded as a chunk of its calls (at 1 s per call, at most CHUNK_TIMEOUT_FACTOR × 1 s), so the case
    # is skipped as one that hangs, in seconds rather than ten minutes.
    from audit.scan.case_audit import CHUNK_TIMEOUT_FACTOR

    raising._calls[0] = 0
    started = time.perf_counter()
    outcome = audit_case(_case(raising, "raises_then_hangs", RaisingTool()), alpha=ALPHA, max_runs=RUNS, timeout=1,
                         seed=5)
    assert outcome["status"] == "skipped"
    assert outcome["reason"].startswith("hangs or exits:") and "raises on every call" in outcome["reason"]
    assert raising._calls[0] == raising.RAISES_BEFORE_HANG + 1
    assert time.perf_counter() - started < raising.HANG_SECONDS / 2 and CHUNK_TIMEOUT_FACTOR < raising.HANG_SECONDS / 2


@pytest.mark.integration
def test_a_slow_case_that_raises_on_every_call_is_skipped_as_one_not_killed_as_stuck(raising, monkeypatch):
    # Calls of SLOW_CALL = 30 ms that always raise, --timeout 0.3 s, the hard kill's grace 0.5 s: the worker's first
    # limit is 4 × 0.3 + 0.5 = 1.7 s after the case's process started, and the every-call check's 100 calls take at
    # least 3 s, within their own bound (4 × the probe's slower call, ≥ 30 ms, × 100 calls ≥ 12 s; its cap of
    # CHUNK_TIMEOUT_FACTOR × --timeout raised to 30 s here). The case tells the worker its bounds, the check's
    # included, before the check starts: it is skipped as raising on every call, not killed at 1.7 s as stuck.
    import importlib

    from audit.scan import case_audit, isolation

    timeout = 0.3
    monkeypatch.setattr(case_audit, "CHUNK_TIMEOUT_FACTOR", 100.0)
    monkeypatch.setattr(isolation, "HARD_KILL_GRACE", 0.5)
    assert ALWAYS_CALLS * 2 * raising.SLOW_CALL > isolation.HARD_LIMIT_TIMEOUTS * timeout + 0.5
    case = _case(raising, "raises_slowly", RaisingTool())
    monkeypatch.setattr(isolation, "_case", lambda target, task: case)
    monkeypatch.setattr(isolation, "_CASES", {})  # the worker's listing, here in pytest's process
    for warm in isolation.WARM_MODULES:  # as a worker does before it forks its first case (not its gc.freeze)
        importlib.import_module(warm)
    monkeypatch.setattr(isolation, "_warm", lambda: None)
    task = isolation.CaseTask(0, case.id, ALPHA, RUNS, timeout, 5, None)
    outcome = isolation.run_case(isolation.ScanTarget("scan", "planted_lib._raising", (1.0,)), task)
    assert outcome["status"] == "skipped"
    assert outcome["reason"] == (f"the call raised on each of {ALWAYS_CALLS} calls on each database (a raise on every "
                                 "call is no random output): RuntimeError: slow, and never works")
    assert outcome["seconds"] >= ALWAYS_CALLS * 2 * raising.SLOW_CALL
