"""Pipelined stages over the worker pool (``--workers``): the jobs queued at once and longest first, their values in
each stage's own order, the workers' occupancy from the jobs' times, and a stage's span when stages overlap."""

import csv
import math
from concurrent.futures import Future

import numpy as np
import pytest

from experiments import row_pool
from experiments.framework import RunContext
from experiments.row_pool import JobPool, job_seconds, occupancy
from experiments.stage_pipeline import StagePlan, pool_finding, run_stages


def _draw(seed, size):
    """A stand-in audit: what it draws depends on its seed only (module level: workers import it by name)."""
    return float(np.random.default_rng(seed).normal(size=size).sum())


def _stand_in_plans():
    def table(results):
        return {"value": results}

    return [StagePlan("first", _draw, [(1, 5), (2, 500), (3, 50)], table, sizes=[5, 500, 50]),
            StagePlan("second", _draw, [(4, 7), (5, 70)], table, sizes=[7, 70])]


class _Clock:
    """A wall clock that moves only when told (the jobs' durations and the gaps between them)."""

    def __init__(self):
        self.now = 1000.0

    def time(self):
        return self.now


def test_jobs_of_equal_values_in_one_process_and_in_any_order_of_the_workers():
    expected = [[_draw(*job) for job in plan.jobs] for plan in _stand_in_plans()]
    with JobPool(1) as pool:
        here = [batch.result() for batch in pool.submit_all(
            [(plan.function, plan.jobs, plan.sizes) for plan in _stand_in_plans()])]
    assert here == expected


@pytest.mark.integration  # starts worker processes
def test_two_workers_give_each_batch_its_values_in_its_jobs_order_as_one_process_does():
    expected = [[_draw(*job) for job in plan.jobs] for plan in _stand_in_plans()]
    with JobPool(2) as pool:
        batches = pool.submit_all([(plan.function, plan.jobs, plan.sizes) for plan in _stand_in_plans()])
        assert [batch.result() for batch in batches] == expected
        assert len(pool.spans) == 5 and all(end >= start for start, end in pool.spans)


def test_the_workers_are_handed_the_largest_jobs_first_and_equal_sizes_in_the_order_given(monkeypatch):
    handed = []

    class Recorder:  # stands in for ProcessPoolExecutor: records the order, runs at once
        def __init__(self, **_):
            pass

        def submit(self, call, function_and_job):
            handed.append(function_and_job[1])
            future = Future()
            future.set_result(call(function_and_job))
            return future

    monkeypatch.setattr(row_pool, "ProcessPoolExecutor", Recorder)
    pool = JobPool(2)
    first, second = pool.submit_all([(_draw, [(1, 5), (2, 500), (3, 50)], [5, 500, 50]),
                                     (_draw, [(4, 50), (5, 70)], [50, 70])])
    assert handed == [(2, 500), (5, 70), (3, 50), (4, 50), (1, 5)]
    assert first.result() == [_draw(1, 5), _draw(2, 500), _draw(3, 50)]
    assert second.result() == [_draw(4, 50), _draw(5, 70)]


def test_one_worker_runs_each_batch_here_in_its_order_when_its_result_is_asked_for():
    calls = []

    def record(name):  # a closure: only the in-process route can run it
        calls.append(name)
        return name

    pool = JobPool(1)
    first, second = pool.submit_all([(record, [("a",), ("b",)], [1, 9]), (record, [("c",)])])
    assert calls == []
    assert second.result() == ["c"] and first.result() == ["a", "b"] and calls == ["c", "a", "b"]


def test_sizes_must_match_the_jobs():
    with pytest.raises(row_pool.InputError, match="argument 'sizes'"):
        JobPool(1).submit(_draw, [(1, 2)], sizes=[1, 2])
    with pytest.raises(row_pool.InputError, match="argument 'workers'"):
        occupancy([(0.0, 1.0)], 0)


def test_occupancy_is_the_job_seconds_over_the_workers_time_from_first_start_to_last_end():
    spans = [(10.0, 14.0), (10.5, 12.0), (12.0, 13.0), (15.0, 16.0)]
    busy = 4.0 + 1.5 + 1.0 + 1.0  # the jobs' durations, added here by hand
    assert job_seconds(spans) == (busy, 6.0)
    assert occupancy(spans, 2) == pytest.approx(busy / (2 * 6.0))
    assert math.isnan(occupancy([], 3)) and math.isnan(occupancy([(1.0, 1.0)], 1))


def test_the_pool_records_each_jobs_times_and_counts_the_idle_gaps_between_batches(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(row_pool, "time", clock)

    def work(seconds):
        clock.now += seconds
        return seconds

    pool = JobPool(1)
    assert pool.map(work, [(2.0,), (3.0,)]) == [2.0, 3.0]
    clock.now += 5.0  # this process works between the stages: the pool idles
    pool.map(work, [(1.0,)])
    assert pool.spans == [(1000.0, 1002.0), (1002.0, 1005.0), (1010.0, 1011.0)]
    assert pool.occupancy() == pytest.approx(6.0 / 11.0)
    assert "3 audits, 6.0 audit-seconds over the 11.0 s" in pool_finding(pool) and "occupancy 55%" in pool_finding(pool)


def test_a_stage_handed_to_workers_spans_from_when_its_work_began(monkeypatch, tmp_path):
    from experiments import framework

    clock = _Clock()
    monkeypatch.setattr(framework, "time", clock)
    context = RunContext(quick=True, seed=0, out_dir=tmp_path)

    def compute():
        clock.now += 4.0
        return {"a": [1]}

    context.stage("pooled", compute, began=lambda: 990.0)
    context.stage("unknown", compute, began=lambda: math.nan)
    context.stage("here", compute)
    assert context.stage_spans == {"pooled": (990.0, 1004.0), "unknown": (1004.0, 1008.0), "here": (1008.0, 1012.0)}
    assert context.stage_seconds == {"pooled": 14.0, "unknown": 4.0, "here": 4.0}


def _tables(tmp_path, workers):
    out = tmp_path / f"workers{workers}"
    out.mkdir()
    context = RunContext(quick=True, seed=0, out_dir=out, workers=workers)
    plans = _stand_in_plans()
    with JobPool(workers) as pool:
        tables = run_stages(context, pool, plans[:1], later=[("second", lambda: plans[1])],
                            here=[("here", lambda: {"value": [_draw(6, 3)]})])
    assert [table.name for table in tables] == ["first", "second", "here"]
    assert context.stage_spans.keys() == {"first", "second", "here"}
    return {name: (out / f"{name}.csv").read_text() for name in ("first", "second", "here")}


@pytest.mark.integration  # starts worker processes
def test_pipelined_stages_write_the_tables_of_one_process(tmp_path):
    alone = _tables(tmp_path, 1)
    assert alone == _tables(tmp_path, 2)
    assert [float(row["value"]) for row in csv.DictReader(alone["first"].splitlines())] == \
        [_draw(1, 5), _draw(2, 500), _draw(3, 50)]


@pytest.mark.train
@pytest.mark.integration
def test_the_quick_study_writes_the_same_tables_with_two_workers_as_in_one_process(tmp_path):
    # Each audit draws from its own seed: which process runs it, in what order, beside what, cannot change a row.
    from experiments.registry import run

    def tables(workers):
        out = tmp_path / f"workers{workers}"
        run("dpsgd-audit", out_dir=out, quick=True, seed=0, device="cpu", workers=workers)
        found = {}
        for name in ("dpsgd_epsilon", "dpsgd_dimension", "dpsgd_detection", "dpsgd_gaussian_dp", "dpsgd_one_run"):
            rows = list(csv.reader((out / f"{name}.csv").read_text().splitlines()))
            # The seconds each row took are the one column a run's timing changes.
            found[name] = [[cell for cell, key in zip(row, rows[0]) if key != "seconds"] for row in rows]
        return found, (out / "summary.md").read_text()

    (alone, _), (pooled, summary) = tables(1), tables(2)
    assert pooled == alone
    assert "Audits in 2 worker processes: 11 audits" in summary and "occupancy" in summary
