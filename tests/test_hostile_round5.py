"""Robustness round five: user functions given to ``miaudit audit --mechanism FILE.py:f --per-database``.

A per-database function is called once per database inside one call of user code for a whole chunk; a ``sys.exit``,
an ``os._exit`` or a ``BaseException`` of its own on one database was named "on a batch of 256 databases", and the
audit could not say which database to reproduce it on. Each names its database now
(:func:`mechanisms.calls.user_call.escape_error`). A ``KeyboardInterrupt`` the function raised itself ended the
audit as a Ctrl-C does ("interrupted", status 130); where no SIGINT arrived it is the function's failure
(:mod:`mechanisms.calls.interrupts`).
"""

from __future__ import annotations

import os
import signal
import sys

import numpy as np
import pytest

from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.calls import interrupts
from mechanisms.errors import MechanismError
from mechanisms.execution.runner import MechanismRunner
from mechanisms.outputs.encoding import OutputEncoder


class Quit(BaseException):
    """A user's own BaseException subclass."""


def _on_database_with_sum(total, leave):
    """f(db, rng) that returns the sum of ``db`` and calls ``leave()`` on the database whose sum is ``total``."""
    def f(db, rng):
        if db.sum() == total:
            leave()
        return float(db.sum())
    return f


def _raise(exc):
    raise exc


@pytest.mark.parametrize("leave, words", [
    (lambda: sys.exit(3), "called sys.exit(3)"),
    (lambda: os._exit(4), "called os._exit(4)"),
    (lambda: _raise(Quit("stop")), "raised Quit"),
], ids=["sys.exit", "os._exit", "own-BaseException"])
def test_a_per_database_function_that_quits_on_one_database_is_named_with_that_database(leave, words):
    # Databases 0..5 hold sums 0..5; the function quits on the one whose sum is 3, the fourth: audit sample 3.
    dbs = np.arange(6.0).reshape(6, 1, 1)
    mechanism = PerDatabaseMechanism(_on_database_with_sum(3.0, leave), "quits", encoder=OutputEncoder(4))
    with MechanismRunner(mechanism, "quits") as runner, pytest.raises(MechanismError) as raised:
        runner.sample(dbs, np.random.default_rng(0), what="audit sample")
    message = str(raised.value)
    assert f"mechanism 'quits' {words} on audit sample 3" in message, message
    assert raised.value.database_index == 3 and "batch" not in message and "\n" not in message


@pytest.fixture
def watched_interrupts():
    """SIGINT watched as the command line watches it (mechanisms.calls.interrupts), restored afterwards."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupts.watch_interrupts()
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        interrupts._RECEIVED.clear()


def _interrupting_mechanism(leave):
    return PerDatabaseMechanism(_on_database_with_sum(1.0, leave), "stops", encoder=OutputEncoder(4))


def test_a_keyboard_interrupt_the_function_raises_itself_is_its_failure_named_with_its_database(watched_interrupts):
    with MechanismRunner(_interrupting_mechanism(lambda: _raise(KeyboardInterrupt())), "stops") as runner, \
            pytest.raises(MechanismError) as raised:
        runner.sample(np.arange(3.0).reshape(3, 1, 1), np.random.default_rng(0), what="audit sample")
    assert str(raised.value).startswith("mechanism 'stops' raised KeyboardInterrupt on audit sample 1 (a BaseException")
    assert raised.value.database_index == 1


def test_a_ctrl_c_inside_a_per_database_function_still_interrupts(watched_interrupts):
    # A real SIGINT, delivered to this process while the function runs, as a Ctrl-C is.
    mechanism = _interrupting_mechanism(lambda: os.kill(os.getpid(), signal.SIGINT))
    with MechanismRunner(mechanism, "stops") as runner, pytest.raises(KeyboardInterrupt):
        runner.sample(np.arange(3.0).reshape(3, 1, 1), np.random.default_rng(0))


def test_where_sigint_is_not_watched_every_keyboard_interrupt_is_taken_for_a_ctrl_c():
    # miaudit called from Python: nothing tells the two apart, so the audit stops as on Ctrl-C (as before).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with MechanismRunner(_interrupting_mechanism(lambda: _raise(KeyboardInterrupt())), "stops") as runner, \
                pytest.raises(KeyboardInterrupt):
            runner.sample(np.arange(3.0).reshape(3, 1, 1), np.random.default_rng(0))
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_process_that_ignores_sigint_takes_every_keyboard_interrupt_for_the_user_codes():
    # A worker process ignores SIGINT (the audit's process is the one interrupted); a signal's own carries its number.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert interrupts.raised_by_user_code(KeyboardInterrupt())
        terminated = KeyboardInterrupt()
        terminated.signum = signal.SIGTERM
        assert not interrupts.raised_by_user_code(terminated)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_batched_function_returning_none_is_said_to_return_none():
    # A batched f(dbs, rng) that forgot its return statement: NumPy reads None as a NaN of shape ().
    from mechanisms.base import check_batch_output

    with pytest.raises(MechanismError) as raised:
        check_batch_output(None, 1, "mechanism 'forgot'")
    assert str(raised.value).startswith("mechanism 'forgot' returned None for a batch of 1 database; expected (1, d)")
    with pytest.raises(MechanismError, match=r"returned shape \(\) for a batch of 3 databases"):
        check_batch_output(2.5, 3, "mechanism 'scalar'")


@pytest.mark.integration  # the command line in a process of its own, as a user runs it
def test_the_command_line_names_a_function_or_statistic_that_raises_keyboard_interrupt(tmp_path):
    import subprocess

    (tmp_path / "stops.py").write_text("def f(db, rng):\n    raise KeyboardInterrupt\n\n\n"
                                       "def statistic(y):\n    raise KeyboardInterrupt\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    common = [sys.executable, "-m", "audit.cli.main", "audit", "--samples", "400", "--quiet"]
    for flags, words in ((["--mechanism", "stops.py:f", "--per-database", "--claim", "dp:1", "--prior",
                           "builtin:bernoulli", "--n", "3", "--k", "1"],
                          "miaudit audit: error: mechanism 'stops.py:f' raised KeyboardInterrupt on database 0 ("),
                         (["--mechanism", "catalog:laplace_sum", "--statistic", "stops.py:statistic"],
                          "miaudit audit: error: statistic 'stops.py:statistic' raised KeyboardInterrupt")):
        # SIGINT as a terminal leaves it (a suite started in the background would hand its SIG_IGN down).
        done = subprocess.run(common + flags, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert done.returncode == 1 and done.stderr.startswith(words) and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("values, kind", [((row for row in [[1.0]]), "a generator"), ([["a"]], "a list"),
                                          (object(), "an object")], ids=["generator", "strings", "object"])
def test_a_batched_output_that_is_not_numeric_is_named_by_its_type(values, kind):
    from mechanisms.base import check_batch_output

    with pytest.raises(MechanismError) as raised:
        check_batch_output(values, 1, "mechanism 'm'")
    assert str(raised.value).startswith(f"mechanism 'm' returned non-numeric output ({kind}): ")
