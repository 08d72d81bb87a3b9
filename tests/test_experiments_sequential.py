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
    # The buggy histogram (true ε 2 against a claimed 0.5) is refuted at the first look, after the float-bit probe's
    # 64 runs (its counts show no fine bits in the runner's probe).
    buggy = [i for i, m in enumerate(rows["mechanism"]) if m == "histogram_buggy"]
    assert all(str(rows["sequential_refuted"][i]).lower() == "true" and runs[i] <= 1200 + 64 for i in buggy)
    boundary = read_table(tmp_path / "boundary.csv")
    assert int(boundary["audits"][0]) == 20 and 0 <= int(boundary["refuted"][0]) <= 20
    goal = read_table(tmp_path / "targets.csv")
    assert len(goal["result"]) == 5 and set(goal["result"]) <= {"PASS", "FAIL", "-"}
    # The noise-floor row is the control audits' median bound over the fixed audits', per correct entry.
    summary = read_table(tmp_path / "sequential.csv")
    for i, buggy in enumerate(summary["buggy"]):
        fixed = np.median([float(e) for m, e in zip(rows["mechanism"], rows["fixed_epsilon"])
                           if m == summary["mechanism"][i]])
        control = np.median([float(e) for m, e in zip(rows["mechanism"], rows["control_epsilon"])
                             if m == summary["mechanism"][i]])
        if fixed > 0:
            assert float(summary["control_ratio"][i]) == pytest.approx(control / fixed)
    plans = read_table(tmp_path / "plans.csv")
    for predicted, needed, agrees in zip(plans["predicted_runs"], plans["needed_runs"], plans["agrees"]):
        if predicted not in ("", None) and needed not in ("", None):
            assert (str(agrees).lower() == "true") == (0.5 <= float(predicted) / float(needed) <= 2)
    assert len(result.findings) >= 4
