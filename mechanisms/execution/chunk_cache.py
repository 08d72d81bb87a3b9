"""The outputs of mechanism chunks already run, and each database's stream of runs, for audits that look
at the same runs more than once (the nested looks of :mod:`audit.gating.sequential`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from estimators.validation import check_int
from mechanisms.execution.chunks import ChunkTask


class ChunkCache:
    """The outputs of mechanism chunks already run, by what determines them; and streams of runs per database.

    A chunk's outputs are a function of its job seed, its index and purpose (its generator,
    :func:`~mechanisms.execution.chunks.chunk_generator`, and the global generators' seeds), its size
    and its databases (:meth:`key`: a BLAKE2b digest of their bytes, shape and dtype): a chunk with the
    same key gets the stored outputs, as if the mechanism had been called again with the same seed. A
    mechanism whose outputs are not a function of its seed gets its earlier outputs: runs made once and
    used again, which is what a later look of a sequential audit is meant to do with them.

    With ``stream_seed``, a job whose databases are all one database x (the event test's runs of an
    input) takes its runs from x's **stream** instead: the sequence of runs of x whose chunks
    (cut by the runner's boundaries and chunk size, whatever the jobs ask, except a final look's last
    chunk: :meth:`MechanismRunner._stream_chunks`) are seeded by (``stream_seed``, x) alone. Within one look (:meth:`start_look` begins one) successive jobs on x
    take successive runs of its stream, so no run serves twice and the runs stay independent;
    each look starts again from the stream's first run. A later look then re-uses an earlier look's
    runs of x whatever its generator drew in between (a randomized event's coins, a Poisson number
    of runs) and whichever statistic or event it chose.

    Attributes
    ----------
    hits : int
        Databases whose outputs came from the cache.
    """

    def __init__(self, stream_seed: int | None = None):
        self._outputs: dict = {}
        self.hits = 0
        self.stream_seed = None if stream_seed is None else check_int(stream_seed, "stream_seed", 0)
        self.final = False
        self._streams: dict = {}
        self._cursors: dict = {}

    @staticmethod
    def digest(dbs) -> str:
        """A BLAKE2b digest of an array's bytes, shape and dtype."""
        dbs = np.ascontiguousarray(dbs)
        digest = hashlib.blake2b(f"{dbs.shape}{dbs.dtype.str}".encode(), digest_size=16)
        digest.update(dbs.data)
        return digest.hexdigest()

    @classmethod
    def key(cls, task: ChunkTask) -> tuple:
        """(job seed, index, purpose, size, digest of the databases) of a mechanism chunk."""
        return task.job_seed, task.index, task.purpose, task.size, cls.digest(task.dbs)

    def get(self, key: tuple):
        """The stored outputs of the chunk of ``key``, or None."""
        return self._outputs.get(key)

    def put(self, key: tuple, outputs) -> None:
        self._outputs[key] = outputs

    def start_look(self, final: bool = False) -> None:
        """Begin a look: every stream is read again from its first run. In a ``final`` look a stream's new
        chunk ends with the job that asks for it (:meth:`MechanismRunner._stream_chunks`)."""
        self._cursors.clear()
        self.final = bool(final)

    def take(self, database, count: int) -> tuple:
        """(``database``'s stream, the position of its next run in this look); moves that on by ``count``."""
        digest = self.digest(database)
        stream = self._streams.get(digest)
        if stream is None:
            state = np.random.SeedSequence([self.stream_seed, int(digest, 16)]).generate_state(2, np.uint64)
            stream = self._streams[digest] = _Stream(int(state[0] >> np.uint64(1)), digest, [])
        position = self._cursors.get(digest, 0)
        self._cursors[digest] = position + count
        return stream, position


@dataclass
class _Stream:
    """One database's stream of runs: its seed, the database's digest and its chunks made so far, as
    (first run, end, cache key), in order and contiguous from run 0."""

    seed: int
    digest: str
    chunks: list
