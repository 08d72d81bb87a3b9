"""Run an audit's mechanism calls as chunked, seeded, fault-tolerant tasks on a backend.

:class:`MechanismRunner` owns the backend of one audit. Its :meth:`~MechanismRunner.sample`
cuts a batch of databases into chunks (:mod:`mechanisms.execution.chunks`), keeps at most
one chunk per worker in flight, retries a chunk whose user code raised or whose worker died
(``retries`` times at most: not a refusal of its databases, nor a failure that repeats the attempt before it,
:func:`~mechanisms.execution.attempts.run_tasks`), and then stops with one error naming the mechanism and the
databases: the database a batch's exception comes from, found by running them one at a time, and the database a
repeated timeout hangs on, where an attempt is left to run them one at a time within the chunk's bound.
Its first call probes the mechanism on one database, twice with the same seed, under a
timeout (``--timeout``, else :data:`PROBE_TIMEOUT`): a mechanism that hangs is reported within a minute
(a later chunk without ``--timeout``: past 50 × the probe's time, :func:`bounded_by_first_calls`), one that draws
from the global generators (which the chunks seed) gets a note, and one whose outputs are not a function of its
seeds is reported (a warning in process; an error on parallel backends, whose workers could repeat its draws, unless
the mechanism declares ``independent_across_processes = True``: its own randomness comes from
the operating system, fresh in every process, as OpenDP's does).
Ctrl-C cancels every outstanding chunk and ends the workers.

For the nested looks of a sequential audit (:mod:`audit.gating.sequential`) one runner serves every look:
its ``boundaries`` end chunks at the looks' sizes (:func:`~mechanisms.execution.chunks.plan_chunks`),
so a smaller look's jobs are whole chunks of a larger look's, and its :class:`ChunkCache` gives a
chunk that was already run its outputs again instead of calling the mechanism; ``calls`` counts the
calls made and ``call_limit`` bounds them (:class:`RunLimitReached`).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from estimators.progress import progress_bar
from estimators.validation import InputError, check_int

from mechanisms.base import (as_database_batch, draws_only_from_rng, preferred_chunk_size,
                             released_width)
from mechanisms.errors import MechanismError, MechanismWarning, StatisticError
from mechanisms.execution.backends import WorkerLost, make_backend, run_tasks
from mechanisms.execution.chunk_cache import ChunkCache
from mechanisms.execution.chunks import (MECHANISM, PRIOR, PROBE, ChunkTask, bounded_by_first_calls,
                                         chunk_generator, global_draws_note, guard_global_generators, plan_chunks,
                                         seed_global_generators)
from mechanisms.inputs.bounded_draws import draw_bounded
from mechanisms.execution.memory import budget_name, check_output_memory, format_bytes
from mechanisms.calls.user_call import TIMEOUT_HINT
from mechanisms.calls.printed import Printed, say_failed
from mechanisms.calls.watchdog import IGNORED_INTERRUPTION_CAUSES
# Re-exported: the configuration, the command line and the tests import the settings from the runner.
from mechanisms.execution.settings import (BACKENDS, DEFAULT_CHUNK_SIZE, MAX_CHUNK_ENTRIES, MAX_TIMEOUT_S, MAX_WORKERS,
                                           PROBE_TIMEOUT, ExecutionSettings)
from mechanisms.execution.worker import HARD_KILL_GRACE, MechanismReference, run_chunk, run_probe
from mechanisms.outputs.encoding import encoder_of, none_note

__all__ = ["BACKENDS", "DEFAULT_CHUNK_SIZE", "MAX_CHUNK_ENTRIES", "MAX_TIMEOUT_S", "MAX_WORKERS", "PROBE_TIMEOUT",
           "ChunkCache", "ExecutionSettings", "MechanismRunner", "RunLimitReached"]


class RunLimitReached(Exception):
    """A job would take a runner's mechanism calls past its ``call_limit``; no call of the job was made.

    Attributes
    ----------
    needed : int
        Calls the job would have made.
    left : int
        Calls the limit still allowed.
    """

    def __init__(self, needed: int, left: int, what: str):
        super().__init__(f"a job of {needed} {what}s would need {needed} mechanism calls; the run limit leaves {left}")
        self.needed, self.left = needed, left


def _shape_text(shape) -> str:
    """An output batch's shape as ``(m, d)``: the number of databases left as m."""
    return "(" + ", ".join(["m", *map(str, shape[1:])]) + ")"


class MechanismRunner:
    """Runs one audit's mechanism (and draws its priors) in seeded chunks; a context manager.

    Parameters
    ----------
    mechanism : callable
        The mechanism ``mech(dbs, rng) -> (m, d)``.
    label : str
        Its name in messages.
    settings : ExecutionSettings
        Backend, workers, timeout, chunk size, retries.
    source : str or mapping, optional
        The specification or ``[mechanism]`` table that loaded the mechanism (how worker
        processes load it; :class:`~mechanisms.execution.worker.MechanismReference`).
    quiet : bool
        No progress bar.
    boundaries : sequence of int, optional
        Job sizes that end a chunk in every job (prior draws and mechanism runs;
        :func:`~mechanisms.execution.chunks.plan_chunks`): a job of one of these sizes is then the
        first chunks of any larger job with the same seed. Default none: chunks of the chunk size from 0.
    cache : ChunkCache, optional
        Where mechanism chunks' outputs are kept, and looked up before a chunk is run.
    presence_column : bool
        The databases' last attribute says which records are present (an add/remove audit,
        :mod:`mechanisms.inputs.relation`): each group of databases with the same present records runs
        as its own batch of those records, without the column.
    memory_names : dict, optional
        How a memory refusal names the budgets it asks to lower (keys ``samples``, ``event_runs``), as the
        runner's user sets them (:func:`~mechanisms.execution.memory.check_output_memory`'s ``names``): an
        audit's runner gives the argument, the flag and the configuration key
        (``audit.critic_cost.AUDIT_MEMORY_NAMES``). Default: the flags.

    Attributes
    ----------
    notes : list of str
        What the audit should report about the runs (e.g. a mechanism that is not reproducible).
    calls : int
        Databases the mechanism was called on (the probe's calls aside; a chunk found in ``cache`` makes none).
    probe_calls : int
        Calls the runner's probe made, on one database, outside :attr:`calls`: 2, or 3 where its first two outputs
        differ (:func:`~mechanisms.execution.worker.run_probe`); 0 before the probe. What a caller adds to
        :attr:`calls` to count every call that returned (the failed attempts of a chunk given up, or retried, are
        counted by neither).
    call_limit : int or None
        The most ``calls`` may reach: a job that would pass it raises :class:`RunLimitReached` before
        making any call. None: no limit.
    printed : Printed
        What the mechanism printed in every call so far, the probe's and those of failed attempts included
        (counted in whichever process ran the call, :func:`mechanisms.execution.worker.run_chunk`), kept off
        the terminal.
    with_nan : int
        Of the ``calls`` outputs, those that held a NaN its output encoder made a category.
    """

    def __init__(self, mechanism, label: str, settings: ExecutionSettings | None = None, *,
                 source=None, quiet: bool = True, presence_column: bool = False, boundaries=(),
                 cache: ChunkCache | None = None, memory_names: dict | None = None):
        self.presence_column = presence_column
        self.memory_names = dict(memory_names or {})
        self.boundaries = tuple(sorted({check_int(b, "boundaries", 1) for b in boundaries}))
        self.cache = cache
        self.calls, self.probe_calls = 0, 0
        self.call_limit: int | None = None
        self.printed, self.with_nan = Printed(), 0
        self.settings = settings or ExecutionSettings()
        self.label, self.quiet = label, quiet
        self.who = f"mechanism '{label}'"
        self.reference = MechanismReference(label, source, mechanism)
        self.notes: list[str] = []
        self._backend = None
        self._probed, self._probe_output, self._first_seconds = False, None, None  # the probe's slower call
        self._output_width = 1  # known after the probe
        # The shape of one output per number of records (add/remove audits run n and n − 1), fixed by the first call.
        self._output_shapes: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def chunk_size(self, database_shape) -> int:
        """Databases per call for databases of ``database_shape`` (n, k) (:class:`ExecutionSettings`);
        ``None`` (a prior that does not say its shape): :data:`DEFAULT_CHUNK_SIZE` unless the settings say."""
        if self.settings.chunk_size is not None:
            return self.settings.chunk_size
        preferred = preferred_chunk_size(self.reference.mechanism)
        if preferred is None or database_shape is None:
            return DEFAULT_CHUNK_SIZE
        entries = max(1, int(np.prod(database_shape)))
        return max(DEFAULT_CHUNK_SIZE, min(preferred, MAX_CHUNK_ENTRIES // entries))

    def close(self):
        """Release the workers (and a Ray instance this runner started)."""
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    @property
    def backend(self):
        if self._backend is None:
            s = self.settings
            self._backend = make_backend(self.reference, s.backend, s.workers, s.ray_address)
        return self._backend

    # ------------------------------------------------------------------ priors

    def draw(self, prior, samples: int, rng: np.random.Generator) -> np.ndarray:
        """``samples`` databases from ``prior``, drawn in this process in seeded chunks.

        Each call of the prior is bounded by ``timeout``, else by a multiple of its first call's time
        (:func:`~mechanisms.inputs.bounded_draws.draw_bounded`), and a ``sys.exit`` in it is an error
        naming it; a budget that cannot be allocated is an error naming ``samples``.
        """
        job_seed = int(rng.integers(2**63))
        seeded_by_rng = draws_only_from_rng(prior)
        chunks = []
        try:
            with guard_global_generators(prior):
                for index, start, stop in plan_chunks(samples, self.chunk_size(getattr(prior, "shape", None)),
                                                          self.boundaries):
                    generator = chunk_generator(job_seed, index, PRIOR)
                    if not seeded_by_rng:
                        seed_global_generators(job_seed, index, PRIOR)
                    chunks.append(draw_bounded(prior, stop - start, generator, timeout=self.settings.timeout,
                                               where=f" drawing databases {start}-{stop - 1}"))
            return np.concatenate(chunks)
        except MemoryError:
            size = sum(c.nbytes for c in chunks)
            raise InputError(f"argument 'samples' ({samples}): out of memory after drawing {format_bytes(size)} of "
                             f"databases; lower {budget_name('samples', self.memory_names)}") from None

    # ------------------------------------------------------------------ mechanism

    def runs_of(self, database, count: int, rng: np.random.Generator, *, what: str = "run",
                budget: str | None = "samples") -> tuple:
        """(databases, outputs) of ``count`` runs of one ``database``, shape (n, k); ``what`` and ``budget`` as in
        :meth:`sample`.

        With a cache that keeps streams (:class:`~mechanisms.execution.chunk_cache.ChunkCache`), the runs are
        the next ``count`` of ``database``'s stream in this look; otherwise a job like :meth:`sample`'s.
        The databases are ``database`` ``count`` times as one read-only view (:func:`numpy.broadcast_to`), not
        ``count`` copies: each mechanism call gets its own copy of its chunk's databases
        (:func:`mechanisms.base.run_on_batch`), and a caller that changes them copies them first.
        """
        database = np.asarray(database, dtype=np.float64)
        # Checked once as one database, not as count copies of it (what the batch holds, entry for entry).
        one = as_database_batch(database[None], allow_nan=self.settings.allow_nan)
        batch = np.broadcast_to(one, (count, *one.shape[1:]))
        if count == 0:  # the empty batch's own error
            as_database_batch(batch)
        return batch, self._sample_checked(batch, rng, what, budget, one_database=True)

    def sample(self, dbs, rng: np.random.Generator, *, what: str = "database", budget: str | None = "samples",
               one_database: bool = False) -> np.ndarray:
        """The mechanism's output on every database of ``dbs``, run in seeded chunks.

        Parameters
        ----------
        dbs : array_like, shape (m, n, k)
            The databases (never modified: each call gets a copy).
        rng : numpy.random.Generator
            The audit's generator; one draw from it seeds the whole job.
        what : str
            What a database is in this job, for messages (``"audit sample"``).
        budget : str or None
            The budget that sizes this job (``"samples"``, ``"event_runs"``): the one a memory refusal asks to
            lower (:func:`~mechanisms.execution.memory.check_output_memory`); None for a job of a fixed size.
        one_database : bool
            Whether every database of ``dbs`` is one database (:meth:`runs_of`): such a job takes its runs
            from that database's stream where the cache keeps streams.

        Raises
        ------
        MechanismError
            Naming the mechanism and the database, after ``retries`` failed attempts.
        """
        return self._sample_checked(as_database_batch(dbs, allow_nan=self.settings.allow_nan), rng, what, budget,
                                    one_database)

    def _sample_checked(self, batch: np.ndarray, rng: np.random.Generator, what: str, budget: str | None,
                        one_database: bool) -> np.ndarray:
        """:meth:`sample` of a ``batch`` :func:`~mechanisms.base.as_database_batch` has checked."""
        if self.presence_column:
            return self._sample_present(batch, rng, what, budget, one_database)
        return self._sample_batch(batch, rng, what, budget, one_database)

    def _sample_present(self, batch: np.ndarray, rng: np.random.Generator, what: str, budget: str | None,
                        one_database: bool) -> np.ndarray:
        """:meth:`sample` of presence-column databases: each group with the same present records is its own
        batch of (m′, n′, k) (:func:`mechanisms.inputs.relation.split_by_presence`), in the order of the groups."""
        from mechanisms.inputs.relation import split_by_presence  # the relation module imports the priors, which import this one

        out, widths = None, {}
        for indices, rows in split_by_presence(batch):
            outputs = self._sample_batch(np.ascontiguousarray(batch[indices][:, rows, :-1]), rng, what, budget,
                                         one_database)
            widths[len(rows)] = outputs.shape[1]
            if out is None:
                out = np.empty((batch.shape[0], outputs.shape[1]))
            if outputs.shape[1] != out.shape[1]:
                said = ", ".join(f"{width} on databases of {records} records"
                                 for records, width in sorted(widths.items()))
                raise MechanismError(f"{self.who} returned outputs of differing widths ({said}); an add/remove audit "
                                     "compares its outputs on n and n − 1 records, so they need one width: pad them, "
                                     "or give a function of one database (--per-database), whose outputs of any shape "
                                     "are encoded to one width", mechanism=self.who)
            out[indices] = outputs
        return out

    def _sample_batch(self, batch: np.ndarray, rng: np.random.Generator, what: str, budget: str | None,
                      one_database: bool) -> np.ndarray:
        job_seed = int(rng.integers(2**63))
        timeout = self.settings.timeout
        if not self._probed:
            self._probe(batch[:1], job_seed)
        check_output_memory(batch.shape[0], self._output_width, what, budget=budget, names=self.memory_names)
        size, chunk_size, offset = batch.shape[0], self.chunk_size(batch.shape[1:]), 0
        if self.cache is not None and self.cache.stream_seed is not None and size and one_database:
            chunks, keys, offset = self._stream_chunks(batch[0], size, chunk_size)
        else:
            chunks = [ChunkTask(job_seed, index, start, batch[start:stop], stop - start, timeout, MECHANISM,
                                last_attempt=self.settings.retries == 0,
                                allow_nan=self.settings.allow_nan)
                      for index, start, stop in plan_chunks(size, chunk_size, self.boundaries)]
            keys = [None] * len(chunks) if self.cache is None else [self.cache.key(task) for task in chunks]
        outputs = [None if key is None else self.cache.get(key) for key in keys]
        missing = [i for i, output in enumerate(outputs) if output is None]
        fresh = sum(chunks[i].size for i in missing)
        if self.call_limit is not None and self.calls + fresh > self.call_limit:
            raise RunLimitReached(fresh, self.call_limit - self.calls, what)
        planned = sum(task.size for task in chunks)
        bar = progress_bar(planned, f"sampling {self.label}", quiet=self.quiet)
        try:
            made = []
            if fresh < planned:
                bar.update(planned - fresh)
            if missing:
                with guard_global_generators(self.reference.mechanism):
                    made = self._dispatch(run_chunk, [bounded_by_first_calls(chunks[i], self._first_seconds)
                                                      for i in missing], self.settings.retries, what,
                                          lambda task: bar.update(task.size))
        finally:
            bar.close()
        self.calls += fresh
        for i, chunk in zip(missing, made):  # what each printed, _dispatch added
            outputs[i] = chunk.outputs
            self.with_nan += chunk.with_nan
            if self.cache is not None:
                self.cache.put(keys[i], chunk.outputs)
        if self.cache is not None:  # the job's runs that came from chunks already made
            cached = set(range(len(chunks))) - set(missing)
            self.cache.hits += sum(max(0, min(chunks[i].start + chunks[i].size, offset + size)
                                       - max(chunks[i].start, offset)) for i in cached)
        skip = offset - chunks[0].start if chunks else 0  # a stream's chunks may hold runs of other jobs
        return self._joined(outputs, chunks, batch.shape[1], what)[skip:skip + size]

    def _stream_chunks(self, database: np.ndarray, size: int, chunk_size: int) -> tuple[list, list, int]:
        """The chunks of ``database``'s stream (:class:`ChunkCache`) that hold its next ``size`` runs in this
        look: (the chunks, their cache keys, the position of the first of those runs).

        The stream's chunks already made are used as they are. New ones continue from the end of the
        last, cut where a job of any size would be cut (the boundaries, then every ``chunk_size``
        runs: :func:`~mechanisms.execution.chunks.plan_chunks`), so that every look makes the same
        chunks; the last one is made whole (its runs past this job's are the next look's), except in
        the cache's ``final`` look, where it ends with the job (no look comes after to use them).
        """
        stream, offset = self.cache.take(database, size)
        end, made = offset + size, (stream.chunks[-1][1] if stream.chunks else 0)
        if end > made:
            stops = [stop for _, _, stop in plan_chunks(end + chunk_size, chunk_size, self.boundaries) if stop > made]
            stops = [stop for stop in stops if stop < end] + [end if self.cache.final else
                                                               next(stop for stop in stops if stop >= end)]
            for start, stop in zip([made] + stops[:-1], stops):
                stream.chunks.append((start, stop, (stream.seed, len(stream.chunks), MECHANISM, stop - start,
                                                    stream.digest)))
        chunks, keys = [], []
        for index, (start, stop, key) in enumerate(stream.chunks):
            if start < end and stop > offset:
                # A chunk already made is read from the cache: only a chunk to run gets its databases, as one
                # read-only view (each call copies its databases, run_on_batch).
                dbs = (database[None][:0] if self.cache.get(key) is not None
                       else np.broadcast_to(database, (stop - start, *database.shape)))
                chunks.append(ChunkTask(stream.seed, index, start, dbs, stop - start, self.settings.timeout, MECHANISM,
                                        last_attempt=self.settings.retries == 0, allow_nan=self.settings.allow_nan))
                keys.append(key)
        return chunks, keys, offset

    def _joined(self, outputs: list, chunks: list, records: int, what: str) -> np.ndarray:
        """The chunks' outputs as one array, when every call returned the width the first one did.

        A mechanism whose output width changes (between calls, or only after the probe: from the MI
        sample to the event runs) has no output space to audit: one line naming it, not NumPy's error.
        Where only the columns of the user's statistic inside its calls changed (:meth:`_statistic_lengths`:
        each worker process checks the statistic's own outputs, not another's), the line names the statistic.
        """
        for task, output in zip(chunks, outputs):
            shape = np.shape(output)[1:]
            known = self._output_shapes.setdefault(records, shape)
            if shape != known:
                statistic = self._statistic_lengths(known, shape)
                if statistic is not None:
                    # The words of the statistic's own check (UserStatistic.values), which one process raises.
                    name, earlier, now = statistic
                    raise StatisticError(f"statistic {name!r} returned {now} numbers for one output and {earlier} "
                                         "for an earlier one, in another worker process; it must return as many for "
                                         "every output", mechanism=f"statistic {name!r}", database_index=task.start)
                last = task.start + task.size - 1
                before = _shape_text((0, *known))
                raise MechanismError(f"{self.who} returned outputs of shape {_shape_text(np.shape(output))} on "
                                     f"databases {task.start}-{last} of this job but {before} before: its output "
                                     "must have the same shape on every call", mechanism=self.who,
                                     database_index=task.start)
        if len(outputs) == 1 and self.cache is None and outputs[0].flags.writeable:
            # One chunk's outputs are already an array of this job's own (check_batch_output copies what the
            # mechanism returned, or the mechanism made it for this call alone, returns_fresh_outputs): no copy of
            # them. Kept in a cache, or read-only (as Ray hands back an object from its store), they are copied, so
            # that a caller that changes the job's outputs changes no later job's.
            return outputs[0]
        return np.concatenate(outputs)

    def _statistic_lengths(self, before: tuple, now: tuple) -> tuple | None:
        """(name, earlier length, this length) of the user's statistic whose values end each output row of the
        mechanism's encoder (:class:`~mechanisms.outputs.encoding.OutputEncoder`, ``2 * width`` columns before
        them), where two rows of widths ``before`` and ``now`` differ in its columns alone; else None."""
        encoder = encoder_of(self.reference.mechanism)
        statistic = getattr(encoder, "statistic", None)
        if statistic is None or len(before) != 1 or len(now) != 1:
            return None
        widths = [width[0] for width in (before, now)]
        if self.settings.allow_nan:  # the rows end with the missing marks of their columns (with_missing_marks)
            widths = [released_width(width) or 0 for width in widths]
        lengths = [width - 2 * encoder.width for width in widths]
        return (statistic.name, *lengths) if min(lengths) > 0 else None

    def probe(self, database, seed: int) -> np.ndarray:
        """The mechanism's output on one ``database`` (shape (n, k)) under ``seed``: the runner's probe, made now if
        not made yet (twice with the same seed, checked, not counted in :attr:`calls`), else the first probe's output."""
        database = np.asarray(database, dtype=np.float64)
        if self.presence_column:  # the mechanism sees the present records without the column (_sample_present)
            database = database[database[:, -1] == 1, :-1]
        if not self._probed:
            self._probe(np.ascontiguousarray(database)[None], int(seed))
        return self._probe_output

    def _probe(self, first: np.ndarray, job_seed: int) -> None:
        timeout = self.settings.timeout or PROBE_TIMEOUT
        task = ChunkTask(job_seed, 0, 0, first, 1, timeout, PROBE, allow_nan=self.settings.allow_nan)
        with guard_global_generators(self.reference.mechanism):
            # The probe's prints are the function's too (_dispatch adds them); its outputs are not among the calls
            # counted, nor their NaN.
            [calls] = self._dispatch(run_probe, [task], 0, "database")
        one, two = calls[0].outputs, calls[1].outputs
        self._probed, self._probe_output, self._first_seconds = True, one, max(call.seconds for call in calls)
        self.probe_calls += len(calls)
        if np.shape(one)[1:] != np.shape(two)[1:]:
            raise MechanismError(f"{self.who} returned outputs of shape {_shape_text(np.shape(one))} and then "
                                 f"{_shape_text(np.shape(two))} for the same database: its output must have the same "
                                 "shape on every call", mechanism=self.who, database_index=0)
        self._output_shapes[first.shape[1]] = np.shape(one)[1:]
        self._output_width = int(np.asarray(one).reshape(1, -1).shape[1])  # for the memory check of each job
        encoder = encoder_of(self.reference.mechanism)
        if encoder is not None and encoder.encodes_none(one):  # a function without a return: say so, as no verdict can
            self.notes.append(none_note(self.who))
        if np.array_equal(one, two):
            return
        mechanism = self.reference.mechanism
        if getattr(mechanism, "seeded", True) is False and getattr(mechanism, "independent_across_processes", False):
            return  # a library that declares it takes no seed (OpenDP); its adapter's note already says so
        if len(calls) == 3 and np.array_equal(one, calls[2].outputs):  # seeded as the first call: the same output
            self.notes.append(global_draws_note(self.who))
            return
        if draws_only_from_rng(mechanism):
            message = (f"{self.who} declares draws_only_from_rng, so its global generators were not seeded, yet it "
                       "returned different outputs for the same database and the same seed: it draws randomness "
                       "that is not from the rng it is given (numpy.random, random, torch, its own generator, "
                       "os.urandom, the clock); remove the declaration")
        else:
            message = (f"{self.who} returned different outputs for the same database and the same seed: it draws "
                       "randomness that is not from the rng it is given (nor from numpy.random, random or torch, "
                       "which miaudit seeds for every chunk): its own generator, os.urandom, the clock")
        parallel = self.settings.workers > 1 or self.settings.backend == "ray"
        if parallel and not getattr(self.reference.mechanism, "independent_across_processes", False):
            raise MechanismError(message + "; on worker processes such draws may repeat from one worker to the "
                                 "next and make the samples dependent, so the audit stops: draw from rng, or "
                                 "run in process (--workers 1)", mechanism=self.who)
        note = message + "; the audit is valid but cannot be reproduced from its seed"
        warnings.warn(note, MechanismWarning, stacklevel=2)
        self.notes.append(note)

    def call_notes(self) -> list:
        """What the audit's notes say of the calls so far: what the mechanism printed (:attr:`printed`, in one line
        with its first lines), and how many of its outputs held a NaN, each made one category by its output
        encoder (:attr:`with_nan`); [] where neither happened."""
        notes = [self.printed.note(self.who)] if self.printed.lines else []
        if self.with_nan:
            notes.append(f"{self.who} returned NaN in {self.with_nan:,} of its {self.calls:,} outputs: each NaN is "
                         "treated as one category (y=nan, the same value whatever made it), not as a number")
        return notes

    def _dispatch(self, fn, tasks: list, retries: int, what: str, on_done=None) -> list:
        """Run ``fn(reference, task)`` for every task on the backend (:func:`run_tasks`); results in task order.

        A chunk given up (:func:`~mechanisms.execution.attempts.run_tasks`: after ``retries + 1`` failed attempts,
        a refusal, or a failure that repeats the attempt before it) stops the audit with one error naming the
        mechanism and its databases. Every attempt after a chunk's first may be its last, so it locates the failing
        database (a refusal's first attempt does too: :func:`mechanisms.base.run_on_batch`); a chunk whose timeout
        repeats spends an attempt still left naming the database it hangs on (:attr:`ChunkTask.locate_hang`). What
        the attempt given up printed is said then, once (:func:`~mechanisms.calls.printed.say_failed`). What each
        task printed (:attr:`ChunkOutput.printed`; both calls' for a probe) is added to :attr:`printed` in the
        order of the tasks, each after what its failed attempts printed, which their errors carry
        (:attr:`MechanismError.printed`; none from a worker that died): the order of the runs, not the order
        in which workers ended them. Where the audit stops, what the failed attempts printed is added so.
        """
        failed = [Printed() for _ in tasks]  # what each task's failed attempts printed, in the order of the attempts

        def give_up(position, exc, attempts):
            say_failed(getattr(exc, "printed", None), self.who)
            raise self._final_error(tasks[position], exc, attempts, what) from None

        def locate(task, exc):  # a timeout that repeats: an attempt left names the database it hangs on
            if getattr(exc, "timed_out", False) and task.size > 1 and task.timeout is not None:
                return replace(task, locate_hang=True)
            return None

        def count_prints(position, exc):
            if getattr(exc, "printed", None) is not None:
                failed[position] += exc.printed

        def last_attempt(task):
            return task if task.last_attempt else replace(task, last_attempt=True)

        try:
            results = run_tasks(self.backend, fn, tasks, retries=retries, give_up=give_up, last_attempt=last_attempt,
                                locate=locate,
                                on_done=None if on_done is None else lambda position, _result: on_done(tasks[position]),
                                on_failed=count_prints)
        except BaseException:
            for printed in failed:
                self.printed += printed
            raise
        for printed, result in zip(failed, results):
            self.printed += printed
            for output in result if isinstance(result, tuple) else (result,):  # a probe's two calls
                self.printed += output.printed
        return results

    def _final_error(self, task: ChunkTask, exc: Exception, attempts: int, what: str) -> MechanismError:
        if task.locate_hang and getattr(exc, "timed_out", False):
            return self._hang_error(task, exc, attempts - 1, what)
        # "each": a bare "(3 attempts)" does not say that every retry failed the same way.
        tried = f" (on each of {attempts} attempts)" if attempts > 1 else ""
        if isinstance(exc, WorkerLost):
            # The user code the worker said was running inside the mechanism's call (a statistic), else the mechanism.
            inside = f"{exc.running}, running inside the call of {self.who} on {task.databases}"
            if exc.stuck:  # the words of the in-process watchdog's line (mechanisms.calls.watchdog.stuck_message)
                overrun = (f"{inside}, did not return within {task.timeout:g} s" if exc.running else
                           f"{self.who} did not return within {task.timeout:g} s on {task.databases}")
                bound = "" if task.timeout_hint == TIMEOUT_HINT else f" {task.timeout_hint}"  # the default's words
                return MechanismError(f"{overrun} and ignored the interruption ({IGNORED_INTERRUPTION_CAUSES}); its "
                                      f"worker process was stopped {HARD_KILL_GRACE:g} s later{bound}{tried}",
                                      mechanism=self.who)
            running = (f"{inside}: the worker process running it" if exc.running else
                       f"{self.who}: the worker process running it on {task.databases}")
            return MechanismError(
                f"{running} died{tried}: it was killed, ran out of memory, called os._exit or crashed in compiled "
                f"code, or was stopped after hanging past --timeout ({exc})", mechanism=self.who)
        index = exc.database_index
        message = str(exc)
        if index is not None:
            # The adapter numbered the database within its chunk; the user knows it by its place in the job.
            chunk_words, job_words = f"database {index}", f"{what} {task.start + index}"
            message = message.replace(chunk_words, job_words, 1) if chunk_words in message \
                else f"{message} ({job_words})"
            index += task.start
        elif task.size > 1 or task.start:
            message += f" ({what}s {task.start}-{task.start + task.size - 1})"
        if isinstance(exc, StatisticError):  # the statistic inside the call stays named as itself
            return StatisticError(message + tried, mechanism=exc.mechanism, database_index=index)
        final = MechanismError(message + tried, mechanism=self.who, database_index=index)
        final.refused = getattr(exc, "refused", False)  # a refusal of the databases' values stays one
        final.timed_out = getattr(exc, "timed_out", False)  # so does a timeout (no line "raised" is the cause)
        return final

    def _hang_error(self, task: ChunkTask, exc: MechanismError, attempts: int, what: str) -> MechanismError:
        """The error of a chunk that ran out of its bound on ``attempts`` attempts and then had its databases run one
        at a time within it (:attr:`ChunkTask.locate_hang`): naming the first that ran out of it, where one did."""
        first, last, index = task.start, task.start + task.size - 1, exc.database_index
        tried = f" (on each of {attempts} attempts)" if attempts > 1 else ""
        if index is None:
            alone = "none of them ran out of it"
        else:
            before = "" if index == 0 else (f"{what} {first} returned and " if index == 1 else
                                             f"{what}s {first}-{first + index - 1} returned and ")
            alone = f"{before}{what} {first + index} did not return"
        error = MechanismError(f"{self.who} did not return within {task.timeout:g} s on {what}s {first}-{last}{tried}; "
                               f"run one at a time within that bound, {alone} {task.timeout_hint}", mechanism=self.who,
                               database_index=None if index is None else first + index)
        error.timed_out = True
        return error

