"""The experiments framework, registry and ``miaudit experiment`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from audit.cli.main import main
from estimators.validation import InputError
from experiments.framework import Table, read_table, write_atomic

REPRODUCTIONS = {"pufferfish-fig3a", "pufferfish-fig3b", "lip-fig5", "pml-fig1", "pml-minimax", "mean-estimation"}



def test_list_json_names_every_reproduction(capsys):
    assert main(["experiment", "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["experiments"]
    names = {row["name"] for row in listed}
    assert REPRODUCTIONS <= names
    for row in listed:
        assert row["description"] and row["source"]
        assert set(row) >= {"name", "description", "source"}


@pytest.mark.integration
def test_run_through_cli_writes_csv_png_and_summary(tmp_path, capsys):
    out = tmp_path / "fig3a"
    assert main(["experiment", "pufferfish-fig3a", "--quick", "--out", str(out), "--seed", "3", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["name"] == "pufferfish-fig3a" and payload["quick"] is True and payload["seed"] == 3
    assert payload["seconds"] > 0 and "CPU" in payload["device"]
    png = out / "pufferfish-fig3a.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (out / "summary.md").read_text()
    for needle in ("# pufferfish-fig3a", "quick", "seed: 3", "wall time", "## What it shows", "noise_variance.csv"):
        assert needle in summary
    assert payload["files"]["csv"] == [str(out / "noise_variance.csv")]
    table = read_table(out / "noise_variance.csv")
    assert np.all(np.isfinite(table["gaussian_total_variance"]))
    # No temporary files are left behind by the atomic writes.
    assert sorted(p.name for p in out.iterdir()) == ["noise_variance.csv", "pufferfish-fig3a.png", "summary.md"]


def test_unknown_name_and_conflicting_flags_exit_2(capsys):
    assert main(["experiment", "no-such-figure", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "'name'" in err and "pufferfish-fig3a" in err
    assert main(["experiment", "pufferfish-fig3a", "--list"]) == 2
    assert main(["experiment"]) == 2


def test_out_must_be_a_directory(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["experiment", "pufferfish-fig3a", "--quick", "--out", str(blocker)]) == 2
    assert "'--out'" in capsys.readouterr().err


def test_table_rejects_ragged_columns_and_round_trips(tmp_path):
    with pytest.raises(InputError, match="different lengths"):
        Table("t", {"a": [1.0, 2.0], "b": [1.0]})
    table = Table("t", {"x": [0.1, 1e-300, 3.0], "ok": [True, False, True], "label": ["a", "b", "c"]})
    path = tmp_path / "t.csv"
    path.write_text(table.to_csv())
    back = read_table(path)
    assert back["x"].tolist() == [0.1, 1e-300, 3.0]  # repr keeps full precision
    assert back["ok"].tolist() == [True, False, True]
    assert back["label"].tolist() == ["a", "b", "c"]


def test_write_atomic_keeps_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("old")

    def failing(handle):
        handle.write(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomic(path, failing)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.csv"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_experiment_files_never_replace_a_fifo(tmp_path):
    fifo = tmp_path / "summary.md"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="argument '--out': .*FIFO"):
        write_atomic(fifo, lambda handle: handle.write(b"text"))
    assert fifo.is_fifo()


@pytest.mark.integration
def test_library_code_does_not_import_experiments():
    code = ("import sys, audit.cli.main as m; m.build_parser(); "
            "print(any(name == 'experiments' or name.startswith('experiments.') for name in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
