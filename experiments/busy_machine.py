"""Benchmark ``busy-machine``: an audit that trains neural critics, quiet and with one core held (issue 30 item 4).

``miaudit experiment busy-machine`` (or ``python -m experiments.busy_machine [--samples N]
[--repeats R]``, which prints the rows as they are measured) runs the SMI-DP example of
docs/how-to/mi-notions.md (``counts.py:noisy_count``, 32 slices: neural critics) in a fresh
interpreter, four ways: with and without a busy process that holds one core (a Python loop,
started by the benchmark), and with miaudit's thread choice (torch's intra-op threads cut to
the cores other processes leave idle: :func:`estimators.device.free_cores`) or with every core
(``OMP_NUM_THREADS`` = the core count: torch's default). It reports the wall times, the
busy/quiet ratio of each way, and the machine's 1-minute load average before each run.
Target: miaudit's choice within 1.5× of its quiet time while a core is held.

This is a measurement, not a test: on a machine that other users load, "quiet" is only as quiet
as they leave it, and the load averages say how quiet it was.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .framework import Experiment, ExperimentOutput, Table, new_figure

ROOT = Path(__file__).resolve().parents[1]

#: ``--samples`` of the audit: the guide's, and ``--quick``'s.
SAMPLES, QUICK_SAMPLES = 20000, 2000
#: The busy/quiet ratio miaudit's thread choice should stay within.
TARGET_RATIO = 1.5

MECHANISM = '''def noisy_count(dbs, rng):          # dbs: (m, n, k) batch of databases
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 0.05, (dbs.shape[0], 1))
'''

#: The busy process: a Python loop that holds one core until it is ended, or its parent (the benchmark) is.
SPINNER = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"

#: The two thread choices, by whether every core is used.
WAYS = {False: "miaudit's choice", True: "every core (torch's default)"}
STATES = {False: "quiet", True: "one core held"}


def _audit_seconds(folder: str, samples: int, all_cores: bool, seed: int, device: str) -> float:
    env = {key: value for key, value in os.environ.items() if key != "OMP_NUM_THREADS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if all_cores:
        env["OMP_NUM_THREADS"] = str(len(os.sched_getaffinity(0)))
    command = [sys.executable, "-m", "audit.cli.main", "audit", "--mechanism", "counts.py:noisy_count",
               "--prior", "builtin:bernoulli", "--n", "4", "--k", "1", "--p", "0.5", "--notion", "smi-dp",
               "--epsilon", "0.05", "--samples", str(samples), "--slices", "32", "--claim", "dp:1",
               "--seed", str(seed), "--device", device, "--quiet"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"the audit failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return seconds


def _load() -> float:
    try:
        with open("/proc/loadavg") as handle:
            return float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def measure(samples: int, repeats: int, *, seed: int = 0, device: str = "cpu", show=None) -> list:
    """One row per (machine state, thread choice): the median wall time of ``repeats`` audits.

    ``show(row)`` is called with each single run as it finishes (the module's command prints them).
    """
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "counts.py").write_text(MECHANISM)
        for busy in (False, True):
            spinner = subprocess.Popen([sys.executable, "-c", SPINNER]) if busy else None
            try:
                if busy:
                    time.sleep(1.0)  # let it take its core
                for all_cores in (False, True):
                    runs, loads = [], []
                    for _ in range(repeats):
                        loads.append(_load())
                        runs.append(_audit_seconds(folder, samples, all_cores, seed, device))
                        if show is not None:
                            show({"machine": STATES[busy], "threads": WAYS[all_cores], "seconds": runs[-1],
                                  "load average before": loads[-1]})
                    rows.append({"machine": STATES[busy], "threads": WAYS[all_cores],
                                 "seconds": statistics.median(runs), "runs": repeats,
                                 "load average before": max(loads)})
            finally:
                if spinner is not None:
                    spinner.kill()
                    spinner.wait()
    return rows


def ratios(rows) -> dict:
    """Thread choice → busy seconds / quiet seconds."""
    seconds = {(row["machine"], row["threads"]): row["seconds"] for row in rows}
    return {way: seconds[STATES[True], way] / seconds[STATES[False], way] for way in WAYS.values()}


def _findings(rows) -> list:
    seconds = {(row["machine"], row["threads"]): row["seconds"] for row in rows}
    by_way, found = ratios(rows), []
    for all_cores, way in WAYS.items():
        ratio = by_way[way]
        verdict = (f"target ≤ {TARGET_RATIO}×: {'PASS' if ratio <= TARGET_RATIO else 'FAIL'}" if not all_cores
                   else "reference")
        found.append(f"{way}: {seconds[STATES[True], way]:.1f} s with one core held, "
                     f"{seconds[STATES[False], way]:.1f} s quiet: {ratio:.2f}× ({verdict}).")
    loads = [row["load average before"] for row in rows]
    found.append(f"The 1-minute load average before the runs was {min(loads):.2f} to {max(loads):.2f} "
                 f"on {len(os.sched_getaffinity(0))} cores (other users' load makes \"quiet\" less quiet).")
    return found


def run(context) -> ExperimentOutput:
    samples = QUICK_SAMPLES if context.quick else SAMPLES
    device = "cuda" if (context.device or "cpu").startswith("cuda") else "cpu"  # the audit's --device choices
    rows = measure(samples, 1, seed=context.seed, device=device)
    table = Table("busy_machine", {key: [row[key] for row in rows] for key in rows[0]})
    figure, axes = new_figure()
    ax = axes[0, 0]
    for index, way in enumerate(WAYS.values()):
        ax.bar([position + 0.4 * index for position in (0, 1)],
               [row["seconds"] for state in STATES.values() for row in rows
                if row["machine"] == state and row["threads"] == way], width=0.4, label=way, color=f"C{index}")
    ax.set_xticks([0.2, 1.2], list(STATES.values()))
    ax.set_ylabel("audit wall time (s)")
    ax.set_title(f"SMI-DP audit, --samples {samples}, 32 slices")
    ax.legend(fontsize=8)
    settings = {"audit": "the SMI-DP example of docs/how-to/mi-notions.md, in a fresh interpreter",
                "samples": samples, "slices": 32, "runs of each way": 1,
                "busy process": "a Python loop holding one core",
                "cores": len(os.sched_getaffinity(0))}
    return ExperimentOutput([table], figure, settings, _findings(rows))


EXPERIMENTS = [Experiment(
    name="busy-machine",
    description="wall time of an audit that trains critics, quiet and with one core held, with miaudit's thread "
                "choice and with every core",
    source="benchmark (issue 30 item 4)",
    run=run,
    trains=True,
    full_runtime="about 94 s on a 2-core x86_64 CPU (load average about 1): four audits in fresh "
                 "interpreters, 16-17 s each quiet and up to 43 s with a core held, device cpu",
)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=SAMPLES,
                        help=f"--samples of the audit (default: {SAMPLES}, the guide's)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each way (default: 1; the median is reported)")
    options = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {len(os.sched_getaffinity(0))} CPU cores; SMI-DP example at "
          f"--samples {options.samples}; median of {options.repeats} run(s)")

    def show(row):
        print(f"  {row['machine']:13s}  {row['threads']:28s}  {row['seconds']:7.1f} s  "
              f"(load average before: {row['load average before']:.2f})", flush=True)

    rows = measure(options.samples, options.repeats, show=show)
    for finding in _findings(rows):
        print(finding)


if __name__ == "__main__":
    main()
