"""Benchmark: how fast ``miaudit`` answers ``--help`` and usage errors (issue 13 §3).

``python -m experiments.cli_startup [--repeats N]`` runs each command line N times in a fresh
interpreter and prints the median wall time, and whether torch, SciPy or matplotlib were
imported (``-X importtime``). Targets on a 2-core CPU, with none of the three loaded: under
0.5 s for ``--help`` and usage errors; under 0.3 s for the light commands (:data:`LIGHT`:
``catalog``, ``demo --help``, ``experiment --list``; issue 31 item 4), each line marked with
whether it met its target and next to ``python -c pass`` (the interpreter's own start, which a
loaded machine slows for every command alike). This is a measurement, not a test: timings
depend on the machine and its load.
It defines no ``EXPERIMENTS``, so ``miaudit experiment`` does not list it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "scipy", "matplotlib")
#: The light commands and their target (seconds); every other command line's target is :data:`HELP_TARGET`.
LIGHT = {"miaudit catalog": ["catalog"], "miaudit demo --help": ["demo", "--help"],
         "miaudit experiment --list": ["experiment", "--list"]}
LIGHT_TARGET, HELP_TARGET = 0.3, 0.5
COMMAND_LINES = {
    "miaudit --help": ["--help"],
    "miaudit (no command)": [],
    "miaudit nonsense (usage error)": ["nonsense"],
    "miaudit audit --help": ["audit", "--help"],
    "miaudit audit --epsilon (usage error)": ["audit", "--epsilon"],
    "miaudit experiment --bogus (usage error)": ["experiment", "--bogus"],
    "miaudit catalog --help": ["catalog", "--help"],
    "miaudit estimate --help": ["estimate", "--help"],
    "miaudit estimate --x (usage error)": ["estimate", "--x"],
    "miaudit calibrate --help": ["calibrate", "--help"],
    "miaudit calibrate laplace (usage error)": ["calibrate", "laplace"],
    "miaudit bounds --help": ["bounds", "--help"],
    "miaudit bounds mipp-to-pp --help": ["bounds", "mipp-to-pp", "--help"],
    "miaudit bounds nonsense (usage error)": ["bounds", "nonsense"],
}


def _run(args: list, importtime: bool, *, bare: bool = False) -> tuple[float, str]:
    command = ([sys.executable, "-c", "pass"] if bare else
               [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "audit.cli.main", *args])
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    return time.perf_counter() - start, done.stderr


def heavy_imports(args: list) -> list:
    """The heavy top-level packages a command line imports, from ``-X importtime``."""
    _, log = _run(args, importtime=True)
    loaded = {line.rsplit("|", 1)[-1].strip() for line in log.splitlines() if line.startswith("import time:")}
    return [name for name in HEAVY if name in loaded]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per command line (default: 7)")
    options = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU cores; median of {options.repeats} runs")
    load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "unknown"
    bare = [_run([], importtime=False, bare=True)[0] for _ in range(options.repeats)]
    print(f"load average (1 min) {load}; python -c pass: median {statistics.median(bare):.3f} s")
    lines = {**LIGHT, **COMMAND_LINES}
    width = max(map(len, lines))
    for label, args in lines.items():
        times = [_run(args, importtime=False)[0] for _ in range(options.repeats)]
        heavy = heavy_imports(args)
        target = LIGHT_TARGET if label in LIGHT else HELP_TARGET
        met = "met" if statistics.median(times) < target and not heavy else "MISSED"
        print(f"{label.ljust(width)}  median {statistics.median(times):.3f} s  (min {min(times):.3f})  "
              f"target {target:g} s {met}  heavy imports: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
