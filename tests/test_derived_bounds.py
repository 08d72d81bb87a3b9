"""Without --timeout, a user's statistic read after the runs and an external program's batches are bounded as the
mechanism's chunks are: the first call by the first-call bound, each later one by
mechanisms.calls.later_bound.later_call_bound of the first call's seconds (an output's for the statistic, a
database's for the program; a program inside an audit's call takes that call's bound); with --timeout nothing
changes, and code that returns gives the same results bounded or not. And the signal module's ``alarm``, as user
code sees it inside a bounded call (mechanisms.calls.alarm), refuses and wraps its seconds as the real one does.

No test depends on a real-time margin: the clocks that time the first calls and the deadlines are monkeypatched,
program runs are faked where a bound's number is asserted, and each expected bound is computed here from the rule:
min(max(60 s, 50 × first seconds × count), 1e7 s) (later_bound's LATER_CALL_FLOOR, LATER_CALL_SLACK, MAX_TIMEOUT_S).
"""

import signal
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from audit.engine import run_audit
from audit.spec import AuditSpec
from audit.statistics.user_statistic import UserStatistic
from mechanisms.adapters import callables as callables_module
from mechanisms.adapters import user_statistic as statistic_module
from mechanisms.adapters.callables import ExternalCommandMechanism
from mechanisms.adapters.recognition import load_mechanism
from mechanisms.calls import user_call
from mechanisms.calls.later_bound import later_call_bound
from mechanisms.calls.user_call import TIMEOUT_HINT, call_user_code, time_left
from mechanisms.claims.parsing import parse_claim
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

FIXTURES = Path(__file__).parent / "fixtures"
WIRE = str(FIXTURES / "wire_mechanism.py")

#: The rule's numbers, as the docs state them (docs/how-to/clusters.md): first calls 60 s, later ones 50 × their
#: count × the first call's seconds, at least 60 s, at most 1e7 s.
FIRST, SLACK, FLOOR, CAP = 60.0, 50.0, 60.0, 1e7


def _rule(first_seconds, count):
    return min(max(FLOOR, SLACK * first_seconds * count), CAP)


class _Clock:
    """A ``perf_counter`` that advances ``step`` seconds at each reading: a call timed by two readings took it."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


# ---------------------------------------------------------------- a statistic read after the runs


def _recording_calls(monkeypatch, bounds):
    def recorded(fn, arguments=(), *, timeout=None, hint=TIMEOUT_HINT, **words):
        bounds.append((timeout, hint))
        return call_user_code(fn, arguments, timeout=timeout, hint=hint, **words)
    monkeypatch.setattr(statistic_module, "call_user_code", recorded)


@pytest.mark.parametrize("first_seconds", [0.01, 3.0, 1e6])
def test_a_statistics_first_call_has_the_first_call_bound_and_each_later_one_the_rule(monkeypatch, first_seconds):
    bounds = []
    _recording_calls(monkeypatch, bounds)
    monkeypatch.setattr(statistic_module, "time", types.SimpleNamespace(perf_counter=_Clock(first_seconds)))
    statistic = UserStatistic(lambda y: y[0], "stats.py:first")
    statistic.timeout, statistic.later_bounded = FIRST, True  # as AuditSpec sets them without --timeout
    statistic.rows(np.arange(6.0).reshape(3, 2))
    assert statistic.first_seconds == first_seconds
    assert bounds[0] == (FIRST, TIMEOUT_HINT)
    assert [bound for bound, _ in bounds[1:]] == [_rule(first_seconds, 1)] * 2
    assert all("no --timeout was given" in hint and "s a call" in hint for _, hint in bounds[1:])
    # The later calls' bound and words are written once (every call is on one output), then kept.
    written = []
    monkeypatch.setattr(statistic_module, "later_call_bound", lambda *a, **k: written.append(a) or (1.0, "words"))
    statistic._later = None
    statistic.rows(np.zeros((3, 2)))
    assert written == [(None, first_seconds, 1)] and bounds[3:] == [(1.0, "words")] * 3


def test_with_a_timeout_every_call_of_the_statistic_has_it(monkeypatch):
    bounds = []
    _recording_calls(monkeypatch, bounds)
    monkeypatch.setattr(statistic_module, "time", types.SimpleNamespace(perf_counter=_Clock(100.0)))
    statistic = UserStatistic(lambda y: y[0], "stats.py:first")
    statistic.timeout = 7.0
    statistic.rows(np.zeros((4, 2)))
    assert bounds == [(7.0, TIMEOUT_HINT)] * 4 and statistic.first_seconds is None


def product(y):
    return y[0] * y[1]


def signs_agree_with_record(dbs, rng):
    """Two standard normals; with record 0 at 1 the second takes the first's sign (test_user_statistic's)."""
    y = rng.standard_normal((len(dbs), 2))
    agree = dbs[:, 0, 0] == 1
    y[agree, 1] = np.abs(y[agree, 1]) * np.sign(y[agree, 0])
    return y


def _spec(**execution):
    pair = NeighbouringPair(np.zeros((3, 1)), np.array([[1.0], [0.0], [0.0]]))
    return AuditSpec(mechanism=signs_agree_with_record, priors=(pair.prior(),), claim=parse_claim("dp:1"),
                     samples=1000, records=(0,), seed=0, statistic=UserStatistic(product, "stats.py:product"),
                     execution=ExecutionSettings(**execution))


def test_the_audit_spec_gives_the_statistic_the_first_call_bound_or_the_timeout():
    derived, given = _spec().statistic, _spec(timeout=7.0).statistic
    assert (derived.timeout, derived.later_bounded) == (FIRST, True)
    assert (given.timeout, given.later_bounded) == (7.0, False)


def test_an_audit_whose_statistic_returns_is_the_same_bounded_or_not(monkeypatch):
    specs = []

    def audit():
        specs.append(_spec())
        result = run_audit(specs[-1])
        return result.claim_verdict, result.event_test.description, result.lower_bound, result.estimate

    bounds = []
    _recording_calls(monkeypatch, bounds)
    bounded = audit()
    first_seconds = specs[0].statistic.first_seconds
    assert len(bounds) > 2 and bounds[0][0] == FIRST
    assert [bound for bound, _ in bounds[1:]] == [_rule(first_seconds, 1)] * (len(bounds) - 1)
    monkeypatch.setattr(statistic_module, "later_call_bound", lambda timeout, *_, **__: (timeout, TIMEOUT_HINT))
    assert audit() == bounded


# ---------------------------------------------------------------- an external program's batches


def _fake_program(bounds):
    """``run_program`` that records its bound and prints one line a database (the text wire format)."""
    def run(command, payload, *, timeout, env=None):
        bounds.append(timeout)
        databases = int(payload.split(b"\n", 1)[0].split()[0])
        return 0, b"1.0\n" * databases, b""
    return run


def _batch(m):
    return np.zeros((m, 3, 1))


@pytest.mark.parametrize("first_seconds", [0.001, 0.5, 1e5])
def test_outside_a_bounded_call_a_programs_first_batch_is_timed_and_bounds_the_later_ones(monkeypatch, first_seconds):
    bounds = []
    monkeypatch.setattr(callables_module, "run_program", _fake_program(bounds))
    # The first batch, of 2 databases, takes 2 × first_seconds: first_seconds a database.
    monkeypatch.setattr(callables_module, "time", types.SimpleNamespace(perf_counter=_Clock(2 * first_seconds)))
    program = ExternalCommandMechanism(("program",))
    program(_batch(2), np.random.default_rng(0))
    program(_batch(100), np.random.default_rng(0))
    program(_batch(1), np.random.default_rng(0))
    assert program.first_seconds == first_seconds
    assert bounds == [FIRST, _rule(first_seconds, 100), _rule(first_seconds, 1)]


def _frozen_deadlines(monkeypatch):
    """The deadlines of bounded calls read on a clock that stands still: the time left is each bound, whole."""
    monkeypatch.setattr(user_call, "monotonic", lambda: 1000.0)


def test_time_left_is_the_nearest_enclosing_deadline(monkeypatch):
    _frozen_deadlines(monkeypatch)
    assert time_left() is None
    inner = lambda: call_user_code(time_left, who="statistic 's'", timeout=30.0)  # noqa: E731
    assert call_user_code(inner, who="mechanism 'm'", timeout=90.0) == 30.0
    assert call_user_code(lambda: call_user_code(time_left, who="statistic 's'"), who="mechanism 'm'",
                          timeout=90.0) == 90.0
    ticks = iter([1000.0, 1200.0])  # a deadline already past reads as a millisecond, never as no bound
    monkeypatch.setattr(user_call, "monotonic", lambda: next(ticks))
    assert call_user_code(time_left, who="mechanism 'm'", timeout=60.0) == 1e-3


def test_inside_a_bounded_call_a_program_takes_that_calls_bound_and_times_nothing(monkeypatch):
    bounds = []
    monkeypatch.setattr(callables_module, "run_program", _fake_program(bounds))
    _frozen_deadlines(monkeypatch)
    program = ExternalCommandMechanism(("program",))
    for databases, bound in [(1, 60.0), (256, 128.0)]:
        call_user_code(program, (_batch(databases), np.random.default_rng(0)), who="mechanism 'p'", timeout=bound)
    assert bounds == [60.0 + 1.0, 128.0 + 1.0]  # the enclosing bound fires first: AFTER_ENCLOSING, 1 s, later
    assert program.first_seconds is None


def test_in_an_audits_runner_a_programs_batches_follow_the_probe_and_chunk_bounds(monkeypatch):
    bounds = []
    monkeypatch.setattr(callables_module, "run_program", _fake_program(bounds))
    _frozen_deadlines(monkeypatch)
    program = load_mechanism({"command": "program"}).mechanism
    assert program.timeout is None
    with MechanismRunner(program, "program", ExecutionSettings(chunk_size=8)) as runner:
        runner.sample(_batch(20), np.random.default_rng(5))
        first_seconds = runner._first_seconds
    probes = len(bounds) - 3  # the probe's calls on one database (two, or three), then chunks of 8, 8 and 4
    assert probes in (2, 3)
    expected = [FIRST + 1.0] * probes + [_rule(first_seconds, size) + 1.0 for size in (8, 8, 4)]
    assert bounds == expected


def test_with_a_timeout_every_batch_of_a_program_has_it(monkeypatch):
    bounds = []
    monkeypatch.setattr(callables_module, "run_program", _fake_program(bounds))
    _frozen_deadlines(monkeypatch)
    program = load_mechanism({"command": "program", "timeout": 5}).mechanism
    assert program.timeout == 5.0
    with MechanismRunner(program, "program", ExecutionSettings(chunk_size=8, timeout=5.0)) as runner:
        runner.sample(_batch(20), np.random.default_rng(5))
    program(_batch(3), np.random.default_rng(0))  # outside any bounded call too
    assert bounds == [5.0] * len(bounds) and program.first_seconds is None


@pytest.mark.integration
def test_a_program_that_returns_gives_the_same_samples_bounded_or_not():
    def sample(timeout):
        program = ExternalCommandMechanism((sys.executable, WIRE, "noisy"), timeout=timeout)
        with MechanismRunner(program, "noisy", ExecutionSettings(chunk_size=8)) as runner:
            return runner.sample(np.random.default_rng(2).integers(0, 2, size=(20, 3, 1)).astype(float),
                                 np.random.default_rng(11))

    assert np.array_equal(sample(None), sample(600.0))  # derived bounds; a fixed bound, as before


# ---------------------------------------------------------------- signal.alarm's seconds, as the real one reads them


def _outcome(call):
    """What ``call()`` gives: the seconds an alarm it armed had left (``alarm(0)``), or its error's type and words."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - compared as they are
        return type(exc).__name__, str(exc)
    return "armed", signal.alarm(0)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX interval timer")
def test_the_users_alarm_refuses_and_wraps_its_seconds_as_the_real_one():
    before = signal.getsignal(signal.SIGALRM)
    signal.signal(signal.SIGALRM, lambda *_: None)  # an alarm that goes off anyway does nothing
    # Past a C int either way, at its ends, a negative that alarm(3)'s unsigned int wraps, not an integer.
    values = [2**31 - 1, 2**31, 2**32, 2**32 + 5, 2**64, -1, -(2**31), -(2**31) - 1, -(2**40), True, 1.5]
    try:
        real = [_outcome(lambda: signal.alarm(value)) for value in values]
        inside = call_user_code(lambda: [_outcome(lambda: signal.alarm(value)) for value in values],
                                who="mechanism 'm'", timeout=60.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert inside == real
    assert real[1][0] == "OverflowError" and real[5] == ("armed", 2**32 - 1)  # what this test covers is exercised
