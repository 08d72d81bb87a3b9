"""An entry point that never returns (scanned alone: ``planted_lib._hanging``): costs one skipped case."""

import time


def stuck_count(array, epsilon=1.0):
    while True:
        time.sleep(0.05)
