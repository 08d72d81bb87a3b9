"""User code that uses SIGALRM itself inside a call that miaudit bounds with the same interval timer
(mechanisms.calls.alarm): its handler runs on its alarms and its error is its own, the bound survives what it does
with the timer, and the handler and timer after the call are what it left.

No test depends on a real-time margin: the users' alarms are a few milliseconds, the bounds that must not fire are
a minute (60 s, the default's floor) and the bounds that must fire half a second against code that would run on
for 20 s; a loaded machine only delays both alike.
"""

import signal
import textwrap
import time

import numpy as np
import pytest

from mechanisms.adapters.loading import load_object
from mechanisms.calls.user_call import call_user_code
from mechanisms.errors import MechanismError
from mechanisms.calls import later_bound
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner

# A function bound from the signal module before any call: it acts on the real timer, around miaudit's sharing.
from signal import setitimer as bound_setitimer

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX interval timer")

WHO = "mechanism 'm.py:f'"


class UsersTimeout(Exception):
    """The error a user's own handler raises."""


def _raise_users_timeout(signum, frame):
    raise UsersTimeout("the user's own alarm")


@pytest.fixture(autouse=True)
def _process_alarm_restored():
    before = signal.getsignal(signal.SIGALRM)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, before)


def _wait_for(seconds, until=lambda: False):
    """Sleep in short steps for at most ``seconds`` (a hang that ends, so that a test of a lost bound fails
    rather than hangs)."""
    stop = time.monotonic() + seconds
    while time.monotonic() < stop and not until():
        time.sleep(0.002)


def _wrapped_slow_call(slow_seconds, alarm_seconds):
    """The classic recipe: a slow step under the user's own alarm and handler, both put back after."""
    previous = signal.signal(signal.SIGALRM, _raise_users_timeout)
    signal.setitimer(signal.ITIMER_REAL, alarm_seconds)
    try:
        _wait_for(slow_seconds)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_the_users_alarm_runs_its_handler_and_its_error_propagates_as_its_own():
    def mechanism():
        _wrapped_slow_call(20.0, 0.005)

    with pytest.raises(UsersTimeout, match="the user's own alarm"):
        call_user_code(mechanism, who=WHO, timeout=60.0)


def test_the_bound_survives_the_users_alarm_disarmed_before_it_went_off():
    # The user's timer replaced the bound's and was disarmed: the hang after it must still be stopped.
    def mechanism():
        _wrapped_slow_call(0.001, 5.0)
        _wait_for(20.0)

    started = time.monotonic()
    with pytest.raises(MechanismError, match=r"^mechanism 'm\.py:f' did not return within 0\.5 s"):
        call_user_code(mechanism, who=WHO, timeout=0.5)
    assert time.monotonic() - started < 15.0  # stopped by the bound, not by the end of the 20 s hang


def test_the_bound_survives_a_longer_user_alarm_and_the_users_handler_is_not_run():
    ran = []

    def mechanism():
        signal.signal(signal.SIGALRM, lambda signum, frame: ran.append(signum))
        signal.alarm(100)
        _wait_for(20.0)

    with pytest.raises(MechanismError, match=r"did not return within 0\.5 s"):
        call_user_code(mechanism, who=WHO, timeout=0.5)
    assert ran == []
    # The user left its handler and its 100 s alarm armed: they are the process's now.
    assert signal.getsignal(signal.SIGALRM) is not None and signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
    assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100


def test_ignoring_sigalrm_ignores_the_users_alarms_not_the_bound():
    def mechanism():
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.setitimer(signal.ITIMER_REAL, 0.005)
        _wait_for(20.0)

    with pytest.raises(MechanismError, match=r"did not return within 0\.5 s"):
        call_user_code(mechanism, who=WHO, timeout=0.5)
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_IGN  # what it left


def test_a_handler_installed_in_one_call_serves_the_users_alarm_in_the_next():
    # A handler installed once (at import, or by a first call) and left installed; each later call arms a timer
    # and falls back when it goes off. Without miaudit every call returns "fallback".
    def install():
        signal.signal(signal.SIGALRM, _raise_users_timeout)

    def mechanism():
        signal.setitimer(signal.ITIMER_REAL, 0.005)
        try:
            _wait_for(20.0)
        except UsersTimeout:
            return "fallback"
        return "slow"

    call_user_code(install, who=WHO, timeout=60.0)
    assert signal.getsignal(signal.SIGALRM) is _raise_users_timeout  # the handler it left is the process's
    assert [call_user_code(mechanism, who=WHO, timeout=60.0) for _ in range(3)] == ["fallback"] * 3


def test_the_users_alarm_without_a_handler_is_its_failure_not_a_timeout():
    # SIGALRM's default action ends the process: inside miaudit it is one error naming the user code.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)

    def mechanism():
        signal.setitimer(signal.ITIMER_REAL, 0.005)
        _wait_for(20.0)

    with pytest.raises(MechanismError) as excinfo:
        call_user_code(mechanism, who=WHO, timeout=60.0, where=" on database 0")
    text = str(excinfo.value)
    assert text.startswith("mechanism 'm.py:f' received SIGALRM on database 0 with no handler")
    assert "did not return" not in text and excinfo.value.mechanism == WHO


def test_the_user_sees_the_timer_and_handler_as_without_miaudit():
    def handler(signum, frame):
        pass

    seen = {}

    def mechanism():
        seen["timer"] = signal.getitimer(signal.ITIMER_REAL)
        seen["handler"] = signal.getsignal(signal.SIGALRM)
        seen["first"] = signal.alarm(7)
        seen["second"] = signal.alarm(0)
        seen["previous"] = signal.signal(signal.SIGALRM, handler)
        seen["after"] = signal.setitimer(signal.ITIMER_REAL, 0)
        return signal.getsignal(signal.SIGALRM)

    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    assert call_user_code(mechanism, who=WHO, timeout=60.0) is handler
    assert seen.pop("second") in (6, 7)  # its own 7 s alarm's seconds left, rounded (the bound's were 60)
    assert seen == {"timer": (0.0, 0.0), "handler": signal.SIG_IGN, "first": 0, "previous": signal.SIG_IGN,
                    "after": (0.0, 0.0)}
    assert signal.getsignal(signal.SIGALRM) is handler and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_periodic_user_timer_ticks_and_the_bound_survives_it():
    ticks = []

    def mechanism():
        signal.signal(signal.SIGALRM, lambda signum, frame: ticks.append(signum))
        signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
        _wait_for(20.0, until=lambda: len(ticks) >= 3)
        signal.setitimer(signal.ITIMER_REAL, 0)
        _wait_for(20.0)

    with pytest.raises(MechanismError, match=r"did not return within 1 s"):
        call_user_code(mechanism, who=WHO, timeout=1.0)
    assert len(ticks) >= 3


def test_a_timer_armed_around_the_signal_module_reaches_the_users_handler_and_rearms_the_bound():
    def mechanism():
        signal.signal(signal.SIGALRM, _raise_users_timeout)
        bound_setitimer(signal.ITIMER_REAL, 0.005)  # the real timer: the bound's is replaced
        try:
            _wait_for(20.0)
        except UsersTimeout:
            pass
        _wait_for(20.0)  # the bound, re-armed when the user's alarm went off, stops this

    with pytest.raises(MechanismError, match=r"did not return within 0\.5 s"):
        call_user_code(mechanism, who=WHO, timeout=0.5)


def test_the_signal_module_is_its_own_again_after_the_call():
    real = (signal.signal, signal.getsignal, signal.alarm, signal.setitimer, signal.getitimer)
    call_user_code(lambda: None, who=WHO, timeout=60.0)
    with pytest.raises(MechanismError):
        call_user_code(lambda: _wait_for(20.0), who=WHO, timeout=0.2)
    assert (signal.signal, signal.getsignal, signal.alarm, signal.setitimer, signal.getitimer) == real


def test_the_users_bad_arguments_get_the_signal_modules_errors():
    def bad(call):
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - compared as they are
            return type(exc).__name__, str(exc)
        return None

    calls = [lambda: signal.alarm(1.5), lambda: signal.setitimer(signal.ITIMER_REAL, -1.0),
             lambda: signal.setitimer(signal.ITIMER_REAL, float("nan")), lambda: signal.setitimer(signal.ITIMER_REAL, "a"),
             lambda: signal.signal(signal.SIGALRM, "not a handler")]
    outside = [bad(call) for call in calls]
    assert all(outside)
    inside = call_user_code(lambda: [bad(call) for call in calls], who=WHO, timeout=60.0)
    assert inside == outside


# Through the runner, as an audit calls a mechanism: in process, without --timeout (every chunk bounded by the
# default bound), and a mechanism file that installs its handler at import.

_FALLBACK_FILE = textwrap.dedent("""
    import signal
    import time

    class SolverTimeout(Exception):
        pass

    def _give_up(signum, frame):
        raise SolverTimeout

    signal.signal(signal.SIGALRM, _give_up)  # once, at import

    def mech(dbs, rng):
        # A time-limited step on each call that falls back to the sum when its own alarm goes off.
        signal.setitimer(signal.ITIMER_REAL, 0.002)
        try:
            stop = time.monotonic() + 20.0
            while time.monotonic() < stop:
                time.sleep(0.001)
        except SolverTimeout:
            pass
        return dbs.sum(axis=1)
""")


def _databases(m):
    return np.random.default_rng(3).integers(0, 2, size=(m, 3, 1)).astype(float)


def _sample(mechanism, dbs, **settings):
    with MechanismRunner(mechanism, "m.py:f", ExecutionSettings(**settings)) as runner:
        return runner.sample(dbs, np.random.default_rng(0))


@pytest.mark.integration
def test_a_mechanism_file_with_a_handler_installed_at_import_runs_as_without_miaudit(tmp_path):
    (tmp_path / "fallback.py").write_text(_FALLBACK_FILE)
    mechanism = load_object(f"{tmp_path / 'fallback.py'}:mech", "mechanism")
    assert signal.getsignal(signal.SIGALRM).__name__ == "_give_up"  # the import's handler stayed installed
    dbs = _databases(6)
    outputs = _sample(mechanism, dbs, chunk_size=2, retries=0)
    assert np.array_equal(outputs, dbs.sum(axis=1))  # every call fell back, as outside miaudit


@pytest.mark.integration
def test_the_same_file_on_worker_processes(tmp_path):
    (tmp_path / "fallback.py").write_text(_FALLBACK_FILE)
    source = f"{tmp_path / 'fallback.py'}:mech"
    dbs = _databases(12)
    settings = ExecutionSettings(chunk_size=2, retries=0, workers=2)
    with MechanismRunner(load_object(source, "mechanism"), "m.py:f", settings, source=source) as runner:
        outputs = runner.sample(dbs, np.random.default_rng(0))
    assert np.array_equal(outputs, dbs.sum(axis=1))


def _dance_then_hang_from_fourth_call(dbs, rng):
    _wrapped_slow_call(0.0, 5.0)
    _dance_then_hang_from_fourth_call.calls += 1
    if _dance_then_hang_from_fourth_call.calls >= 4:
        _wait_for(20.0)
    return dbs.sum(axis=1)


@pytest.mark.integration
def test_the_default_chunk_bound_survives_a_mechanism_that_uses_its_own_alarm(monkeypatch):
    monkeypatch.setattr(_dance_then_hang_from_fourth_call, "calls", 0, raising=False)
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 0.5)
    monkeypatch.setattr(later_bound, "LATER_CALL_SLACK", 0.0)  # the floor whatever the probe's time on a loaded machine
    started = time.monotonic()
    with pytest.raises(MechanismError, match=r"^mechanism 'm\.py:f' did not return within 0\.5 s .*no --timeout"):
        _sample(_dance_then_hang_from_fourth_call, _databases(8), chunk_size=2, retries=0)
    assert time.monotonic() - started < 15.0


def test_a_mechanism_that_wraps_its_calls_in_an_alarm_gives_the_samples_it_gives_outside_miaudit():
    def mechanism(dbs, rng):
        _wrapped_slow_call(0.0, 5.0)
        return dbs.sum(axis=1) + rng.normal(size=(dbs.shape[0], dbs.shape[2]))

    def plain(dbs, rng):
        return dbs.sum(axis=1) + rng.normal(size=(dbs.shape[0], dbs.shape[2]))

    dbs = _databases(40)
    assert np.array_equal(_sample(mechanism, dbs, chunk_size=8), _sample(plain, dbs, chunk_size=8))


def test_a_process_forked_by_the_user_code_has_the_users_timer_and_handler():
    import os

    def mechanism():
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        pid = os.fork()
        if pid == 0:  # the child: its alarm's default action ends it, as without miaudit
            signal.setitimer(signal.ITIMER_REAL, 0.005)
            _wait_for(20.0)
            os._exit(0)
        return os.waitpid(pid, 0)[1]

    status = call_user_code(mechanism, who=WHO, timeout=60.0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM


def test_a_bounded_call_inside_one_whose_bound_fired_and_was_swallowed_leaves_the_signal_module_its_own():
    real = (signal.signal, signal.getsignal, signal.alarm, signal.setitimer, signal.getitimer)
    inner = []

    def mechanism():
        try:
            _wait_for(20.0)
        except BaseException:  # noqa: BLE001 - swallows the bound's interruption, as careless code does
            pass
        inner.append(call_user_code(lambda: "inner", who="statistic 's'", timeout=60.0))

    with pytest.raises(MechanismError, match=r"did not return within 0\.2 s"):
        call_user_code(mechanism, who=WHO, timeout=0.2)
    assert inner == ["inner"]
    assert (signal.signal, signal.getsignal, signal.alarm, signal.setitimer, signal.getitimer) == real
