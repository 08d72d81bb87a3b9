"""Type-I error of the early-stopping scan: entry points exactly at their claims, scanned many times.

``planted_lib._exact`` holds randomized response and a geometric count, each exactly ε-DP with the
bound met with equality on the scanned pair (tests/test_scan.py enumerates such laws). A scan at α
must report a finding in at most a fraction α of scans; at α = 0.3 the number of scans with a finding
out of N is at most Binomial(N, 0.3), whose upper tail beyond the bound used here has probability below
1e-3 (computed with SciPy's binomial survival function in the test).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from scipy.stats import binom

from audit.scan.running import scan

TESTS = Path(__file__).resolve().parent
ALPHA = 0.3
#: Seconds of scans, as many as fit (each of 2 cases at ε = 1): 44 scans in 75 s on the shared 2-core CPU at load
#: 13, 6 of them with a finding at α = 0.3 (Bonferroni and the looks' α-spending are conservative).
BUDGET_S = 60.0


@pytest.mark.slow
def test_the_early_stopping_scan_keeps_its_family_wise_alpha():
    sys.path.insert(0, str(TESTS))
    try:
        started, scans, false = time.perf_counter(), 0, 0
        while time.perf_counter() - started < BUDGET_S or scans < 20:
            result = scan("planted_lib._exact", epsilons=(1.0,), alpha=ALPHA, max_runs=3000, timeout=30, seed=scans,
                          in_process=True)
            assert result.cases == 2 and not result.skipped_cases
            false += bool(result.findings)
            scans += 1
    finally:
        sys.path.remove(str(TESTS))
    bound = int(binom.isf(1e-3, scans, ALPHA)) + 1  # P(X >= bound) < 1e-3 under Binomial(scans, α)
    print(f"{false} of {scans} scans at α = {ALPHA} had a finding (bound {bound})")
    assert false < bound
