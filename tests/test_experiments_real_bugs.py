"""``miaudit experiment real-bugs --quick``: the cases whose library is installed here, each audited by its command
in a fresh interpreter (experiments/real_bugs.py)."""

from __future__ import annotations

import json

import pytest

from experiments.real_bugs import CASES
from experiments.registry import run


@pytest.mark.integration
def test_quick_run_refutes_the_float_bugs_and_not_the_correct_configurations(tmp_path):
    pytest.importorskip("diffprivlib")
    pytest.importorskip("opendp")
    result = run("real-bugs", out_dir=tmp_path, quick=True, seed=0)
    payload = json.loads((tmp_path / "real_bugs.json").read_text())
    rows = {row["case"]: row for row in payload["cases"]}
    # The installed cases ran (numpy's, diffprivlib 0.6.6's and OpenDP 0.16.0's); pure-ldp and diffprivlib's
    # LogisticRegression (scikit-learn < 1.6) need an install.
    assert "pure-ldp OUE" not in rows and "diffprivlib LogisticRegression" not in rows
    assert "textbook float Laplace" in rows and "OpenDP Laplace threshold" in rows
    # OpenDP #2922: the certified δ at the claim's ε exceeds the map's 0.00493.
    assert rows["OpenDP Laplace threshold"]["certified_delta"] > 0.004925833956035741
    for row in rows.values():
        assert row["verdict"] == row["expected"], row
    # Mironov (2012) at DP-Sniper's claimed ε = 0.1: certified at least 10 × DP-Sniper's 0.252.
    assert rows["textbook float Laplace"]["certified_epsilon"] >= 2.5
    page = (tmp_path / "real-bugs.md").read_text()
    assert "| # | library | version | bug | library issue | runs | seconds | claim | certified bound | verdict |" in page
    assert "| command |" not in page and "\n1. `miaudit audit --mechanism " in page  # commands below the table
    assert "--quick installs nothing" in page and result.csv_files


def test_every_case_states_its_command_and_expectation():
    for case in CASES:
        assert case.command.startswith("miaudit audit --mechanism ") and case.expected in ("refuted", "not-refuted")
        assert f"def {case.mechanism}" in case.source or f"{case.mechanism} =" in case.source


def test_page_lists_the_commands_below_the_table():
    from experiments.real_bugs import TABLE_HEAD, _markdown

    row = {"library": "numpy", "version": "2.4.6", "bug": "float Laplace", "library_issue": "Mironov 2012",
           "command": "miaudit audit --mechanism m.py:f --pair zero.npy,one.npy", "runs": 100, "seconds": 1.5,
           "claim": "0.1-DP", "certified_epsilon": 6.09, "certified_delta": None, "verdict": "refuted",
           "expected": "refuted"}
    lines = _markdown([row, {**row, "verdict": "not-refuted"}], [], "a machine", quick=False).splitlines()
    head = lines.index(TABLE_HEAD[0])
    assert lines[head + 2] == "| 1 | numpy | 2.4.6 | float Laplace | Mironov 2012 | 100 | 1.5 | 0.1-DP | ε ≥ 6.09 | refuted |"
    assert lines[head + 3].endswith("| not-refuted (expected refuted) |")
    assert all("`miaudit" not in line for line in lines[head:head + 4])
    assert lines[-2:] == ["1. `miaudit audit --mechanism m.py:f --pair zero.npy,one.npy`",
                          "2. `miaudit audit --mechanism m.py:f --pair zero.npy,one.npy`"]
