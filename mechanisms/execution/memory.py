"""How much memory a sampling budget needs, checked before anything is allocated."""

from __future__ import annotations

import os

from estimators.validation import InputError

__all__ = ["available_memory", "check_sample_memory", "format_bytes"]

FLOAT_BYTES = 8


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux ``MemAvailable``), or None if unknown."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(count: float) -> str:
    """``count`` bytes as a readable size (``1.5 GiB``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if count < 1024 or unit == "PiB":
            return f"{count:.3g} {unit}"
        count /= 1024
    return f"{count:.3g} PiB"  # pragma: no cover


def check_sample_memory(samples: int, shape: tuple, priors: int, *, available: int | None = None) -> int:
    """Refuse a sampling budget whose databases alone cannot fit in memory.

    The audit keeps ``samples`` databases of shape ``(n, k)`` (float64) for each of ``priors``
    priors until its critics are trained; that is a lower bound on what it needs (the critic
    inputs and outputs come on top).

    Returns
    -------
    int
        The bytes the databases need.

    Raises
    ------
    InputError
        Naming ``samples`` (flag ``--samples``) with the size needed and the size available.
    """
    n, k = shape
    need = samples * n * k * FLOAT_BYTES * priors
    available = available_memory() if available is None else available
    if available is not None and need > available:
        raise InputError(
            f"argument 'samples' ({samples}): the audit needs at least {format_bytes(need)} of memory for its "
            f"databases ({samples} x {n} x {k} float64 values for each of {priors} prior(s)), but only "
            f"{format_bytes(available)} is available; lower --samples")
    return need
