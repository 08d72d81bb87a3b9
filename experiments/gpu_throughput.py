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
(:func:`estimators.neural.step_threads`), so the numbers are those the estimators see.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from estimators.critics import CriticEnsemble
from estimators.device import cpu_threads
from estimators.neural import CriticConfig, adam, step_threads, training_step

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
    "quick": ThroughputGrid((1, 16, 64), (64, 256), 2, 8),
}


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

    @property
    def critic_steps_per_second(self) -> float:
        return self.critics * self.steps / self.seconds

    def to_dict(self) -> dict:
        return {"device": self.device, "critics": self.critics, "batch_size": self.batch_size, "hidden": HIDDEN,
                "steps": self.steps, "seconds": self.seconds, "threads": self.threads,
                "steps_per_second": self.steps / self.seconds,
                "critic_steps_per_second": self.critic_steps_per_second,
                "pair_evaluations_per_second": 2 * self.critics * self.batch_size * self.steps / self.seconds,
                "peak_memory_mb": self.peak_memory_mb, "final_objective_mean": self.final_objective_mean,
                "status": self.status}


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_training_loop(n_critics: int, batch_size: int, grid: ThroughputGrid, device: torch.device,
                       seed: int) -> ThroughputMeasurement:
    """Train ``n_critics`` critics for warm-up + timed steps and time the timed steps only.

    Each critic draws its mini-batches from its own pool of 2 × ``batch_size`` Gaussian pairs
    held on the device, sample-major as :func:`estimators.neural.fit_critics` holds them, and
    each step is :func:`estimators.neural.training_step`, the step every fit makes.
    """
    threads = step_threads(n_critics, batch_size, HIDDEN, device)
    generator = torch.Generator().manual_seed(seed)
    pool = 2 * batch_size
    peak = math.nan
    try:
        with cpu_threads(threads):
            if device.type == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(device)
            u = torch.randn((pool, n_critics, 1), generator=generator).to(device)
            v = RHO * u + math.sqrt(1 - RHO**2) * torch.randn((pool, n_critics, 1), generator=generator).to(device)
            ensemble = CriticEnsemble(n_critics, 2, hidden=HIDDEN, output_range=OUTPUT_RANGE,
                                      generator=generator).to(device)
            optimizer = adam(ensemble.parameters(), LEARNING_RATE)
            # Index draws and shifts are made before the clock starts: only the step is timed.
            draws = torch.randint(pool, (grid.warmup_steps + grid.timed_steps, batch_size), generator=generator)
            shifts = np.random.default_rng(seed).integers(1, batch_size, grid.warmup_steps + grid.timed_steps)
            draws = draws.to(device)
            objective = None
            for step in range(grid.warmup_steps + grid.timed_steps):
                if step == grid.warmup_steps:
                    _synchronize(device)
                    started = time.perf_counter()
                objective = training_step(ensemble, optimizer, u, v, draws[step], int(shifts[step]))
            _synchronize(device)
            seconds = time.perf_counter() - started
            if device.type == "cuda":
                peak = torch.cuda.max_memory_allocated(device) / 2**20
            final = float(objective.detach().mean())
    except torch.OutOfMemoryError:
        return ThroughputMeasurement(str(device), n_critics, batch_size, 0, math.nan, threads, math.nan, math.nan,
                                     "out of memory")
    return ThroughputMeasurement(str(device), n_critics, batch_size, grid.timed_steps, seconds, threads, peak, final,
                                 "ok")


def measure(grid: ThroughputGrid, device: torch.device, seed: int) -> list:
    """Every (M, batch size) of ``grid``; once M runs out of memory, larger M at that batch size are skipped."""
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
    return rows


def _findings(rows: list) -> list:
    findings = []
    for batch_size in sorted({r.batch_size for r in rows}):
        ok = [r for r in rows if r.batch_size == batch_size and r.status == "ok"]
        if not ok:
            findings.append(f"batch {batch_size}: no configuration fit in memory.")
            continue
        best = max(ok, key=lambda r: r.critic_steps_per_second)
        single = next((r for r in ok if r.critics == 1), None)
        gain = "" if single is None else (f", {best.critic_steps_per_second / single.critic_steps_per_second:.0f}× "
                                          f"the single critic's {single.critic_steps_per_second:.3g}")
        memory = "" if math.isnan(best.peak_memory_mb) else f", peak GPU memory {best.peak_memory_mb:.0f} MiB"
        findings.append(f"batch {batch_size}: peak {best.critic_steps_per_second:.3g} critic-steps/s at "
                        f"M = {best.critics:,} ({best.steps / best.seconds:.3g} steps/s{memory}){gain}.")
    oom = [r for r in rows if r.status != "ok"]
    if oom:
        findings.append("Out of memory: " + ", ".join(f"M = {r.critics:,} at batch {r.batch_size}" for r in oom) + ".")
    return findings


def run(context) -> ExperimentOutput:
    device = torch.device(context.device)
    grid = GRIDS["quick"] if context.quick else GRIDS["cuda" if device.type == "cuda" else "cpu"]
    rows = measure(grid, device, context.seed)
    dicts = [r.to_dict() for r in rows]
    table = Table("gpu_throughput", {key: [row[key] for row in dicts] for key in dicts[0]})

    figure, axes = new_figure()
    ax = axes[0, 0]
    for index, batch_size in enumerate(grid.batch_sizes):
        ok = [r for r in rows if r.batch_size == batch_size and r.status == "ok"]
        ax.loglog([r.critics for r in ok], [r.critic_steps_per_second for r in ok], "o-", color=f"C{index}",
                  label=f"batch {batch_size}")
    ax.set_xlabel("critics M")
    ax.set_ylabel("critic-steps per second")
    ax.set_title(f"{device}: shallow critics, {HIDDEN} ReLU units, DV + Adam")
    ax.legend()
    settings = {"device": str(device), "critics M": list(grid.critics), "batch sizes": list(grid.batch_sizes),
                "hidden units": HIDDEN, "warm-up steps": grid.warmup_steps, "timed steps": grid.timed_steps,
                "torch": torch.__version__, "torch threads": torch.get_num_threads(),
                "timed": "the training step only (forward joint + product, DV, backward, Adam)"}
    return ExperimentOutput([table], figure, settings, _findings(rows))


EXPERIMENTS = [Experiment(
    name="gpu-throughput",
    description="critic-steps per second vs number of critics M and batch size (DV + Adam loop), GPU memory on CUDA",
    source="study (issue 6)",
    run=run,
    trains=True,
    full_runtime=("7 s on a quiet 2-core x86_64 CPU, device cpu (the CPU grid, M up to 4096); on one H100 "
                  "(the CUDA grid, M up to 100,000) it ran to its end with a peak of 1.36e7 critic-steps/s, its run "
                  "time not recorded"),
)]
