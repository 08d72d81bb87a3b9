"""A user's statistic (audit.statistics.user_statistic, --statistic FILE.py:fn) as an event-test candidate."""

import re
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
from mechanisms.errors import MechanismError, StatisticError
from mechanisms.execution.runner import ExecutionSettings
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.outputs.encoding import OutputEncoder


def test_a_statistic_that_fails_or_returns_a_wrong_shape_is_one_error_naming_it():
    def broken(y):
        raise ZeroDivisionError("division by zero")

    with pytest.raises(MechanismError) as info:
        UserStatistic(broken, "stats.py:broken").values(np.zeros(2))
    assert str(info.value) == ("statistic 'stats.py:broken' raised ZeroDivisionError: division by zero (at "
                               f"test_user_statistic.py line {broken.__code__.co_firstlineno + 1}, in broken)")
    # What it returns is a failing user function's error too (exit status 1), named by the statistic.
    with pytest.raises(StatisticError, match=r"'m' returned an array of shape \(2, 2\)"):
        UserStatistic(lambda y: np.zeros((2, 2)), "m").values(np.zeros(2))
    changing = UserStatistic(lambda y: y[: int(y[0])], "prefix")
    assert changing.values(np.array([2.0, 5.0, 7.0])).tolist() == [2.0, 5.0]
    with pytest.raises(StatisticError, match="'prefix' returned 1 numbers for one output and 2 for an earlier one"):
        changing.values(np.array([1.0, 5.0, 7.0]))
    with pytest.raises(StatisticError, match="'nan' returned .*not finite"):
        UserStatistic(lambda y: float("nan"), "nan").values(np.zeros(1))
    with pytest.raises(StatisticError, match="'text' returned a str") as caught:
        UserStatistic(lambda y: "high", "text").values(np.zeros(1))
    assert caught.value.exit_status == 1 and caught.value.mechanism == "statistic 'text'"
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


def test_a_per_database_functions_statistic_returning_nan_is_named_not_the_function(tmp_path, capsys):
    # The statistic runs inside the function's call: its error read "mechanism 'f.py:f' raised InputError on
    # database 0: statistic ... not finite", blaming the function.
    from audit.cli.main import main

    (tmp_path / "f.py").write_text("def f(db, rng):\n    return float(db.sum()) + rng.laplace()\n\n\n"
                                   "def nan(y):\n    return float('nan')\n")
    np.save(tmp_path / "a.npy", np.zeros((3, 1)))
    np.save(tmp_path / "b.npy", np.array([[1.0], [0.0], [0.0]]))
    status = main(["audit", "--mechanism", f"{tmp_path / 'f.py'}:f", "--per-database", "--pair",
                   f"{tmp_path / 'a.npy'},{tmp_path / 'b.npy'}", "--statistic", f"{tmp_path / 'f.py'}:nan",
                   "--claim", "dp:1", "--samples", "400", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert status == 1 and err == (f"miaudit audit: error: statistic '{tmp_path / 'f.py'}:nan' returned [nan], not "
                                   "finite; it must return finite numbers"), err


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


RELEASE = textwrap.dedent("""
    import os
    import signal
    import time

    import numpy as np

    def release(db, rng):
        # A standard normal; with record 0 at 1 its third decimal digit is made even (moved up by 0.001 where odd):
        # its law hardly changes, but the digit's parity is odd half the time under one input and never under the other.
        value = rng.standard_normal()
        if db[0, 0] == 1 and int(abs(value) * 1000) % 2:
            value += np.sign(value) * 0.001
        return {"value": float(value)}

    def parity(output):
        return int(abs(output["value"]) * 1000) % 2

    def broken(output):
        raise ZeroDivisionError("division by zero")

    def slow(output):
        time.sleep(5)
        return 1.0

    calls = {"n": 0, "first": None}

    def grows(output):
        # one number for the probe's two calls, then two
        calls["n"] += 1
        return [1.0] * (1 if calls["n"] <= 2 else 2)

    def per_process(output):
        # One number in the first process that calls it (the probe's worker), two in any other. The first waits,
        # from its third call on (the probe makes two), until another has called it: the job's chunks then come
        # from both processes, each of which sees one length only.
        here = os.path.dirname(os.path.abspath(__file__))
        if calls["first"] is None:
            try:
                os.close(os.open(os.path.join(here, "first"), os.O_CREAT | os.O_EXCL))
                calls["first"] = True
            except FileExistsError:
                calls["first"] = False
                open(os.path.join(here, "second"), "w").close()
        calls["n"] += 1
        deadline = time.monotonic() + 30
        while (calls["first"] and calls["n"] > 2 and not os.path.exists(os.path.join(here, "second"))
               and time.monotonic() < deadline):
            time.sleep(0.01)
        return [1.0] * (1 if calls["first"] else 2)

    def kills_worker(output):
        os.kill(os.getpid(), signal.SIGKILL)

    def speaks(output):
        print("the statistic speaks")
        os.write(1, b"the statistic writes to its file descriptor 1\\n")
        return 1.0

    def deaf(output):
        # Stuck where the alarm that bounds the call cannot reach it, as code inside one compiled call is.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(3600)
""")


def _per_database_spec(folder, statistic, workers, timeout=None, **execution):
    from audit.config.building import build_spec

    (folder / "release.py").write_text(RELEASE)
    pair = {"first": [[0.0], [0.0], [0.0]], "second": [[1.0], [0.0], [0.0]]}
    audit = {"samples": 1000, "seed": 0}
    if statistic is not None:
        audit["statistic"] = str(folder / "release.py") + f":{statistic}"
    mechanism = {"spec": str(folder / "release.py") + ":release", "per_database": True}
    if timeout is not None:
        mechanism["timeout"] = timeout
    return build_spec({"mechanism": mechanism,
                       "pairs": [pair], "claim": {"spec": "dp:1"}, "audit": audit,
                       "execution": {"workers": workers, **execution}})


def _run_error(spec) -> str:
    with pytest.raises(MechanismError) as caught:
        run_audit(spec)
    return str(caught.value)


def test_a_statistic_travels_as_its_specification_and_is_given_to_the_loaded_functions_encoder(tmp_path):
    import pickle

    from mechanisms.execution.worker import MechanismReference
    from mechanisms.outputs.encoding import encoder_of

    spec = _per_database_spec(tmp_path, "parity", workers=2)
    shipped = pickle.loads(pickle.dumps(MechanismReference("release", spec.mechanism_source, spec.mechanism)))
    assert shipped.mechanism is None and shipped.statistic.function is None  # neither travels as an object
    statistic = encoder_of(shipped.resolve()).statistic
    assert statistic.source == spec.statistic.source and statistic.function is not spec.statistic.function
    assert statistic.values({"value": -1.2345}).tolist() == [0.0] and statistic.values({"value": 0.0031}).tolist() == [1.0]
    # Given in code it is pickled with the reference; without one the loaded function's encoder holds none.
    in_code = pickle.loads(pickle.dumps(UserStatistic(product, "product")))
    assert in_code.here() is in_code and in_code.values(np.array([2.0, -3.0])).tolist() == [-6.0]
    bare = pickle.loads(pickle.dumps(MechanismReference("release", spec.mechanism_source)))
    assert encoder_of(bare.resolve()).statistic is None


@pytest.mark.integration
def test_a_per_database_functions_statistic_on_worker_processes_gives_the_in_process_result(tmp_path):
    # The statistic runs inside the function's calls, so in the workers: it travels there as its specification.
    spec = _per_database_spec(tmp_path, "parity", workers=2)
    assert spec.statistic.source == str((tmp_path / "release.py").resolve()) + ":parity"
    in_workers = run_audit(spec)
    in_process = run_audit(_per_database_spec(tmp_path, "parity", workers=1))
    # The parity is odd about half the time under one input and never under the other: its column in the rows the
    # workers returned refutes the claim (the logistic regression on all the row's columns may be the one chosen).
    assert in_workers.claim_verdict == "refuted"
    assert any(name.endswith("release.py:parity(y)") for name in in_workers.event_test.statistics_with_evidence)
    # The same rows for the seed in either process: the same event, bound and verdict, to the last bit.
    assert in_workers.event_test == in_process.event_test
    assert (in_workers.claim_verdict, in_workers.lower_bound) == (in_process.claim_verdict, in_process.lower_bound)
    # Without the statistic nothing sees the leak: the refutation is the statistic's columns'.
    without = run_audit(_per_database_spec(tmp_path, None, workers=1))
    assert without.claim_verdict == "not-refuted" and without.event_test.statistics_with_evidence == []


@pytest.mark.integration
def test_a_statistic_that_fails_or_hangs_in_a_worker_is_the_one_error_it_is_in_process(tmp_path):
    raised = [_run_error(_per_database_spec(tmp_path, "broken", workers)) for workers in (1, 2)]
    assert raised[0] == raised[1]
    release = str(tmp_path / "release.py")
    line = [number for number, text in enumerate((tmp_path / "release.py").read_text().splitlines(), 1)
            if 'raise ZeroDivisionError("division by zero")' in text]
    assert raised[0] == f"statistic '{release}:broken' raised ZeroDivisionError: division by zero (at release.py " \
                        f"line {line[0]}, in broken)"
    late = [_run_error(_per_database_spec(tmp_path, "slow", workers, timeout=0.3, retries=0)) for workers in (1, 2)]
    assert late[0] == late[1]
    assert late[0] == (f"statistic '{release}:slow', running inside the call of mechanism '{release}:release' on "
                       "database 0, did not return within 0.3 s (--timeout); raise --timeout if it is merely slow")


def _sampling_error(spec, workers, timeout=None, backend="local") -> str:
    """The error of sampling the spec's mechanism on 1,000 databases, with ``workers`` processes (or Ray tasks:
    ``backend``) and no retry."""
    from mechanisms.execution.runner import MechanismRunner

    settings = ExecutionSettings(workers=workers, retries=0, timeout=timeout, backend=backend)
    with pytest.raises(MechanismError) as caught:
        with MechanismRunner(spec.mechanism, spec.mechanism_source["spec"], settings,
                             source=spec.mechanism_source) as runner:
            runner.sample(np.zeros((1000, 3, 1)), np.random.default_rng(0), what="audit sample")
    return str(caught.value)


@pytest.mark.integration
def test_a_statistic_of_another_length_in_another_worker_is_named_as_in_one_process(tmp_path):
    # Each worker checks the statistic's lengths in its own process; the rows of two workers then differ in width.
    release = str(tmp_path / "release.py")
    in_process = _sampling_error(_per_database_spec(tmp_path, "grows", workers=1), 1)
    # The statistic's words, not the function's whose call ran it ("mechanism ... raised InputError ...").
    assert in_process == (f"statistic '{release}:grows' returned 2 numbers for one output and 1 for an earlier one; "
                          "it must return as many for every output (audit samples 0-255)")
    in_workers = _sampling_error(_per_database_spec(tmp_path, "per_process", workers=2), 2)
    assert re.fullmatch(f"statistic '{re.escape(release)}:per_process' returned 2 numbers for one output and 1 for an "
                        "earlier one, in another worker process; it must return as many for every output"
                        r"( \(audit samples \d+-\d+\))?", in_workers), in_workers


LOST = ("the worker process running it died: it was killed, ran out of memory, called os._exit or crashed in compiled "
        "code, or was stopped after hanging past --timeout (A process in the process pool was terminated abruptly "
        "while the future was running or pending.)")


@pytest.mark.integration
def test_a_worker_that_dies_inside_a_statistic_names_the_statistic(tmp_path):
    # The worker says, in its task's file, which user code runs inside the mechanism's call; it dies with the record.
    release = str(tmp_path / "release.py")
    assert _sampling_error(_per_database_spec(tmp_path, "kills_worker", workers=2), 2) == (
        f"statistic '{release}:kills_worker', running inside the call of mechanism '{release}:release' on database 0: "
        + LOST)


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance on 1 CPU, started once for the module's Ray tests (unless one runs already)."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, configure_logging=False)
    yield
    if started:
        ray.shutdown()


def _output_until(capfd, seen, within=30.0) -> tuple:
    """(stdout, stderr) captured until ``seen(out, err)`` holds, or ``within`` seconds passed: what Ray's driver
    prints for its workers comes a moment after the events."""
    out = err = ""
    deadline = time.monotonic() + within
    while True:
        captured = capfd.readouterr()
        out, err = out + captured.out, err + captured.err
        if seen(out, err) or time.monotonic() > deadline:
            return out, err
        time.sleep(0.1)


@pytest.mark.integration
@pytest.mark.ray
def test_a_ray_worker_that_dies_inside_a_statistic_names_the_statistic(tmp_path, local_ray, capfd):
    # A Ray task on the audit's machine reports in a file as a local worker does (worker.run_reporting_where_seen).
    from ray._private import worker as driver

    from mechanisms.execution import backends

    printing, dropped = driver.print_to_stdstream, backends._QuietDeaths.dropped
    release = str(tmp_path / "release.py")
    error = _sampling_error(_per_database_spec(tmp_path, "kills_worker", workers=1), 1, backend="ray")
    assert error.startswith(
        f"statistic '{release}:kills_worker', running inside the call of mechanism '{release}:release' on database 0: "
        "the worker process running it died: it was killed, ran out of memory, called os._exit or crashed in "
        "compiled code, or was stopped after hanging past --timeout (WorkerCrashedError"), error
    # Ray's driver published its own notice of the death, some ten lines on stdout; the backend dropped it (it waits
    # for it as it closes), then gave Ray its printing back. The error above is all that is said.
    out, _ = _output_until(capfd, lambda out, err: backends._QuietDeaths.dropped > dropped)
    assert backends._QuietDeaths.dropped == dropped + 1
    assert backends.RAY_WORKER_DIED not in out and driver.print_to_stdstream is printing


@pytest.mark.integration
@pytest.mark.ray
def test_a_ray_worker_is_set_up_as_a_local_worker(tmp_path, local_ray, capfd):
    # worker.init_ray_worker: what a statistic writes to file descriptor 1 goes to the worker's stderr, which Ray
    # forwards to the driver's stderr, not to its stdout, which keeps only the result (--json). Its Python prints are
    # captured and counted (mechanisms.calls.printed): one line per call, the 3 databases' and the probe's 2.
    from mechanisms.execution.runner import MechanismRunner

    spec = _per_database_spec(tmp_path, "speaks", workers=1)
    settings = ExecutionSettings(workers=1, retries=0, backend="ray")
    with MechanismRunner(spec.mechanism, spec.mechanism_source["spec"], settings,
                         source=spec.mechanism_source) as runner:
        runner.sample(np.zeros((3, 3, 1)), np.random.default_rng(0), what="audit sample")
    out, err = _output_until(capfd, lambda out, err: "its file descriptor 1" in err + out)
    assert "its file descriptor 1" in err and "its file descriptor 1" not in out
    assert "the statistic speaks" not in out + err
    assert runner.printed.lines == 3 + 2 and runner.printed.first[0] == "the statistic speaks"


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.ray
def test_the_hard_kill_of_a_statistic_stuck_in_a_ray_task_names_the_statistic(tmp_path, local_ray):
    # The hard kill's deadline, in the Ray task's report, tells a worker stopped stuck from one that crashed (10 s).
    release = str(tmp_path / "release.py")
    assert _sampling_error(_per_database_spec(tmp_path, "deaf", workers=1), 1, timeout=0.2, backend="ray") == (
        f"statistic '{release}:deaf', running inside the call of mechanism '{release}:release' on database 0, did not "
        "return within 0.2 s and ignored the interruption (it is stuck in compiled code, blocks SIGALRM, or catches "
        "every exception); its worker process was stopped 10 s later")


@pytest.mark.integration
def test_the_hard_kill_of_a_statistic_stuck_where_the_timeout_cannot_reach_names_the_statistic(tmp_path, capfd):
    # 0.2 s, then the worker's hard kill 10 s later (worker.HARD_KILL_GRACE): the probe, alone in flight, dies once.
    release = str(tmp_path / "release.py")
    started = time.monotonic()
    assert _sampling_error(_per_database_spec(tmp_path, "deaf", workers=2), 2, timeout=0.2) == (
        f"statistic '{release}:deaf', running inside the call of mechanism '{release}:release' on database 0, did not "
        "return within 0.2 s and ignored the interruption (it is stuck in compiled code, blocks SIGALRM, or catches "
        "every exception); its worker process was stopped 10 s later")
    assert time.monotonic() - started < 2 * 10.2  # one hard kill, not a second one for a run alone
    # The one line is all: the dying worker prints no stack dump (faulthandler's "most recent call first") to stderr.
    assert "most recent call first" not in capfd.readouterr().err


@pytest.mark.integration
def test_a_statistic_that_cannot_travel_to_the_workers_is_named(tmp_path):
    import dataclasses

    spec = dataclasses.replace(_per_database_spec(tmp_path, "parity", workers=2),
                               statistic=UserStatistic(lambda output: 1.0, "in code"))
    assert _run_error(spec).startswith(f"statistic 'in code' (--statistic) cannot be sent to worker processes with "
                                       f"mechanism '{tmp_path / 'release.py'}:release', inside whose calls it runs")


@pytest.mark.train
def test_an_audit_with_neural_critics_says_the_statistic_was_not_tried():
    pair = NeighbouringPair(np.zeros((3, 1)), np.array([[1.0], [0.0], [0.0]]))
    result = run_audit(AuditSpec(mechanism=signs_agree_with_record, priors=(pair.prior(),), claim=parse_claim("dp:1"),
                                 samples=1000, records=(0,), seed=0, statistic=product, mi_critic="neural",
                                 critic={"max_steps": 20, "eval_every": 10}))
    assert any("the statistic 'product' (--statistic)" in note and "it was not tried" in note for note in result.notes)
    assert "product(y)" not in (result.event_test.statistics_tried or [])


@pytest.mark.integration
@pytest.mark.ray
def test_a_per_database_functions_statistic_on_ray_gives_the_in_process_result(tmp_path, local_ray):
    # Ray tasks get the same MechanismReference, through the object store: the statistic travels as on workers.
    on_ray = run_audit(_per_database_spec(tmp_path, "parity", workers=1, backend="ray"))
    in_process = run_audit(_per_database_spec(tmp_path, "parity", workers=1))
    assert on_ray.claim_verdict == "refuted" and on_ray.event_test == in_process.event_test


class _CountingStatistic:
    """The product of a per-database function's two outputs, counting its calls."""

    def __init__(self):
        self.calls = 0
        self.__name__ = "counted_product"

    def __call__(self, output):
        self.calls += 1
        return output["first"] * output["second"]


def _shifted_release(db, rng):
    y = rng.standard_normal(2)
    return {"first": float(y[0] + db[0, 0]), "second": float(y[1])}


def _per_database_audit(prior, statistic, samples):
    mechanism = PerDatabaseMechanism(_shifted_release, "release", encoder=OutputEncoder())
    return run_audit(AuditSpec(mechanism=mechanism, priors=(prior,), claim=parse_claim("dp:1"), samples=samples,
                               records=(0,), seed=0, statistic=statistic))


@pytest.mark.train  # a Bernoulli prior gets neural critics
def test_a_statistic_that_cannot_be_tried_is_not_called():
    # Under a prior that is not a two-point prior the MI test's critics are neural and the statistic is tried
    # nowhere (the note says so), yet the encoder called it on all 3,421 outputs of this audit and the critics
    # read its values as one more input column. Now it is not called, and the audit is the one without it.
    from mechanisms.inputs.priors import ProductBernoulli

    prior = ProductBernoulli(0.5, shape=(3, 1))
    counted = _CountingStatistic()
    with_statistic = _per_database_audit(prior, counted, 400)
    without = _per_database_audit(prior, None, 400)
    assert counted.calls == 0
    assert any("it was not tried" in note for note in with_statistic.notes)
    assert with_statistic.lower_bound == without.lower_bound and with_statistic.estimate == without.estimate
    assert with_statistic.samples_by_purpose == without.samples_by_purpose


def test_a_statistic_that_may_be_tried_is_still_called_on_the_runs():
    # Under a two-point prior on a neighbouring pair (classifier critics) it is a candidate: called once on every
    # output, the runner's two probe calls, the MI sample's and both event tests' certification runs.
    pair = NeighbouringPair(np.zeros((3, 1)), np.array([[1.0], [0.0], [0.0]]))
    counted = _CountingStatistic()
    result = _per_database_audit(pair.prior(), counted, 1000)
    assert "counted_product(y)" in result.event_test.statistics_tried
    assert set(result.samples_by_purpose) == {"mi", "event_certification", "float_certification"}
    assert counted.calls == 2 + result.samples


class _ConstantAfter(_CountingStatistic):
    """The product until ``after`` calls, then 0: the statistic's values on the runs after them are not read."""

    def __init__(self, after):
        super().__init__()
        self.after = after

    def __call__(self, output):
        product = super().__call__(output)
        return 0.0 if self.calls > self.after else product


def test_the_chosen_events_read_the_statistics_values_on_their_certification_runs():
    # The calls on the certification runs are not spent for nothing where the event chosen is not the user's
    # statistic: the logistic regression chosen here reads every output column, the statistic's included, and the
    # float-bit statistics read every column's bits. Its values replaced by 0 after the probe's 2 calls and the MI
    # sample's 1,000 change both tests' counts on the same runs.
    pair = NeighbouringPair(np.zeros((3, 1)), np.array([[1.0], [0.0], [0.0]]))
    full = _per_database_audit(pair.prior(), _ConstantAfter(10**9), 1000)
    cut = _per_database_audit(pair.prior(), _ConstantAfter(2 + 1000), 1000)
    assert full.event_test.description.startswith("E = {logistic log-odds(a | y)")
    assert cut.event_test.description == full.event_test.description  # chosen on the MI sample: the same event
    assert cut.event_test.p_first != full.event_test.p_first
    assert cut.float_event_test.p_first != full.float_event_test.p_first
