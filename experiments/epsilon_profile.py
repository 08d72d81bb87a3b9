"""Host and device time of the DP-SGD GPU grid's ε-audit stage (issue 42: ``dpsgd_epsilon``).

``python -m experiments.epsilon_profile [--epsilon E] [--release R] [--runs N] [--device D] [--device-routes]
[--gpu-chunks] [--seed S]`` runs the audits of :func:`experiments.dpsgd_audit.epsilon_rows` of the GPU grid
(:func:`~experiments.dpsgd_audit.gpu_grid`: TorchDPSGD, the default critic, claim = the accountant's (ε, δ),
event test and MI route) at the target ε = E (one of the grid's) for the release R (``gradient_trace``: the
white-box gradient canary; ``loss``: the black-box input canary; ``both``, the default), each exactly as
:func:`~experiments.dpsgd_audit.epsilon_jobs` builds it (same mechanism, pair, claim, statistics and seed) but
with N training runs per database (the grid's 10,000 by default), under
:func:`experiments.stage_profile.host_split`, and prints its table: each stage's seconds, in torch operators
and on the host, the number of torch operators it called, and on a CUDA device the GPU's kernel seconds.
``--device-routes`` (on the CPU) runs the statistics' device code as beside a GPU
(:func:`experiments.stage_profile.device_routes`); ``--gpu-chunks`` trains in the runner's chunks of a CUDA device
(:func:`experiments.stage_profile.gpu_chunks`: 4,096 runs, fewer where a database is wide), so that each chunk's
host work is paid as often as on a GPU. The stage kept an H200 busy 5% of its 11.8 s.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

RELEASES = ("gradient_trace", "loss", "both")


def profile_epsilon(epsilon: float, release: str, runs: int, device: str = "cpu", seed: int = 0,
                    routes: bool = False, chunks: bool = False):
    """(:func:`~experiments.stage_profile.host_split`'s record, whose value is a list of (settings, audit
    result) pairs; wall seconds) of the GPU grid's ε audits at target ``epsilon`` for ``release`` (or both
    releases) with ``runs`` training runs per database on ``device``."""
    from experiments.dpsgd_audit import _audit, epsilon_jobs, gpu_grid
    from experiments.stage_profile import timed_host_split

    from estimators.validation import check_choice

    grid = dataclasses.replace(gpu_grid(), runs=runs)
    check_choice(epsilon, "epsilon", grid.epsilons)
    check_choice(release, "release", RELEASES)
    # The whole grid's jobs, so that each audit's seed is the one epsilon_rows gives it.
    settings, jobs = epsilon_jobs(grid, device, seed)
    chosen = [(row, job) for row, job in zip(settings, jobs)
              if row["target_epsilon"] == epsilon and release in (row["release"], "both")]
    return timed_host_split(lambda: [(row, _audit(*job)) for row, job in chosen], routes, chunks)


def main(argv=None) -> int:
    from estimators.device import resolve_device
    from estimators.validation import check_choice, check_int
    from experiments.stage_profile import add_profile_options, profile_label, stage_table

    parser = argparse.ArgumentParser(prog="python -m experiments.epsilon_profile", description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--release", default="both")
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    add_profile_options(parser)
    args = parser.parse_args(argv)
    from experiments.dpsgd_audit import gpu_grid

    check_choice(args.epsilon, "--epsilon", gpu_grid().epsilons)
    release = check_choice(args.release, "--release", RELEASES)
    runs = check_int(args.runs, "--runs", minimum=400)
    device = str(resolve_device(args.device))
    split, wall = profile_epsilon(args.epsilon, release, runs, device, args.seed, args.device_routes,
                                  args.gpu_chunks)
    print(f"ε audits, target ε = {args.epsilon:g}, {runs} runs per database, device {device}"
          f"{profile_label(args)}: {wall:.1f} s with the profiler; "
          + ", ".join(f"{row['release']} {result.seconds:.1f} s (event ε̲ {_text(result.dp_epsilon_lower_bound_event)}"
                      f", MI ε̲ {_text(result.dp_epsilon_lower_bound_mi)})" for row, result in split.value))
    print(stage_table(split.seconds, split.operators, split.kernels, split.calls))
    return 0


def _text(value) -> str:
    return "none" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    sys.exit(main())
