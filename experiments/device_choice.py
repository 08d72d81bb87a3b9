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
  the faster device's (target: within 1.1×). Without a GPU only ``cpu`` and ``auto`` run.

How the audits are timed. An audit's three commands run one after another in a round (interleaved, so that a
drift of the machine's load falls on all three alike), each round in the order of the one before rotated by one
(``cpu, cuda, auto``, then ``cuda, auto, cpu``, ...: :func:`round_order`), so that no device always runs first,
after another audit's commands. With ``--grid best-of-2`` each audit has two rounds and each configuration's
faster timing is kept (best of k, the usual statistic of wall-clock benchmarks: the noise of a timing only adds
to it); the default, ``best-of-1``, times each once. The estimate behind that default: on the H200 of
``docs/benchmarks/device-choice.md`` the fifteen commands took 177 s in all (7 to 15 s each) and the step costs
and the CUDA start 11 s, 189 s in all; best of 2 would take about 2 × 177 + 11 ≈ 366 s, past the 200 s that
``experiments/gpu_check.sh`` gives the experiment, so it is a grid to run on its own.

Each ``auto`` row says whether ``auto`` ran the configuration of the faster timing (:func:`configuration`: the
audit's device and a catalog DP-SGD entry's trainer, as the command's JSON result and notes give them; a
deterministic check). Where it did, its ratio to the faster timing is the spread between timings of the same
work, not a cost of the choice, and the findings say so beside the ratios (which the table keeps as measured).
"""

from __future__ import annotations

import json
import math
import os
import re
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


#: ``--grid``: how many rounds of an audit's commands are timed, each configuration's fastest timing kept (the
#: default, best of 1, fits the GPU check's 200 s: the module's docstring gives the estimate).
REPEATS = {"best-of-1": 1, "best-of-2": 2}
DEFAULT_GRID = "best-of-1"

#: A catalog DP-SGD entry's trainer in a command's notes (:func:`mechanisms.training.torch_dpsgd.trainer_for_device`).
TRAINER_NOTE = re.compile(r"trainer: the (.+?) on (?:the )?(\w+)")


def timed_devices(cuda: bool) -> tuple:
    """The ``--device`` values each audit is run with, in its first round's order."""
    return ("cpu", "cuda", "auto") if cuda else ("cpu", "auto")


def round_order(devices: tuple, round_index: int) -> tuple:
    """The order of round ``round_index`` (counted over all audits): ``devices`` rotated left by the round's index,
    so that each round starts with the device after the one the round before started with."""
    shift = round_index % len(devices)
    return tuple(devices[shift:]) + tuple(devices[:shift])


def configuration(result: dict) -> str:
    """What a command ran: its audit's device (its critics') and a catalog DP-SGD entry's trainer, from its notes."""
    if result["trained_on"] == "failed":
        return "failed"
    trainer = TRAINER_NOTE.search(result["note"])
    return f"audit on {result['trained_on']}" + (f", trainer {trainer.group(1)} on {trainer.group(2).lower()}"
                                                  if trainer else "")


def auto_against_faster(best: dict) -> tuple:
    """Whether ``auto`` ran the configuration of the faster of the other devices' timings ("yes"), of a slower one
    ("no"), or neither's ("neither", e.g. the NumPy DP-SGD trainer), and what its ratio then measures."""
    timed = {device: result for device, result in best.items() if device != "auto"}
    faster = min(timed, key=lambda device: timed[device]["wall_seconds"])
    chosen = configuration(best["auto"])
    if chosen == "failed":
        return "failed", "auto's command failed"
    if chosen == configuration(timed[faster]):
        return "yes", "the spread between timings of the same work"
    if any(chosen == configuration(result) for result in timed.values()):
        return "no", "the cost of choosing the slower device"
    return "neither", "the time of a configuration neither --device cpu nor --device cuda ran"


def audit_rows(quick: bool, seed: int, cuda: bool, repeats: int = 1) -> dict:
    """The audits' table: each audit's commands in ``repeats`` interleaved rounds (:func:`round_order`), each
    configuration's fastest run kept."""
    devices = timed_devices(cuda)
    columns: dict = {k: [] for k in ("audit", "device", "wall_seconds", "wall_seconds_each", "positions",
                                     "audit_seconds", "trained_on", "verdict", "configuration", "auto_over_fastest",
                                     "auto_chose_faster", "ratio_is", "note")}
    for index, (label, arguments) in enumerate(QUICK_AUDITS if quick else AUDITS):
        runs: dict = {device: [] for device in devices}
        positions: dict = {device: [] for device in devices}
        for repeat in range(repeats):
            for device in round_order(devices, index * repeats + repeat):
                result = run_audit_command(arguments, device, seed)
                runs[device].append(result)
                positions[device].append(sum(map(len, runs.values())))
                print(f"  {label}, --device {device}: {result['wall_seconds']:.1f} s "
                      f"({result['note'] or result['trained_on']})", file=sys.stderr, flush=True)
        # Best of k: the fastest of a configuration's timings, a failed run only where every run failed.
        best = {device: min(results, key=lambda r: (r["trained_on"] == "failed", r["wall_seconds"]))
                for device, results in runs.items()}
        fastest = min(best[d]["wall_seconds"] for d in devices if d != "auto")
        chose, ratio_is = auto_against_faster(best)
        for device in devices:
            result = best[device]
            columns["audit"].append(label)
            columns["device"].append(device)
            for key in ("wall_seconds", "audit_seconds", "trained_on", "verdict", "note"):
                columns[key].append(result[key])
            columns["wall_seconds_each"].append("; ".join(f"{r['wall_seconds']:.4g}" for r in runs[device]))
            columns["positions"].append(", ".join(map(str, positions[device])))
            columns["configuration"].append(configuration(result))
            is_auto = device == "auto"
            columns["auto_over_fastest"].append(result["wall_seconds"] / fastest if is_auto else math.nan)
            columns["auto_chose_faster"].append(chose if is_auto else "")
            columns["ratio_is"].append(ratio_is if is_auto else "")
    return columns


def _findings(costs: list, start: float, audits: dict, repeats: int = 1) -> list:
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
    rows = [(a, r, c) for a, d, r, c in zip(audits["audit"], audits["device"], audits["auto_over_fastest"],
                                            audits["auto_chose_faster"]) if d == "auto"]
    if rows:
        timing = "one timing each" if repeats == 1 else f"the fastest of {repeats} timings each"
        worst = max(r for _, r, _ in rows)
        findings.append(f"--device auto over the faster of cpu and cuda (wall seconds of the command, {timing}, each "
                        "round's order rotated): " + "; ".join(
                            f"{a}: {r:.2f}×" + (" (same work)" if c == "yes" else "") for a, r, c in rows)
                        + f". Worst {worst:.2f}× (target: 1.1× or less)" + _worst_of_other_work(rows) + ".")
        findings.append(_choice_summary(rows))
    return findings


def _worst_of_other_work(rows: list) -> str:
    """The worst ratio where ``auto`` did not run the faster timing's configuration (the ratios a choice can cost),
    beside the worst of all, which may be the spread between timings of the same work."""
    other = [r for _, r, c in rows if c in ("no", "neither")]
    if not other or len(other) == len(rows):
        return ""
    return f"; worst where auto ran other work than the faster timing: {max(other):.2f}×"


def _span(ratios: list) -> str:
    return f"{min(ratios):.2f}×" if min(ratios) == max(ratios) else f"{min(ratios):.2f}-{max(ratios):.2f}×"


def _choice_summary(rows: list) -> str:
    """The findings' line on ``auto``'s choices: on how many audits it ran the faster timing's configuration, and
    what the ratios of each kind measure. ``rows``: (audit, auto over the faster, ``auto_chose_faster``)."""
    kinds = {kind: [(a, r) for a, r, c in rows if c == kind] for kind in ("yes", "no", "neither", "failed")}
    line = (f"--device auto chose the faster device on {len(kinds['yes'])} of {len(rows)} audits (it ran the "
            "configuration, audit device and DP-SGD trainer, of the faster timing)")
    if kinds["yes"]:
        line += (f"; there its {_span([r for _, r in kinds['yes']])} is the spread between timings of the same work, "
                 "not a cost of the choice")
    if kinds["no"]:
        line += "; it chose the slower device on " + ", ".join(f"{a} ({r:.2f}×)" for a, r in kinds["no"])
    if kinds["neither"]:
        line += ("; it ran a configuration neither --device cpu nor --device cuda ran on "
                 + ", ".join(f"{a} ({r:.2f}×)" for a, r in kinds["neither"]))
    if kinds["failed"]:
        line += "; its command failed on " + ", ".join(a for a, _ in kinds["failed"])
    return line + "."


def _timings_setting(repeats: int, devices: tuple) -> str:
    rounds = (f"the first round in the order {', '.join(devices)}, each later round's order the one before rotated by "
              "one")
    if repeats == 1:
        return f"each configuration timed once (--grid best-of-2: the faster of two): one round an audit, {rounds}"
    return (f"best of {repeats}: {repeats} interleaved rounds an audit, {rounds}; the fastest timing of each "
            "configuration kept (a wall-clock timing's noise only adds to it)")


def run(context) -> ExperimentOutput:
    cuda = torch.cuda.is_available() and str(context.device).startswith("cuda")
    devices = [torch.device("cpu")] + ([torch.device(context.device)] if cuda else [])
    repeats = 1 if context.quick else REPEATS[context.grid or DEFAULT_GRID]
    costs = []

    def measure_costs():
        costs.extend(step_costs(device, context.quick, context.seed) for device in devices)
        start = cuda_start_seconds() if cuda else math.nan
        for row in costs:
            row["cuda_start_seconds"] = start if row["device"] == "cuda" else 0.0
        return {key: [row[key] for row in costs] for key in costs[0]}

    # Each table is written as its stage completes (a run cut short keeps the step costs).
    tables = [context.stage("device_step_costs", measure_costs),
              context.stage("device_choice_audits", lambda: audit_rows(context.quick, context.seed, cuda, repeats))]
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
                "hidden units": HIDDEN,
                "timings": _timings_setting(repeats, timed_devices(cuda)),
                "audits": [label for label, _ in (QUICK_AUDITS if context.quick else AUDITS)],
                "torch": torch.__version__}
    return ExperimentOutput(tables, figure, settings, _findings(costs, start, audits, repeats))


EXPERIMENTS = [Experiment(
    name="device-choice",
    description="--device auto against cpu and cuda on a few audits, and the step costs its choice is predicted from",
    source="study (issue 42)",
    run=run,
    trains=True,
    full_runtime="189 s on one H200 with 16 cores, device cuda, best of 1 (fifteen commands of 7 to 15 s, 177 s in "
                 "all, and 11 s of step costs and CUDA start); best-of-2 estimated from those: about 366 s",
    grids=tuple(REPEATS),
)]
