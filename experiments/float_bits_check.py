"""The float-bit statistics' codes on a torch device against NumPy's, at the DP-SGD GPU grid's size (issue 42 §1).

``python -m experiments.float_bits_check [--device cuda] [--rows N] [--columns D] [--seed S]`` codes the same
outputs (N rows of D float32 parameters read as doubles, as :class:`mechanisms.training.torch_dpsgd.TorchDPSGD`
releases them; by default one input's event runs of the GPU grid's widest release, 10,000 × 8,257) by every family of
:data:`audit.statistics.float_bits.FLOAT_STATISTICS`, each row's smallest code over its columns (the reduced
code a wide release gets), and rounds them to 32 significant bits (the ideal test's rounding), two ways: NumPy
(the CPU route) and the device's (:func:`audit.statistics.float_bits.device_code_rows`,
:func:`audit.statistics.arithmetic.device_round_significand`; a first untimed call takes CUDA's start out of the
numbers). Prints one JSON object: each family's seconds both ways and whether the results are equal (the
rounded doubles bit for bit).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def time_codes(device: str, rows: int, columns: int, seed: int) -> dict:
    import torch

    from audit.statistics.arithmetic import device_round_significand, round_significand
    from audit.statistics.float_bits import FLOAT_STATISTICS, device_code_rows, power_of_two_shift

    rng = np.random.default_rng(seed)
    outputs = rng.standard_normal((rows, columns)).astype(np.float32).astype(np.float64)
    shift = power_of_two_shift(outputs[: rows // 2], outputs[rows // 2:])
    device_code_rows("grid exponent", outputs[:64], None, True, torch.device(device))  # warm-up
    out = {"device": device, "rows": rows, "columns": columns, "seed": seed, "families": {}}
    routes = {name: (lambda kind=kind: kind._code_rows(outputs, shift, True),
                     lambda kind=kind: device_code_rows(kind.code, outputs, shift, True, torch.device(device)))
              for kind, name, _, _ in FLOAT_STATISTICS}
    routes["ideal rounding"] = (lambda: round_significand(outputs).view(np.int64),
                                lambda: device_round_significand(outputs, 32, torch.device(device)).view(np.int64))
    for name, (numpy_route, device_route) in routes.items():
        started = time.perf_counter()
        on_cpu = numpy_route()
        numpy_seconds = time.perf_counter() - started
        started = time.perf_counter()
        on_device = device_route()
        device_seconds = time.perf_counter() - started
        out["families"][name] = {"numpy_seconds": numpy_seconds, "device_seconds": device_seconds,
                                 "equal": bool(np.array_equal(on_cpu, on_device))}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.float_bits_check", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--columns", type=int, default=8257)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(time_codes(args.device, args.rows, args.columns, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
