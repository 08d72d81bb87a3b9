"""sequential-audit: the quick run's tables, against what each audit reports."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.framework import read_table
from experiments.registry import run


@pytest.mark.integration
def test_quick_run_tables(tmp_path):
    result = run("sequential-audit", out_dir=tmp_path, quick=True, seed=0, device="cpu")
    rows = read_table(tmp_path / "sequential_runs.csv")
    assert set(rows["mechanism"]) == {"laplace_sum", "histogram", "histogram_buggy", "noisy_max_laplace_value"}
    runs = np.asarray(rows["sequential_runs"], dtype=float)
    assert np.all(runs <= 12000)  # the quick grid's max_runs
    # The buggy histogram (true ε 2 against a claimed 0.5) is refuted in the first round.
    buggy = [i for i, m in enumerate(rows["mechanism"]) if m == "histogram_buggy"]
    assert all(str(rows["sequential_refuted"][i]).lower() == "true" and runs[i] <= 1200 for i in buggy)
    boundary = read_table(tmp_path / "boundary.csv")
    assert int(boundary["audits"][0]) == 20 and 0 <= int(boundary["refuted"][0]) <= 20
    goal = read_table(tmp_path / "targets.csv")
    assert len(goal["result"]) == 4 and set(goal["result"]) <= {"PASS", "FAIL"}
    assert len(result.findings) >= 4
