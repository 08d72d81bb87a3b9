"""An experiment's independent audits in worker processes (``--workers``): the same tables as one process."""

import math

import numpy as np
import pytest

from estimators.validation import InputError
from experiments.framework import Experiment, ExperimentOutput, RunContext, _command, run_experiment
from experiments.row_pool import map_jobs, worker_threads


def test_worker_threads_share_out_the_cores_at_least_one_each():
    assert [worker_threads(k, cores=16) for k in (1, 2, 3, 4, 16, 32)] == [16, 8, 5, 4, 1, 1]
    assert worker_threads(1, cores=2) == 2 and worker_threads(2, cores=2) == 1


def test_one_worker_runs_the_jobs_here_in_order():
    calls = []

    def record(a, b):  # a closure: only the in-process route can run it
        calls.append((a, b))
        return a * b

    assert map_jobs(record, [(1, 2), (3, 4), (5, 6)], workers=1) == [2, 12, 30]
    assert calls == [(1, 2), (3, 4), (5, 6)]


@pytest.mark.integration
def test_workers_return_the_values_in_the_jobs_order():
    jobs = [(n, k) for n in range(40, 0, -7) for k in (1, 3)]
    assert map_jobs(math.comb, jobs, workers=2) == [math.comb(n, k) for n, k in jobs]


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


@pytest.mark.train
@pytest.mark.integration
def test_dpsgd_stages_give_the_same_rows_in_two_workers_as_in_one_process():
    # Each audit draws from its own seed: which process runs it, and in what order, cannot change its row.
    from experiments.dpsgd_audit import detection_rows, dimension_rows, quick_grid

    grid = quick_grid()
    for stage in (dimension_rows, detection_rows):
        alone, pooled = (stage(grid, "cpu", 0, workers) for workers in (1, 2))
        assert alone.keys() == pooled.keys()
        for key in alone:
            if key != "seconds":
                np.testing.assert_equal(pooled[key], alone[key], err_msg=f"{stage.__name__}: {key}")
