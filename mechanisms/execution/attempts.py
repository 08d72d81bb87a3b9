"""Which failed attempts at a task are run again: :func:`run_tasks`, through which the runner's chunks
(:class:`~mechanisms.execution.runner.MechanismRunner`) and a scan's cases (:mod:`audit.scan.isolation`) run on a
backend of :mod:`mechanisms.execution.backends`, and :class:`WorkerLost`, the failure of a task whose process died.

Retries are for what changes from one attempt to the next around a task that runs with the same seed every time: a
worker killed by the out-of-memory killer, a transient error. A failure that another attempt would repeat is not
retried: a refusal of the task's input, or a failure in the same words as the attempt before it
(:func:`failure_words`). The rule spends fewer attempts, never more, each within its own bound.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import FIRST_COMPLETED, wait

from mechanisms.errors import MechanismError

__all__ = ["WorkerLost", "failure_words", "run_tasks"]


class WorkerLost(Exception):
    """The process running a chunk died (killed, out of memory, ``os._exit``, a crash, or the
    hard kill of a call stuck past ``--timeout``).

    Attributes
    ----------
    running : str or None
        The user code that was running inside the mechanism's call when it died, where the worker said
        (:func:`mechanisms.execution.worker.lost_in`: a statistic inside a per-database function's
        call); None where that was the mechanism itself, or is not known (a Ray task that could not report:
        :class:`RayBackend`).
    stuck : bool
        The worker said its hard kill was due: it was stopped stuck past ``--timeout`` where the
        interruption cannot reach (compiled code), not killed from outside or crashed.
    """

    def __init__(self, message: str, running: str | None = None, stuck: bool = False):
        super().__init__(message)
        self.running, self.stuck = running, stuck


def failure_words(exc: BaseException) -> str:
    """How a failed attempt failed, apart from where: two attempts at one task that fail in the same words fail the
    same way (:func:`run_tasks`). A :class:`~mechanisms.errors.MechanismError`'s
    :attr:`~mechanisms.errors.MechanismError.failure` where its chunk set it, else its type and message; a dead
    worker's words with what it was running and whether it was stopped stuck."""
    if isinstance(exc, WorkerLost):
        return f"{type(exc).__name__}: {exc} (running {exc.running}, stuck {exc.stuck})"
    return getattr(exc, "failure", None) or f"{type(exc).__name__}: {exc}"


def run_tasks(backend, fn, tasks: list, *, retries: int, give_up, last_attempt=None, locate=None, on_done=None,
              on_failed=None) -> list:
    """Run ``fn(reference, task)`` for every task on ``backend``, at most ``slots`` in flight; results in task order.

    A task whose code raised :class:`~mechanisms.errors.MechanismError`, or whose worker died while
    it ran alone, counts a failed attempt, and is run again (``retries`` times at most) unless the failure is one
    another attempt would repeat:

    - a refusal of the task's input (:attr:`MechanismError.refused <mechanisms.errors.MechanismError.refused>`: the
      code raised an error that says an argument's value is not accepted) is never retried;
    - a failure in the same words as the task's attempt before (:func:`failure_words`: the same exception type and
      message, apart from where it was located; the same death of a worker) is deterministic, and ends the retries:
      a chunk runs with the same seed on every attempt, so only what changes around it (a worker killed by the
      out-of-memory killer, a transient error) fails once and then not; ``locate(task, exc)``, if given, may then
      turn an attempt that is still left into the task's last (the task to send; None: none), which the runner
      spends naming the database that a repeated timeout hangs on.

    The task's result is then ``give_up(position, exc, attempts)`` (which may raise instead). So a task fails at most
    1 + ``retries`` times, each attempt within its own bound, as before the rule: it never adds time to a failing
    task. When a local pool breaks, every task in flight fails with it; those are not counted but run again alone,
    so that only the one that kills its worker is blamed (a task that was the only one in flight is blamed at once:
    a hang that the hard kill ends costs ``--timeout`` + 10 s once, not twice), and the pool is restarted with fresh
    workers.
    ``last_attempt(task)``, if given, is the task as it is sent on every attempt after its first, each of which may be
    its last; ``on_done(position, result)`` is called as each task completes, ``on_failed(position, exc)`` as each
    failed attempt counts (before the task is run again or given up). Ctrl-C (or any error) cancels
    every outstanding task.
    """
    results = [None] * len(tasks)
    failures = [0] * len(tasks)
    said = [None] * len(tasks)  # each task's last failure, in words (failure_words)
    closing = set()  # the tasks sent on the last attempt locate gave them
    pending = deque(range(len(tasks)))
    in_flight, suspects, alone = {}, set(), None

    def failed(position, exc):
        failures[position] += 1
        if on_failed is not None:
            on_failed(position, exc)
        words = failure_words(exc)
        repeated, said[position] = words == said[position], words
        left = failures[position] <= retries and position not in closing
        if left and repeated and locate is not None:
            located = locate(tasks[position], exc)
            if located is not None:
                tasks[position] = located
                closing.add(position)
                pending.appendleft(position)
                return
        if not left or repeated or getattr(exc, "refused", False):
            results[position] = give_up(position, exc, failures[position])
            if on_done is not None:
                on_done(position, results[position])
            return
        pending.appendleft(position)

    try:
        while pending or in_flight:
            while pending and len(in_flight) < backend.slots and alone is None:
                position = pending[0]
                if position in suspects:
                    if in_flight:
                        break
                    alone = position
                pending.popleft()
                task = tasks[position]
                if failures[position] and last_attempt is not None:
                    task = tasks[position] = last_attempt(task)
                in_flight[backend.submit(fn, task)] = position
            done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            lost, only = False, len(in_flight) == 1  # one task in flight: a pool that broke under it broke alone
            for future in done:
                position = in_flight.pop(future)
                ran_alone, alone = position == alone or only, None if position == alone else alone
                try:
                    results[position] = backend.outcome(future)
                except MechanismError as exc:
                    failed(position, exc)
                    continue
                except WorkerLost as exc:
                    lost = True
                    if ran_alone or backend.slots == 1 or backend.isolated_failures:
                        failed(position, exc)
                    else:
                        suspects.add(position)
                        pending.appendleft(position)
                    continue
                suspects.discard(position)
                if on_done is not None:
                    on_done(position, results[position])
            if lost and not backend.isolated_failures:
                backend.restart()
                for position in in_flight.values():  # their pool is gone with it
                    suspects.add(position)
                    pending.appendleft(position)
                in_flight.clear()
                alone = None
    except BaseException:
        backend.cancel()
        raise
    return results
