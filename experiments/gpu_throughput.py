"""Study ``gpu-throughput``: critic-steps per second against the number of critics M and the batch size.

The hot loop of every audit is training many tiny critics at once (DESIGN.md, "Performance
design"). This study times exactly that loop — a :class:`estimators.critics.CriticEnsemble`
of M shallow critics (the paper's class G_ℓ(a), ℓ = 32 units, on 2 inputs) trained with Adam
on the Donsker–Varadhan objective by :func:`estimators.neural.training_step` (one forward pass
over a mini-batch of joint pairs and derangement-shifted product pairs, one backward pass, one
optimizer step) — without data preparation, validation or final scoring. Throughput is
critic-steps per second = M × timed steps / seconds of the timed steps (after untimed warm-up
steps; on CUDA the device is synchronized before the clock is read). On CUDA the peak
allocated GPU memory is reported; a configuration that does not fit is recorded as
``out of memory``.

On a GPU, M runs up to 10⁵; on CPU a small version (M up to 4096). CPU runs use one intra-op
thread for small steps, by the rule :func:`estimators.neural.fit_critics` applies
(:func:`estimators.neural.step_threads`), so the numbers are those the estimators see. On CUDA the
ensembles that :func:`estimators.neural.fit_critics` trains through a captured CUDA graph
(:func:`estimators.neural.use_cuda_graph`) are timed both ways, eager and graph (column ``mode``).

Each row is set against two ceilings measured on the same device at the start of the run
(:func:`measure_ceilings`): the copy bandwidth of a large device-to-device copy (bytes read plus bytes
written) and the float32 rate of a large matrix product. The step's bytes are counted from what its kernels
move (:func:`step_bytes`: the (M, 2b, ℓ) activations pass through memory eight times, plus Adam's pass over
the parameters), its FLOPs from its four batched products (:func:`step_flops`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from estimators.critics import CriticEnsemble
from estimators.device import cpu_threads
from estimators.neural import (CriticConfig, GraphedTrainingStep, adam, step_draws, step_threads, training_step,
                               use_cuda_graph)

from .framework import Experiment, ExperimentOutput, Table, new_figure

HIDDEN = CriticConfig().hidden
OUTPUT_RANGE = CriticConfig().output_range
LEARNING_RATE = CriticConfig().learning_rate
RHO = 0.8  # correlation of the synthetic Gaussian pairs; it does not change the cost of a step


@dataclass(frozen=True)
class ThroughputGrid:
    """Critic counts, batch sizes and step counts of one run."""

    critics: tuple
    batch_sizes: tuple
    warmup_steps: int
    timed_steps: int


GRIDS = {
    "cuda": ThroughputGrid((1, 10, 100, 1_000, 10_000, 100_000), (64, 256, 1024), 5, 50),
    "cpu": ThroughputGrid((1, 16, 256, 1024, 4096), (64, 256), 3, 30),
    "quick": ThroughputGrid((1, 16, 64), (64, 256), 5, 8),
}

#: Passes of one training step over the (M, 2b, ℓ) activations (ShallowCriticFunction): written by the first
#: product, read and written by the ReLU, read by the output product; in the backward pass read for β's
#: gradient, read and written by the mask (sign), read for W's and b's gradient.
ACTIVATION_PASSES = 8
#: Adam (fused) reads parameter, gradient and both moments and writes parameter and moments.
ADAM_PASSES = 7
INPUTS = 2  # the critic's input width (u and v, one coordinate each)


def parameters_per_critic(hidden: int = HIDDEN, inputs: int = INPUTS) -> int:
    """W (in × ℓ), b (ℓ), β (ℓ), b₀ and w₀ (in) of one shallow critic."""
    return inputs * hidden + 2 * hidden + 1 + inputs


def step_bytes(critics: int, batch_size: int, hidden: int = HIDDEN) -> int:
    """Bytes one step moves through device memory (float32): the activation passes and Adam's (the
    inputs, a few values per row, are left out)."""
    return 4 * critics * (ACTIVATION_PASSES * 2 * batch_size * hidden + ADAM_PASSES * parameters_per_critic(hidden))


def step_flops(critics: int, batch_size: int, hidden: int = HIDDEN, inputs: int = INPUTS) -> int:
    """Floating-point operations of one step's products over its 2b rows: the hidden layer (in + 1 with the
    bias) and the output forward, β's and (W, b)'s gradients backward (element-wise work left out)."""
    rows = 2 * batch_size
    return 2 * critics * rows * hidden * ((inputs + 1) + 1 + 1 + (inputs + 1))


@dataclass(frozen=True)
class Ceilings:
    """What the device can do, measured: copy bandwidth (bytes read + written per second) and float32
    matrix-product rate, each the median of repeated timings."""

    device: str
    copy_bytes_per_second: float
    copy_bytes: int
    matmul_flops_per_second: float
    matmul_size: int

    def to_settings(self) -> dict:
        return {"measured copy bandwidth (read + write)": f"{self.copy_bytes_per_second / 1e9:.4g} GB/s "
                f"({self.copy_bytes / 2**20:.0f} MiB copied, median of repeats)",
                "measured float32 matmul rate": f"{self.matmul_flops_per_second / 1e12:.4g} TFLOP/s "
                f"({self.matmul_size}³, median of repeats)"}


def _median_seconds(work, device: torch.device, repeats: int) -> float:
    """Median seconds of ``work()`` over ``repeats`` timed runs after two untimed ones; CUDA events on a GPU."""
    for _ in range(2):
        work()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            work()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
        else:
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
    return float(np.median(times))


def measure_ceilings(device: torch.device, quick: bool, seed: int = 0) -> Ceilings:
    """The copy bandwidth (a float32 copy several times the last-level cache: 1 GiB on a GPU, 256 MiB on a CPU,
    64 MiB quick) and the float32 matrix-product rate (8192³ on a GPU, 1024³ on a CPU, 512³ quick), random data."""
    generator = torch.Generator(device=device).manual_seed(seed)
    elements = (1 << 24) if quick else (1 << 28) if device.type == "cuda" else (1 << 26)
    source = torch.rand(elements, generator=generator, device=device)
    target = torch.empty_like(source)
    copy_seconds = _median_seconds(lambda: target.copy_(source), device, 5 if quick else 10)
    n = 512 if quick else 8192 if device.type == "cuda" else 1024
    a = torch.rand((n, n), generator=generator, device=device)
    b = torch.rand((n, n), generator=generator, device=device)
    out = torch.empty_like(a)
    matmul_seconds = _median_seconds(lambda: torch.mm(a, b, out=out), device, 5 if quick else 10)
    return Ceilings(str(device), 2 * 4 * elements / copy_seconds, 2 * 4 * elements, 2 * n**3 / matmul_seconds, n)


@dataclass(frozen=True)
class ThroughputMeasurement:
    """One timed configuration; ``status`` is ``"ok"`` or ``"out of memory"`` (then the times are NaN)."""

    device: str
    critics: int
    batch_size: int
    steps: int
    seconds: float
    threads: int
    peak_memory_mb: float
    final_objective_mean: float
    status: str
    mode: str = "eager"

    @property
    def critic_steps_per_second(self) -> float:
        return self.critics * self.steps / self.seconds

    @property
    def bytes_per_second(self) -> float:
        return step_bytes(self.critics, self.batch_size) * self.steps / self.seconds

    @property
    def flops_per_second(self) -> float:
        return step_flops(self.critics, self.batch_size) * self.steps / self.seconds

    def to_dict(self, ceilings: Ceilings | None = None) -> dict:
        copy = ceilings.copy_bytes_per_second if ceilings else math.nan
        matmul = ceilings.matmul_flops_per_second if ceilings else math.nan
        return {"device": self.device, "mode": self.mode, "critics": self.critics, "batch_size": self.batch_size,
                "hidden": HIDDEN, "steps": self.steps, "seconds": self.seconds, "threads": self.threads,
                "steps_per_second": self.steps / self.seconds,
                "critic_steps_per_second": self.critic_steps_per_second,
                "pair_evaluations_per_second": 2 * self.critics * self.batch_size * self.steps / self.seconds,
                "bytes_per_second": self.bytes_per_second, "copy_roofline_fraction": self.bytes_per_second / copy,
                "flops_per_second": self.flops_per_second, "matmul_fraction": self.flops_per_second / matmul,
                "peak_memory_mb": self.peak_memory_mb, "final_objective_mean": self.final_objective_mean,
                "status": self.status}


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_training_loop(n_critics: int, batch_size: int, grid: ThroughputGrid, device: torch.device,
                       seed: int, graph: bool = False) -> ThroughputMeasurement:
    """Train ``n_critics`` critics for warm-up + timed steps and time the timed steps only.

    Each critic draws its mini-batches from its own pool of 2 × ``batch_size`` Gaussian pairs
    held on the device, sample-major as :func:`estimators.neural.fit_critics` holds them, and
    each step is :func:`estimators.neural.training_step`, the step every fit makes; with ``graph``
    (CUDA only) that step captured as :class:`estimators.neural.GraphedTrainingStep` replays, fed one
    row of indices and shift a step, as the fit feeds it (the warm-up steps include its capture).
    """
    threads = step_threads(n_critics, batch_size, HIDDEN, device)
    generator = torch.Generator().manual_seed(seed)
    pool = 2 * batch_size
    peak = math.nan
    mode = "cuda graph" if graph else "eager"
    try:
        with cpu_threads(threads):
            if device.type == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(device)
            u = torch.randn((pool, n_critics, 1), generator=generator).to(device)
            v = RHO * u + math.sqrt(1 - RHO**2) * torch.randn((pool, n_critics, 1), generator=generator).to(device)
            ensemble = CriticEnsemble(n_critics, 2, hidden=HIDDEN, output_range=OUTPUT_RANGE,
                                      generator=generator).to(device)
            optimizer = adam(ensemble.parameters(), LEARNING_RATE, capturable=graph)
            # Index draws and shifts are made before the clock starts: only the step is timed.
            total = grid.warmup_steps + grid.timed_steps
            drawn = step_draws(generator, np.random.default_rng(seed), pool, batch_size, total)
            shifts, draws = drawn[:, batch_size].tolist(), drawn.to(device)
            stepper = GraphedTrainingStep(ensemble, optimizer, u, v, batch_size) if graph else None
            objective = None
            for step in range(total):
                if step == grid.warmup_steps:
                    _synchronize(device)
                    started = time.perf_counter()
                if stepper is None:
                    objective = training_step(ensemble, optimizer, u, v, draws[step, :batch_size], shifts[step])
                else:
                    stepper(draws[step])
            _synchronize(device)
            seconds = time.perf_counter() - started
            if stepper is not None:
                objective = stepper.gain
                if stepper.fallback:
                    mode = f"eager (graph capture refused: {stepper.fallback[:80]})"
            if device.type == "cuda":
                peak = torch.cuda.max_memory_allocated(device) / 2**20
            final = float(objective.detach().mean())
            if stepper is not None:
                stepper.close()
    except torch.OutOfMemoryError:
        return ThroughputMeasurement(str(device), n_critics, batch_size, 0, math.nan, threads, math.nan, math.nan,
                                     "out of memory", mode)
    return ThroughputMeasurement(str(device), n_critics, batch_size, grid.timed_steps, seconds, threads, peak, final,
                                 "ok", mode)


def measure(grid: ThroughputGrid, device: torch.device, seed: int) -> list:
    """Every (M, batch size) of ``grid``; once M runs out of memory, larger M at that batch size are skipped. On
    CUDA, the configurations that fits train through a CUDA graph are timed through it too."""
    rows = []
    for batch_size in grid.batch_sizes:
        exhausted = False
        for n_critics in grid.critics:
            if exhausted:
                rows.append(ThroughputMeasurement(str(device), n_critics, batch_size, 0, math.nan, 0, math.nan,
                                                  math.nan, "out of memory"))
                continue
            row = time_training_loop(n_critics, batch_size, grid, device, seed)
            exhausted = row.status != "ok"
            rows.append(row)
            if not exhausted and use_cuda_graph(device, "dv", None, n_critics, batch_size, HIDDEN):
                rows.append(time_training_loop(n_critics, batch_size, grid, device, seed, graph=True))
    return rows


def _findings(rows: list, ceilings: Ceilings) -> list:
    findings = [f"Ceilings measured on {ceilings.device}: copy {ceilings.copy_bytes_per_second / 1e9:.4g} GB/s "
                f"(read + write), float32 matmul {ceilings.matmul_flops_per_second / 1e12:.4g} TFLOP/s."]
    for batch_size in sorted({r.batch_size for r in rows}):
        ok = [r for r in rows if r.batch_size == batch_size and r.status == "ok"]
        if not ok:
            findings.append(f"batch {batch_size}: no configuration fit in memory.")
            continue
        best = max(ok, key=lambda r: r.critic_steps_per_second)
        single = max((r for r in ok if r.critics == 1), key=lambda r: r.critic_steps_per_second, default=None)
        gain = "" if single is None else (f", {best.critic_steps_per_second / single.critic_steps_per_second:.0f}× "
                                          f"the single critic's {single.critic_steps_per_second:.3g}")
        memory = "" if math.isnan(best.peak_memory_mb) else f", peak GPU memory {best.peak_memory_mb:.0f} MiB"
        findings.append(f"batch {batch_size}: peak {best.critic_steps_per_second:.3g} critic-steps/s at "
                        f"M = {best.critics:,} ({best.mode}; {best.steps / best.seconds:.3g} steps/s{memory}){gain}; "
                        f"{best.bytes_per_second / 1e9:.3g} GB/s = "
                        f"{best.bytes_per_second / ceilings.copy_bytes_per_second:.0%} of the copy roofline, "
                        f"{best.flops_per_second / 1e12:.3g} TFLOP/s = "
                        f"{best.flops_per_second / ceilings.matmul_flops_per_second:.1%} of the matmul rate.")
    graphs = [(e, g) for e in rows for g in rows if e.mode == "eager" and g.mode == "cuda graph" and e.status == "ok"
              and g.status == "ok" and (e.critics, e.batch_size) == (g.critics, g.batch_size)]
    if graphs:
        findings.append("CUDA graph against eager, steps/s: " + "; ".join(
            f"M = {e.critics:,}, batch {e.batch_size}: {g.steps / g.seconds:.4g} against {e.steps / e.seconds:.4g} "
            f"({e.seconds / g.seconds:.1f}×)" for e, g in graphs) + ".")
    if any(r.status == "ok" and r.bytes_per_second > ceilings.copy_bytes_per_second for r in rows):
        findings.append("Fractions of the copy roofline above 1: those steps' activations stay in the cache, which "
                        "the copy (of buffers larger than the cache) does not measure.")
    oom = [r for r in rows if r.status != "ok"]
    if oom:
        findings.append("Out of memory: " + ", ".join(f"M = {r.critics:,} at batch {r.batch_size}" for r in oom) + ".")
    return findings


def run(context) -> ExperimentOutput:
    device = torch.device(context.device)
    grid = GRIDS["quick"] if context.quick else GRIDS["cuda" if device.type == "cuda" else "cpu"]
    ceilings = measure_ceilings(device, context.quick, context.seed)
    rows = measure(grid, device, context.seed)
    dicts = [r.to_dict(ceilings) for r in rows]
    table = Table("gpu_throughput", {key: [row[key] for row in dicts] for key in dicts[0]})

    figure, axes = new_figure(1, 2, width=5.2)
    for index, batch_size in enumerate(grid.batch_sizes):
        for mode, style in (("eager", "o-"), ("cuda graph", "s--")):
            ok = [r for r in rows if r.batch_size == batch_size and r.status == "ok" and r.mode == mode]
            if not ok:
                continue
            label = f"batch {batch_size}" + (", graph" if mode != "eager" else "")
            axes[0, 0].loglog([r.critics for r in ok], [r.critic_steps_per_second for r in ok], style,
                              color=f"C{index}", label=label)
            axes[0, 1].semilogx([r.critics for r in ok], [r.bytes_per_second / ceilings.copy_bytes_per_second
                                                          for r in ok], style, color=f"C{index}", label=label)
    axes[0, 0].set_xlabel("critics M")
    axes[0, 0].set_ylabel("critic-steps per second")
    axes[0, 0].set_title(f"{device}: shallow critics, {HIDDEN} ReLU units, DV + Adam", fontsize=8)
    axes[0, 0].legend(fontsize=6)
    axes[0, 1].set_xlabel("critics M")
    axes[0, 1].set_ylabel("bytes/s over the measured copy bandwidth")
    axes[0, 1].axhline(1.0, color="k", lw=0.5)
    settings = {"device": str(device), "critics M": list(grid.critics), "batch sizes": list(grid.batch_sizes),
                "hidden units": HIDDEN, "warm-up steps": grid.warmup_steps, "timed steps": grid.timed_steps,
                "torch": torch.__version__, "torch threads": torch.get_num_threads(),
                "timed": "the training step only (forward joint + product, DV, backward, Adam)",
                **ceilings.to_settings(),
                "bytes per step": f"4 × M × ({ACTIVATION_PASSES} × 2b × ℓ + {ADAM_PASSES} × "
                                  f"{parameters_per_critic()} parameters) (activation passes and Adam)",
                "FLOPs per step": "2 × M × 2b × ℓ × 8 (the step's four batched products)"}
    return ExperimentOutput([table], figure, settings, _findings(rows, ceilings))


EXPERIMENTS = [Experiment(
    name="gpu-throughput",
    description="critic-steps per second vs number of critics M and batch size (DV + Adam loop), GPU memory on CUDA",
    source="study (issue 6)",
    run=run,
    trains=True,
    full_runtime=("7 s on a quiet 2-core x86_64 CPU, device cpu (the CPU grid, M up to 4096); 19 s on one H200 "
                  "with 16 cores, device cuda (the CUDA grid, M up to 100,000, eager and CUDA-graph rows)"),
)]
