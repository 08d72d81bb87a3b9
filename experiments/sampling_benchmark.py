"""Sampling backends (issue 18): speedup of worker processes and Ray, per-chunk overhead, chunk sizing.

Three mechanisms of about 20 ms per run: one that sleeps (waiting on I/O, a remote service), a
CPU-bound external program (:mod:`experiments._busy_program`, started once per chunk through
:class:`~mechanisms.adapters.callables.ExternalCommandMechanism`), and a small DP-SGD training run (the
catalog's correct DP-SGD, :mod:`mechanisms.training`, at its setting σ = 2, q = 0.25, on a
larger training set so that one run trains for about 20 ms: logistic regression on 500 records
of 10 features, 128 noisy steps, releasing the gradient trace; the databases alternate between
the training set with its gradient canary and the one with a null record in its place). Each
runs ``runs`` databases in process, on 2 local worker processes and on a local Ray instance with
2 CPUs, at one chunk size; startup (pool or Ray start, loading the mechanism) is timed
separately and left out of the sampling time. The machine's load average is read before and
after every timing: CPU-bound speedups need idle cores, and a shared machine has none.

The per-chunk overhead of a backend is measured with a mechanism that does no work (sampling
time × slots / chunks, chunk size 1); for the external program it includes starting the program,
measured with 0 ms of work per run. Overhead stays under 5% of the run time when a chunk holds
at least ``overhead / (0.05 × time per run)`` runs: the sizing rule in the README.

Run it with ``miaudit experiment sampling-benchmark`` or ``python -m experiments.sampling_benchmark``.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from mechanisms.adapters.callables import ExternalCommandMechanism
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.training import DPSGD
from mechanisms.catalog.dpsgd import canary_pair

from .framework import Experiment, ExperimentOutput, Table, new_figure

RUN_SECONDS = 0.02
OVERHEAD_TARGET = 0.05
SOURCE = "experiments.sampling_benchmark"
BUSY_PROGRAM = Path(__file__).with_name("_busy_program.py")


def sleepy(dbs, rng):
    """Sleeps 20 ms per database, then releases a noisy sum."""
    time.sleep(RUN_SECONDS * dbs.shape[0])
    return dbs.sum(axis=1) + rng.normal(size=(dbs.shape[0], dbs.shape[2]))


def idle(dbs, rng):
    """Does no work: its sampling time is the backend's overhead."""
    return dbs.sum(axis=1)


def busy_program(milliseconds: float) -> ExternalCommandMechanism:
    """The CPU-bound external program, ``milliseconds`` of CPU per run."""
    return ExternalCommandMechanism((sys.executable, str(BUSY_PROGRAM), f"{milliseconds:g}"),
                                    name=f"external program, {milliseconds:g} ms CPU per run")


#: Training set size of the DP-SGD run: records, features, steps (about 20 ms per run on this CPU).
DPSGD_RECORDS, DPSGD_FEATURES, DPSGD_STEPS = 500, 10, 128
#: The catalog's correct DP-SGD at σ = 2, q = 0.25 (entry dpsgd_s2_q0.25_t16), trained longer on more records.
dpsgd_training = DPSGD(DPSGD_RECORDS, DPSGD_FEATURES, 2.0, sampling_rate=0.25, steps=DPSGD_STEPS,
                       release="gradient_trace")


def binary_databases(runs: int, seed: int) -> np.ndarray:
    """``runs`` databases of 4 binary records."""
    return np.random.default_rng(seed).integers(0, 2, size=(runs, 4, 1)).astype(float)


def training_sets(runs: int, seed: int) -> np.ndarray:
    """``runs`` training sets alternating between the canary's and its neighbour's (a null record)."""
    pair = canary_pair(DPSGD_RECORDS, DPSGD_FEATURES, seed=seed)
    return np.stack([pair.first, pair.second])[np.arange(runs) % 2]


@dataclass(frozen=True)
class Workload:
    """A mechanism of the benchmark, how workers load it, and its databases."""

    name: str
    mechanism: Callable
    source: str | None
    databases: Callable = binary_databases


@dataclass(frozen=True)
class Setting:
    """A backend configuration."""

    label: str
    options: dict

    @property
    def slots(self) -> int:
        return self.options.get("workers", 1)


SETTINGS = (Setting("in process", {}), Setting("2 workers", {"workers": 2}),
            Setting("ray, 2 CPUs", {"backend": "ray", "workers": 2}))


@dataclass(frozen=True)
class Timing:
    """One timed sampling job: startup and sampling seconds, and the 1-minute load average before and after."""

    startup: float
    seconds: float
    load_before: float
    load_after: float


def time_sampling(workload: Workload, setting: Setting, runs: int, chunk_size: int, seed: int) -> Timing:
    """The timing of ``runs`` runs of ``workload`` on ``setting``."""
    dbs = workload.databases(runs, seed)
    settings = ExecutionSettings(chunk_size=chunk_size, **setting.options)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with MechanismRunner(workload.mechanism, workload.name, settings, source=workload.source) as runner:
        rng = np.random.default_rng(seed)
        # Warm-up on one chunk per slot: starts the pool or Ray, loads the mechanism, probes it.
        runner.sample(dbs[:chunk_size * setting.slots], rng)
        ready = time.perf_counter()
        runner.sample(dbs, rng)
        done = time.perf_counter()
    return Timing(ready - started, done - ready, load_before, os.getloadavg()[0])


def run(context) -> ExperimentOutput:
    quick = context.quick
    runs = 100 if quick else 2000
    chunk_size = 25
    overhead_runs = 12 if quick else 400
    settings = SETTINGS[:2] if quick else SETTINGS
    workloads = [Workload("sleep 20 ms", sleepy, f"{SOURCE}:sleepy"),
                 Workload("external program, 20 ms CPU", busy_program(1000 * RUN_SECONDS), None),
                 Workload(f"DP-SGD training run ({DPSGD_RECORDS} records, {DPSGD_STEPS} steps)", dpsgd_training,
                          f"{SOURCE}:dpsgd_training", training_sets)]
    rows = {"mechanism": [], "backend": [], "runs": [], "chunk size": [], "startup s": [], "sampling s": [],
            "runs per s": [], "speedup": [], "load average before": [], "load average after": []}
    for workload in workloads:
        serial = None
        for setting in settings:
            timing = time_sampling(workload, setting, runs, chunk_size, context.seed)
            serial = serial or timing.seconds
            for key, value in zip(rows, (workload.name, setting.label, runs, chunk_size, timing.startup,
                                         timing.seconds, runs / timing.seconds, serial / timing.seconds,
                                         timing.load_before, timing.load_after)):
                rows[key].append(value)
    overhead = {"mechanism": [], "backend": [], "chunks": [], "overhead ms per chunk": [],
                "chunk size for < 5% overhead": [], "load average before": [], "load average after": []}
    for workload in [Workload("no work (Python)", idle, f"{SOURCE}:idle"),
                     Workload("external program, 0 ms", busy_program(0), None)]:
        for setting in settings:
            timing = time_sampling(workload, setting, overhead_runs, 1, context.seed)
            per_chunk = timing.seconds * setting.slots / overhead_runs
            for key, value in zip(overhead, (workload.name, setting.label, overhead_runs, 1000 * per_chunk,
                                             max(1, math.ceil(per_chunk / (OVERHEAD_TARGET * RUN_SECONDS))),
                                             timing.load_before, timing.load_after)):
                overhead[key].append(value)

    figure, axes = new_figure()
    ax = axes[0, 0]
    labels = [f"{m}\n{b}" for m, b in zip(rows["mechanism"], rows["backend"])]
    ax.barh(range(len(labels)), rows["runs per s"], color=[f"C{i % len(settings)}" for i in range(len(labels))])
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel("mechanism runs per second")
    ax.set_title(f"{runs} runs of 20 ms, chunks of {chunk_size}")
    findings = []
    for name in dict.fromkeys(rows["mechanism"]):
        parts = [f"{b} {s:.2f}x" for m, b, s in zip(rows["mechanism"], rows["backend"], rows["speedup"]) if m == name]
        findings.append(f"{name}: speedup over in process " + ", ".join(parts) + ".")
    for m, b, ms, size in zip(overhead["mechanism"], overhead["backend"], overhead["overhead ms per chunk"],
                              overhead["chunk size for < 5% overhead"]):
        findings.append(f"{m}, {b}: {ms:.3g} ms per chunk; chunks of ≥ {size} runs of 20 ms keep it under 5%.")
    loads = rows["load average before"] + rows["load average after"] + overhead["load average before"] \
        + overhead["load average after"]
    findings.append(f"1-minute load average of the machine ({os.cpu_count()} cores) during the run: "
                    f"{min(loads):.1f} to {max(loads):.1f}; a CPU-bound mechanism speeds up only with idle cores.")
    out_settings = {"runs": runs, "chunk size": chunk_size, "time per run": "20 ms",
                    "overhead runs (chunk size 1)": overhead_runs, "backends": [s.label for s in settings],
                    "DP-SGD run": (f"{DPSGD_RECORDS} records x {DPSGD_FEATURES} features, σ = 2, q = 0.25, "
                                   f"{DPSGD_STEPS} steps, gradient trace released"),
                    "load average (1 min)": f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores"}
    return ExperimentOutput([Table("sampling_speed", rows), Table("chunk_overhead", overhead)], figure,
                            out_settings, findings)


EXPERIMENTS = [Experiment(
    name="sampling-benchmark",
    description=("mechanism runs per second (sleeping, external program, DP-SGD training run) in process, on 2 "
                 "worker processes and on Ray; per-chunk overhead; load average"),
    source="study (issue 18)",
    run=run,
    full_runtime="283 s on a quiet 2-core x86_64 CPU (load average 0.5-1.7); 1,148 s at load 10-14",
)]


if __name__ == "__main__":
    from .registry import run as run_registered

    result = run_registered("sampling-benchmark", quick="--quick" in sys.argv[1:])
    print("\n".join(result.findings))
    print(f"written to {result.out_dir}")
