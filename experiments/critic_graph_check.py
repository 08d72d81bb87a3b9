"""The CUDA-graph critic fit against the eager one, for one seed (issue 42 §3).

``python -m experiments.critic_graph_check [--device cuda] [--critics M] [--samples N] [--seed S]`` fits the
same critics on the same data three ways: on the CPU, on the device eagerly (``MIAUDIT_CUDA_GRAPHS`` off,
:data:`estimators.device.CUDA_GRAPHS`) and on the device through the captured step, and prints one JSON
object: each fit's estimates, standard errors, steps and seconds (a first untimed fit on the device takes
CUDA's start and the libraries' warm-up out of the numbers), and the largest difference between the graph's
and the eager estimates in units of the eager standard error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def fit_three_ways(device: str, critics: int, samples: int, seed: int, max_steps: int) -> dict:
    from estimators import device as device_settings
    from estimators import neural
    from estimators.neural import CriticConfig, fit_critics

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((critics, samples, 1))
    y = 0.8 * x + 0.6 * rng.standard_normal((critics, samples, 1))
    config = CriticConfig(max_steps=max_steps)
    fit_critics(x[:, :2000], y[:, :2000], config=CriticConfig(max_steps=100), seed=seed, device=device)  # warm-up
    out = {"device": device, "critics": critics, "samples": samples, "seed": seed, "max_steps": max_steps,
           "truth": -0.5 * np.log(1 - 0.8**2)}
    saved = device_settings.CUDA_GRAPHS
    try:
        for name, on, graphs in (("cpu", "cpu", False), ("eager", device, False), ("graph", device, True)):
            device_settings.CUDA_GRAPHS = graphs
            started = time.perf_counter()
            fit = fit_critics(x, y, config=config, seed=seed, device=on)
            seconds = time.perf_counter() - started
            out[name] = {"estimates": fit.estimates.tolist(), "stderr": fit.stderr.tolist(), "steps": fit.steps,
                         "seconds": seconds, "steps_per_second": fit.steps / seconds,
                         "graph_used": graphs and neural.use_cuda_graph(neural.resolve_device(on), "dv", None, critics,
                                                                       config.batch_size, config.hidden)}
    finally:
        device_settings.CUDA_GRAPHS = saved
    eager, graph = np.array(out["eager"]["estimates"]), np.array(out["graph"]["estimates"])
    out["max_graph_minus_eager_in_stderr"] = float(np.max(np.abs(graph - eager) / np.array(out["eager"]["stderr"])))
    out["max_graph_minus_eager"] = float(np.max(np.abs(graph - eager)))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.critic_graph_check", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--critics", type=int, default=1)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--max-steps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(fit_three_ways(args.device, args.critics, args.samples, args.seed, args.max_steps), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
