"""Robustness round five: user functions given to ``miaudit audit --mechanism FILE.py:f --per-database``.

A per-database function is called once per database inside one call of user code for a whole chunk; a ``sys.exit``,
an ``os._exit`` or a ``BaseException`` of its own on one database was named "on a batch of 256 databases", and the
audit could not say which database to reproduce it on. Each names its database now
(:func:`mechanisms.calls.user_call.escape_error`).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from mechanisms.adapters.callables import PerDatabaseMechanism
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


def test_a_ctrl_c_inside_a_per_database_function_still_interrupts():
    mechanism = PerDatabaseMechanism(_on_database_with_sum(1.0, lambda: _raise(KeyboardInterrupt())), "stopped",
                                     encoder=OutputEncoder(4))
    with MechanismRunner(mechanism, "stopped") as runner, pytest.raises(KeyboardInterrupt):
        runner.sample(np.arange(3.0).reshape(3, 1, 1), np.random.default_rng(0))


def test_a_batched_function_returning_none_is_said_to_return_none():
    # A batched f(dbs, rng) that forgot its return statement: NumPy reads None as a NaN of shape ().
    from mechanisms.base import check_batch_output

    with pytest.raises(MechanismError) as raised:
        check_batch_output(None, 1, "mechanism 'forgot'")
    assert str(raised.value).startswith("mechanism 'forgot' returned None for a batch of 1 database; expected (1, d)")
    with pytest.raises(MechanismError, match=r"returned shape \(\) for a batch of 3 databases"):
        check_batch_output(2.5, 3, "mechanism 'scalar'")
