"""An experiment's stages pipelined over a :class:`~experiments.row_pool.JobPool` (``miaudit experiment --workers K``).

Run one after another, each stage of a study waits for its slowest audit while the other workers sit idle, and
a stage computed in the main process leaves all of them idle. :func:`run_stages` queues every pooled stage's
audits at once, longest first (:meth:`JobPool.submit_all`), computes the main-process stages in a thread meanwhile,
and writes each table (:meth:`RunContext.stage`) as soon as its own audits are done. The values come back in each
stage's own jobs' order, and each audit draws from its own seed, so the tables are those of a run in one process.
With one worker nothing can overlap: the stages run one after another in the order given, as they always did.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from .row_pool import JobPool, job_seconds

__all__ = ["StagePlan", "pool_finding", "run_stages"]


@dataclass(frozen=True)
class StagePlan:
    """One pooled stage: its audits, ``function(*job)`` for each of ``jobs`` (a module-level function), and
    ``finish``, which turns their values (in the jobs' order) into the table's columns.

    ``sizes``: an estimate per job, larger for longer jobs, by which the pool starts the longest first (None:
    in the order given)."""

    name: str
    function: Callable
    jobs: list
    finish: Callable
    sizes: list | None = None

    def rows(self, pool: JobPool | None = None) -> dict:
        """The table's columns, the audits run through ``pool`` (default: here)."""
        return self.finish((pool or JobPool()).map(self.function, self.jobs))


def _earliest(*times) -> float:
    known = [t for t in times if not math.isnan(t)]
    return min(known) if known else math.nan


def run_stages(context, pool: JobPool, plans, later=(), here=()) -> list:
    """Run an experiment's stages, overlapping them where ``pool`` has workers; the tables in the order given.

    Parameters
    ----------
    context : experiments.framework.RunContext
        Writes each table and keeps each stage's seconds and span (:meth:`RunContext.stage`).
    pool : JobPool
    plans : list of StagePlan
        Stages whose audits can be queued at once.
    later : list of (str, callable)
        (name, ``make()`` → :class:`StagePlan`): stages whose audits need work in this process first (a search
        that chooses them); with workers, made in a thread while the workers audit, and queued once made.
    here : list of (str, callable)
        (name, ``compute()`` → columns): stages computed in this process; with workers, in a thread while the
        workers audit.

    Returns
    -------
    list of Table
        Those of ``plans``, then ``later``, then ``here``.

    Notes
    -----
    With workers, a pooled stage's span (:attr:`RunContext.stage_spans`) runs from when its work began (its
    first audit's start, or the start of ``make()`` for a stage of ``later``) to its table's writing, so spans
    overlap and the stages' seconds add up to more than the run's.
    """
    if pool.workers <= 1:
        tables = [context.stage(plan.name, lambda plan=plan: plan.rows(pool)) for plan in plans]
        tables += [context.stage(name, lambda make=make: make().rows(pool)) for name, make in later]
        return tables + [context.stage(name, compute) for name, compute in here]

    def queue_later() -> list:
        queued = []
        for _, make in later:
            began = time.time()
            plan = make()
            queued.append((plan, pool.submit(plan.function, plan.jobs, plan.sizes), began))
        return queued

    def write(plan, batch, began=math.nan):
        return context.stage(plan.name, lambda: plan.finish(batch.result()),
                             began=lambda: _earliest(batch.started, began))

    batches = pool.submit_all([(plan.function, plan.jobs, plan.sizes) for plan in plans])
    # Two threads: the stages of `later` must queue their audits early, not after the `here` stages.
    with ThreadPoolExecutor(2) as threads:
        queued = threads.submit(queue_later)
        computed = threads.submit(lambda: [context.stage(name, compute) for name, compute in here])
        tables = [write(plan, batch) for plan, batch in zip(plans, batches)]
        tables += [write(*item) for item in queued.result()]
        return tables + computed.result()


def pool_finding(pool: JobPool) -> str:
    """A page's sentence on the pool's occupancy (:meth:`JobPool.occupancy`) over the jobs it has run."""
    busy, wall = job_seconds(pool.spans)
    where = f"{pool.workers} worker processes" if pool.workers > 1 else "this process (--workers 1)"
    return (f"Audits in {where}: {len(pool.spans)} audits, {busy:.1f} audit-seconds over the {wall:.1f} s from the "
            f"first one's start to the last one's end: occupancy {pool.occupancy():.0%} (the share of the workers' "
            "time spent in audits; on a GPU, the bound on how busy they keep the card).")
