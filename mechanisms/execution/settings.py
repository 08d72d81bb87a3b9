"""Where and how an audit runs its mechanism: the backend, the workers, the timeout, the chunk size and the
retries (:class:`ExecutionSettings`, checked once when made), and the defaults
:class:`~mechanisms.execution.runner.MechanismRunner` falls back on where they say nothing."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

from estimators.validation import InputError, check_choice, check_int, check_positive

from mechanisms.calls.user_call import FIRST_CALL_TIMEOUT
from mechanisms.errors import MechanismWarning
from mechanisms.execution.chunks import MAX_TIMEOUT_S

__all__ = ["BACKENDS", "DEFAULT_CHUNK_SIZE", "MAX_CHUNK_ENTRIES", "MAX_TIMEOUT_S", "MAX_WORKERS", "PROBE_TIMEOUT",
           "ExecutionSettings"]

BACKENDS = ("local", "ray")

#: Seconds the first (probe) call of the mechanism, on one database, may take when no
#: ``--timeout`` is given (:data:`~mechanisms.calls.user_call.FIRST_CALL_TIMEOUT`).
PROBE_TIMEOUT = FIRST_CALL_TIMEOUT

#: Databases per call when neither the settings nor the mechanism say otherwise.
DEFAULT_CHUNK_SIZE = 256

#: A mechanism's preferred chunk is cut to at most this many database entries (32 MB of float64),
#: and never below :data:`DEFAULT_CHUNK_SIZE` databases.
MAX_CHUNK_ENTRIES = 2**22

#: The most ``workers``: a process pool (or Ray) asked for more fails deep inside with an overflow.
MAX_WORKERS = 4096


@dataclass(frozen=True)
class ExecutionSettings:
    """Where and how an audit runs its mechanism.

    Parameters
    ----------
    workers : int or "auto"
        Mechanism calls in parallel: 1 runs them in the audit's process (the default);
        N > 1 starts N local worker processes ("auto": one per core); with the Ray backend
        and no address, the CPUs of the local Ray instance.
    backend : {"local", "ray"}
        ``ray`` runs chunks as Ray tasks (``pip install 'miaudit[ray]'``).
    ray_address : str, optional
        Address of an existing Ray cluster (``ray start --head`` prints it); default: start
        a local Ray instance.
    timeout : float, optional
        Seconds one call of the mechanism or the prior (one chunk) may take; default: :data:`PROBE_TIMEOUT` for the
        first calls, then 50 × their time per call (:func:`~mechanisms.execution.chunks.bounded_by_first_calls`).
    chunk_size : int, optional
        Databases per mechanism call. The samples depend on it (each chunk has its own
        seed), never on the backend or the number of workers. Default: the mechanism's
        ``preferred_chunk_size`` (:func:`mechanisms.base.preferred_chunk_size`; the catalog's
        ask for 4096), cut to :data:`MAX_CHUNK_ENTRIES` database entries but not below
        :data:`DEFAULT_CHUNK_SIZE`; for any other mechanism :data:`DEFAULT_CHUNK_SIZE`.
    retries : int
        Times a failed chunk is run again before the audit stops.
    allow_nan : bool
        Whether the databases may hold NaN, missing values, and the mechanism may release it (``--allow-nan``,
        :mod:`mechanisms.inputs.missing_values`): the outputs then come with which columns are missing, one mark
        column for every 4 (:func:`mechanisms.base.with_missing_marks`). Default False: a NaN is refused.
    """

    workers: int | str = 1
    backend: str = "local"
    ray_address: str | None = None
    timeout: float | None = None
    chunk_size: int | None = None
    retries: int = 2
    allow_nan: bool = False

    def __post_init__(self):
        workers = self.workers
        if workers == "auto":
            workers = os.cpu_count() or 1
        elif isinstance(workers, str) and workers.isdigit():
            workers = int(workers)
        if isinstance(workers, str):
            raise InputError(f"argument 'workers' must be a positive integer or 'auto', got {self.workers!r}")
        object.__setattr__(self, "workers", check_int(workers, "workers", 1))
        if self.workers > MAX_WORKERS:
            raise InputError(f"argument 'workers' must be at most {MAX_WORKERS} (processes or Ray tasks in flight), "
                             f"got {self.workers}")
        check_choice(self.backend, "backend", BACKENDS)
        cores = os.cpu_count() or 1
        if self.backend == "local" and self.workers > cores:
            warnings.warn(f"argument 'workers' ({self.workers}) is more than this machine's {cores} CPU cores: "
                          f"{self.workers} worker processes will share them, each mechanism call no faster; "
                          f"--workers {cores} (or auto) uses every core", MechanismWarning, stacklevel=2)
        if self.ray_address is not None and self.backend != "ray":
            raise InputError("argument 'ray_address' applies to --backend ray only")
        if self.timeout is not None:
            object.__setattr__(self, "timeout", check_positive(self.timeout, "timeout"))
            if self.timeout > MAX_TIMEOUT_S:  # the interval timer cannot hold more (OverflowError)
                raise InputError(f"argument 'timeout' must be at most {MAX_TIMEOUT_S:g} s (about "
                                 f"{MAX_TIMEOUT_S / 86400:.0f} days), got {self.timeout:g}; leave it out for no limit")
        if self.chunk_size is not None:
            check_int(self.chunk_size, "chunk_size", 1)
        check_int(self.retries, "retries", 0)
