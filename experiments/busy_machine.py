"""Benchmark: an audit that trains neural critics, on a quiet machine and with one core held (issue 30 item 4).

``python -m experiments.busy_machine [--samples N] [--repeats R]`` runs the SMI-DP example of
docs/how-to/mi-notions.md (``counts.py:noisy_count``, 32 slices: neural critics) in a fresh
interpreter, four ways: with and without a busy process that holds one core (a Python loop,
started by the benchmark), and with miaudit's thread choice (torch's intra-op threads cut to
the cores other processes leave idle: :func:`estimators.device.free_cores`) or with every core
(``OMP_NUM_THREADS`` = the core count: torch's default, the behaviour before). It prints the
wall times, the busy/quiet ratio of each way, and the machine's load average before each run.
Target: miaudit's choice within 1.5× of its quiet time while a core is held.

This is a measurement, not a test: on a machine that other users load, "quiet" is only as quiet
as they leave it, and the printed load averages say how quiet it was.
It defines no ``EXPERIMENTS``, so ``miaudit experiment`` does not list it.
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

ROOT = Path(__file__).resolve().parents[1]

MECHANISM = '''def noisy_count(dbs, rng):          # dbs: (m, n, k) batch of databases
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 0.05, (dbs.shape[0], 1))
'''

#: The busy process: a Python loop that holds one core until it is ended, or its parent (the benchmark) is.
SPINNER = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"


def _audit_seconds(folder: str, samples: int, all_cores: bool) -> float:
    env = {key: value for key, value in os.environ.items() if key != "OMP_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    if all_cores:
        env["OMP_NUM_THREADS"] = str(len(os.sched_getaffinity(0)))
    command = [sys.executable, "-m", "audit.cli.main", "audit", "--mechanism", "counts.py:noisy_count",
               "--prior", "builtin:bernoulli", "--n", "4", "--k", "1", "--p", "0.5", "--notion", "smi-dp",
               "--epsilon", "0.05", "--samples", str(samples), "--slices", "32", "--claim", "dp:1", "--quiet"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"the audit failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return seconds


def _load() -> str:
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "unknown"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20000, help="--samples of the audit (default: 20000, the guide's)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each way (default: 1; the median is printed)")
    options = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0))
    print(f"python {sys.version.split()[0]}, {cores} CPU cores; SMI-DP example at --samples {options.samples}; "
          f"median of {options.repeats} run(s)")
    times = {}
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "counts.py").write_text(MECHANISM)
        for busy in (False, True):
            spinner = subprocess.Popen([sys.executable, "-c", SPINNER]) if busy else None
            try:
                if busy:
                    time.sleep(1.0)  # let it take its core
                for all_cores in (False, True):
                    runs = []
                    for _ in range(options.repeats):
                        load = _load()
                        runs.append(_audit_seconds(folder, options.samples, all_cores))
                        way = "every core (before)" if all_cores else "miaudit's choice"
                        print(f"  {'one core held' if busy else 'quiet':13s}  {way:20s}  {runs[-1]:7.1f} s  "
                              f"(load average before: {load})", flush=True)
                    times[busy, all_cores] = statistics.median(runs)
            finally:
                if spinner is not None:
                    spinner.kill()
                    spinner.wait()
    for all_cores, way in ((False, "miaudit's choice"), (True, "every core (before)")):
        ratio = times[True, all_cores] / times[False, all_cores]
        verdict = ("target 1.5x met" if ratio <= 1.5 else "target 1.5x MISSED") if not all_cores else "reference"
        print(f"{way:20s}: busy {times[True, all_cores]:.1f} s / quiet {times[False, all_cores]:.1f} s = "
              f"{ratio:.2f}x  ({verdict})")


if __name__ == "__main__":
    main()
