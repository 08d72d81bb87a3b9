"""The runner's jobs without host copies that change nothing (mechanisms.execution.runner): a job of one chunk
returns that chunk's outputs without concatenating them, and ``runs_of``'s databases are one read-only view
of the database, not ``count`` copies. The outputs are the old path's, computed here from the chunk plan and
the chunks' generators; a caller that changes a job's outputs or databases changes no later job's."""

import numpy as np
import pytest

from mechanisms.execution.chunk_cache import ChunkCache
from mechanisms.execution.chunks import MECHANISM, chunk_generator, plan_chunks
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner


def mechanism(dbs, rng):
    """The record sums plus Laplace noise from the chunk's generator: its outputs are a function of the chunk."""
    return dbs.sum(axis=1) + rng.laplace(size=(len(dbs), dbs.shape[2]))


def _old_path(dbs, seed, chunk_size):
    """What the runner returned before, written out: each chunk of the plan run with its own generator
    (chunk i of the job seeded by the first draw of ``seed``'s generator), the chunks concatenated."""
    job_seed = int(np.random.default_rng(seed).integers(2**63))
    return np.concatenate([mechanism(dbs[start:stop].copy(), chunk_generator(job_seed, index, MECHANISM))
                           for index, start, stop in plan_chunks(len(dbs), chunk_size)])


def _dbs(m, seed=0):
    return np.random.default_rng(seed).integers(0, 3, size=(m, 4, 2)).astype(float)


@pytest.mark.parametrize("size", [1, 7, 8, 20])  # one chunk (part of one, all of one) and three chunks of 8
def test_sample_returns_the_concatenated_chunks_outputs(size):
    dbs = _dbs(size)
    with MechanismRunner(mechanism, "sums", ExecutionSettings(chunk_size=8)) as runner:
        outputs = runner.sample(dbs, np.random.default_rng(5))
    np.testing.assert_array_equal(outputs, _old_path(dbs, 5, 8))
    assert outputs.flags.writeable and outputs.dtype == np.float64


@pytest.mark.parametrize("count", [1, 8, 19])
def test_runs_of_gives_the_repeated_database_and_its_outputs(count):
    database = _dbs(1, seed=2)[0]
    with MechanismRunner(mechanism, "sums", ExecutionSettings(chunk_size=8)) as runner:
        batch, outputs = runner.runs_of(database, count, np.random.default_rng(7))
    repeated = np.repeat(database[None], count, axis=0)
    np.testing.assert_array_equal(batch, repeated)
    assert not batch.flags.writeable  # a view of the database: changing it would change every run's database
    np.testing.assert_array_equal(outputs, _old_path(repeated, 7, 8))


def test_runs_of_still_refuses_a_bad_database_and_no_runs():
    from estimators.validation import InputError

    with MechanismRunner(mechanism, "sums", ExecutionSettings(chunk_size=8)) as runner:
        with pytest.raises(InputError, match="'dbs'.*NaN or inf"):
            runner.runs_of(np.array([[1.0, np.inf]]), 3, np.random.default_rng(0))
        with pytest.raises(InputError, match="'dbs' must be non-empty"):
            runner.runs_of(np.ones((4, 2)), 0, np.random.default_rng(0))


def test_changing_a_jobs_outputs_changes_no_later_job_without_a_cache():
    dbs = _dbs(6)
    with MechanismRunner(mechanism, "sums", ExecutionSettings(chunk_size=8)) as runner:
        first = runner.sample(dbs, np.random.default_rng(1))
        first[:] = -1.0
        again = runner.sample(dbs, np.random.default_rng(1))
    np.testing.assert_array_equal(again, _old_path(dbs, 1, 8))


@pytest.mark.parametrize("size", [6, 20])
def test_changing_a_jobs_outputs_leaves_the_cached_chunks_as_they_were(size):
    """A chunk the cache keeps is the same array a later job reads: the job's outputs must not be it."""
    dbs = _dbs(size)
    cache = ChunkCache()
    with MechanismRunner(mechanism, "sums", ExecutionSettings(chunk_size=8), cache=cache) as runner:
        first = runner.sample(dbs, np.random.default_rng(1))
        first[:] = -1.0
        again = runner.sample(dbs, np.random.default_rng(1))  # the same chunks: every one from the cache
        assert cache.hits == size
    np.testing.assert_array_equal(again, _old_path(dbs, 1, 8))


def test_changing_a_streams_runs_leaves_the_next_look_as_it_was():
    database = _dbs(1, seed=4)[0]
    cache = ChunkCache(stream_seed=11)
    with MechanismRunner(mechanism, "sums", ExecutionSettings(chunk_size=8), cache=cache) as runner:
        cache.start_look()
        _, first = runner.runs_of(database, 5, np.random.default_rng(0))
        kept = first.copy()
        first[:] = -1.0
        cache.start_look()
        _, again = runner.runs_of(database, 5, np.random.default_rng(0))  # the stream's first 5 runs again
    np.testing.assert_array_equal(again, kept)
