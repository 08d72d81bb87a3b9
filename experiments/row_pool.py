"""An experiment stage's independent audits side by side in worker processes (``miaudit experiment --workers K``).

A stage of :mod:`experiments.dpsgd_audit` is a list of audits that share nothing: each builds its own
mechanism and draws from its own seed. :class:`JobPool` runs them in K spawned processes, started once for the run, and returns their
results in the jobs' order, so a table is the same with any K (what each audit draws depends on its seed
only). On a GPU the K processes share the card: one process's host work (NumPy statistics, Python, the
runner) overlaps the others' kernels, which a single process leaves idle (issue 42 §1: the GPU grid kept an
H200 busy 4% of the time). Each worker keeps ``os.cpu_count() // K`` of torch's intra-op threads.
Processes are spawned, not forked: CUDA cannot be used in a forked child.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from estimators.validation import InputError

__all__ = ["JobPool", "worker_threads"]


def worker_threads(workers: int, cores: int | None = None) -> int:
    """torch's intra-op threads in each of ``workers`` processes on ``cores`` cores (default: this machine's):
    the cores shared out, at least one each."""
    return max(1, (cores or os.cpu_count() or 1) // max(1, workers))


def _start_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _call(function_and_job):
    function, job = function_and_job
    return function(*job)


class JobPool:
    """Processes that run an experiment's independent jobs, kept for the whole run (``with JobPool(k) as pool``).

    The processes start at the first :meth:`map` with more than one job and serve every later stage, so a run
    pays their start (imports, and a CUDA context each on a GPU) once; ``workers = 1`` runs every job here.
    """

    def __init__(self, workers: int = 1):
        self.workers = workers
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
        jobs = list(jobs)
        if self.workers <= 1 or len(jobs) <= 1:
            return [function(*job) for job in jobs]
        if self._executor is None:
            self._executor = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=_start_worker, initargs=(worker_threads(self.workers),))
        try:
            return list(self._executor.map(_call, [(function, job) for job in jobs]))
        except BrokenProcessPool:
            self._executor = None
            raise InputError(f"argument '--workers': a worker process of the {self.workers} died; a Python script that "
                             "runs this without an 'if __name__ == \"__main__\":' guard is run again by each worker it "
                             "starts (spawn): add the guard, or give --workers 1") from None
