"""Study ``device-choice``: does ``--device auto`` pick the faster device? (issue 42 §2, checked on a GPU.)

Two tables.

- ``device_step_costs``: the cost model of :func:`estimators.device.choose_device` measured on this machine.
  On each device the critic training step (:func:`experiments.gpu_throughput.time_training_loop`, through a
  CUDA graph where :func:`estimators.neural.fit_critics` would use one) is timed for a small ensemble (one
  critic) and a large one at one batch size; a fixed cost per step and a cost per pair evaluation (critic ×
  row) are solved from the two, and set beside the constants ``choose_device`` uses. On a GPU the CUDA start
  is timed too: a fresh interpreter's first CUDA call (``torch.zeros(1, device="cuda")``), less its imports.
- ``device_choice_audits``: a few audits, each run as a command (``miaudit audit ... --json``, a fresh
  process, as a user runs it, so the CUDA start counts) with ``--device cpu``, ``cuda`` and ``auto``; the
  wall seconds of each, the device ``auto`` chose (for its critics, and for a catalog DP-SGD entry's training,
  weighed beside them with the GPU's start counted once: :mod:`mechanisms.training.device_cost`) and its time over
  the faster device's (target: within 1.1×). Without a
  GPU only ``cpu`` and ``auto`` run.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch

from estimators import device as device_model
from estimators.neural import use_cuda_graph

from .framework import REPOSITORY_ROOT, Experiment, ExperimentOutput, new_figure
from .gpu_throughput import HIDDEN, ThroughputGrid, time_training_loop

#: (label, miaudit audit arguments): a one-critic neural audit (issue 42's example, 2.9 s slower on the GPU
#: than on the CPU before), and sliced audits with many critics.
AUDITS = (
    ("1 neural critic: histogram_buggy, mi-dp, 20,000 samples",
     ["--mechanism", "catalog:histogram_buggy", "--notion", "mi-dp", "--epsilon", "0.125", "--samples", "20000",
      "--mi-critic", "neural"]),
    ("32 sliced critics: bloom_rappor, smi-dp, 20,000 samples",
     ["--mechanism", "catalog:bloom_rappor", "--notion", "smi-dp", "--epsilon", "0.05", "--samples", "20000"]),
    ("256 sliced critics: bloom_rappor, smi-dp, 20,000 samples",
     ["--mechanism", "catalog:bloom_rappor", "--notion", "smi-dp", "--slices", "256", "--epsilon", "0.05",
      "--samples", "20000"]),
    # The trainer's choice (mechanisms.training.device_cost): 60,000 DP-SGD runs, classifier critics.
    ("DP-SGD training: dpsgd_no_clipping, its (ε, δ) claim, 20,000 samples",
     ["--mechanism", "catalog:dpsgd_no_clipping", "--samples", "20000"]),
    # The same 60,000 runs beside a neural critic that goes to the GPU anyway: the start is paid once for both, so
    # auto trains there too (the trainer alone would stay on the CPU below about 360,000 runs).
    ("DP-SGD training beside a neural critic: dpsgd_s1_q1_t4, mi-dp, 20,000 samples",
     ["--mechanism", "catalog:dpsgd_s1_q1_t4", "--samples", "20000", "--mi-critic", "neural"]),
)
QUICK_AUDITS = (("1 neural critic: histogram_buggy, mi-dp, 2,000 samples (quick)",
                 ["--mechanism", "catalog:histogram_buggy", "--notion", "mi-dp", "--epsilon", "0.125", "--samples",
                  "2000", "--mi-critic", "neural", "--set", "critic.max_steps=50"]),)

BATCH = 256


def step_costs(device: torch.device, quick: bool, seed: int) -> dict:
    """Seconds per training step of 1 critic and of a large ensemble on ``device``, and the model solved from them."""
    small_steps, large_steps = (20, 10) if quick else (1000, 100)
    large = 64 if quick else (4096 if device.type == "cuda" else 1024)
    rows = {}
    for critics, steps in ((1, small_steps), (large, large_steps)):
        graph = use_cuda_graph(device, "dv", None, critics, BATCH, HIDDEN)
        grid = ThroughputGrid((critics,), (BATCH,), 5, steps)
        measured = time_training_loop(critics, BATCH, grid, device, seed, graph=graph)
        rows[critics] = (measured.seconds / measured.steps, measured.mode)
    (small_s, small_mode), (large_s, large_mode) = rows[1], rows[large]
    pair = max(0.0, (large_s - small_s) / ((large - 1) * BATCH))
    step = max(0.0, small_s - BATCH * pair)
    kind = device.type
    model_step, model_pair = ((device_model.GPU_STEP_S, device_model.GPU_PAIR_S) if kind == "cuda"
                              else (device_model.CPU_STEP_S, device_model.CPU_PAIR_S))
    return {"device": kind, "small_critics": 1, "small_mode": small_mode, "small_step_seconds": small_s,
            "large_critics": large, "large_mode": large_mode, "large_step_seconds": large_s, "batch_size": BATCH,
            "threads": torch.get_num_threads(), "measured_step_seconds": step, "measured_pair_seconds": pair,
            "model_step_seconds": model_step, "model_pair_seconds": model_pair}


def cuda_start_seconds() -> float:
    """A fresh interpreter's first CUDA call, less its ``import torch`` (seconds)."""
    code = ("import time; t0 = time.perf_counter(); import torch; t1 = time.perf_counter(); "
            "torch.zeros(1, device='cuda'); torch.cuda.synchronize(); print(time.perf_counter() - t1)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def run_audit_command(arguments: list, device: str, seed: int) -> dict:
    """``miaudit audit ARGS --device D --json --quiet`` in a fresh interpreter: wall seconds, the audit's own
    seconds, the device it trained on and the engine's note on the choice."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY_ROOT), environment.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "audit.cli.main", "audit", *arguments, "--device", device, "--seed", str(seed),
               "--json", "--quiet"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    wall = time.perf_counter() - started
    try:
        result = json.loads(done.stdout)
    except ValueError:
        return {"wall_seconds": wall, "audit_seconds": math.nan, "trained_on": "failed", "verdict": "failed",
                "note": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    note = "; ".join(n for n in result.get("notes", []) if n.startswith(("device ", "trainer:")))
    return {"wall_seconds": wall, "audit_seconds": float(result["seconds"]), "trained_on": str(result.get("device")),
            "verdict": result.get("verdict"), "note": note}


def audit_rows(quick: bool, seed: int, cuda: bool) -> dict:
    columns: dict = {k: [] for k in ("audit", "device", "wall_seconds", "audit_seconds", "trained_on", "verdict",
                                     "auto_over_fastest", "note")}
    for label, arguments in QUICK_AUDITS if quick else AUDITS:
        results = {}
        for device in ("cpu", "cuda", "auto") if cuda else ("cpu", "auto"):
            results[device] = run_audit_command(arguments, device, seed)
            print(f"  {label}, --device {device}: {results[device]['wall_seconds']:.1f} s "
                  f"({results[device]['note'] or results[device]['trained_on']})", file=sys.stderr, flush=True)
        fastest = min(results[d]["wall_seconds"] for d in results if d != "auto")
        for device, result in results.items():
            columns["audit"].append(label)
            columns["device"].append(device)
            for key in ("wall_seconds", "audit_seconds", "trained_on", "verdict", "note"):
                columns[key].append(result[key])
            columns["auto_over_fastest"].append(result["wall_seconds"] / fastest if device == "auto" else math.nan)
    return columns


def _findings(costs: list, start: float, audits: dict) -> list:
    findings = []
    for row in costs:
        findings.append(
            f"{row['device']}: one critic {1 / row['small_step_seconds']:.4g} steps/s ({row['small_mode']}), "
            f"{row['large_critics']:,} critics {1 / row['large_step_seconds']:.4g} steps/s ({row['large_mode']}), "
            f"batch {row['batch_size']}: fixed {row['measured_step_seconds'] * 1e3:.3g} ms a step and "
            f"{row['measured_pair_seconds']:.3g} s a pair evaluation (the model: {row['model_step_seconds'] * 1e3:.3g} "
            f"ms and {row['model_pair_seconds']:.3g} s).")
    if not math.isnan(start):
        findings.append(f"CUDA start (a fresh interpreter's first CUDA call): {start:.2f} s "
                        f"(the model: {device_model.GPU_START_S:g} s).")
    ratios = [(a, r) for a, d, r in zip(audits["audit"], audits["device"], audits["auto_over_fastest"]) if d == "auto"]
    if ratios:
        worst = max(r for _, r in ratios)
        findings.append("--device auto over the faster of cpu and cuda (wall seconds of the command): " + "; ".join(
            f"{a}: {r:.2f}×" for a, r in ratios) + f". Worst {worst:.2f}× (target: 1.1× or less).")
    return findings


def run(context) -> ExperimentOutput:
    cuda = torch.cuda.is_available() and str(context.device).startswith("cuda")
    devices = [torch.device("cpu")] + ([torch.device(context.device)] if cuda else [])
    costs = []

    def measure_costs():
        costs.extend(step_costs(device, context.quick, context.seed) for device in devices)
        start = cuda_start_seconds() if cuda else math.nan
        for row in costs:
            row["cuda_start_seconds"] = start if row["device"] == "cuda" else 0.0
        return {key: [row[key] for row in costs] for key in costs[0]}

    # Each table is written as its stage completes (a run cut short keeps the step costs).
    tables = [context.stage("device_step_costs", measure_costs),
              context.stage("device_choice_audits", lambda: audit_rows(context.quick, context.seed, cuda))]
    audits = tables[1].columns
    start = costs[-1]["cuda_start_seconds"] if cuda else math.nan
    figure, axes = new_figure()
    labels = list(dict.fromkeys(audits["audit"]))
    for offset, device in enumerate(("cpu", "cuda", "auto")):
        values = [next((w for a, d, w in zip(audits["audit"], audits["device"], audits["wall_seconds"])
                        if a == label and d == device), math.nan) for label in labels]
        axes[0, 0].bar(np.arange(len(labels)) + 0.27 * (offset - 1), values, width=0.27, label=device)
    axes[0, 0].set_xticks(np.arange(len(labels)), [f"audit {i + 1}" for i in range(len(labels))])
    axes[0, 0].set_ylabel("wall seconds of the command")
    axes[0, 0].legend()
    settings = {"devices": [str(d) for d in devices], "batch size of the step timings": BATCH,
                "hidden units": HIDDEN, "audits": [label for label, _ in (QUICK_AUDITS if context.quick else AUDITS)],
                "torch": torch.__version__}
    return ExperimentOutput(tables, figure, settings, _findings(costs, start, audits))


EXPERIMENTS = [Experiment(
    name="device-choice",
    description="--device auto against cpu and cuda on a few audits, and the step costs its choice is predicted from",
    source="study (issue 42)",
    run=run,
    trains=True,
    full_runtime="104 s on one H200 with 16 cores, device cuda, for its first three audits (nine commands of about 10 s "
                 "each); the DP-SGD audit's three commands have not run on a GPU",
)]
