"""Where an experiment's time goes, by stage: a sampling profile of the main thread's stack.

Every ``interval`` seconds a background thread reads the main thread's stack
(:func:`sys._current_frames`) and charges the interval to the stage of the innermost frame whose module
belongs to one (:data:`STAGES`, first match from the innermost frame outwards): time inside NumPy, SciPy
or torch is charged to the miaudit code that called it. ``python -m experiments.stage_profile NAME
[--quick | --grid G] [--device D] [--seed S] [--out DIR] [--page FILE.md]`` runs ``miaudit experiment NAME`` that way and prints the table
(issue 42: the profile of the DP-SGD grid's CPU part).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

#: (stage, module prefixes), matched from the innermost frame outwards.
STAGES = (
    ("mechanism runs (DP-SGD training)", ("mechanisms.training", "mechanisms.catalog")),
    ("MI critics (neural)", ("estimators.neural", "estimators.critics", "estimators.critic_problems",
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


def profile_by_stage(run, *, interval: float = 0.01) -> tuple[object, dict]:
    """(``run()``'s value, seconds by stage) with the main thread's stack sampled every ``interval`` s."""
    main = threading.main_thread().ident
    seconds: dict = {}
    done = threading.Event()

    def sample():
        last = time.perf_counter()
        while not done.wait(interval):
            now = time.perf_counter()
            frame = sys._current_frames().get(main)
            modules = []
            while frame is not None:
                modules.append(frame.f_globals.get("__name__", ""))
                frame = frame.f_back
            stage = stage_of(modules)
            seconds[stage] = seconds.get(stage, 0.0) + (now - last)
            last = now

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        value = run()
    finally:
        done.set()
        sampler.join()
    return value, seconds


def stage_table(seconds: dict) -> str:
    """Markdown table of seconds by stage and their shares, largest first."""
    total = sum(seconds.values()) or 1.0
    lines = ["| stage | seconds | share |", "| --- | --- | --- |"]
    lines += [f"| {stage} | {value:.1f} | {value / total:.0%} |"
              for stage, value in sorted(seconds.items(), key=lambda item: -item[1])]
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
    args = parser.parse_args(argv)
    experiment = get_experiment(args.name)
    _, seconds = profile_by_stage(lambda: run_experiment(experiment, out_dir=args.out, quick=args.quick,
                                                         seed=args.seed, device=args.device, grid=args.grid,
                                                         page=args.page))
    print(stage_table(seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
