"""The runner's chunk boundaries, chunk cache and per-database streams (mechanisms.execution), which make
the looks of a sequential audit nested: a smaller look's runs are the first of a larger look's, made once."""

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.execution.chunks import plan_chunks
from mechanisms.execution.chunk_cache import ChunkCache
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner, RunLimitReached


def _regular_plan(size, chunk_size):
    """The plan without boundaries, written out: chunk i holds items i·c to min((i + 1)·c, size)."""
    count = -(-size // chunk_size)
    return [(i, i * chunk_size, min((i + 1) * chunk_size, size)) for i in range(count)]


def test_without_boundaries_the_chunk_plan_is_the_regular_one():
    for size in range(0, 50):
        for chunk_size in (1, 3, 7, 256):
            assert plan_chunks(size, chunk_size) == _regular_plan(size, chunk_size)


def test_boundaries_end_chunks_and_make_smaller_jobs_prefixes_of_larger_ones():
    boundaries = (5, 12, 13, 40)
    for size in (5, 12, 13, 30, 40, 41, 77):
        plan = plan_chunks(size, 4, boundaries)
        assert [start for _, start, _ in plan] == sorted({s for _, s, _ in plan})  # in order
        assert plan[0][1] == 0 and plan[-1][2] == size  # the whole job, contiguous, no chunk over 4
        assert all(a[2] == b[1] for a, b in zip(plan, plan[1:])) and all(0 < stop - start <= 4 for _, start, stop in plan)
        assert {b for b in boundaries if b < size} <= {start for _, start, _ in plan}  # each boundary starts a chunk
        assert [i for i, _, _ in plan] == list(range(len(plan)))
        for smaller in (b for b in boundaries if b <= size):  # a job of a boundary's size is a prefix
            assert plan_chunks(smaller, 4, boundaries) == plan[:len(plan_chunks(smaller, 4, boundaries))]


class Counting:
    """A mechanism (the record sum plus Laplace noise from its rng) that counts the databases it runs on."""

    def __init__(self):
        self.calls = 0

    def __call__(self, dbs, rng):
        self.calls += len(dbs)
        return dbs.sum(axis=1) + rng.laplace(size=(len(dbs), dbs.shape[2]))


def _runner(mechanism, **kwargs):
    return MechanismRunner(mechanism, "counting", ExecutionSettings(chunk_size=8), **kwargs)


def _dbs(m, seed=0):
    return np.random.default_rng(seed).integers(0, 2, size=(m, 3, 1)).astype(float)


def test_a_job_of_a_boundary_size_gets_the_first_outputs_of_the_larger_job_with_the_same_seed():
    dbs = _dbs(50)
    with _runner(Counting(), boundaries=(13, 29)) as runner:
        large = runner.sample(dbs, np.random.default_rng(3))
        small = runner.sample(dbs[:29], np.random.default_rng(3))
    np.testing.assert_array_equal(small, large[:29])
    with _runner(Counting()) as runner:  # without the boundary, the chunk of items 24-31 is cut at 29 instead
        assert not np.array_equal(runner.sample(dbs[:29], np.random.default_rng(3)), large[:29])


def test_the_cache_runs_each_chunk_once_and_counts_the_calls_made():
    dbs, counting = _dbs(40), Counting()
    cache = ChunkCache()
    with _runner(counting, boundaries=(16,), cache=cache) as runner:
        small = runner.sample(dbs[:16], np.random.default_rng(1))
        assert runner.calls == 16 == counting.calls - 2  # the probe's two calls on one database are not runs
        large = runner.sample(dbs, np.random.default_rng(1))  # the first 16 come from the cache
        assert runner.calls == 40 == counting.calls - 2 and cache.hits == 16
        np.testing.assert_array_equal(large[:16], small)
        other = runner.sample(dbs[::-1], np.random.default_rng(1))  # other databases: other chunks, all run
        assert runner.calls == 80 == counting.calls - 2
    with _runner(Counting(), boundaries=(16,)) as runner:  # the same outputs without a cache
        np.testing.assert_array_equal(runner.sample(dbs, np.random.default_rng(1)), large)
        assert not np.array_equal(other, large[::-1])


def test_streams_give_one_database_distinct_runs_within_a_look_and_the_same_runs_again_in_the_next():
    database = np.ones((3, 1))
    counting, cache = Counting(), ChunkCache(stream_seed=11)
    with _runner(counting, boundaries=(10, 20), cache=cache) as runner:
        cache.start_look()
        first = runner.runs_of(database, 10, np.random.default_rng(0))[1]
        second = runner.runs_of(database, 10, np.random.default_rng(0))[1]
        assert runner.calls == 20 and len(np.unique(np.concatenate([first, second]))) == 20  # no run twice
        cache.start_look()  # the next look: the stream again from its first run, whatever the generator
        again = runner.runs_of(database, 20, np.random.default_rng(99))[1]
        assert runner.calls == 20 and cache.hits == 20  # all 20 runs reused
        np.testing.assert_array_equal(again, np.concatenate([first, second]))
        cache.start_look()
        more = runner.runs_of(database, 25, np.random.default_rng(5))[1]
        # Past the last boundary the stream's chunks are whole (8 runs): 25 runs make the chunk of runs 20-27.
        assert runner.calls == 28 and counting.calls - 2 == 28
        assert cache.hits == 20 + 20  # 20 of its 25 runs reused (the new chunk's 8 runs hold its other 5)
        np.testing.assert_array_equal(more[:20], again)
        cache.start_look()
        whole = runner.runs_of(database, 28, np.random.default_rng(5))[1]
        np.testing.assert_array_equal(whole[:25], more)
        assert runner.calls == 28 and cache.hits == 40 + 28
        cache.start_look(final=True)  # no look after: the stream's new chunk ends with the job
        last = runner.runs_of(database, 31, np.random.default_rng(5))[1]
        assert runner.calls == 31 and counting.calls - 2 == 31 and cache.hits == 68 + 28
        np.testing.assert_array_equal(last[:28], whole)
        assert len(np.unique(last)) == 31


def test_a_call_limit_stops_a_job_before_any_call():
    counting = Counting()
    with _runner(counting, cache=ChunkCache()) as runner:
        runner.sample(_dbs(10), np.random.default_rng(0))
        runner.call_limit = 25
        with pytest.raises(RunLimitReached) as caught:
            runner.sample(_dbs(20, seed=1), np.random.default_rng(0))
        assert (caught.value.needed, caught.value.left) == (20, 15)
        assert runner.calls == 10 == counting.calls - 2
        runner.sample(_dbs(10), np.random.default_rng(0))  # cached: no call, within the limit
        assert runner.calls == 10


def test_bad_boundaries_and_stream_seeds_are_named():
    with pytest.raises(InputError, match="boundaries"):
        _runner(Counting(), boundaries=(0,))
    with pytest.raises(InputError, match="stream_seed"):
        ChunkCache(stream_seed=-1)
