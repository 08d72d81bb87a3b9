"""Chunks of a sampling job and their seeds: the same samples for any backend and worker count.

A sampling job (``m`` databases through the mechanism, or ``m`` draws of a prior) is cut into
chunks of a fixed size. Chunk ``i`` of a job with seed ``s`` draws from its own generator,
``numpy.random.default_rng(SeedSequence(s, spawn_key=(i, purpose)))``, whoever runs it and
whenever: so the samples, and everything the audit computes from them, are identical in
process, on any number of worker processes and on Ray. The job seed comes from the audit's
seeded generator, one per job.

The global generators (``numpy.random``'s functions, the ``random`` module, and torch's when
torch is loaded) are seeded from the chunk's seed before the chunk runs (and the audit's own process gets
its states back after each job that seeded them): a mechanism that uses them instead of its ``rng`` is then reproducible too, and
worker processes never repeat each other's draws (every fresh process starts torch's
generator from the same fixed seed, and forked workers share numpy's global state). Code that declares
it draws only from its ``rng`` (:func:`mechanisms.base.draws_only_from_rng`: the catalog mechanisms,
the built-in priors) is spared that seeding, about 25 µs a chunk, and the restoring, about 60 µs a job.

Without ``--timeout`` each chunk of a job is still bounded, by a bound derived from the probe's calls
(:func:`bounded_by_first_calls`): no mechanism that stops returning after its first calls hangs the audit.
"""

from __future__ import annotations

import random
import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace

import numpy as np

from mechanisms.base import draws_only_from_rng
from mechanisms.calls.later_bound import MAX_TIMEOUT_S, later_call_bound
from mechanisms.calls.user_call import TIMEOUT_HINT

__all__ = ["MAX_TIMEOUT_S", "MECHANISM", "PRIOR", "PROBE", "ChunkTask", "GLOBAL_DRAWS_WORDS", "bounded_by_first_calls",
           "chunk_generator", "global_draws_note", "guard_global_generators", "plan_chunks",
           "preserved_global_generators", "seed_global_generators"]

#: ``purpose`` keys of the seed: a prior's draws and a mechanism's runs of one chunk index
#: use independent streams.
PRIOR, MECHANISM, PROBE = 0, 1, 2

@dataclass(frozen=True)
class ChunkTask:
    """One chunk of a sampling job.

    Attributes
    ----------
    job_seed : int
        The job's seed.
    index : int
        The chunk's index in the job (its seed's spawn key).
    start : int
        Index in the job of the chunk's first database.
    dbs : ndarray, shape (m, n, k), optional
        The databases (mechanism jobs), a slice of a batch the runner checked
        (:func:`mechanisms.base.as_database_batch`); ``None`` for prior draws.
    size : int
        How many databases the chunk holds or draws.
    timeout : float, optional
        Seconds one call of the user code may take.
    purpose : int
        :data:`MECHANISM`, :data:`PRIOR` or :data:`PROBE`.
    last_attempt : bool
        Whether a failure may be final, as on every attempt after the first (one that fails as the attempt before it
        did is: :func:`mechanisms.execution.backends.run_tasks`): a raising mechanism is then re-run per database to
        name the one that fails.
    allow_nan : bool
        Whether the databases may hold NaN and the mechanism may release it
        (:func:`mechanisms.base.check_batch_output`; ``--allow-nan``).
    global_key : int
        The last spawn key of the global generators' seed (:func:`seed_global_generators`): 1, except in the
        probe's second call, which seeds them otherwise to tell draws from them apart
        (:func:`mechanisms.execution.worker.run_probe`).
    timeout_hint : str
        Ends the message of a call that outlived ``timeout``: what set the bound and how to change it.
    locate_hang : bool
        This attempt names the database a chunk's repeated timeout hangs on: it runs the chunk's databases one at a
        time, all within the one bound ``timeout``, and raises, naming the first that runs out of it
        (:func:`mechanisms.execution.worker.run_chunk`); it returns no outputs.
    """

    job_seed: int
    index: int
    start: int
    dbs: np.ndarray | None
    size: int
    timeout: float | None = None
    purpose: int = MECHANISM
    last_attempt: bool = True
    allow_nan: bool = False
    global_key: int = 1
    timeout_hint: str = TIMEOUT_HINT
    locate_hang: bool = False

    @property
    def databases(self) -> str:
        """The chunk's databases, for messages (``databases 256-511``)."""
        if self.size == 1:
            return f"database {self.start}"
        return f"databases {self.start}-{self.start + self.size - 1}"


def bounded_by_first_calls(task: ChunkTask, first_seconds: float | None) -> ChunkTask:
    """``task`` bounded in time when no ``--timeout`` bounds it: at
    :data:`~mechanisms.calls.later_bound.LATER_CALL_SLACK` × ``first_seconds`` (the probe's slower call,
    :func:`mechanisms.execution.worker.run_probe`) × its calls, at least
    :data:`~mechanisms.calls.later_bound.LATER_CALL_FLOOR` and at most :data:`MAX_TIMEOUT_S` seconds, with a message
    that says so (:func:`~mechanisms.calls.later_bound.later_call_bound`). A task with a ``timeout`` (``--timeout``),
    or without a timed probe (``first_seconds`` None), is returned as it is. The bound changes no sample (a chunk's
    seed is its job's and its index)."""
    timeout, hint = later_call_bound(task.timeout, first_seconds, task.size)
    return task if timeout is task.timeout else replace(task, timeout=timeout, timeout_hint=hint)


def plan_chunks(size: int, chunk_size: int, boundaries=()) -> list[tuple[int, int, int]]:
    """``(index, start, stop)`` of the chunks of a job of ``size`` items.

    Without ``boundaries`` the chunks are ``chunk_size`` items from 0 (the last one shorter). Each
    boundary b (0 < b < ``size``) also ends a chunk, and the chunks restart from it: the job is cut
    into segments at the boundaries, each cut into chunks of ``chunk_size`` from its start. A job
    of ``b`` items, for a boundary b, then has exactly the first chunks of any larger job with the
    same boundaries (the same indices, starts and sizes, so the same seeds): what nested looks of a
    sequential audit need (:mod:`audit.gating.sequential`).
    """
    cuts = [0] + sorted({int(b) for b in boundaries if 0 < b < size}) + [size]
    starts = [start for lo, hi in zip(cuts[:-1], cuts[1:]) for start in range(lo, hi, chunk_size)]
    return [(i, start, stop) for i, (start, stop) in enumerate(zip(starts, starts[1:] + [size]))]


def chunk_generator(job_seed: int, index: int, purpose: int = MECHANISM) -> np.random.Generator:
    """The generator of chunk ``index`` of the job seeded ``job_seed``."""
    return np.random.default_rng(np.random.SeedSequence(job_seed, spawn_key=(index, purpose)))


def seed_global_generators(job_seed: int, index: int, purpose: int = MECHANISM, key: int = 1) -> None:
    """Seed the global generators (numpy, random, and torch if loaded) for one chunk.

    Cheap (tens of microseconds); :func:`preserved_global_generators` puts the caller's states back
    once per job, which costs about 60 µs. ``key`` (:attr:`ChunkTask.global_key`) is 1 but in the
    probe's second call, which seeds them otherwise.
    """
    state = np.random.SeedSequence(job_seed, spawn_key=(index, purpose, key)).generate_state(4)
    np.random.seed(state)
    random.seed(int.from_bytes(state.tobytes(), "little"))
    torch = sys.modules.get("torch")
    if torch is not None:
        seed = int(state[0]) << 32 | int(state[1])
        # torch.manual_seed would also queue a lazy CUDA seeding that records a stack trace
        # (about 1 ms per chunk); the CPU generator is seeded directly, CUDA only once in use.
        torch.default_generator.manual_seed(seed)
        if torch.cuda.is_initialized():
            torch.cuda.manual_seed_all(seed)


@contextmanager
def preserved_global_generators():
    """Restore the global generators' states (numpy, random, torch if loaded) on exit."""
    torch = sys.modules.get("torch")
    saved_numpy, saved_random = np.random.get_state(), random.getstate()
    saved_torch = torch.get_rng_state() if torch is not None else None
    try:
        yield
    finally:
        np.random.set_state(saved_numpy)
        random.setstate(saved_random)
        if saved_torch is not None:
            torch.set_rng_state(saved_torch)


def guard_global_generators(code):
    """Put the global generators' states back after a job whose chunks seed them in this process
    (:func:`preserved_global_generators`, about 60 µs); code that declares it draws only from its rng
    (:func:`~mechanisms.base.draws_only_from_rng`) is never seeded, so there is nothing to put back."""
    return nullcontext() if draws_only_from_rng(code) else preserved_global_generators()


def global_draws_note(who: str) -> str:
    """The note for a mechanism that draws from the global generators (numpy.random, random, torch) instead of its
    ``rng``: its probe's output changed when only they were seeded otherwise, and came back when they were seeded as
    at first (:func:`mechanisms.execution.worker.run_probe`). The audit stays valid and reproducible, since they are
    seeded for every chunk; the function outside the audit is not."""
    return (f"{who} {GLOBAL_DRAWS_WORDS} (np.random, random or torch) instead of the rng it is given: its output on "
            "one database changed when only those were seeded otherwise. miaudit seeds them for every chunk, so "
            "this audit is valid and reproducible from its seed, but outside miaudit the function's draws are not; "
            "draw from rng (rng.laplace(...) for np.random.laplace(...))")


#: The words that mark :func:`global_draws_note` (the terminal prints the notes that hold them).
GLOBAL_DRAWS_WORDS = "draws from the global generators"
