"""``miaudit audit --max-runs/--time-limit`` (sequential audits) and ``--plan``, and the up-front
message that a claim cannot be refuted at the budget."""

import json

import pytest

from audit.cli.main import main

import separated_bounds as separated


def _run(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_sequential_flags_stop_early_on_a_buggy_entry_and_gate(capsys):
    code, out, _ = _run(capsys, ["audit", "--mechanism", "catalog:histogram_buggy", "--max-runs", "60000",
                                 "--fail-on-violation", "--json"])
    assert code == 1
    payload = json.loads(out)
    sequential = payload["sequential"]
    assert payload["claim_verdict"] == "refuted" and sequential["stopped"] == "refuted"
    # The runs: the looks' and the float-bit probe's (histogram counts show no fine bits in the runner's probe).
    assert sequential["runs"] == sequential["probe_runs"] + sum(r["runs"] for r in sequential["looks"]) < 60000 / 5
    assert sequential["looks_run"] < sequential["looks_planned"]
    assert sum(r["alpha"] for r in sequential["schedule"]) == pytest.approx(payload["alpha"])


def test_sequential_text_says_looks_runs_and_why_it_stopped(capsys):
    code, out, _ = _run(capsys, ["audit", "--mechanism", "catalog:laplace_sum", "--max-runs", "6000", "--seed", "1",
                                 "--quiet"])
    assert code == 0
    assert "Sequential audit:" in out and "stopped because the looks were done" in out


def test_time_limit_needs_max_runs(capsys):
    code, _, err = _run(capsys, ["audit", "--mechanism", "catalog:laplace_sum", "--time-limit", "5"])
    assert code == 2 and "--max-runs" in err


def test_unrefutable_claim_is_said_before_the_runs(capsys):
    # 1000 runs per input certify at most ε = 6.06 (the odds ratio at all hits against none; tests/separated_bounds.py):
    # 7-DP is out of reach, 6-DP is not.
    assert separated.odds_epsilon(1000, 0.05) < 7 and separated.rate_epsilon(1000, 0.05) < 7
    assert max(separated.cp_epsilon(1000, 0.05, s) for s in separated.SHARES) < 7
    code, _, err = _run(capsys, ["audit", "--mechanism", "catalog:laplace_sum", "--claim", "dp:7", "--samples", "1000",
                                 "--quiet"])
    assert code == 0
    assert "before running:" in err and "cannot refute the claim 7-DP" in err
    assert "No test of this audit can refute" in err


def test_plan_names_the_tests_and_their_runs(capsys):
    code, out, _ = _run(capsys, ["audit", "--mechanism", "catalog:svt4", "--plan", "--json"])
    assert code == 0
    plan = json.loads(out)["plan"]
    event = next(t for t in plan["tests"] if t["test"] == "event")
    assert plan["refutable"] and event["refutable_at_budget"] and event["runs_at_excess"] > 0
    assert plan["pilot_runs"] <= 3000 and plan["excess"] == 0.2


def test_a_report_of_a_sequential_audit_carries_its_looks_runs_and_stop_reason(capsys, tmp_path):
    # Issue 43 §10: --report written with --max-runs lacked the sequential block --json prints.
    report = tmp_path / "r.html"
    code, out, _ = _run(capsys, ["audit", "--mechanism", "catalog:histogram_buggy", "--max-runs", "60000", "--json",
                                 "--report", str(report)])
    assert code == 0
    printed = json.loads(out)["sequential"]
    assert printed["stopped"] == "refuted" and printed["stop_reason"] == f"the claim was refuted at look " \
                                                                         f"{printed['looks_run']}"
    written = json.loads(report.with_suffix(".json").read_text())["audits"][0]["sequential"]
    assert written == printed
    markdown = report.with_suffix(".md").read_text()
    html = report.read_text()
    for text in (markdown, html):
        assert "Sequential audit" in text and "stopped because" in text and printed["stop_reason"] in text
    assert f"| looks | {printed['looks_run']} of {printed['looks_planned']} planned |" in markdown
    assert f"| mechanism runs | {printed['runs']} of at most 60000 |" in markdown
    for look in printed["looks"]:  # one row per look: its number, samples, level and the runs it made
        assert f"| {look['look']} | {look['samples']} | {look['alpha']:.3g} | {look['runs']} |" in markdown


@pytest.mark.parametrize("flags, said", [
    (["--pilot-runs", "0"], "'pilot_runs' (--pilot-runs) must be an integer from 1 to the budget it plans, 60000"),
    (["--pilot-runs", "1000000"], "'pilot_runs' (--pilot-runs) must be an integer from 1 to the budget it plans, 60000"),
    (["--excess", "inf"], "'excess' (--excess) must be a number > 0 and at most 100 (a true parameter 101 times the "
                          "claim's), got inf"),
    (["--excess", "1e308"], "'excess' (--excess) must be a number > 0 and at most 100"),
    (["--excess", "nan"], "'excess' (--excess) must be a number > 0 and at most 100"),
])
def test_plan_flags_are_checked_against_the_budget_before_the_pilot(capsys, flags, said):
    """--pilot-runs 0 became the default 3,000, 1,000,000 ran a pilot 16 times the budget, and an infinite
    excess was reported as an error in 'epsilon' after the pilot (issue 43 §5, §8)."""
    import time

    started = time.perf_counter()
    code, _, err = _run(capsys, ["audit", "--mechanism", "catalog:laplace_sum", "--plan", "--max-runs", "60000",
                                 *flags])
    assert code == 2 and said in err and err.count("\n") == 1
    assert time.perf_counter() - started < 10  # refused before any pilot run
