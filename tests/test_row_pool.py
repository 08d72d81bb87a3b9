"""An experiment's independent audits in worker processes (``--workers``): the same tables as one process."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from estimators.validation import InputError
from experiments.framework import Experiment, ExperimentOutput, RunContext, _command, run_experiment
from experiments.row_pool import JobPool, worker_threads


def test_worker_threads_share_out_the_cores_at_least_one_each():
    assert [worker_threads(k, cores=16) for k in (1, 2, 3, 4, 16, 32)] == [16, 8, 5, 4, 1, 1]
    assert worker_threads(1, cores=2) == 2 and worker_threads(2, cores=2) == 1


def test_one_worker_runs_the_jobs_here_in_order():
    calls = []

    def record(a, b):  # a closure: only the in-process route can run it
        calls.append((a, b))
        return a * b

    assert JobPool(1).map(record, [(1, 2), (3, 4), (5, 6)]) == [2, 12, 30]
    assert calls == [(1, 2), (3, 4), (5, 6)]


@pytest.mark.integration
def test_workers_return_the_values_in_the_jobs_order_and_serve_every_map_of_the_run():
    jobs = [(n, k) for n in range(40, 0, -7) for k in (1, 3)]
    with JobPool(2) as pool:
        assert pool.map(math.comb, jobs) == [math.comb(n, k) for n, k in jobs]
        started = pool._executor
        assert pool.map(pow, [(2, 10), (3, 3)]) == [1024, 27] and pool._executor is started
    assert pool._executor is None


def _experiment(parallel: bool) -> Experiment:
    def run(context):
        return ExperimentOutput([], None, {}, [])

    return Experiment(name="toy", description="d", source="s", run=run, parallel=parallel)


def test_workers_are_refused_by_an_experiment_that_runs_in_one_process(tmp_path):
    with pytest.raises(InputError, match="argument '--workers'.*runs in one process"):
        run_experiment(_experiment(False), out_dir=tmp_path, workers=2)
    with pytest.raises(InputError, match="--workers"):
        run_experiment(_experiment(True), out_dir=tmp_path, workers=0)


def test_the_repeat_command_names_the_workers():
    experiment = _experiment(True)
    assert _command(experiment, RunContext(quick=False, seed=3, workers=4)).endswith("--seed 3 --workers 4")
    assert "--workers" not in _command(experiment, RunContext(quick=False, seed=3))


@pytest.mark.integration
def test_a_script_without_a_main_guard_gets_one_error_naming_workers(tmp_path):
    # Each spawned worker imports the script that started it: without the guard it starts a pool of its own
    # while bootstrapping, and dies.
    script = tmp_path / "unguarded.py"
    script.write_text("import math\nfrom experiments.row_pool import JobPool\n"
                      "print(JobPool(2).map(math.comb, [(5, 2), (6, 3)]))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode != 0
    assert "InputError: argument '--workers': a worker process of the 2 died" in done.stderr
    assert "if __name__ == \"__main__\":" in done.stderr
