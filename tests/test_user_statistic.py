"""A user's statistic (audit.statistics.user_statistic, --statistic FILE.py:fn) as an event-test candidate."""

import textwrap
import threading
import time

import numpy as np
import pytest

from audit.engine import run_audit
from audit.spec import AuditSpec
from audit.statistics.user_statistic import UserStatistic
from estimators.validation import InputError
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.base import sample_mechanism
from mechanisms.claims.parsing import parse_claim
from mechanisms.errors import MechanismError
from mechanisms.execution.runner import ExecutionSettings
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.outputs.encoding import OutputEncoder


def test_a_statistic_that_fails_or_returns_a_wrong_shape_is_one_error_naming_it():
    def broken(y):
        raise ZeroDivisionError("division by zero")

    with pytest.raises(MechanismError, match=r"^statistic 'stats.py:broken' raised ZeroDivisionError: division by zero$"):
        UserStatistic(broken, "stats.py:broken").values(np.zeros(2))
    with pytest.raises(InputError, match=r"'m' returned an array of shape \(2, 2\)"):
        UserStatistic(lambda y: np.zeros((2, 2)), "m").values(np.zeros(2))
    changing = UserStatistic(lambda y: y[: int(y[0])], "prefix")
    assert changing.values(np.array([2.0, 5.0, 7.0])).tolist() == [2.0, 5.0]
    with pytest.raises(InputError, match="'prefix' returned 1 numbers for one output and 2 for an earlier one"):
        changing.values(np.array([1.0, 5.0, 7.0]))
    with pytest.raises(InputError, match="'nan' returned .*not finite"):
        UserStatistic(lambda y: float("nan"), "nan").values(np.zeros(1))
    with pytest.raises(InputError, match="'text' returned a str"):
        UserStatistic(lambda y: "high", "text").values(np.zeros(1))
    with pytest.raises(InputError, match="argument 'statistic'"):
        UserStatistic(3, "three")


def signs_agree_with_record(dbs, rng):
    """Two standard normals; with record 0 at 1 the second takes the first's sign. Each output's marginal laws
    are N(0, 1) under both inputs, and so are its squares' and hinges': only their product's sign differs,
    P(y0 · y1 < 0) = 1/2 with record 0 at 0 and 0 with it at 1 (ε = ∞)."""
    y = rng.standard_normal((len(dbs), 2))
    agree = dbs[:, 0, 0] == 1
    y[agree, 1] = np.abs(y[agree, 1]) * np.sign(y[agree, 0])
    return y


def product(y):
    return y[0] * y[1]


def _audit(statistic, mechanism=signs_agree_with_record):
    pair = NeighbouringPair(np.zeros((3, 1)), np.array([[1.0], [0.0], [0.0]]))
    return run_audit(AuditSpec(mechanism=mechanism, priors=(pair.prior(),), claim=parse_claim("dp:1"), samples=1000,
                               records=(0,), seed=0, statistic=statistic))


def test_a_users_statistic_refutes_what_no_built_in_statistic_sees():
    with_statistic = _audit(product)
    assert with_statistic.claim_verdict == "refuted"
    assert "product(y)" in with_statistic.event_test.description  # the user's statistic was chosen
    # On its held-out draws {y0 · y1 < 0} holds about half the time under one input and never under the other.
    assert "product(y)" in with_statistic.event_test.statistics_tried
    assert "product(y)" in with_statistic.event_test.statistics_with_evidence
    # Without it the same audit finds nothing: the test is of the statistic, not of the mechanism's leak.
    without = _audit(None)
    assert without.claim_verdict == "not-refuted"
    assert "product(y)" not in without.event_test.statistics_tried
    assert len(without.event_test.statistics_tried) >= 2 and without.event_test.statistics_with_evidence == []


def test_a_per_database_functions_statistic_gets_the_output_before_encoding(tmp_path):
    def release(db, rng):
        y = signs_agree_with_record(db[None], rng)[0]
        return {"first": float(y[0]), "second": float(y[1])}

    mechanism = PerDatabaseMechanism(release, "release", encoder=OutputEncoder())
    result = _audit(lambda output: output["first"] * output["second"], mechanism)
    assert result.claim_verdict == "refuted"
    assert "<lambda>(y)" in result.event_test.description


def _sleeps(seconds, value):
    def function(*_arguments):
        time.sleep(seconds)
        return value
    return function


def test_a_statistic_out_of_time_inside_a_per_database_functions_call_is_named_not_the_function():
    # The statistic runs inside the function's call, which --timeout bounds: its own bound is None.
    pair = NeighbouringPair(np.zeros((3, 1)), np.array([[1.0], [0.0], [0.0]]))

    def audit(function, statistic):
        spec = AuditSpec(mechanism=PerDatabaseMechanism(function, "release", encoder=OutputEncoder()),
                         priors=(pair.prior(),), claim=parse_claim("dp:1"), samples=400, records=(0,), seed=0,
                         statistic=statistic, execution=ExecutionSettings(timeout=0.2, retries=0))
        assert spec.statistic.timeout is None
        with pytest.raises(MechanismError) as caught:
            run_audit(spec)
        return str(caught.value)

    slow_statistic = UserStatistic(_sleeps(5, 1.0), "stats.py:slow")
    assert audit(_sleeps(0, {"a": 1.0}), slow_statistic) == (
        "statistic 'stats.py:slow', running inside the call of mechanism 'release' on database 0, did not return "
        "within 0.2 s (--timeout); raise --timeout if it is merely slow")
    assert audit(_sleeps(5, {"a": 1.0}), UserStatistic(_sleeps(0, 1.0), "stats.py:fast")) == (
        "mechanism 'release' did not return within 0.2 s on database 0 (--timeout); raise --timeout if it is merely "
        "slow")


def test_off_the_main_thread_the_statistic_out_of_time_is_named_too():
    # No interval timer there: the call runs on a thread of its own, which records the statistic it runs.
    encoder = OutputEncoder()
    encoder.statistic = UserStatistic(_sleeps(1, 1.0), "stats.py:slow")
    mechanism = PerDatabaseMechanism(_sleeps(0, {"a": 1.0}), "release", encoder=encoder)
    caught = []

    def target():
        try:
            sample_mechanism(mechanism, np.zeros((2, 3, 1)), 0, timeout=0.2)
        except MechanismError as exc:
            caught.append(str(exc))

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    assert caught == ["statistic 'stats.py:slow', running inside the call of mechanism 'release' on a batch of 2 "
                      "databases, did not return within 0.2 s (--timeout); raise --timeout if it is merely slow"]


def test_the_statistic_flag_and_key_load_it_from_a_file(tmp_path):
    from audit.config.building import build_spec
    from audit.config.files import load_config

    (tmp_path / "stats.py").write_text(textwrap.dedent("""
        def product(y):
            return y[0] * y[1]
    """))
    (tmp_path / "mech.py").write_text(textwrap.dedent("""
        import numpy as np

        def mechanism(dbs, rng):
            return rng.standard_normal((len(dbs), 2))
    """))
    (tmp_path / "audit.toml").write_text(textwrap.dedent("""
        [mechanism]
        spec = "mech.py:mechanism"
        [prior]
        spec = "builtin:bernoulli"
        n = 3
        k = 1
        [audit]
        statistic = "stats.py:product"
        samples = 1000
        [claim]
        spec = "dp:1"
    """))
    spec = build_spec(load_config(tmp_path / "audit.toml"))
    assert isinstance(spec.statistic, UserStatistic) and spec.statistic.name == "stats.py:product"
    assert spec.statistic.values(np.array([2.0, 3.0])).tolist() == [6.0]


def test_a_per_database_functions_statistic_on_worker_processes_is_refused(tmp_path):
    # A worker loads the function from its file, without the statistic: it would silently not be tried.
    from audit.config.building import build_spec

    (tmp_path / "release.py").write_text(textwrap.dedent("""
        def release(db, rng):
            return {"first": float(rng.standard_normal()), "second": float(rng.standard_normal())}

        def product(output):
            return output["first"] * output["second"]
    """))

    def config(workers):
        return {"mechanism": {"spec": str(tmp_path / "release.py") + ":release", "per_database": True},
                "prior": {"spec": "builtin:bernoulli", "n": 3, "k": 1}, "claim": {"spec": "dp:1"},
                "audit": {"statistic": str(tmp_path / "release.py") + ":product"},
                "execution": {"workers": workers}}

    with pytest.raises(InputError, match=r"^argument 'statistic' \(.*release.py:product, --statistic\) of a "
                                         r"per-database function .*--workers 2.*audit with --workers 1$"):
        build_spec(config(2))
    assert build_spec(config(1)).statistic.name.endswith("release.py:product")


@pytest.mark.train
def test_an_audit_with_neural_critics_says_the_statistic_was_not_tried():
    pair = NeighbouringPair(np.zeros((3, 1)), np.array([[1.0], [0.0], [0.0]]))
    result = run_audit(AuditSpec(mechanism=signs_agree_with_record, priors=(pair.prior(),), claim=parse_claim("dp:1"),
                                 samples=1000, records=(0,), seed=0, statistic=product, mi_critic="neural",
                                 critic={"max_steps": 20, "eval_every": 10}))
    assert any("the statistic 'product' (--statistic)" in note and "it was not tried" in note for note in result.notes)
    assert "product(y)" not in (result.event_test.statistics_tried or [])
