"""Device selection: ``auto`` picks CUDA when present, else CPU. Nothing requires a GPU."""

from __future__ import annotations

import os
import time

from .validation import InputError, check_choice

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str = "auto"):
    """Return a :class:`torch.device` for ``"auto"``, ``"cpu"`` or ``"cuda"``.

    Raises :class:`InputError` for ``"cuda"`` when no CUDA device is available.
    """
    import torch

    if isinstance(device, torch.device):
        return device
    check_choice(device, "device", DEVICES)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("argument 'device' is 'cuda' but no CUDA device is available")
    return torch.device(device)


class cpu_threads:
    """Context manager: run torch CPU work with ``n`` intra-op threads, then restore the setting.

    Tiny batched critics gain nothing from intra-op parallelism, and when the cores are
    shared the threads' synchronization can slow each step down many times over.
    """

    def __init__(self, n: int):
        self.n = n
        self.saved = None

    def __enter__(self):
        import torch

        self.saved = torch.get_num_threads()
        if self.n != self.saved:
            torch.set_num_threads(self.n)
        return self

    def __exit__(self, *exc):
        import torch

        if torch.get_num_threads() != self.saved:
            torch.set_num_threads(self.saved)
        return False


_BLAS_CONTROLLER = None


def blas_threads(n: int):
    """Context manager: run numpy's BLAS calls with at most ``n`` threads, then restore the setting.

    Once torch has run CPU work, its OpenMP threads keep spinning for a while; a multithreaded BLAS
    call made then competes with them for the cores, and on a two-core machine a small matrix
    product was measured 400 times slower (0.29 s instead of 0.7 ms for a 9,334 × 18 Gram matrix).
    The classifier statistics' products are small, so one thread loses nothing. The libraries are
    found once (threadpoolctl's controller); each use then costs about 10 µs.
    """
    global _BLAS_CONTROLLER
    from threadpoolctl import ThreadpoolController

    if _BLAS_CONTROLLER is None:
        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=n, user_api="blas")


#: Seconds over which :func:`free_cores` watches the CPUs, and how long its answer is reused.
IDLE_WINDOW, IDLE_REUSE = 0.1, 10.0

_FREE_CORES = {"at": -float("inf"), "cores": None}


def _cpu_times(cpus) -> tuple[float, float]:
    """(idle, total) jiffies of ``cpus`` (None: every CPU) from ``/proc/stat``; idle counts iowait."""
    idle = total = 0.0
    with open("/proc/stat") as handle:
        for line in handle:
            name, *fields = line.split()
            if not name.startswith("cpu") or name == "cpu" or (cpus is not None and int(name[3:]) not in cpus):
                continue
            values = [float(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
            idle += values[3] + values[4]
            total += sum(values)
    return idle, total


def _own_ticks() -> float:
    """CPU time of this process (all its threads) in ``/proc/stat``'s unit, clock ticks."""
    times = os.times()
    return (times.user + times.system) * os.sysconf("SC_CLK_TCK")


def free_cores(*, refresh: bool = False) -> int:
    """The cores this process may use that other processes leave idle now (at least 1).

    The CPUs of this process's affinity (``os.sched_getaffinity``) are watched for
    :data:`IDLE_WINDOW` seconds in ``/proc/stat``; their idle share times their number, rounded,
    is the answer (reused for :data:`IDLE_REUSE` seconds); this process's own CPU time in the
    window counts as idle. Without ``/proc`` (not Linux), the
    affinity's size. Torch's intra-op threads wait for each other at every operation: with one
    of two cores held by another process, two threads made the SMI-DP example of the MI-notions
    guide 7× slower than one thread (207 s against 31 s, measured on the shared 2-core CPU;
    issue 30 item 4).
    """
    try:
        cpus = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        cpus = None
    allowed = len(cpus) if cpus else (os.cpu_count() or 1)
    now = time.monotonic()
    if not refresh and now - _FREE_CORES["at"] < IDLE_REUSE and _FREE_CORES["cores"] is not None:
        return min(_FREE_CORES["cores"], allowed)
    try:
        own_before, (idle_before, total_before) = _own_ticks(), _cpu_times(cpus)
        time.sleep(IDLE_WINDOW)
        own_after, (idle_after, total_after) = _own_ticks(), _cpu_times(cpus)
    except (OSError, ValueError):
        return allowed
    elapsed = total_after - total_before
    # This process's own threads (torch's OpenMP threads spin a while after their work) are not
    # another process's load: their time counts as free.
    free = (idle_after - idle_before) + max(0.0, own_after - own_before)
    idle_share = min(1.0, free / elapsed) if elapsed > 0 else 1.0
    cores = max(1, min(allowed, int(round(idle_share * allowed))))
    _FREE_CORES.update(at=time.monotonic(), cores=cores)
    return cores


def free_threads(current: int) -> int:
    """Intra-op threads for CPU work: ``current`` (torch's setting), cut to :func:`free_cores`.

    An explicit ``OMP_NUM_THREADS`` is the user's choice and is kept as it is.
    """
    if os.environ.get("OMP_NUM_THREADS"):
        return current
    return max(1, min(current, free_cores()))
