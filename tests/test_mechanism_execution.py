"""Calling user code safely and in parallel: private inputs, timeouts, sys.exit, hidden
randomness, memory, seeded chunks identical on every backend, retries and worker deaths."""

import json
import os
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import re

import pytest

from audit.engine import draw_samples, run_audit
from audit.spec import AuditSpec
from estimators.neural import CriticConfig
from estimators.validation import InputError
from mechanisms.base import MechanismError
from mechanisms.execution import runner as runner_module
from mechanisms.execution.memory import check_audit_memory, check_output_memory, format_bytes
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.calls.user_call import call_user_code
from mechanisms.inputs.priors import ProductBernoulli

FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
import execution_mechanisms as fx  # noqa: E402
from conftest import SMALL_CRITIC  # noqa: E402

SOURCE = str(FIXTURES / "execution_mechanisms.py")  # workers load FILE.py:NAME, as from the command line
FAST = CriticConfig(max_steps=400)


def numbered(m=600, n=3, k=1):
    """Databases whose first entry is their index, so a fixture can fail on one of them."""
    dbs = np.zeros((m, n, k))
    dbs[:, 0, 0] = np.arange(m)
    dbs[:, 1:, :] = np.random.default_rng(5).integers(0, 2, size=(m, n - 1, k))
    return dbs


def sample(name, dbs, seed=0, **settings):
    with MechanismRunner(getattr(fx, name), name, ExecutionSettings(**settings), source=f"{SOURCE}:{name}") as r:
        return r.sample(dbs, np.random.default_rng(seed))


@pytest.fixture
def marker(tmp_path, monkeypatch):
    path = tmp_path / "marker"
    monkeypatch.setenv("MIAUDIT_TEST_MARKER", str(path))
    return path


# ---------------------------------------------------------------- A2: a mechanism writing into its input


def test_databases_are_unchanged_by_a_mechanism_that_zeroes_them():
    prior = ProductBernoulli(0.5, shape=(4, 1))
    spec = AuditSpec(mechanism=fx.leak_then_zero, priors=[prior], notion="mi-dp", epsilon=0.1, samples=1000)
    with MechanismRunner(fx.leak_then_zero, "leak") as runner:
        dbs, outputs = draw_samples(spec, prior, np.random.default_rng(3), runner)
    with MechanismRunner(fx.summing, "benign") as runner:  # same seed, a mechanism that writes nothing
        expected, _ = draw_samples(spec, prior, np.random.default_rng(3), runner)
    np.testing.assert_array_equal(dbs, expected)
    assert dbs.any()
    np.testing.assert_array_equal(outputs, dbs[:, 0, :])  # the leak, read from untouched databases


@pytest.mark.parametrize("name, verdict", [("leak_then_zero", "violation"),
                                           ("noise_into_input", "no-violation-detected")])
@pytest.mark.train
def test_mechanisms_writing_into_their_input_get_the_true_verdict(name, verdict):
    """Before: the leak passed as 'no violation' and the pure noise was certified as violating."""
    prior = ProductBernoulli(0.5, shape=(3, 1))
    result = run_audit(AuditSpec(mechanism=getattr(fx, name), priors=[prior], notion="mi-dp", epsilon=0.1,
                                 samples=3000, slices=0, event_runs=0, critic=FAST, seed=2))
    assert result.verdict == verdict


# ---------------------------------------------------------------- E, D: hangs, sys.exit, hidden randomness


@pytest.mark.integration
def test_a_hanging_mechanism_is_stopped_at_the_timeout_and_named():
    with pytest.raises(MechanismError, match=r"mechanism 'hangs' did not return within 0.5 s.*--timeout"):
        sample("hangs", numbered(4), timeout=0.5)


@pytest.mark.integration
def test_a_hanging_call_off_the_main_thread_is_abandoned_at_the_timeout():
    caught = []

    def target():
        try:
            call_user_code(fx.hangs, (None, None), who="mechanism 'hangs'", timeout=0.3)
        except MechanismError as exc:
            caught.append(str(exc))

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    assert caught and "did not return within 0.3 s" in caught[0]


@pytest.mark.integration
def test_the_first_call_has_a_default_timeout(monkeypatch):
    monkeypatch.setattr(runner_module, "PROBE_TIMEOUT", 0.5)
    with pytest.raises(MechanismError, match="did not return within 0.5 s on database 0"):
        sample("hangs", numbered(4))  # no timeout given


@pytest.mark.integration
def test_a_hanging_prior_is_named():
    def stuck(m, rng):
        import time

        time.sleep(3600)

    with MechanismRunner(fx.summing, "s", ExecutionSettings(timeout=0.5)) as runner:
        with pytest.raises(MechanismError, match="prior 'stuck' did not return within 0.5 s"):
            runner.draw(stuck, 10, np.random.default_rng(0))


def _secret_spec(g, w=None, **execution):
    from audit.frameworks import PufferfishFramework, SecretFunction, SecretPair

    secret = SecretFunction(f"g = {g}", getattr(fx, g))
    if w is None:
        framework = PufferfishFramework("hanging secret", (secret,))
    else:
        public = SecretFunction(f"w = {w}", getattr(fx, w))
        framework = PufferfishFramework("hanging secret", (secret,), (public,), (SecretPair(secret, public),))
    return AuditSpec(mechanism=fx.summing, priors=[ProductBernoulli(0.5, shape=(3, 1))], notion="mi-pp",
                     epsilon=0.1, framework=framework, samples=600, slices=0, event_runs=0, critic=FAST,
                     execution=ExecutionSettings(**execution))


@pytest.mark.integration
def test_a_secret_function_that_hangs_in_the_audit_is_stopped_at_the_timeout_and_named():
    # g answers the early probe on 2 databases, then hangs on the audit's sample: the engine's call is bounded.
    spec = _secret_spec("secret_hangs_on_large_batches", timeout=0.5)
    with pytest.raises(MechanismError, match=r"secret function 'g = secret_hangs_on_large_batches' did not return "
                                             r"within 0.5 s on a batch of 600 databases \(--timeout\)"):
        run_audit(spec)


@pytest.mark.integration
def test_a_public_function_that_hangs_is_named_before_sampling(monkeypatch):
    with pytest.raises(MechanismError, match=r"secret function 'w = secret_hangs' did not return within 0.5 s "
                                             r"on a batch of 2 databases"):
        _secret_spec("secret_first_record", "secret_hangs", timeout=0.5)
    # Without --timeout the first call has the mechanism's first-call limit.
    from audit import spec as spec_module

    monkeypatch.setattr(spec_module, "PROBE_TIMEOUT", 0.5)
    with pytest.raises(MechanismError, match="secret function 'w = secret_hangs' did not return within 0.5 s"):
        _secret_spec("secret_first_record", "secret_hangs")


def test_sys_exit_in_a_mechanism_is_an_error_naming_it():
    with pytest.raises(MechanismError, match=r"mechanism 'exits' called sys.exit\(3\)"):
        sample("exits", numbered(4))


def test_numpy_global_randomness_is_seeded_per_chunk_and_reproducible():
    dbs = numbered(300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = sample("global_numpy", dbs, chunk_size=64)
    np.testing.assert_array_equal(first, sample("global_numpy", dbs, chunk_size=64))
    assert np.unique(first[:, 0] - dbs.sum(axis=1)[:, 0]).size == 300  # fresh noise for every database


def test_hidden_randomness_is_warned_about_in_process_and_noted():
    with MechanismRunner(fx.own_generator, "own_generator", ExecutionSettings()) as runner:
        with pytest.warns(UserWarning, match="mechanism 'own_generator' returned different outputs"):
            runner.sample(numbered(10), np.random.default_rng(0))
    assert runner.notes and "cannot be reproduced" in runner.notes[0]


@pytest.mark.integration
def test_hidden_randomness_stops_a_parallel_audit():
    with pytest.raises(MechanismError, match="may repeat from one worker to the next"):
        sample("own_generator", numbered(10), workers=2)


# ---------------------------------------------------------------- C: memory


def test_a_sample_budget_beyond_memory_is_refused_with_the_size_it_needs():
    # databases drawn in chunks then joined (x2), at least one output each (x2), two priors
    need = 10**9 * 2 * (2 * 20 * 3 * 8 + 2 * 8)
    with pytest.raises(InputError, match=rf"'samples' \(1000000000\).*at least {re.escape(format_bytes(need))}"):
        check_audit_memory(10**9, (20, 3), 2, available=10**9)
    assert check_audit_memory(1000, (20, 3), 2, available=10**9) == 1000 * 2 * (2 * 20 * 3 * 8 + 2 * 8)


def test_memory_check_counts_event_runs_and_output_width():
    # Issue 32 B1: --event-runs 10^13 ended in a 218 TiB allocation error; the outputs were not counted.
    runs = 10**13
    # Per run of each of the two databases (both held until scored): a database copy, outputs (x2), a score.
    event_bytes = 2 * runs * (20 * 3 * 8 + 2 * 5 * 8 + 8)
    with pytest.raises(InputError, match=r"argument 'event_runs' \(10000000000000\).*lower --event-runs"):
        check_audit_memory(1000, (20, 3), 1, event_runs=runs, output_width=5, available=2**40)
    assert check_audit_memory(1000, (20, 3), 1, event_runs=10**4, output_width=5, available=2**40) == (
        1000 * 2 * (20 * 3 * 8 + 5 * 8) + 2 * 10**4 * (20 * 3 * 8 + 2 * 5 * 8 + 8))
    assert event_bytes > 2**40
    with pytest.raises(InputError, match=r"argument 'samples' \(20000 audit samples\).*20000 x 1000000 float64"):
        check_output_memory(20000, 10**6, "audit sample", budget="samples", available=2**30)
    with pytest.raises(InputError, match=r"lower --event-runs"):
        check_output_memory(10**9, 10, "event-test run", budget="event_runs", available=2**30)


def test_memory_check_counts_the_event_tests_scoring_through_a_records_critic():
    # Issue 43: the check predicted 318 MiB for an MI-DP audit of 20,000 records whose peak RSS was 1.25 GB; the
    # event test's scoring was the peak. Its arrays, listed by shape and dtype for R runs of databases n x k with
    # d output values, a record's critic reading the other (n - 1)·k numbers (audit.engine's event statistic).
    from mechanisms.execution.memory import audit_memory_parts

    runs, n, k, d = 300, 40, 2, 3
    f64 = np.dtype(np.float64).itemsize
    v = (runs, d + (n - 1) * k)  # the critic's second input: output and other records
    arrays = [
        ((runs, n, k), f64), ((runs, n, k), f64),          # the runs of the two databases
        ((runs, d), f64), ((runs, d), f64), ((runs,), f64),  # the first's outputs, chunks and joined; its scores
        ((runs, d), f64), ((runs, d), f64), ((runs,), f64),  # the second's
        ((runs, n, k), f64),                                 # the scored copy with the record set
        ((runs, (n - 1) * k), f64),                          # the other records (check_batch_output's copy)
        (v, f64),                                            # v's blocks side by side, zero-padded: one array
        (v, f64), (v, np.dtype(np.float32).itemsize),      # critic_inputs' float64 temporary and float32 inputs
    ]
    counted = sum(int(np.prod(shape)) * size for shape, size in arrays)
    parts = audit_memory_parts(10, (n, k), 1, event_runs=runs, output_width=d, other_records=(n - 1) * k)
    assert parts["event runs"] + parts["event scoring"] == counted
    # Without a neural critic of a record (classifier critics score the outputs), the runs alone.
    plain = audit_memory_parts(10, (n, k), 1, event_runs=runs, output_width=d)
    assert plain["event scoring"] == 0 and plain["event runs"] == 2 * runs * (n * k * f64 + 2 * d * f64 + f64)
    need = check_audit_memory(10, (n, k), 1, event_runs=runs, output_width=d, other_records=(n - 1) * k,
                              available=2**40)
    assert need == 2 * 10 * (n * k + d) * f64 + counted


def test_memory_check_counts_the_critics_features_and_models():
    # Issue 32 B1: critic training (features of every critic, batched models) was not counted.
    from estimators.critics import CriticEnsemble
    from mechanisms.execution.memory import critic_memory_parts

    critics, samples, width, hidden, batch, per_chunk = 6, 1000, 7, 4, 16, 4
    ensemble = CriticEnsemble(per_chunk, width, hidden=hidden)  # the parameters counted by torch, not by formula
    parameters = sum(p.numel() for p in ensemble.parameters())
    features = 8 * critics * samples * width + per_chunk * samples * width * (8 + 4 + 4)
    scoring = per_chunk * min(samples, max(256, 2**24 // (per_chunk * hidden))) * hidden  # all 1000 rows in one pass
    models = 4 * (5 * parameters + max(per_chunk * 2 * batch * hidden, scoring))
    parts = critic_memory_parts(critics, samples, width, hidden=hidden, depth=2, batch_size=batch,
                                critics_per_chunk=per_chunk)
    assert parts == {"critic features": features, "critic models": models}
    # Beside the databases and outputs (one prior of 1000 databases of 3 x 1): refused naming --samples and --slices.
    base = 1000 * 2 * (3 * 8 + 8)
    assert check_audit_memory(1000, (3, 1), 1, critics=parts, available=10**10) == base + features + models
    with pytest.raises(InputError, match=rf"'samples' \(1000\).*at least {re.escape(format_bytes(base + features + models))}"
                                         r".*critic features .*lower --samples or --slices, or audit fewer records: "
                                         r"--records$"):
        check_audit_memory(1000, (3, 1), 1, critics=parts, available=base + features)


def test_an_audit_whose_sliced_critics_exceed_memory_is_one_line_before_running(monkeypatch, capsys):
    # laplace_sum's prior varies record 0 only (records 1 and 2 are constant: no critic): 64 sliced critics on
    # 2000 samples of three one-dimensional projections (x, y, z), counted here by hand.
    from audit.cli.main import main
    from mechanisms.execution import memory

    critics, samples, width = 64, 2000, 3
    features = 8 * critics * samples * width + critics * samples * width * 16
    parameters = width * 32 + 2 * 32 + 1 + width  # the default shallow critic of hidden width 32
    models = 4 * (5 * critics * parameters + max(critics * 2 * 256 * 32, critics * samples * 32))
    base = samples * 2 * (3 * 2 * 8 + 8)  # databases of 3 x 2 and one output each, chunks and joined
    monkeypatch.setattr(memory, "available_memory", lambda: base + features)
    calls = []
    monkeypatch.setattr("audit.engine.draw_samples", lambda *a, **k: calls.append(1))
    assert main(["audit", "--mechanism", "catalog:laplace_sum", "--notion", "smi-dp", "--epsilon", "1",
                 "--samples", "2000", "--slices", "64", "--quiet"]) == 2
    assert calls == []  # refused before any sampling
    line, = capsys.readouterr().err.strip().splitlines()
    assert f"at least {format_bytes(base + features + models)}" in line
    assert line.endswith("lower argument 'samples' (--samples, [audit] samples) or argument 'slices' (--slices, "
                         "[audit] slices), or audit fewer records: argument 'records' (--records, [audit] records)")


def test_cgroup_memory_limit_bounds_the_memory_available(tmp_path, monkeypatch):
    # A container's limit (cgroup v2 memory.max, v1 memory.limit_in_bytes) binds, not the host's MemAvailable.
    import builtins
    from estimators import memory

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "memory.max").write_text("1073741824\n")
    (tmp_path / "app" / "memory.current").write_text("268435456\n")
    (tmp_path / "memory.max").write_text("max\n")  # the root: no limit
    real_open = builtins.open

    def fake_open(path, *args, **kwargs):
        if path == "/proc/self/cgroup":
            import io
            return io.StringIO("0::/app\n")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    assert memory.cgroup_memory_headroom(str(tmp_path)) == 2**30 - 2**28
    (tmp_path / "memory").mkdir()  # v1 layout under the same mount, tighter
    (tmp_path / "memory" / "app").mkdir()
    (tmp_path / "memory" / "app" / "memory.limit_in_bytes").write_text(str(2**29))
    (tmp_path / "memory" / "app" / "memory.usage_in_bytes").write_text(str(2**28))
    assert memory.cgroup_memory_headroom(str(tmp_path)) == 2**28
    monkeypatch.setattr(memory, "cgroup_memory_headroom", lambda root="/sys/fs/cgroup": 12345)
    assert memory.available_memory() == 12345


def test_run_audit_refuses_an_impossible_budget_before_allocating():
    prior = ProductBernoulli(0.5, shape=(1000, 1000))
    spec = AuditSpec(mechanism=fx.summing, priors=[prior], notion="mi-dp", epsilon=0.1, samples=10**9)
    with pytest.raises(InputError, match="argument 'samples'.*of memory"):
        run_audit(spec)


def _wide_outputs(dbs, rng):
    """10,000 outputs per database (a histogram with 10,000 bins)."""
    return np.repeat(dbs.reshape(dbs.shape[0], -1), 10_000, axis=1) + rng.standard_normal((dbs.shape[0], 10_000))


def test_run_audit_refuses_outputs_beyond_memory_once_their_width_is_known(monkeypatch):
    # The pre-check assumes one output per database; the probe tells the width: 400 x 10,000 float64
    # (chunks and joined: 64 MB) is refused at 16 MB before the sample's chunks run.
    from estimators import memory  # available_memory reads the headroom where it is defined

    monkeypatch.setattr(memory, "cgroup_memory_headroom", lambda root="/sys/fs/cgroup": 16 * 2**20)
    calls = []

    def counted(dbs, rng):
        calls.append(dbs.shape[0])
        return _wide_outputs(dbs, rng)

    spec = AuditSpec(mechanism=counted, priors=[ProductBernoulli(0.5, shape=(1, 1))], notion="mi-dp",
                     epsilon=0.1, samples=400)
    with pytest.raises(InputError, match=r"argument 'samples' \(400 audit samples\).*400 x 10000 float64"):
        run_audit(spec)
    assert sum(calls) == 2  # the probe's two calls on one database, nothing more


# ---------------------------------------------------------------- chunks, backends, faults


@pytest.mark.integration
def test_samples_are_identical_for_one_and_two_workers_and_any_retry():
    dbs = numbered(600)
    one = sample("summing", dbs, chunk_size=64)
    np.testing.assert_array_equal(one, sample("summing", dbs, chunk_size=64, workers=2))
    noise = one - dbs.sum(axis=1)
    assert np.unique(noise).size == 600  # no chunk repeats another's draws


def test_samples_depend_on_the_seed():
    dbs = numbered(100)
    assert not np.array_equal(sample("summing", dbs, seed=0), sample("summing", dbs, seed=1))


def test_a_task_that_raises_once_is_retried(marker):
    dbs = numbered(600)
    np.testing.assert_array_equal(sample("flaky", dbs, chunk_size=64), sample("summing", dbs, chunk_size=64))
    assert marker.exists()


def _printed_by(name, dbs, **settings):
    with MechanismRunner(getattr(fx, name), name, ExecutionSettings(**settings), source=f"{SOURCE}:{name}") as r:
        r.sample(dbs, np.random.default_rng(0))
        return r.printed, r.call_notes()


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.integration)])
def test_what_a_failed_attempt_printed_is_counted(marker, workers):
    printed, notes = _printed_by("prints_and_fails_once", numbered(600), chunk_size=64, workers=workers)
    assert marker.exists()  # the first attempt at the chunk of database 300 failed and was retried
    # Written out: 2 lines a call; the calls are the probe's 2, one a chunk (600 / 64: 10 chunks), and the failed
    # attempt at the chunk of databases 256-319.
    lines = 2 * (2 + 10 + 1)
    assert printed.lines == lines
    [note] = notes
    assert note.startswith(f"mechanism 'prints_and_fails_once' printed {lines} lines while the audit ran it")
    if workers == 1:  # in order: the probe's two calls (database 0), then the failed attempt, counted as it failed
        assert printed.first == ("call on databases 0-0", "a warning", "call on databases 0-0")


def test_a_task_that_always_raises_stops_with_the_database_index():
    # A ValueError refuses the databases' values: tried once, not retried, located on that attempt.
    # The line of the fixture's file that raised: the one that holds its raise statement.
    source = Path(fx.raises_on_sample_300.__code__.co_filename).read_text().splitlines()
    first = fx.raises_on_sample_300.__code__.co_firstlineno
    line = next(number for number in range(first, len(source) + 1) if "raise ValueError" in source[number - 1])
    with pytest.raises(MechanismError, match=r"raised ValueError on audit sample 300: boom \(at execution_mechanisms.py "
                                             rf"line {line}, in raises_on_sample_300\)$") as info:
        with MechanismRunner(fx.raises_on_sample_300, "raises", ExecutionSettings(chunk_size=64)) as r:
            r.sample(numbered(600), np.random.default_rng(0), what="audit sample")
    assert info.value.database_index == 300


@pytest.mark.integration
def test_a_worker_killed_mid_audit_is_replaced_and_the_samples_do_not_change(marker):
    dbs = numbered(600)
    killed = sample("dies_once", dbs, chunk_size=64, workers=2)
    assert marker.exists()
    np.testing.assert_array_equal(killed, sample("summing", dbs, chunk_size=64))


@pytest.mark.integration
def test_a_worker_that_always_dies_stops_the_audit_naming_mechanism_and_databases():
    with pytest.raises(MechanismError, match=r"mechanism 'always_dies': the worker process running it on "
                                             r"databases 256-319 died \(on each of 2 attempts\)"):
        sample("always_dies", numbered(600), chunk_size=64, workers=2, retries=1)


@pytest.mark.integration
def test_a_hanging_worker_is_stopped_at_the_timeout():
    with pytest.raises(MechanismError, match=r"mechanism 'hangs' did not return within 1 s"):
        sample("hangs", numbered(4), workers=2, timeout=1, retries=0)


def test_a_tasks_report_says_the_user_code_running_inside_the_mechanisms_call_and_whether_its_kill_was_due(tmp_path):
    # What the audit's process reads from a dead worker's task (worker.run_reporting), here read while it runs.
    import time

    from mechanisms.execution import worker

    path, seen = str(tmp_path / "report"), {}

    def statistic():
        seen["statistic"] = worker.lost_in(path)
        return 1.0

    def mechanism():
        seen["mechanism"] = worker.lost_in(path)
        value = call_user_code(statistic, who="statistic 's.py:fn'")
        seen["after"] = worker.lost_in(path)
        return value

    def task(reference, chunk, hard_kill):
        worker._REPORT.hard_kill_at(time.monotonic() + 60)
        value = call_user_code(mechanism, who="mechanism 'm.py:f'", timeout=30)
        worker._REPORT.hard_kill_at(time.monotonic() - 1)
        seen["due"] = worker.lost_in(path)
        return value

    assert worker.run_reporting(path, task, None, None) == 1.0
    assert seen == {"mechanism": (None, False), "statistic": ("statistic 's.py:fn'", False), "after": (None, False),
                    "due": (None, True)}
    assert worker.lost_in(None) == (None, False) and worker.lost_in(str(tmp_path / "never written")) == (None, False)


def test_a_ray_task_reports_only_where_it_reads_the_audits_token(tmp_path):
    # worker.run_reporting_where_seen: on the audit's machine the task finds the token the audit wrote in the folder
    # and reports; elsewhere (another token there, or no such folder) it runs without a report, and the death of its
    # worker names the mechanism (lost_in finds nothing).
    from mechanisms.execution import worker

    (tmp_path / worker.TOKEN_FILE).write_text("audit's token")

    def task(report):
        # What the audit's process would read from the task's report while a statistic runs inside the mechanism.
        def mechanism():
            return call_user_code(lambda: worker.lost_in(str(tmp_path / report)), who="statistic 's.py:fn'")
        return lambda reference, chunk, hard_kill: call_user_code(mechanism, who="mechanism 'm.py:f'", timeout=30)

    assert worker.run_reporting_where_seen(str(tmp_path), "audit's token", "1", task("1"), None, None) == (
        "statistic 's.py:fn'", False)
    assert worker.run_reporting_where_seen(str(tmp_path), "another token", "2", task("2"), None, None) == (None, False)
    assert not (tmp_path / "2").exists()
    assert worker.run_reporting_where_seen(str(tmp_path / "elsewhere"), "audit's token", "3", task("3"), None, None) == (
        None, False)


def test_a_worker_stopped_stuck_is_said_so_naming_what_ran():
    from mechanisms.execution.backends import WorkerLost
    from mechanisms.execution.chunks import MECHANISM, ChunkTask

    task = ChunkTask(0, 1, 256, None, 256, 0.5, MECHANISM)
    with MechanismRunner(fx.summing, "m.py:f") as runner:
        stuck = runner._final_error(task, WorkerLost("pool broken", None, True), 2, "database")
        inside = runner._final_error(task, WorkerLost("pool broken", "statistic 's.py:fn'", True), 1, "database")
    assert str(stuck) == ("mechanism 'm.py:f' did not return within 0.5 s on databases 256-511 and ignored the "
                          "interruption (it is stuck in compiled code, blocks SIGALRM, or catches every exception); "
                          "its worker process was stopped 10 s later (on each of 2 attempts)")
    assert str(inside) == ("statistic 's.py:fn', running inside the call of mechanism 'm.py:f' on databases 256-511, "
                           "did not return within 0.5 s and ignored the interruption (it is stuck in compiled code, "
                           "blocks SIGALRM, or catches every exception); its worker process was stopped 10 s later")


def test_a_mechanism_without_a_source_that_cannot_be_pickled_is_refused_for_workers():
    with MechanismRunner(lambda d, rng: d.sum(axis=1), "lambda", ExecutionSettings(workers=2)) as runner:
        with pytest.raises(MechanismError, match="cannot be sent to worker processes"):
            runner.sample(numbered(4), np.random.default_rng(0))


@pytest.mark.parametrize("settings, message", [
    ({"workers": 0}, "'workers'"), ({"workers": "many"}, "'workers'"), ({"backend": "dask"}, "'backend'"),
    ({"timeout": -1}, "'timeout'"), ({"chunk_size": 0}, "'chunk_size'"), ({"ray_address": "x:1"}, "'ray_address'"),
])
def test_bad_execution_settings_name_the_argument(settings, message):
    with pytest.raises(InputError, match=message):
        ExecutionSettings(**settings)


def test_auto_workers_is_the_number_of_cores():
    assert ExecutionSettings(workers="auto").workers == (os.cpu_count() or 1)


# ---------------------------------------------------------------- the same audit on every backend


def audit_json(**execution):
    prior = ProductBernoulli(0.5, shape=(3, 1))
    result = run_audit(AuditSpec(mechanism=fx.summing, priors=[prior], notion="mi-dp", epsilon=0.1, samples=2000,
                                 slices=2, event_runs=600, critic=SMALL_CRITIC, seed=4,
                                 execution=ExecutionSettings(chunk_size=100, **execution),
                                 mechanism_source=f"{SOURCE}:summing"))
    payload = result.to_dict()
    payload.pop("seconds")
    return payload


@pytest.mark.integration
@pytest.mark.train
def test_audit_json_is_identical_for_one_and_two_workers():
    assert audit_json() == audit_json(workers=2)


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """A local Ray instance on 2 CPUs, started once; its workers see the marker file's name."""
    ray = pytest.importorskip("ray")
    marker = tmp_path_factory.mktemp("ray") / "marker"
    saved = os.environ.get("MIAUDIT_TEST_MARKER")
    os.environ["MIAUDIT_TEST_MARKER"] = str(marker)  # before ray.init: its workers inherit it
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, configure_logging=False)
    yield marker
    if started:
        ray.shutdown()
    if saved is None:
        os.environ.pop("MIAUDIT_TEST_MARKER", None)
    else:
        os.environ["MIAUDIT_TEST_MARKER"] = saved


@pytest.mark.integration
@pytest.mark.ray
@pytest.mark.train
def test_ray_gives_the_same_audit_json_as_in_process(local_ray):
    assert audit_json(backend="ray") == audit_json()


@pytest.mark.integration
@pytest.mark.ray
def test_ray_task_failures_name_the_mechanism_and_database(local_ray):
    dbs = numbered(600)
    np.testing.assert_array_equal(sample("flaky", dbs, chunk_size=64, backend="ray"),
                                  sample("summing", dbs, chunk_size=64))
    assert local_ray.exists()  # the first attempt failed and was retried
    with pytest.raises(MechanismError, match=r"raised ValueError on audit sample 300: boom"):
        with MechanismRunner(fx.raises_on_sample_300, "raises", ExecutionSettings(chunk_size=64, backend="ray"),
                             source=f"{SOURCE}:raises_on_sample_300") as r:
            r.sample(dbs, np.random.default_rng(0), what="audit sample")
    local_ray.unlink()  # prints_and_fails_once fails on its first attempt again
    with MechanismRunner(fx.prints_and_fails_once, "chatty", ExecutionSettings(chunk_size=64, backend="ray"),
                         source=f"{SOURCE}:prints_and_fails_once") as r:
        r.sample(dbs, np.random.default_rng(0))
    assert local_ray.exists()
    assert r.printed.lines == 2 * (2 + 10 + 1)  # as test_what_a_failed_attempt_printed_is_counted writes it out
    # Ray reports the timeout itself, or (seen once in a full CI run, not reproduced alone) the death
    # of the worker that the hard kill ended: either way one error names the mechanism and database.
    with pytest.raises(MechanismError, match=r"mechanism 'hangs'(?: did not return within 1 s|: the worker process "
                                             r"running it on database 0 died)"):
        sample("hangs", numbered(4), backend="ray", timeout=1, retries=0)


def test_a_catalog_entry_with_parameters_reaches_workers_with_its_parameters():
    # Before, workers loaded "catalog:NAME" and silently ran the entry at its default parameters.
    import pickle

    from audit.config.building import build_spec
    from mechanisms.catalog import get_entry
    from mechanisms.execution.worker import MechanismReference

    spec = build_spec({"mechanism": {"spec": "catalog:laplace_sum", "params": {"epsilon": 5.0}}})
    shipped = pickle.loads(pickle.dumps(MechanismReference("laplace_sum", spec.mechanism_source)))
    dbs = np.zeros((4, 3, 2))
    expected = get_entry("laplace_sum", {"epsilon": 5.0}).mechanism(dbs, np.random.default_rng(0))
    np.testing.assert_array_equal(shipped.resolve()(dbs, np.random.default_rng(0)), expected)
    assert not np.array_equal(get_entry("laplace_sum").mechanism(dbs, np.random.default_rng(0)), expected)


@pytest.mark.integration
@pytest.mark.train
@pytest.mark.ray
@pytest.mark.parametrize("route", ["diffprivlib object", "diffprivlib class, file query"])
def test_library_mechanisms_give_the_same_json_on_ray(route, local_ray, capsys):
    assert library_json(capsys, route, "--backend", "ray") == library_json(capsys, route)


# ---------------------------------------------------------------- the command line


def main_audit(*argv):
    from audit.cli.main import main

    return main(["audit", *argv])


def cli(*argv):
    return main_audit("--prior", "builtin:bernoulli", "--n", "3", "--notion", "mi-dp", "--epsilon", "0.1",
                      "--samples", "2000", "--slices", "0", "--event-runs", "0", "--set", "critic.max_steps=100",
                      "--quiet", *argv)


def test_cli_a_mechanism_calling_sys_exit_fails_with_status_1_naming_it(capsys):
    assert cli("--mechanism", f"{SOURCE}:exits") == 1
    assert f"mechanism '{SOURCE}:exits' called sys.exit(3)" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (("--workers", "0"), "[execution] workers (--workers) must be a positive integer"),
    (("--workers", "many"), "[execution] workers (--workers) must be a positive integer"),
    (("--chunk-size", "0"), "[execution] chunk_size (--chunk-size) must be >= 1"),
    (("--ray-address", "x:1"), "applies to --backend ray only"),
    (("--set", "execution.retries=-1"), "[execution] retries must be >= 0"),
])
def test_cli_bad_execution_flags_name_the_flag(flags, message, capsys):
    assert cli("--mechanism", f"{SOURCE}:summing", *flags) == 2
    assert message in capsys.readouterr().err


@pytest.mark.integration
def test_cli_ctrl_c_ends_the_workers_and_writes_no_report(tmp_path):
    import signal
    import subprocess
    import time

    marker = tmp_path / "pids"
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "MIAUDIT_TEST_MARKER": str(marker), "PYTHONPATH": str(repo)}
    report = tmp_path / "report.html"
    process = subprocess.Popen(
        [sys.executable, "-m", "audit.cli.main", "audit", "--mechanism", f"{SOURCE}:announces_then_sleeps",
         "--prior", "builtin:bernoulli", "--n", "3", "--notion", "mi-dp", "--epsilon", "0.1", "--samples", "2000",
         "--workers", "2", "--report", str(report), "--quiet"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        # As from a terminal: a suite started in the background (`cmd &`, nohup) ignores SIGINT,
        # the child would inherit that, and Python then installs no KeyboardInterrupt handler.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.2)
    worker = int(marker.read_text().split()[0])
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 130, err.decode()
    assert b"interrupted" in err
    assert not report.exists() and not list(tmp_path.glob("report*"))
    deadline = time.monotonic() + 10
    while Path(f"/proc/{worker}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{worker}").exists()  # the worker running the mechanism was ended


@pytest.mark.integration
def test_a_file_prior_that_never_returns_is_named_at_its_first_call(monkeypatch):
    from mechanisms.inputs import user_priors
    from mechanisms.calls.user_call import first_calls_bounded_by

    with first_calls_bounded_by(0.5), \
            pytest.raises(MechanismError, match="prior 'stuck.py:sample' did not return within 0.5 s when asked for 2"):
        user_priors.UserPrior(lambda m, rng: fx.hangs(None, None), label="stuck.py:sample")


@pytest.mark.integration
def test_cli_timeout_flag_bounds_every_call(capsys):
    assert cli("--mechanism", f"{SOURCE}:hangs", "--timeout", "0.5") == 1
    assert f"mechanism '{SOURCE}:hangs' did not return within 0.5 s" in capsys.readouterr().err


@pytest.mark.integration
def test_cli_a_hanging_secret_function_fails_with_status_1_naming_it(capsys):
    assert main_audit("--mechanism", f"{SOURCE}:summing", "--prior", "builtin:bernoulli", "--n", "3",
                      "--notion", "mi-pp", "--epsilon", "0.1", "--secret", f"{SOURCE}:secret_hangs_on_large_batches",
                      "--samples", "600", "--slices", "0", "--set", "critic.max_steps=100",
                      "--timeout", "0.5", "--quiet") == 1
    err = capsys.readouterr().err
    assert f"secret function 'g = {SOURCE}:secret_hangs_on_large_batches' did not return within 0.5 s" in err


LIBRARY = str(FIXTURES / "library_mechanisms.py")  # imports OpenDP and diffprivlib
LIBRARY_ROUTES = {
    "OpenDP measurement": ("--mechanism", f"{LIBRARY}:laplace_sum"),
    "diffprivlib object": ("--mechanism", f"{LIBRARY}:laplace"),
    "diffprivlib class, file query": ("--mechanism", "diffprivlib.mechanisms:Laplace", "--set",
                                      "mechanism.params.epsilon=0.5", "--set", "mechanism.params.sensitivity=1",
                                      "--set", f"mechanism.query={LIBRARY}:first_two"),
    "external program": ("--command", f"{sys.executable} {FIXTURES / 'wire_mechanism.py'} noisy", "--claim", "dp:1"),
}


def library_json(capsys, route, *execution):
    """The JSON of a small audit of a library mechanism named as on the command line, without times."""
    pytest.importorskip("opendp")
    pytest.importorskip("diffprivlib")
    assert main_audit(*LIBRARY_ROUTES[route], "--prior", "builtin:bernoulli", "--n", "10", "--records", "0",
                      "--slices", "0", "--samples", "1000", "--set", "critic.max_steps=100", "--chunk-size", "200",
                      "--json", *execution) == 0, capsys.readouterr().err
    payload = json.loads(capsys.readouterr().out)
    payload.pop("seconds")
    return payload


@pytest.mark.integration
@pytest.mark.train
@pytest.mark.parametrize("route", ["diffprivlib object", "diffprivlib class, file query", "external program"])
def test_library_mechanisms_give_identical_json_on_one_and_two_workers(route, capsys):
    # Workers rebuild them from the [mechanism] table (a diffprivlib object cannot be pickled, a query
    # from a file cannot be unpickled where the file was not run); the seeded copies give the same samples.
    assert library_json(capsys, route, "--workers", "2") == library_json(capsys, route)


@pytest.mark.integration
@pytest.mark.train
def test_an_opendp_measurement_runs_on_two_workers_with_independent_noise(capsys):
    # An OpenDP measurement holds C pointers (it cannot be pickled) and takes no seed, so its outputs
    # cannot be the same on two backends; what must hold is that the workers rebuild it and draw
    # independent noise: the same database 400 times over 8 chunks gives no repeated output.
    from mechanisms.adapters.recognition import load_mechanism

    one, two = library_json(capsys, "OpenDP measurement"), library_json(capsys, "OpenDP measurement", "--workers", "2")
    assert one["claim"] == two["claim"] and one["samples_by_purpose"]["mi"] == two["samples_by_purpose"]["mi"]
    # The event and its certificate are chosen on unseeded outputs: a rate ratio makes Poisson numbers of
    # certification runs within the budget, the other certificates the budget itself.
    for payload in (one, two):
        budget = 2 * payload["event_test"]["runs_per_input"]
        assert payload["samples_by_purpose"]["event_certification"] <= budget
    assert any("OpenDP draws its noise from its own generator" in note for note in two["notes"])
    table = {"spec": f"{LIBRARY}:laplace_sum"}
    with MechanismRunner(load_mechanism(table).mechanism, "laplace_sum", ExecutionSettings(workers=2, chunk_size=50),
                         source=table) as r:
        outputs = r.sample(np.ones((400, 10, 1)), np.random.default_rng(0))
    assert outputs.shape == (400, 1) and len(np.unique(outputs)) == 400


@pytest.mark.integration
def test_os_randomness_declared_independent_across_processes_may_run_in_parallel():
    with pytest.warns(UserWarning, match="mechanism 'os_noise' returned different outputs"):
        out = sample("os_noise", numbered(10), workers=2)
    assert out.shape == (10, 1)


# ---------------------------------------------------------------- the sampling benchmark (quick run)


@pytest.mark.integration
def test_sampling_benchmark_quick_run_reports_speed_overhead_and_load(tmp_path):
    import math

    from experiments.framework import read_table
    from experiments.registry import run
    from experiments.sampling_benchmark import OVERHEAD_TARGET, RUN_SECONDS

    result = run("sampling-benchmark", out_dir=tmp_path, quick=True, seed=0)
    speed, overhead = (read_table(tmp_path / f"{name}.csv") for name in ("sampling_speed", "chunk_overhead"))
    assert {str(m).split(" (")[0] for m in speed["mechanism"]} == {"sleep 20 ms", "external program, 20 ms CPU",
                                                                   "DP-SGD training run"}
    np.testing.assert_allclose(speed["runs per s"], speed["runs"] / speed["sampling s"])
    for name in set(speed["mechanism"]):
        rows = np.flatnonzero(speed["mechanism"] == name)
        serial = speed["sampling s"][rows[0]]  # the first setting is in process
        np.testing.assert_allclose(speed["speedup"][rows], serial / speed["sampling s"][rows])
    # The sizing rule: the smallest chunk whose overhead is under 5% of its runs' time.
    per_chunk = overhead["overhead ms per chunk"] / 1000
    expected = [max(1, math.ceil(o / (OVERHEAD_TARGET * RUN_SECONDS) - 1e-9)) for o in per_chunk]
    np.testing.assert_array_equal(overhead["chunk size for < 5% overhead"], expected)
    for table in (speed, overhead):
        assert np.all(table["load average before"] >= 0) and np.all(table["load average after"] >= 0)
    assert any(f.startswith("1-minute load average") for f in result.findings)


def test_a_wrapped_function_that_raises_is_named_once_by_the_audits_label():
    # In a worker process the adapter names the function by its file's full path; the message names it once,
    # by the label the audit gave it (it read "mechanism 'm.py:fails': mechanism '/abs/m.py:fails' raised ...").
    from mechanisms.adapters.callables import PerDatabaseMechanism
    from mechanisms.base import run_on_batch

    def fails(db, rng):
        raise ValueError("boom")

    with pytest.raises(MechanismError) as info:
        run_on_batch(PerDatabaseMechanism(fails, name="/abs/m.py:fails"), np.zeros((1, 3, 1)),
                     np.random.default_rng(0), name="m.py:fails")
    assert str(info.value).startswith("mechanism 'm.py:fails' raised ValueError on database 0: boom")
    assert str(info.value).count("mechanism '") == 1 and info.value.database_index == 0
