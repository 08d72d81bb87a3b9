"""An experiment stage's independent audits side by side in worker processes (``miaudit experiment --workers K``).

A stage of :mod:`experiments.dpsgd_audit` is a list of audits that share nothing: each builds its own
mechanism and draws from its own seed. :func:`map_jobs` runs them in K spawned processes and returns their
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

__all__ = ["map_jobs", "worker_threads"]


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


def map_jobs(function, jobs, workers: int = 1) -> list:
    """``[function(*job) for job in jobs]``, computed in ``workers`` spawned processes when ``workers > 1``.

    Parameters
    ----------
    function : callable
        A module-level function (workers import it by name); its arguments and value must pickle.
    jobs : iterable of tuple
        Each call's positional arguments.
    workers : int >= 1
        Processes; 1 runs the jobs here, in order.

    Returns
    -------
    list
        The values in the order of ``jobs``, whatever order the workers finish in.
    """
    jobs = list(jobs)
    if workers <= 1 or len(jobs) <= 1:
        return [function(*job) for job in jobs]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context, initializer=_start_worker,
                             initargs=(worker_threads(workers),)) as pool:
        return list(pool.map(_call, [(function, job) for job in jobs]))
