"""Host and device time of the DP-SGD GPU grid's parameter-release stage (issue 42 §1).

``python -m experiments.dimension_profile [--features P] [--runs N] [--device D] [--device-routes] [--gpu-chunks]
[--seed S]`` runs :func:`experiments.dpsgd_audit.dimension_rows` of the GPU grid
(:func:`~experiments.dpsgd_audit.gpu_grid`: a 32-unit MLP trained by TorchDPSGD, the default critic) at one feature
count P (d = 32·P + 65; 256 gives the grid's widest release, d = 8,257) and N training runs per audit, under
:func:`experiments.stage_profile.host_split`, and prints its table: each stage's seconds, in torch operators
and on the host, the number of torch operators it called, and on a CUDA device the GPU's kernel seconds.
``--device-routes`` (on the CPU) runs the statistics' device code as beside a GPU
(:func:`experiments.stage_profile.device_routes`); ``--gpu-chunks`` trains in the runner's chunks of a CUDA device
(:func:`experiments.stage_profile.gpu_chunks`: 4,096 runs, fewer where a database is wide), so that each chunk's
host work is paid as often as on a GPU. The stage that took 26 s of the GPU grid's 51 s on an H200
with four workers (59.5 s of 94 s in one process), profiled at a size the 2-core CPU finishes in minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys


def profile_dimension(features: int, runs: int, device: str = "cpu", seed: int = 0, routes: bool = False,
                      chunks: bool = False):
    """(:func:`~experiments.stage_profile.host_split`'s record, whose value is the stage's rows; wall seconds)
    of the GPU grid's parameter-release audits at ``features`` and ``runs`` on ``device``."""
    from experiments.dpsgd_audit import dimension_rows, gpu_grid
    from experiments.stage_profile import timed_host_split

    grid = dataclasses.replace(gpu_grid(), dims=(features,), runs=runs)
    return timed_host_split(lambda: dimension_rows(grid, device, seed), routes, chunks)


def main(argv=None) -> int:
    from estimators.device import resolve_device
    from estimators.validation import check_int
    from experiments.stage_profile import add_profile_options, profile_label, stage_table

    parser = argparse.ArgumentParser(prog="python -m experiments.dimension_profile", description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    add_profile_options(parser)
    args = parser.parse_args(argv)
    features = check_int(args.features, "--features", minimum=2)
    runs = check_int(args.runs, "--runs", minimum=400)
    device = str(resolve_device(args.device))
    split, wall = profile_dimension(features, runs, device, args.seed, args.device_routes, args.gpu_chunks)
    rows = split.value
    print(f"parameter release, d = {rows['parameters_d'][0]}, {runs} runs per audit, device {device}"
          f"{profile_label(args)}: {wall:.1f} s with the profiler; audits "
          + ", ".join(f"{notion} {s:.1f} s" for notion, s in zip(rows["notion"], rows["seconds"])))
    print(stage_table(split.seconds, split.operators, split.kernels, split.calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
