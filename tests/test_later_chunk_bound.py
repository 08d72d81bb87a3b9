"""Without --timeout, every chunk after the probe is bounded by a multiple of the probe's measured calls
(mechanisms.execution.chunks.bounded_by_first_calls, mechanisms.calls.later_bound): a mechanism that stops
returning after its first calls is reported, never waited on for ever; with --timeout nothing changes.

No test depends on a real-time margin: the bound's floor is monkeypatched to half a second, and a chunk that
outlives it for any reason (the hang, or a loaded machine) ends the run with the same one-line error."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from mechanisms.errors import MechanismError
from mechanisms.calls import later_bound
from mechanisms.execution import runner as runner_module
from mechanisms.execution.chunks import ChunkTask, bounded_by_first_calls
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner

FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
import execution_mechanisms as fx  # noqa: E402

SOURCE = str(FIXTURES / "execution_mechanisms.py")


def _sample(name, dbs, seed=0, **settings):
    with MechanismRunner(getattr(fx, name), name, ExecutionSettings(**settings), source=f"{SOURCE}:{name}") as r:
        return r.sample(dbs, np.random.default_rng(seed))


def _databases(m):
    return np.random.default_rng(3).integers(0, 2, size=(m, 3, 1)).astype(float)


def _task(size, timeout=None):
    return ChunkTask(7, 0, 0, None, size, timeout)


def test_the_bound_is_the_slack_times_the_probes_call_times_the_chunks_calls_at_least_the_floor():
    # 50 × 0.01 s × 256 calls = 128 s (> the 60 s floor); 50 × 0.001 s × 256 = 12.8 s, so the floor, 60 s.
    assert bounded_by_first_calls(_task(256), 0.01).timeout == pytest.approx(50 * 0.01 * 256)
    assert bounded_by_first_calls(_task(256), 0.001).timeout == 60.0
    # The interval timer holds at most 1e7 s: 50 × 1,000 s × 4,096 calls is cut there.
    assert bounded_by_first_calls(_task(4096), 1000.0).timeout == 1e7
    hint = bounded_by_first_calls(_task(256), 0.01).timeout_hint
    assert "no --timeout was given" in hint and "50 × its first calls' time" in hint and "set --timeout" in hint


def test_an_explicit_timeout_or_an_unprobed_task_is_left_as_it_is():
    for task, seconds in ((_task(256, timeout=5.0), 0.01), (_task(256), None)):
        assert bounded_by_first_calls(task, seconds) is task


def _one_line_error(excinfo, name):
    text = str(excinfo.value)
    assert "\n" not in text
    # At least the 0.5 s floor, more where the probe was slow (a loaded machine): the number is not asserted.
    assert re.match(rf"mechanism '{name}' did not return within [0-9.e+-]+ s", text), text
    assert "no --timeout was given, so miaudit bounds each chunk at 50 × its first calls' time" in text
    assert "if it is slow rather than stuck, set --timeout" in text


@pytest.mark.integration
def test_a_mechanism_hanging_after_its_first_calls_is_stopped_in_process(monkeypatch):
    monkeypatch.setattr(fx.hangs_from_fourth_call, "calls", 0)
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 0.5)
    with pytest.raises(MechanismError) as excinfo:
        _sample("hangs_from_fourth_call", _databases(8), chunk_size=2, retries=0)
    _one_line_error(excinfo, "hangs_from_fourth_call")


@pytest.mark.integration
def test_a_mechanism_hanging_after_its_first_calls_is_stopped_on_worker_processes(monkeypatch):
    # 2 probe calls and 20 chunks on 2 workers: one worker makes at least 11 calls, so reaches its 4th.
    monkeypatch.setattr(fx.hangs_from_fourth_call, "calls", 0)
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 0.5)
    with pytest.raises(MechanismError) as excinfo:
        _sample("hangs_from_fourth_call", _databases(40), chunk_size=2, retries=0, workers=2)
    _one_line_error(excinfo, "hangs_from_fourth_call")


@pytest.mark.integration
def test_an_explicit_timeout_keeps_its_own_words(monkeypatch):
    monkeypatch.setattr(fx.hangs_from_fourth_call, "calls", 0)
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 1e6)  # would never fire: --timeout bounds the chunk
    with pytest.raises(MechanismError, match=r"did not return within 0\.5 s on a batch of 2 databases \(--timeout\)") \
            as excinfo:
        _sample("hangs_from_fourth_call", _databases(8), chunk_size=2, retries=0, timeout=0.5)
    assert "no --timeout was given" not in str(excinfo.value)


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.integration)])
def test_a_mechanism_without_a_hang_gives_the_same_samples_bounded_or_not(monkeypatch, workers):
    dbs = _databases(40)
    bounds = []

    def recorded(task, first_seconds):
        bounded = bounded_by_first_calls(task, first_seconds)
        bounds.append(bounded.timeout)
        return bounded

    monkeypatch.setattr(runner_module, "bounded_by_first_calls", recorded)
    bounded = _sample("summing", dbs, seed=11, chunk_size=8, workers=workers)
    assert len(bounds) == 5 and all(bound >= 60.0 for bound in bounds)  # every chunk had its bound
    monkeypatch.setattr(runner_module, "bounded_by_first_calls", lambda task, first_seconds: task)  # as before
    unbounded = _sample("summing", dbs, seed=11, chunk_size=8, workers=workers)
    assert np.array_equal(bounded, unbounded)


@pytest.mark.parametrize("bounded", [True, False])
def test_a_worker_stopped_stuck_past_the_default_bound_says_what_set_it(bounded):
    # The hard kill of a call stuck in compiled code (WorkerLost.stuck) names the bound that fired: the default
    # bound's words where no --timeout was given, the words of before where one was.
    from mechanisms.execution.backends import WorkerLost

    task = bounded_by_first_calls(_task(256), 0.01) if bounded else _task(256, timeout=128.0)
    with MechanismRunner(fx.summing, "f") as runner:
        text = str(runner._final_error(task, WorkerLost("lost", stuck=True), 1, "database"))
    assert text.startswith("mechanism 'f' did not return within 128 s on databases 0-255 and ignored the interruption")
    assert ("no --timeout was given, so miaudit bounds each chunk at 50 × its first calls' time" in text) == bounded
    assert text.endswith("s later" if not bounded else "set --timeout")
