"""Device selection. ``resolve_device``: ``auto`` picks CUDA when present, else CPU; ``choose_device``: ``auto``
picks the device a critic training is predicted to run faster on. Nothing requires a GPU."""

from __future__ import annotations

import os
import time

from .validation import InputError, check_choice

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str = "auto"):
    """Return a :class:`torch.device` for ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (one GPU of several,
    as torch names it).

    Raises :class:`InputError` for ``"cuda"`` when no CUDA device is available.
    """
    import torch

    if isinstance(device, torch.device):
        return device
    if isinstance(device, str) and device.startswith("cuda:"):
        index = device.removeprefix("cuda:")
        if not index.isdigit():
            raise InputError(f"argument 'device' must be one of 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
        if not torch.cuda.is_available() or int(index) >= torch.cuda.device_count():
            raise InputError(f"argument 'device' is {device!r} but no such CUDA device is available")
        return torch.device(device)
    check_choice(device, "device", DEVICES)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("argument 'device' is 'cuda' but no CUDA device is available")
    return torch.device(device)


#: CUDA graphs for the critics' training step (issue 42 §3; :class:`estimators.neural.GraphedTrainingStep`). A
#: step of a small ensemble is some forty small kernels whose launches, not their work, set its time; captured
#: once, the step is one graph launch: one critic at batch 256 trained at 1.0e4 steps/s against 443 eager on an
#: H200 (docs/benchmarks/gpu-throughput.md). ``MIAUDIT_CUDA_GRAPHS=0`` turns them off.
CUDA_GRAPHS = os.environ.get("MIAUDIT_CUDA_GRAPHS", "1") != "0"
#: The graph is used for steps of at most this many hidden activations (critics × 2·batch × width): past it
#: a step is bound by memory traffic, launches cost little, and the graph's private memory pool would hold
#: the step's intermediates (a few times the activations) beside the evaluation's for the whole training.
GRAPH_MAX_ACTIVATIONS = 1 << 26


def graph_fits(critics: int, batch_size: int, hidden: int) -> bool:
    """Whether a CUDA training step of ``critics`` critics (one chunk) may be a graph: :data:`CUDA_GRAPHS` on and
    at most :data:`GRAPH_MAX_ACTIVATIONS` hidden activations."""
    return CUDA_GRAPHS and critics * 2 * batch_size * hidden <= GRAPH_MAX_ACTIVATIONS


#: The measured cost model of critic training that ``device="auto"`` chooses by (:func:`choose_device`):
#: seconds per training step, fixed and per pair evaluation (critics × batch rows), and the GPU's fixed start.
#: ``auto`` weighs the two devices of one machine, so both were measured on the same machine, one NVIDIA H200
#: with 16 CPU cores, on 2026-11-27 (docs/benchmarks/device-choice.md, ``miaudit experiment device-choice
#: --device cuda``; batch 256, 32 hidden units, single timings):
#:
#: - CPU: one critic 755 steps/s (1.32 ms a step), 1,024 critics 79.5 steps/s: 1.31 ms fixed, 4.3e-8 s a pair.
#: - GPU, the step captured as a CUDA graph (:func:`estimators.neural.use_cuda_graph`): one critic 1.03e4
#:   steps/s, 4,096 critics 970 steps/s: 9.7e-5 s fixed, 8.9e-10 s a pair (gpu-throughput's eager 10⁵ critics
#:   at batch 256, 45.1 steps/s, gives 8.7e-10 s a pair: docs/benchmarks/gpu-throughput.md). Eager (no graph:
#:   ensembles past :data:`GRAPH_MAX_ACTIVATIONS`, or graphs off) one step costs 2.26e-3 s
#:   (443 steps/s, one critic at batch 256, the same run of gpu-throughput).
#: - GPU start: a fresh interpreter's first CUDA call took 0.15 s, but a one-critic audit run as a command took
#:   0.93 s longer in wall time on the GPU than on the CPU for the same audit seconds (10.54 s against 9.61 s;
#:   creating and tearing down CUDA's context and libraries): 1.0 s.
#:
#: The constants before (a 2-core CPU's 0.65 ms and 1.1e-7 s; an H100's eager 2.16 ms and 5.3e-10 s; a 3 s
#: start) were an H100 report's guesses for the GPU. Measured again on one H200 with 16 cores on 2026-11-28 (the
#: same command): CPU 0.908 ms fixed and 4.46e-8 s a pair, GPU 9.69e-5 s and 8.87e-10 s, first CUDA call 0.14 s;
#: the GPU's constants agree; the CPU's fixed cost is 30% lower on that host, kept, as with it --device auto
#: chooses the same device on every audit of that page.
CPU_STEP_S, CPU_PAIR_S = 1.31e-3, 4.3e-8
GPU_STEP_S, GPU_PAIR_S, GPU_START_S = 9.7e-5, 8.9e-10, 1.0
GPU_EAGER_STEP_S = 2.26e-3
#: The cost of a wide input, per pair evaluation and input column (the first layer's width × hidden products and the
#: mini-batches' copies grow with it; the constants above were measured at widths of 2 to 3): one critic, 200 steps,
#: widths 3 to 60,001, slope of the seconds per step (issue 43 §7). CPU: this project's 2-core CI machine under a
#: load average of 3 to 4 (a CI run beside it), 2026-11-27: 78.1 ms a step at width 20,001 against 6.05 ms at 2,001
#: with 160 rows a batch (2.5e-8 s), 59.7 ms at 10,001 against 21.7 ms at 2,001 with 256 rows (1.9e-8 s): 2.2e-8 s.
#: GPU: one NVIDIA H200, the same day: 3.07 ms a step at width 60,001 against 1.99 ms at 3 with 256 rows: 7.0e-11 s.
CPU_WIDTH_S, GPU_WIDTH_S = 2.2e-8, 7.0e-11
#: The critics' hidden width the prediction assumes when it decides whether the GPU step is a graph (the default).
PREDICTED_HIDDEN = 32


def gpu_step_is_graphed(critics: int, batch_size: int, chunks: int = 1, hidden: int = PREDICTED_HIDDEN) -> bool:
    """Whether a GPU training of ``critics`` critics in ``chunks`` chunks steps through a CUDA graph
    (:func:`graph_fits` for each chunk, as :func:`estimators.neural.use_cuda_graph` decides for the DV objective
    without projection)."""
    return graph_fits(-(-critics // max(1, chunks)), batch_size, hidden)


def predicted_training_seconds(kind: str, *, critics: int, steps: int, batch_size: int, chunks: int = 1,
                               width: int = 0, cuda_started: bool = False) -> float:
    """Predicted seconds to train ``critics`` critics, in ``chunks`` trainings of ``steps`` steps of
    ``batch_size`` rows each, on ``kind`` ("cpu" or "cuda"): a fixed cost per step plus one per pair evaluation
    (critic × row), ``width`` input columns more per pair (:data:`CPU_WIDTH_S`, :data:`GPU_WIDTH_S`; 0: the
    narrow inputs the step constants were measured at), and on the GPU its start (the constants above,
    measured) unless ``cuda_started`` (the audit uses the GPU anyway: its start is paid either way); a GPU step
    costs :data:`GPU_STEP_S` through a CUDA graph, :data:`GPU_EAGER_STEP_S` without one. No critics (an audit whose
    MI critics are classifiers) train nothing: 0 s on either device, and no reason to start the GPU."""
    if critics == 0:
        return 0.0
    if kind == "cuda":
        step = GPU_STEP_S if gpu_step_is_graphed(critics, batch_size, chunks) else GPU_EAGER_STEP_S
        pair, start, column = GPU_PAIR_S, 0.0 if cuda_started else GPU_START_S, GPU_WIDTH_S
    else:
        step, pair, start, column = CPU_STEP_S, CPU_PAIR_S, 0.0, CPU_WIDTH_S
    return start + steps * (chunks * step + critics * batch_size * (pair + width * column))


def gpu_start_repaid(trainings) -> bool:
    """Whether starting the GPU once for the critic trainings ``trainings`` ((CPU, GPU) predicted seconds each, the
    GPU's start not counted: :func:`predicted_training_seconds` with ``cuda_started``) is predicted to save time.

    A process pays the start S once for all it puts on the GPU. With it started each training goes where it is the
    faster, so the trainings cost S + Σ_k min(C_k,cpu, C_k,gpu) against Σ_k C_k,cpu with the GPU left alone; the
    start is repaid where the first is the smaller. For one training this is :func:`choose_device`'s own rule
    (S + C_gpu < C_cpu); for several (a sequential audit's looks, both relations' audits) it weighs them together,
    where each alone may not repay the start. None: False."""
    trainings = [(float(cpu), float(gpu)) for cpu, gpu in trainings]
    return bool(trainings) and GPU_START_S + sum(min(pair) for pair in trainings) < sum(cpu for cpu, _ in trainings)


def choose_device(device="auto", *, critics: int, steps: int, batch_size: int, chunks: int = 1, width: int = 0,
                  cuda_available: bool | None = None, cuda_started: bool = False,
                  started_by: str = "the mechanism trains there"):
    """The device a critic training runs on, and why, in words.

    ``"cpu"`` and ``"cuda"`` are taken as given (:func:`resolve_device`). ``"auto"`` takes the GPU only where
    the predicted training time there (:func:`predicted_training_seconds`: its start, its steps and pair
    evaluations) is below the CPU's: short trainings of small ensembles stay on the CPU, where they finish
    before the GPU would have started, and no critics (classifier critics: the device then holds only the
    float-bit statistics' codes and the ideal arithmetic's rounding) stay there too. ``cuda_started``: the audit
    uses the GPU anyway, so the GPU's start is not counted against the critics; ``started_by`` says why, in the
    note (its mechanism trains there; or the critic trainings of a sequential audit's looks or of both relations'
    audits repay the start together, :func:`gpu_start_repaid`, or an earlier one started it).
    ``cuda_available`` defaults to ``torch.cuda.is_available()``.

    Returns
    -------
    (torch.device, str)
    """
    import torch

    if device != "auto" or isinstance(device, torch.device):
        chosen = resolve_device(device)
        return chosen, f"device {chosen.type} (as asked)"
    if cuda_available is None:
        cuda_available = torch.cuda.is_available()
    if not cuda_available:
        return torch.device("cpu"), "device cpu (auto: no CUDA device)"
    size = dict(critics=critics, steps=steps, batch_size=batch_size, chunks=chunks, width=width)
    cpu = predicted_training_seconds("cpu", **size)
    gpu = predicted_training_seconds("cuda", **size, cuda_started=cuda_started)
    chosen = "cuda" if gpu < cpu else "cpu"
    started = f", its start already paid: {started_by}" if cuda_started else ""
    return torch.device(chosen), (f"device {chosen} (auto: {critics} critics × {steps} steps × {batch_size} rows "
                                  f"predicted {cpu:.3g} s on the CPU, {gpu:.3g} s on the GPU{started})")


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


def native_threads(n: int):
    """Context manager: run native code's thread pools (BLAS and OpenMP: NumPy, SciPy, scikit-learn) with at most
    ``n`` threads, then restore them; where ``OMP_NUM_THREADS`` is set (the user's choice), leave them as they are.

    A fit on a few records gains nothing from a thread pool, and where others load the cores its threads wait for
    each other at every parallel region: diffprivlib 0.6.6's ``LogisticRegression.fit`` on 5 records (scikit-learn
    1.5's OpenMP loss, two threads) took 72 ms of CPU per fit at load 16 on two cores, 3.2 ms on one thread.
    The loaded libraries are found (threadpoolctl's controller) at the first use and again whenever Python has
    imported a module since the last search, so a library a user's function imported after an earlier use is
    limited too; otherwise the libraries found are reused. Finding them reads every loaded library's name (1.8 ms
    with torch's loaded, on the 2-core machine) and a per-database mechanism's runner enters this once a chunk of
    256 calls: 7 µs a call, against a catalog mechanism's 10–90 µs; setting the limits costs 0.02 ms.
    """
    import contextlib
    import sys

    if os.environ.get("OMP_NUM_THREADS"):
        return contextlib.nullcontext()
    from threadpoolctl import ThreadpoolController

    if _NATIVE_CONTROLLER["controller"] is None or _NATIVE_CONTROLLER["modules"] != len(sys.modules):
        _NATIVE_CONTROLLER["modules"] = len(sys.modules)
        _NATIVE_CONTROLLER["controller"] = ThreadpoolController()
    return _NATIVE_CONTROLLER["controller"].limit(limits=n)


#: :func:`native_threads`' controller and the number of Python modules loaded when it found the libraries.
_NATIVE_CONTROLLER = {"controller": None, "modules": -1}


#: Seconds over which :func:`free_cores` watches the CPUs, and how long its answer (and a window that
#: :func:`watch_cores` started) is reused.
IDLE_WINDOW, IDLE_REUSE = 0.1, 10.0

#: The last answer of :func:`free_cores` and when; the window :func:`watch_cores` started (when, this process's
#: ticks, the CPUs' (idle, total) ticks, the CPUs), or None.
_FREE_CORES = {"at": -float("inf"), "cores": None, "watch": None}


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


def _affinity():
    """The CPUs this process may run on, or None where that cannot be read."""
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return None


def watch_cores() -> None:
    """Start the window :func:`free_cores` reads, so that the work done until it is read fills the window instead
    of a pause: a fit starts it before building its critics' inputs (the slices' projections, the standardization),
    which on a 256-slice fit of 20,000 samples outlasts :data:`IDLE_WINDOW`. A window started within the last
    :data:`IDLE_REUSE` seconds and not yet read is kept (the earlier start is the longer window); this process's own
    work in it counts as idle, as in any window, so what it measures is still the other processes' load."""
    if os.environ.get("OMP_NUM_THREADS"):
        return  # free_threads keeps the user's choice and reads no window
    watch = _FREE_CORES["watch"]
    if watch is not None and time.monotonic() - watch[0] < IDLE_REUSE:
        return
    cpus = _affinity()
    try:
        _FREE_CORES["watch"] = (time.monotonic(), _own_ticks(), _cpu_times(cpus), cpus)
    except (OSError, ValueError):
        _FREE_CORES["watch"] = None


def free_cores(*, refresh: bool = False) -> int:
    """The cores this process may use that other processes leave idle now (at least 1).

    The CPUs of this process's affinity (``os.sched_getaffinity``) are watched for
    :data:`IDLE_WINDOW` seconds in ``/proc/stat``; their idle share times their number, rounded,
    is the answer (reused for :data:`IDLE_REUSE` seconds); this process's own CPU time in the
    window counts as idle. The window is the one :func:`watch_cores` started, where one was started on the same
    CPUs within the last :data:`IDLE_REUSE` seconds (the pause is then only what it lacks of :data:`IDLE_WINDOW`).
    Without ``/proc`` (not Linux), the affinity's size. Torch's intra-op threads wait for each other at every operation: with one
    of two cores held by another process, two threads made the SMI-DP example of the MI-notions
    guide 7× slower than one thread (207 s against 31 s, measured on the shared 2-core CPU;
    issue 30 item 4).
    """
    cpus = _affinity()
    allowed = len(cpus) if cpus else (os.cpu_count() or 1)
    now = time.monotonic()
    if not refresh and now - _FREE_CORES["at"] < IDLE_REUSE and _FREE_CORES["cores"] is not None:
        return min(_FREE_CORES["cores"], allowed)
    watch, _FREE_CORES["watch"] = _FREE_CORES["watch"], None
    try:
        if watch is not None and now - watch[0] < IDLE_REUSE and watch[3] == cpus:
            started, own_before, (idle_before, total_before) = watch[:3]
        else:
            started, own_before, (idle_before, total_before) = now, _own_ticks(), _cpu_times(cpus)
        lacking = IDLE_WINDOW - (time.monotonic() - started)
        if lacking > 0:
            time.sleep(lacking)
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


def known_free_threads(current: int) -> int | None:
    """:func:`free_threads`' answer where it is known without watching the CPUs: ``current`` under an explicit
    ``OMP_NUM_THREADS``, else the last answer of :func:`free_cores` while it is reused (:data:`IDLE_REUSE`), else
    ``None``."""
    if os.environ.get("OMP_NUM_THREADS"):
        return current
    if time.monotonic() - _FREE_CORES["at"] < IDLE_REUSE and _FREE_CORES["cores"] is not None:
        return max(1, min(current, _FREE_CORES["cores"]))
    return None


def samples_of(values, index):
    """``values[:, index]``: the samples ``index`` (an integer array or tensor) of every critic's (critics, samples,
    features) tensor, a copy. On the CPU by ``np.take`` on the tensor's memory: torch's advanced indexing took 40 ms
    for 8,000 of 20,000 float64 samples of 256 one-feature critics, ``np.take`` 14 ms (17 ms and 5 ms in float32;
    one thread, load average 6.4 on the shared 2-core CPU); the same values either way."""
    import numpy as np
    import torch

    if values.device.type == "cpu" and not values.requires_grad:
        return torch.from_numpy(np.take(values.numpy(), np.asarray(index), axis=1))
    return values[:, torch.as_tensor(index, device=values.device)]


def all_finite(*tensors) -> bool:
    """Whether every value of every tensor is finite (no NaN, no ±inf). On the CPU by ``np.isfinite`` on the tensor's
    memory: ``torch.isfinite(x).all()`` took 48 ms on the 5.1 million float64 values of a 256-slice fit of 20,000
    samples, ``np.isfinite`` 2.1 ms (one thread, load average 5.5 on the shared 2-core CPU)."""
    import numpy as np
    import torch

    return all(bool(np.isfinite(t.detach().numpy()).all()) if t.device.type == "cpu" else bool(torch.isfinite(t).all())
               for t in tensors)


#: Callbacks told of every host→device copy made by :func:`to_device`, each called as ``listener(device, nbytes)``
#: (``experiments.sync_count`` counts the bytes by caller; on the CPU too, where nothing is copied).
COPY_LISTENERS: list = []


def to_device(values, device, dtype=None, pinned: bool = False):
    """``values`` (a NumPy array, anything ``torch.as_tensor`` takes, or a host tensor) as a tensor of ``dtype`` (its
    own where None) on ``device``: the route of the audit's host→device copies of data, so that their bytes can be
    counted (:data:`COPY_LISTENERS`) on any device. On the CPU the tensor shares the array's memory where the dtype
    allows, as ``torch.as_tensor`` does; a listener is told the bytes a GPU run would copy there.

    ``pinned``: on a CUDA device, the values are put in page-locked host memory and copied without the host waiting
    (``non_blocking``): a copy from pageable memory makes the host wait for the GPU's queue, one from page-locked
    memory is queued on the stream like a kernel (the CUDA C++ Programming Guide, "Asynchronous Concurrent
    Execution"; torch's page-locked allocator keeps the block until the copy is done). Elsewhere the plain copy."""
    import torch

    tensor = torch.as_tensor(values, dtype=dtype)
    for listener in COPY_LISTENERS:
        listener(device, tensor.numel() * tensor.element_size())
    if pinned and torch.device(device).type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)
