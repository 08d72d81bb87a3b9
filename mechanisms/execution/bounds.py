"""Constants of the execution's time bounds, in a module that imports nothing: the command line's help reads them
(``miaudit scan --help`` states the hard kill's grace) without importing :mod:`mechanisms.execution.worker`, whose
imports (NumPy's array code, the mechanism's base) cost about 30 ms of a help. :mod:`~mechanisms.execution.worker`
re-exports them, and its code reads them under its own names (a test that sets ``worker.HARD_KILL_GRACE`` sets the
worker's bound)."""

__all__ = ["HARD_KILL_GRACE"]

#: Seconds past ``--timeout`` after which a worker stuck inside compiled code (which the
#: in-process interruption cannot reach) ends its own process; the audit then retries the
#: chunk on a fresh worker (unless it failed so on the attempt before: :func:`mechanisms.execution.attempts.run_tasks`)
#: and finally reports it.
HARD_KILL_GRACE = 10.0
