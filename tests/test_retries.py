"""Which failed attempts at a chunk the runner runs again (mechanisms.execution.attempts.run_tasks): a transient
failure is retried and the chunk succeeds; a refusal is never retried; a failure that repeats the attempt before it
ends the retries; a repeated timeout spends an attempt left naming the database it hangs on. The calls are counted on
the mechanism itself (a line a call in a counter file), the expected counts written out from the chunks."""

import pickle
import sys
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from mechanisms.errors import MechanismError
from mechanisms.execution.attempts import WorkerLost, failure_words, run_tasks
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner

FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
import execution_mechanisms as fx  # noqa: E402

SOURCE = str(FIXTURES / "execution_mechanisms.py")


def numbered(m, n=3):
    """Databases whose first entry is their index, so a fixture can fail on one of them."""
    dbs = np.zeros((m, n, 1))
    dbs[:, 0, 0] = np.arange(m)
    return dbs


@pytest.fixture
def counter(tmp_path, monkeypatch):
    """The calls the mechanism made, one "first-last" line a call (fx._count_call); a marker for the flaky ones."""
    path = tmp_path / "calls"
    monkeypatch.setenv("MIAUDIT_TEST_COUNTER", str(path))
    monkeypatch.setenv("MIAUDIT_TEST_MARKER", str(tmp_path / "marker"))
    return lambda: path.read_text().split() if path.exists() else []


def _run(name, m, **settings):
    with MechanismRunner(getattr(fx, name), name, ExecutionSettings(**settings), source=f"{SOURCE}:{name}") as runner:
        try:
            return runner.sample(numbered(m), np.random.default_rng(0), what="audit sample"), runner
        except MechanismError as exc:
            return exc, runner


# The calls every run below makes before the chunk that fails: the probe's two on database 0, then one a chunk of 64
# before the chunk of databases 256-319 (in process, the chunks run in order and the first given up stops the job).
BEFORE = ["0-0", "0-0", "0-63", "64-127", "128-191", "192-255"]
SINGLES_TO_300 = [f"{i}-{i}" for i in range(256, 301)]  # locating database 300 in its chunk: 256, 257, ..., 300


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.integration)])
def test_a_transient_failure_is_retried_and_the_chunk_succeeds(counter, workers):
    outputs, runner = _run("counted_flaky", 600, chunk_size=64, workers=workers)
    assert isinstance(outputs, np.ndarray)
    np.testing.assert_array_equal(outputs, _run("summing", 600, chunk_size=64)[0])  # the retry's seed is the chunk's
    calls = counter()
    # Every chunk once, the probe's two calls, and the chunk of 256-319 once more: its first attempt raised.
    assert sorted(calls) == sorted(["0-0", "0-0"] + [f"{s}-{min(s + 63, 599)}" for s in range(0, 600, 64)]
                                   + ["256-319"])
    assert runner.calls == 600 and runner.probe_calls == 2


def test_a_failure_that_repeats_ends_the_retries_after_its_second_attempt(counter):
    error, _ = _run("counted_always_raises", 600, chunk_size=64, retries=2)
    assert str(error).startswith("mechanism 'counted_always_raises' raised RuntimeError on audit sample 300: no "
                                 "convergence") and str(error).endswith("(on each of 2 attempts)")
    assert error.database_index == 300 and not error.refused
    # Two attempts at 256-319, not 1 + retries = 3: the second, which may be its last, locates database 300.
    assert counter() == BEFORE + ["256-319", "256-319"] + SINGLES_TO_300


def test_a_refusal_is_never_retried_and_is_located_on_its_one_attempt(counter):
    error, _ = _run("counted_refuses", 600, chunk_size=64, retries=2)
    assert error.refused and error.database_index == 300 and "(on each of" not in str(error)
    assert counter() == BEFORE + ["256-319"] + SINGLES_TO_300


def test_sys_exit_is_tried_twice_not_three_times(counter):
    error, _ = _run("counted_exits", 600, chunk_size=64, retries=2)
    assert str(error) == ("mechanism 'counted_exits' called sys.exit(3) on a batch of 64 databases; user code must "
                          "return its output or raise an exception (audit samples 256-319) (on each of 2 attempts)")
    assert counter() == BEFORE + ["256-319", "256-319"]


def test_without_retries_a_failure_is_final_at_once(counter):
    error, _ = _run("counted_always_raises", 600, chunk_size=64, retries=0)
    assert error.database_index == 300 and "(on each of" not in str(error)
    assert counter() == BEFORE + ["256-319"] + SINGLES_TO_300


@pytest.mark.integration  # waits out timeouts of 1 s
@pytest.mark.parametrize("workers", [1, 2])
def test_a_repeated_timeout_names_the_database_it_hangs_on_within_the_attempts(counter, workers):
    # One chunk of 4: the probe (database 0), then the chunk 0-3 runs out of its 1 s twice; the third attempt, which
    # 1 + retries allows, runs 0, 1, 2 one at a time within one bound of 1 s: 2 does not return. Three bounds in all,
    # as three attempts at the chunk took before. From a worker process the timeout travels back as one.
    error, _ = _run("counted_hangs_on_2", 4, chunk_size=4, timeout=1, retries=2, workers=workers)
    assert str(error) == ("mechanism 'counted_hangs_on_2' did not return within 1 s on audit samples 0-3 (on each of "
                          "2 attempts); run one at a time within that bound, audit samples 0-1 returned and audit "
                          "sample 2 did not return (--timeout); raise --timeout if it is merely slow")
    assert error.timed_out and error.database_index == 2
    assert counter() == ["0-0", "0-0", "0-3", "0-3", "0-0", "1-1", "2-2"]


@pytest.mark.integration  # waits out timeouts of 1 s
def test_with_no_attempt_left_a_repeated_timeout_names_its_chunk(counter):
    error, _ = _run("counted_hangs_on_2", 8, chunk_size=4, timeout=1, retries=1)
    assert str(error) == ("mechanism 'counted_hangs_on_2' did not return within 1 s on a batch of 4 databases "
                          "(--timeout); raise --timeout if it is merely slow (audit samples 0-3) (on each of 2 "
                          "attempts)")
    assert error.timed_out and counter() == ["0-0", "0-0", "0-3", "0-3"]


@pytest.mark.integration  # waits out timeouts of 1 s
def test_a_timeout_that_does_not_repeat_is_retried_and_the_chunk_succeeds(counter):
    outputs, _ = _run("counted_hangs_once", 8, chunk_size=4, timeout=1, retries=2)
    np.testing.assert_array_equal(outputs, _run("summing", 8, chunk_size=4)[0])
    assert counter() == ["0-0", "0-0", "0-3", "0-3", "4-7"]


def test_the_probe_calls_are_counted_apart_from_the_runs():
    _, runner = _run("summing", 10)
    assert (runner.calls, runner.probe_calls) == (10, 2)
    with pytest.warns(UserWarning):
        _, runner = _run("own_generator", 10)  # its two outputs differ: a third call tells why
    assert (runner.calls, runner.probe_calls) == (10, 3)


# ------------------------------------------------------------------ the rule on its own, on any backend


class _Calls:
    """An in-process backend whose task fails as ``fail(attempt)`` says (an exception to raise, or None)."""

    slots, isolated_failures = 1, True

    def __init__(self, fail):
        self.fail, self.attempts = fail, 0

    def submit(self, fn, task):
        self.attempts += 1
        future, error = Future(), self.fail(self.attempts)
        if error is None:
            future.set_result(task)
        else:
            future.set_exception(error)
        return future

    def outcome(self, future):
        return future.result()

    def restart(self):
        pass

    def cancel(self):
        pass


def _error(words, **flags):
    error = MechanismError(words, mechanism="m")
    for key, value in flags.items():
        setattr(error, key, value)
    return error


@pytest.mark.parametrize("fail, attempts", [
    (lambda n: _error(f"attempt {n}"), 4),  # a different failure each time: 1 + retries
    (lambda n: _error("same"), 2),  # the same words twice: deterministic
    (lambda n: _error("refused", refused=True), 1),  # a refusal: never retried
    (lambda n: _error("other") if n == 1 else _error("same"), 3),  # the same words on the 2nd and 3rd attempts
    (lambda n: WorkerLost("pool broken"), 2),  # a worker that dies the same way twice
    (lambda n: WorkerLost("pool broken", stuck=n > 1), 3),  # ... died, then stuck: not the same failure
])
def test_the_attempts_each_failure_gets(fail, attempts):
    backend, given = _Calls(fail), []
    run_tasks(backend, None, ["task"], retries=3, give_up=lambda position, exc, tries: given.append(tries))
    assert backend.attempts == attempts and given == [attempts]


def test_a_flaky_task_that_fails_once_succeeds():
    backend = _Calls(lambda n: _error("transient") if n == 1 else None)
    assert run_tasks(backend, None, ["task"], retries=3, give_up=None) == ["task"] and backend.attempts == 2


def test_a_failure_is_told_by_its_cause_not_by_where_it_was_located():
    # The same exception, unlocated on a first attempt and located on a second: the same failure.
    def raised(where):
        try:
            try:
                raise RuntimeError("no convergence")
            except RuntimeError as exc:
                raise MechanismError(f"m raised RuntimeError {where}", mechanism="m") from exc
        except MechanismError as error:
            from mechanisms.execution.worker import failure_words as worker_words

            error.failure = worker_words(error)
            return error

    first, second = raised("on the batch of 64 databases"), raised("on database 44")
    assert failure_words(first) == failure_words(second) == "RuntimeError: no convergence"
    # Both travel back from a worker process with the error, as its timeout does.
    second.timed_out = True
    back = pickle.loads(pickle.dumps(second))
    assert back.failure == "RuntimeError: no convergence" and back.timed_out
    assert not pickle.loads(pickle.dumps(first)).timed_out
