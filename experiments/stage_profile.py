"""Where an experiment's time goes, by stage: a sampling profile of the main thread's stack.

Every ``interval`` seconds a background thread reads the main thread's stack
(:func:`sys._current_frames`) and charges the interval to the stage of the innermost frame whose module
belongs to one (:data:`STAGES`, first match from the innermost frame outwards): time inside NumPy, SciPy
or torch is charged to the miaudit code that called it. ``python -m experiments.stage_profile NAME
[--quick | --grid G] [--device D] [--seed S] [--out DIR] [--page FILE.md] [--host [--device-routes]]
[--gpu-chunks]`` runs ``miaudit experiment NAME`` that way and prints the table (issue 42: the profile of the
DP-SGD grid's CPU part); ``--gpu-chunks`` runs TorchDPSGD in the chunks a CUDA device gets (:func:`gpu_chunks`).

``--host`` also splits each stage's seconds into time inside torch operators and the rest (NumPy, SciPy,
Python: the host's work), from :mod:`torch.profiler`'s record of every top-level operator on the main
thread (:func:`host_split`), counts those operator calls by stage (each costs a GPU's host a kernel launch,
some 5-10 µs, whatever its size), and on a CUDA device adds the GPU's kernel seconds by stage. The host part
is what a GPU cannot shorten: on the CPU it bounds from below the wall time of the same run on any device,
and so the GPU's share of it from above. ``--device-routes`` runs the statistics that take a torch device
through their device code on the CPU (:func:`device_routes`), as they run beside a GPU, so that their work
counts as torch operators too.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
import typing

#: (stage, module prefixes), matched from the innermost frame outwards.
STAGES = (
    ("mechanism runs (DP-SGD training)", ("mechanisms.training", "mechanisms.catalog")),
    # The objectives and the input standardization serve the critics' training and scoring alone.
    ("MI critics (neural)", ("estimators.neural", "estimators.critics", "estimators.critic_problems",
                             "estimators.objectives", "estimators.standardization",
                             "audit.statistics.secret_critics")),
    ("certificates", ("audit.certificates",)),
    ("statistics and event search", ("audit.statistics", "audit.search")),
    ("running and encoding", ("mechanisms.execution", "mechanisms.calls", "mechanisms.outputs")),
    ("audit bookkeeping", ("audit", "estimators", "mechanisms")),
    ("experiment loops", ("experiments",)),
)
OTHER = "other (interpreter, imports, plotting)"


def stage_of(modules) -> str:
    """The stage of a stack given as its frames' module names, innermost first."""
    for module in modules:
        for stage, prefixes in STAGES:
            if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
                return stage
    return OTHER


def profile_by_stage(run, *, interval: float = 0.01, timeline: list | None = None) -> tuple[object, dict]:
    """(``run()``'s value, seconds by stage) with the main thread's stack sampled every ``interval`` s.

    ``timeline``: a list that receives each sample as (start, end, stage), in :func:`time.time` seconds.
    """
    main = threading.main_thread().ident
    seconds: dict = {}
    done = threading.Event()

    def sample():
        last, last_wall = time.perf_counter(), time.time()
        while not done.wait(interval):
            now, wall = time.perf_counter(), time.time()
            frame = sys._current_frames().get(main)
            modules = []
            while frame is not None:
                modules.append(frame.f_globals.get("__name__", ""))
                frame = frame.f_back
            stage = stage_of(modules)
            seconds[stage] = seconds.get(stage, 0.0) + (now - last)
            if timeline is not None:
                timeline.append((last_wall, wall, stage))
            last, last_wall = now, wall

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        value = run()
    finally:
        done.set()
        sampler.join()
    return value, seconds


def charge_spans(spans, timeline) -> dict:
    """Seconds of ``spans`` ((start, end) pairs, :func:`time.time` seconds) by the stage of the sample of
    ``timeline`` (:func:`profile_by_stage`'s (start, end, stage) samples, in order) that holds each span's
    midpoint; a span outside every sample is charged to :data:`OTHER`."""
    stages = _stages_at(spans, timeline)
    charged: dict = {}
    for (start, end), stage in zip(spans, stages):
        charged[stage] = charged.get(stage, 0.0) + (end - start)
    return charged


def count_spans(spans, timeline) -> dict:
    """How many of ``spans`` fall in each stage, each charged as :func:`charge_spans` charges it (the stage
    of the sample holding its midpoint, :data:`OTHER` outside every sample)."""
    counted: dict = {}
    for stage in _stages_at(spans, timeline):
        counted[stage] = counted.get(stage, 0) + 1
    return counted


def _stages_at(spans, timeline) -> list:
    """The stage of the ``timeline`` sample holding each span's midpoint (:data:`OTHER` outside every one)."""
    import bisect

    starts = [start for start, _, _ in timeline]
    stages = []
    for start, end in spans:
        middle = (start + end) / 2
        i = bisect.bisect_right(starts, middle) - 1
        stages.append(timeline[i][2] if i >= 0 and middle <= timeline[i][1] else OTHER)
    return stages


#: The profiler range that names the main thread in :func:`host_split` (its thread ids are the profiler's own).
MAIN_THREAD_MARK = "stage_profile.main_thread"


@contextlib.contextmanager
def device_routes():
    """The statistics that take a torch device compute on it even where it is the CPU: the float-bit codes
    (:func:`audit.statistics.float_bits.device_code_rows`) and the ideal rounding
    (:func:`audit.statistics.arithmetic.device_round_significand`) run as torch operators, as they do beside a
    GPU (their results are the NumPy route's: ``tests/test_float_bits_device.py``), and the critic scorer reads its
    outputs from the audit's store (:func:`estimators.resident.device_input`), as it does beside a GPU."""
    from audit.statistics import arithmetic, float_bits
    from estimators import resident

    saved = float_bits.on_device, arithmetic.on_device, resident.on_device

    def any_device(device) -> bool:
        return device is not None

    float_bits.on_device = arithmetic.on_device = resident.on_device = any_device
    try:
        yield
    finally:
        float_bits.on_device, arithmetic.on_device, resident.on_device = saved


@contextlib.contextmanager
def gpu_chunks():
    """:class:`~mechanisms.training.torch_dpsgd.TorchDPSGD` on any device asks the runner for the chunks it asks
    for on a CUDA device (:data:`~mechanisms.training.torch_dpsgd.GPU_CHUNK_RUNS` runs, which the runner cuts to its
    database-entry limit as it does beside a GPU), so that a CPU profile pays each chunk's host work (databases,
    checks, copies, a call's encoding) as often as a GPU run does: the CPU's 256-run chunks pay it 16 times as often
    where the GPU's are 4,096 runs."""
    from mechanisms.training import torch_dpsgd

    saved = torch_dpsgd.TorchDPSGD.__dict__["preferred_chunk_size"]

    def on_a_gpu(mechanism) -> int:
        return torch_dpsgd.GPU_CHUNK_RUNS

    torch_dpsgd.TorchDPSGD.preferred_chunk_size = property(on_a_gpu, doc=saved.__doc__)
    try:
        yield
    finally:
        torch_dpsgd.TorchDPSGD.preferred_chunk_size = saved


def profile_context(routes: bool = False, chunks: bool = False):
    """The context a profile runs in: the statistics' device routes where ``routes`` (:func:`device_routes`), the
    GPU's chunks where ``chunks`` (:func:`gpu_chunks`)."""
    stack = contextlib.ExitStack()
    if routes:
        stack.enter_context(device_routes())
    if chunks:
        stack.enter_context(gpu_chunks())
    return stack


def add_profile_options(parser: argparse.ArgumentParser) -> None:
    """The options every stage profile takes: ``--device-routes`` (:func:`device_routes`) and ``--gpu-chunks``
    (:func:`gpu_chunks`)."""
    parser.add_argument("--device-routes", action="store_true",
                        help="the device routes of the statistics on the CPU, as beside a GPU (device_routes)")
    parser.add_argument("--gpu-chunks", action="store_true",
                        help="TorchDPSGD's runs in the chunks a CUDA device gets (gpu_chunks)")


def profile_label(args) -> str:
    """The options of :func:`add_profile_options` that ``args`` sets, as a profile's heading names them."""
    return "".join(label for on, label in ((args.device_routes, ", device routes"), (args.gpu_chunks, ", GPU chunks"))
                   if on)


class HostSplit(typing.NamedTuple):
    """:func:`host_split`'s record of one run."""

    value: object  #: what ``run()`` returned
    seconds: dict  #: seconds by stage (:func:`profile_by_stage`)
    operators: dict  #: seconds inside top-level torch operators by stage
    kernels: dict  #: seconds the GPU ran kernels or copies by stage (empty without CUDA)
    calls: dict  #: how many top-level torch operators were called, by stage


def host_split(run, *, interval: float = 0.01) -> HostSplit:
    """``run()``'s value, its seconds by stage, the seconds and the number of calls of torch operators by
    stage, and the GPU's kernel seconds by stage, from :func:`profile_by_stage` and :mod:`torch.profiler`.

    Every top-level torch operator on the main thread (one inside no other operator, named ranges aside: one
    call into torch, which on a GPU costs the host a kernel launch whatever its size) is charged whole, and
    counted once, to the stage sampled at its midpoint (:func:`charge_spans`, :func:`count_spans`), overlaps'
    seconds counted once (:func:`span_union`); a stage's seconds less its operators' are its host time. On a
    CUDA device the time the GPU ran kernels or copies is charged the same way (empty without CUDA).
    The profiler's clock is :func:`time.time`'s: the trace's start in ns since the epoch, its events in µs
    from that start.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    timeline: list = []
    with profile(activities=activities) as recorder:
        with torch.profiler.record_function(MAIN_THREAD_MARK):  # the profiler's own name for this thread
            pass
        value, seconds = profile_by_stage(run, interval=interval, timeline=timeline)
    operators, kernels = operator_spans(recorder)
    return HostSplit(value, seconds, charge_spans(span_union(operators), timeline),
                     charge_spans(span_union(kernels), timeline), count_spans(operators, timeline))


def timed_host_split(run, routes: bool = False, chunks: bool = False) -> tuple[HostSplit, float]:
    """(:func:`host_split`'s record of ``run()``, its wall seconds with the profiler), with the statistics'
    device routes on the CPU where ``routes`` (:func:`device_routes`) and the GPU's chunks where ``chunks``
    (:func:`gpu_chunks`)."""
    started = time.perf_counter()
    with profile_context(routes, chunks):
        split = host_split(run)
    return split, time.perf_counter() - started


def operator_spans(recorder) -> tuple[list, list]:
    """(the main thread's top-level torch operators, the GPU's kernels and copies) of a finished
    :class:`torch.profiler.profile` ``recorder`` as (start, end) spans in :func:`time.time` seconds; the
    main thread is the one that recorded :data:`MAIN_THREAD_MARK`."""
    origin = recorder.profiler.kineto_results.trace_start_ns() / 1e9
    events = recorder.events()
    main = next(event.thread for event in events if event.name == MAIN_THREAD_MARK and not _on_gpu(event))
    operators, kernels = [], []
    for event in events:
        if event.name == MAIN_THREAD_MARK or _annotation(event):
            continue  # a named range (record_function), not work: its operators and kernels are counted
        span = (origin + event.time_range.start / 1e6, origin + event.time_range.end / 1e6)
        if _on_gpu(event):
            kernels.append(span)
        elif event.thread == main and _top_level(event):
            operators.append(span)
    return operators, kernels


def _annotation(event) -> bool:
    """Whether a profiler event is a named range (``record_function``: the optimizers' ``Optimizer.step#...``)."""
    return getattr(event, "is_user_annotation", False)


def _top_level(event) -> bool:
    """Whether a profiler event is an operator called from Python: none of its enclosing events is an operator
    (a named range around it, as ``Optimizer.step`` puts around an optimizer's operators, is not one)."""
    parent = event.cpu_parent
    while parent is not None:
        if not _annotation(parent):
            return False
        parent = parent.cpu_parent
    return True


def span_union(spans) -> list:
    """The union of (start, end) spans as disjoint spans in order: time inside two nested or overlapping events
    (a CUDA runtime call inside its operator, kernels on two streams at once) counted once."""
    merged: list = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _on_gpu(event) -> bool:
    """Whether a profiler event ran on a CUDA device (a kernel or a copy), not on the CPU."""
    return getattr(event.device_type, "name", "") == "CUDA"


def stage_table(seconds: dict, operators: dict | None = None, kernels: dict | None = None,
                calls: dict | None = None) -> str:
    """Markdown table of seconds by stage and their shares, largest first; with ``operators`` (seconds inside
    torch operators by stage, :func:`host_split`) also the host's seconds, with ``calls`` the number of torch
    operator calls, and with ``kernels`` the GPU's seconds."""
    total = sum(seconds.values()) or 1.0
    split = operators is not None
    gpu = bool(kernels)
    counted = calls is not None
    head = ("| stage | seconds | share |" + (" torch operators | host |" if split else "")
            + (" torch operator calls |" if counted else "") + (" GPU kernels |" if gpu else ""))
    lines = [head, "|" + " --- |" * head.count(" |")]
    stages = sorted(seconds, key=lambda stage: -seconds[stage])
    stages += sorted(stage for stage in (calls or {}) if stage not in seconds)  # operators outside every sample
    for stage in stages:
        value = seconds.get(stage, 0.0)
        row = f"| {stage} | {value:.1f} | {value / total:.0%} |"
        if split:
            inside = min(operators.get(stage, 0.0), value)
            row += f" {inside:.1f} | {value - inside:.1f} |"
        if counted:
            row += f" {calls.get(stage, 0):,} |"
        if gpu:
            row += f" {kernels.get(stage, 0.0):.1f} |"
        lines.append(row)
    if split or counted:
        row = f"| all | {total:.1f} | 100% |"
        if split:
            inside = sum(min(operators.get(stage, 0.0), value) for stage, value in seconds.items())
            row += f" {inside:.1f} | {total - inside:.1f} |"
        if counted:
            row += f" {sum(calls.values()):,} |"
        lines.append(row + (f" {sum(kernels.values()):.1f} |" if gpu else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    from experiments.framework import run_experiment
    from experiments.registry import get_experiment

    parser = argparse.ArgumentParser(prog="python -m experiments.stage_profile", description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--grid", default=None)
    parser.add_argument("--page", default=None)
    parser.add_argument("--host", action="store_true", help="split each stage into torch operators and host time")
    add_profile_options(parser)
    args = parser.parse_args(argv)
    if args.device_routes and not args.host:
        parser.error("argument --device-routes: only with --host")
    experiment = get_experiment(args.name)

    def run():
        return run_experiment(experiment, out_dir=args.out, quick=args.quick, seed=args.seed, device=args.device,
                              grid=args.grid, page=args.page)

    if not args.host:
        with profile_context(chunks=args.gpu_chunks):
            print(stage_table(profile_by_stage(run)[1]))
        return 0
    with profile_context(args.device_routes, args.gpu_chunks):
        split = host_split(run)
    print(stage_table(split.seconds, split.operators, split.kernels, split.calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
