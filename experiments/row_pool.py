"""An experiment's independent audits side by side in worker processes (``miaudit experiment --workers K``).

A stage of :mod:`experiments.dpsgd_audit` is a list of audits that share nothing: each builds its own
mechanism and draws from its own seed. :class:`JobPool` runs them in K spawned processes, started once for the run, and returns their
results in the jobs' order, so a table is the same with any K and in any order the jobs run (what each audit draws
depends on its seed only). On a GPU the K processes share the card: one process's host work (NumPy statistics,
Python, the runner) overlaps the others' kernels, which a single process leaves idle (issue 42 §1: the GPU grid kept an
H200 busy 4% of the time). Each worker keeps ``os.cpu_count() // K`` of torch's intra-op threads.
Processes are spawned, not forked: CUDA cannot be used in a forked child.

:meth:`JobPool.submit` hands a stage's jobs over without waiting, so every stage's jobs can be queued at once (no
stage waits for the slowest audit of the one before), longest first where their sizes are given (LPT). The pool
keeps each job's start and end (wall clock) and reports its :meth:`~JobPool.occupancy`: the share of the workers'
time spent in jobs, the bound on how busy the workers keep a GPU they share that a CPU can measure.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from estimators.validation import InputError

__all__ = ["Batch", "JobPool", "job_seconds", "occupancy", "worker_threads"]


def worker_threads(workers: int, cores: int | None = None) -> int:
    """torch's intra-op threads in each of ``workers`` processes on ``cores`` cores (default: this machine's):
    the cores shared out, at least one each."""
    return max(1, (cores or os.cpu_count() or 1) // max(1, workers))


def _start_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _timed(function, job) -> tuple:
    """``function(*job)`` with its start and end (``time.time()``: a wall clock the processes share)."""
    started = time.time()
    value = function(*job)
    return value, (started, time.time())


def _call(function_and_job):
    return _timed(*function_and_job)


def occupancy(spans, workers: int) -> float:
    """The share of ``workers`` workers' time spent in jobs: job-seconds / (workers × wall seconds), the wall
    seconds running from the first job's start to the last one's end (the pooled part: the workers' own
    start-up, before any job, is not counted). NaN without jobs, or when they took no time.

    Parameters
    ----------
    spans : iterable of (float, float)
        Each job's (start, end) wall-clock times.
    workers : int >= 1
    """
    if workers < 1:
        raise InputError(f"argument 'workers' must be at least 1, got {workers}")
    busy, wall = job_seconds(spans)
    return busy / (workers * wall) if wall > 0 else float("nan")


def job_seconds(spans) -> tuple:
    """(job-seconds, wall seconds from the first job's start to the last one's end) of jobs' (start, end) times."""
    spans = list(spans)
    if not spans:
        return 0.0, 0.0
    return sum(end - start for start, end in spans), max(end for _, end in spans) - min(start for start, _ in spans)


@dataclass(eq=False)
class Batch:
    """One :meth:`JobPool.submit`'s jobs: :meth:`result` gives their values in the jobs' order once all are done.

    With one worker (or one job) the jobs run here, one after another in their given order, when :meth:`result` is
    first called: a run in one process computes each stage when it is asked for, as it always did.
    """

    pool: "JobPool"
    function: object
    jobs: list
    futures: list | None = None  # one per job, in the jobs' order; None: the jobs run here, at result()
    _values: list | None = None
    _spans: list | None = None

    def result(self) -> list:
        """The values, in the order of the jobs (waits for the workers)."""
        if self._values is None:
            if self.futures is None:
                timed = [_timed(self.function, job) for job in self.jobs]
            else:
                try:
                    timed = [future.result() for future in self.futures]
                except BrokenProcessPool:
                    raise self.pool._broken() from None
            self._values = [value for value, _ in timed]
            self._spans = [span for _, span in timed]
            self.pool.spans.extend(self._spans)
        return self._values

    @property
    def spans(self) -> list:
        """Each job's (start, end) wall-clock times, in the jobs' order (after :meth:`result`)."""
        self.result()
        return self._spans

    @property
    def started(self) -> float:
        """When the first of its jobs started (wall clock; after :meth:`result`; NaN without jobs)."""
        return min((start for start, _ in self.spans), default=float("nan"))


class JobPool:
    """Processes that run an experiment's independent jobs, kept for the whole run (``with JobPool(k) as pool``).

    The processes start at the first :meth:`submit` (or :meth:`map`) of more than one job and serve every later one,
    so a run pays their start (imports, and a CUDA context each on a GPU) once; ``workers = 1`` runs every job here.

    Attributes
    ----------
    spans : list of (float, float)
        The (start, end) wall-clock times of every job whose batch's :meth:`Batch.result` has been taken.
    """

    def __init__(self, workers: int = 1):
        self.workers = workers
        self.spans: list = []
        self._executor = None

    def __enter__(self) -> "JobPool":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Stop the processes (they finish the jobs they hold first)."""
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def _broken(self) -> InputError:
        self._executor = None
        return InputError(f"argument '--workers': a worker process of the {self.workers} died; a Python script that "
                          "runs this without an 'if __name__ == \"__main__\":' guard is run again by each worker it "
                          "starts (spawn): add the guard, or give --workers 1")

    def submit_all(self, requests) -> list:
        """Queue several batches of jobs at once, without waiting for them.

        The workers take the jobs longest first where sizes are given (longest-processing-time-first: a long job
        started last would leave the other workers idle at the end), jobs of equal size, or without sizes, in the
        order given; each batch's values still come back in its own jobs' order.

        Parameters
        ----------
        requests : iterable of (function, jobs) or (function, jobs, sizes)
            ``function``: a module-level function (workers import it by name; its arguments and value must
            pickle); ``jobs``: each call's positional arguments; ``sizes``: a number per job, larger for longer
            jobs (an estimate; only its order matters).

        Returns
        -------
        list of Batch
            One per request, in order.
        """
        requests = [(request[0], list(request[1]), request[2] if len(request) > 2 else None) for request in requests]
        # More than one job in all: every job goes to the workers (a lone job run here would hold this process up).
        pooled = self.workers > 1 and sum(len(jobs) for _, jobs, _ in requests) > 1
        batches, queue = [], []
        for request in requests:
            function, jobs, sizes = request
            sizes = [0.0] * len(jobs) if sizes is None else list(sizes)
            if len(sizes) != len(jobs):
                raise InputError(f"argument 'sizes' must give one size per job: {len(sizes)} sizes for {len(jobs)} "
                                 "jobs")
            batch = Batch(self, function, jobs)
            batches.append(batch)
            if pooled and jobs:
                batch.futures = [None] * len(jobs)
                queue += [(-size, len(queue) + index, batch, index) for index, size in enumerate(sizes)]
        if queue:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_worker, initargs=(worker_threads(self.workers),))
            # The executor hands its queue out in submission order: sorted, it runs the largest first.
            for _, _, batch, index in sorted(queue, key=lambda item: item[:2]):
                try:
                    batch.futures[index] = self._executor.submit(_call, (batch.function, batch.jobs[index]))
                except BrokenProcessPool:
                    raise self._broken() from None
        return batches

    def submit(self, function, jobs, sizes=None) -> Batch:
        """Queue ``[function(*job) for job in jobs]`` without waiting: :meth:`submit_all` of one batch."""
        return self.submit_all([(function, jobs, sizes)])[0]

    def map(self, function, jobs) -> list:
        """``[function(*job) for job in jobs]``, computed in the pool's processes when it has more than one.

        Parameters
        ----------
        function : callable
            A module-level function (workers import it by name); its arguments and value must pickle.
        jobs : iterable of tuple
            Each call's positional arguments.

        Returns
        -------
        list
            The values in the order of ``jobs``, whatever order the workers finish in.
        """
        return self.submit(function, jobs).result()

    def occupancy(self) -> float:
        """:func:`occupancy` of the jobs run so far over this pool's workers (NaN before any).

        In one process (``workers = 1``) the jobs run back to back unless the caller works between batches."""
        return occupancy(self.spans, self.workers)
