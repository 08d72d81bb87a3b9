"""A CPU-bound external mechanism for the sampling benchmark (miaudit's text wire format).

Usage: python _busy_program.py MILLISECONDS

For every database it burns MILLISECONDS of its own CPU time (measured with
``time.process_time``, so the work per run is the same on a busy machine), then prints the
database's sum plus Gaussian noise seeded from ``MIAUDIT_SEED``.
"""

import os
import random
import sys
import time


def main(milliseconds: float) -> None:
    header, *lines = sys.stdin.read().splitlines()
    m = int(header.split()[0])
    noise = random.Random(int(os.environ.get("MIAUDIT_SEED", "0")))
    out = []
    for line in lines[:m]:
        started = time.process_time()
        while time.process_time() - started < milliseconds / 1000:
            pass
        out.append(f"{sum(float(t) for t in line.split()) + noise.gauss(0.0, 1.0)!r}")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(float(sys.argv[1]))
