"""``miaudit audit`` (config file, overrides, flags, reports) and ``miaudit demo``."""

import json
from pathlib import Path

import pytest

import audit.demo as demo
from audit.cli.main import main
from estimators.neural import CriticConfig

FIXTURE = Path(__file__).parent / "fixtures" / "audit_user_code.py"
FAST = ["--set", "critic.max_steps=300"]


def run_json(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


REQUIRED = ("verdict", "notion", "epsilon", "alpha", "unit", "lower_bound", "estimate", "paper_statistic",
            "dp_epsilon_lower_bound_mi", "dp_epsilon_lower_bound_event", "per_record", "cross_checks",
            "samples", "seconds", "seed")


@pytest.mark.train
def test_flag_form_on_user_code_flags_the_leaky_count(capsys):
    payload = run_json(capsys, ["audit", "--mechanism", f"{FIXTURE}:leaky_count", "--prior", "builtin:bernoulli",
                                "--n", "4", "--k", "1", "--p", "0.5", "--notion", "mi-dp", "--epsilon", "0.05",
                                "--samples", "4000", "--slices", "2", "--records", "0,1", "--event-runs", "3000",
                                "--claim", "dp:1", "--json", *FAST])
    for field in REQUIRED:
        assert field in payload
    assert payload["verdict"] == "violation" and payload["unit"] == "nats"
    assert [r["record"] for r in payload["per_record"]] == [0, 1]
    # The leaky count is far from 1-DP: the event test certifies more than the claimed ε.
    assert payload["dp_epsilon_lower_bound_event"] > 1.0
    assert any(c["certified_contradiction"] for c in payload["cross_checks"])


@pytest.mark.train
def test_config_file_with_overrides_and_report(tmp_path, capsys):
    config = tmp_path / "audit.toml"
    config.write_text(f"""
[mechanism]
spec = "{FIXTURE.name}:noisy_count"
name = "noisy count"

[prior]
spec = "{FIXTURE.name}:bits"
independent_rows = true
discrete = true

[audit]
notion = "mi-dp"
epsilon = 0.5
samples = 3000
slices = 2
records = [0]
event_runs = 2000

[claim]
notion = "dp"
epsilon = 1.0
""")
    (tmp_path / FIXTURE.name).write_text(FIXTURE.read_text())
    report = tmp_path / "out.html"
    payload = run_json(capsys, ["audit", str(config), "--set", "audit.epsilon=0.4", "--set", "audit.seed=3",
                                "--report", str(report), "--json", *FAST])
    assert payload["epsilon"] == 0.4 and payload["seed"] == 3
    assert payload["mechanism"] == "noisy count"
    assert payload["verdict"] == "no-violation-detected"
    assert payload["priors"][0] == "audit_user_code.py:bits on 4x1 databases (independent_rows, discrete)"
    assert report.exists() and report.with_suffix(".md").exists()
    assert json.loads(report.with_suffix(".json").read_text())["audits"][0]["epsilon"] == 0.4
    assert "data:image/png;base64," in report.read_text()


@pytest.mark.train
def test_catalog_mechanism_uses_its_prior_and_claim(capsys):
    payload = run_json(capsys, ["audit", "--mechanism", "catalog:laplace_mean", "--notion", "mi-dp",
                                "--epsilon", "0.5", "--samples", "2000", "--slices", "0", "--event-runs", "0",
                                "--json", *FAST])
    assert payload["cross_checks"][0]["claim"] == "1-DP"
    assert "two-point" in payload["priors"][0]


@pytest.mark.train
def test_text_output_has_statement_and_claims(capsys):
    assert main(["audit", "--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "0.5",
                 "--samples", "2000", "--slices", "0", "--event-runs", "0", *FAST]) == 0
    out = capsys.readouterr().out
    assert "No violation of 0.5-MI-DP" in out and "claim 1-DP" in out


@pytest.mark.parametrize("argv,message", [
    (["--mechanism", "catalog:nope", "--notion", "mi-dp", "--epsilon", "1"], "nope"),
    (["--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "-1"], "[audit] epsilon (--epsilon) must be > 0"),
    (["--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "1", "--alpha", "2"], "[audit] alpha (--alpha) must be < 1"),
    (["--mechanism", "catalog:laplace_mean", "--notion", "mi-pp", "--epsilon", "1"], "--secret"),
    # Without a claim (a user mechanism brings none) the notion is required; a catalog entry brings its claim.
    (["--mechanism", f"{FIXTURE}:broken", "--prior", "builtin:bernoulli", "--epsilon", "1"], "--notion"),
    (["--mechanism", f"{FIXTURE}:broken", "--prior", "builtin:bernoulli", "--notion", "mi-dp"], "--epsilon"),
    (["--mechanism", "catalog:laplace_mean", "--claim", "rdp:1:2"], "ALPHA in rdp:ALPHA:EPS"),
    (["--mechanism", "catalog:laplace_mean", "--report", "no/such/folder/r.html"], "no/such/folder"),
    (["--mechanism", f"{FIXTURE}:missing", "--prior", "builtin:bernoulli", "--notion", "mi-dp", "--epsilon", "1"],
     "missing"),
    (["--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "1", "--samples", "50"], "too small"),
    (["--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "1", "--claim", "dp"], "--claim"),
    (["--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "1", "--set", "audit.bogus=1"],
     "bogus"),
    (["missing-config.toml"], "no such file"),
])
def test_bad_input_gets_one_clear_error(argv, message, capsys):
    assert main(["audit", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_failing_mechanism_exits_with_status_1_naming_it(capsys):
    assert main(["audit", "--mechanism", f"{FIXTURE}:broken", "--prior", "builtin:bernoulli", "--n", "3", "--notion",
                 "mi-dp", "--epsilon", "1", "--samples", "1000"]) == 1
    assert "always fails" in capsys.readouterr().err


@pytest.mark.train
def test_demo_writes_reports_and_summary(tmp_path, capsys, monkeypatch):
    # The demo at a smaller budget (its default budget is exercised by running `miaudit demo`).
    monkeypatch.setattr(demo, "DEMO_SAMPLES", 3000)
    monkeypatch.setattr(demo, "DEMO_CRITIC", CriticConfig(max_steps=200))
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "laplace_sum" in text and "histogram_buggy" in text and "MI-PP" in text
    for name in ("report.html", "report.md", "report.json"):
        assert (out / name).exists()
    audits = json.loads((out / "report.json").read_text())["audits"]
    assert [a["notion"] for a in audits] == ["mi-dp", "mi-dp", "mi-pp"]


@pytest.mark.train
def test_prior_search_flag_and_pairs_table(tmp_path, capsys):
    config = tmp_path / "search.toml"
    config.write_text(f"""
[mechanism]
spec = "{FIXTURE}:leaky_count"

[prior]
spec = "builtin:bernoulli"
n = 3
k = 1

[audit]
notion = "mi-dp"
epsilon = 0.1
samples = 2000
slices = 0
records = [1]
event_runs = 0

[[pairs]]
first = [[0.0], [0.0], [0.0]]
second = [[0.0], [1.0], [0.0]]
""")
    payload = run_json(capsys, ["audit", str(config), "--prior-search", "1", "--json", *FAST])
    assert len(payload["priors"]) == 3  # declared + the supplied pair + one random pair
    assert "prior search" in payload["theta"]
    assert main(["audit", str(config), "--set", "pairs=[{first = [[0.0]], second = [[1.0]]}]"]) == 2
    assert "shape" in capsys.readouterr().err


def test_ctrl_c_ends_cleanly_without_writing_a_report(tmp_path, capsys):
    import signal

    report = tmp_path / "report.html"
    # As from a terminal: a suite started in the background (`cmd &`, nohup) ignores SIGINT, and a
    # KeyboardInterrupt then cannot be a Ctrl-C (mechanisms.calls.interrupts.raised_by_user_code).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main(["audit", "--mechanism", f"{FIXTURE}:interrupted", "--prior", "builtin:bernoulli", "--n", "3",
                     "--notion", "mi-dp", "--epsilon", "1", "--samples", "1000", "--report", str(report)])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 130
    assert "interrupted" in capsys.readouterr().err
    assert not report.exists() and list(tmp_path.iterdir()) == []
