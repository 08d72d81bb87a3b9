"""Benchmark pages are written by the command that ran: ``miaudit experiment NAME --page FILE.md``."""

import datetime

import pytest

from audit.cli.main import main
from experiments.docs_page import benchmark_page, markdown_table
from experiments.framework import Table, read_table


def test_markdown_table_rows_and_truncation():
    table = markdown_table({"entry": ["a", "b|c", "d"], "value": [0.123456, float("inf"), 2]}, max_rows=2)
    assert table == ("| entry | value |\n| --- | --- |\n| a | 0.1235 |\n| b\\|c | — |\n"
                     "\n(1 more rows in the CSV file.)\n")


def test_page_keeps_the_title_and_says_who_wrote_it():
    page = benchmark_page("# bench\n\nWhat it does.\n", [Table("t", {"x": [1]})], "miaudit experiment bench --page p.md")
    assert page.splitlines()[:3] == ["# bench", "", "*This page was written by `miaudit experiment bench --page p.md`; "
                                                    "do not edit it by hand: run the command again.*"]
    assert "### t\n\n| x |\n| --- |\n| 1 |\n" in page


@pytest.mark.integration
def test_experiment_writes_its_page(tmp_path, capsys):
    page = tmp_path / "fig3a.md"
    out = tmp_path / "out"
    assert main(["experiment", "pufferfish-fig3a", "--quick", "--out", str(out), "--page", str(page), "--quiet"]) == 0
    text = page.read_text()
    assert text.startswith("# pufferfish-fig3a\n")
    assert f"`miaudit experiment pufferfish-fig3a --quick --seed 0 --page {page}`" in text
    assert "- device: " in text and "- miaudit version: " in text
    assert f"- finished: {datetime.date.today().isoformat()}" in text
    for csv in out.glob("*.csv"):  # every table, with the CSV's columns as its header
        columns = list(read_table(csv))
        assert f"### {csv.stem}\n\n| {' | '.join(columns)} |" in text
    assert str(page) in capsys.readouterr().out


def test_page_must_be_markdown(tmp_path, capsys):
    assert main(["experiment", "pufferfish-fig3a", "--page", str(tmp_path / "x.html")]) == 2
    assert "--page" in capsys.readouterr().err


def test_a_training_experiment_records_its_device_in_the_command():
    from experiments.framework import Experiment, RunContext, _command

    trains = Experiment(name="x", description="", source="", run=None, trains=True, full_runtime="")
    plain = Experiment(name="y", description="", source="", run=None, trains=False, full_runtime="")
    assert _command(trains, RunContext(quick=False, seed=3, device="cuda:0")) == "miaudit experiment x --seed 3 --device cuda"
    assert _command(trains, RunContext(quick=True, seed=0, device="cpu")) == "miaudit experiment x --quick --seed 0 --device cpu"
    assert _command(plain, RunContext(quick=False, seed=1)) == "miaudit experiment y --seed 1"


def _run_time_line(quick: bool, grid=None, grids=()):
    """The page's "full (non-quick) run time" line for a run of 123.456 s at load 0.5 then 2.25."""
    from experiments.framework import Experiment, ExperimentOutput, RunContext, _summary

    experiment = Experiment(name="x", description="", source="", run=None, full_runtime="DOCUMENTED", grids=grids)
    summary = _summary(experiment, ExperimentOutput([], None, {}, []), RunContext(quick=quick, seed=0, grid=grid),
                       123.456, "cpu — a machine", [], (0.5, 2.25))
    return next(line for line in summary.splitlines() if line.startswith("- full (non-quick) run time: "))


def test_a_full_runs_page_states_its_own_run_time_and_a_quick_runs_the_documented_one():
    import os

    cores = os.cpu_count()
    measured = f"123.46 s, this run (load average 0.50 at the start, 2.25 at the end, on {cores} cores; cpu — a machine)"
    assert _run_time_line(quick=False) == f"- full (non-quick) run time: {measured}"
    assert _run_time_line(quick=True) == "- full (non-quick) run time: DOCUMENTED"
    # a named size is full at that size; the documented text covers the experiment's other sizes
    assert _run_time_line(quick=False, grid="gpu", grids=("cpu", "gpu")) == (
        f"- full (non-quick) run time: 123.46 s, this run, grid `gpu` (load average 0.50 at the start, 2.25 at the "
        f"end, on {cores} cores; cpu — a machine); documented for its sizes: DOCUMENTED")
