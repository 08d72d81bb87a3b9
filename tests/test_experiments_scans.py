"""``miaudit experiment scans`` (experiments/scans.py): per-library run records, the page built from them, a rerun
of some libraries, and records imported from a run's output folder. No library is installed or scanned: the scan's
subprocess is replaced by one that writes a synthetic ``scan.json``."""

from __future__ import annotations

import datetime
import json
import os
from types import SimpleNamespace

import pytest

from estimators.validation import InputError
from experiments import framework, scans

RUN = {"date": "2026-01-02T03:04:05Z", "machine": "a machine", "load_average": [1.5, 1.5], "load_over": "scan"}
ENDED = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)


def synthetic_report(target: str, findings: int, controls: int, skipped: int) -> dict:
    """A ``scan.json`` with the fields the record reads: finding i has counts (10 + i)/100 vs i/100, ε ≥ 1 + i/100,
    δ ≥ 0.01 on every third, the library's warning on every fourth; control j of entry point j mod 3."""
    found = [{"entry": f"lib.mech{i}", "settings": f"epsilon={i}", "pair": "ends", "claim": f"dp:{i}",
              "audited_claim": f"{i}-DP", "hits": [10 + i, i], "runs_per_input": [100, 100], "runs": 1000 + i,
              "epsilon_lower_bound": 1 + i / 100, "delta_lower_bound": 0.01 if i % 3 == 0 else None,
              "event": "E", "refuting_test": "event", "status": "finding",
              "notes": ["warned: PrivacyLeakWarning"] if i % 4 == 0 else []} for i in range(findings)]
    kept = [{"entry": f"lib.safe{j % 3}", "settings": f"epsilon={j}", "pair": "ends", "claim": "dp:1",
             "audited_claim": "1-DP", "hits": [5, 5], "runs_per_input": [50, 50], "runs": 500,
             "epsilon_lower_bound": 0.0, "delta_lower_bound": None, "event": "E", "status": "control", "notes": []}
            for j in range(controls)]
    left = [{"id": f"lib.skip{k} / ends", "status": "skipped", "reason": f"reason {k} | with a bar"}
            for k in range(skipped)]
    return {"target": target, "version": "9.9", "alpha": 0.05, "cases": findings + controls + skipped,
            "statement": "With probability ≥ 1 − 0.05 no finding of this scan is false.",
            "settings": {"epsilons": [0.1, 1.0, 4.0], "max_runs": 6000, "timeout": 60.0, "seed": 0},
            "seconds": 3.25, "findings": found, "controls": kept, "skipped": left}


def test_a_record_round_trips_and_is_written_the_same_each_time(tmp_path):
    record = scans.build_record("opendp", synthetic_report("opendp", 5, 4, 2), 12.34,
                                "miaudit scan opendp --seed 0", RUN)
    path = scans.write_record(tmp_path, record)
    first = path.read_bytes()
    assert scans.read_records(tmp_path) == {"opendp": record}
    scans.write_record(tmp_path, scans.read_records(tmp_path)["opendp"])
    assert path.read_bytes() == first
    loaded = json.loads(first)
    assert list(loaded) == sorted(loaded) and loaded["seconds"] == 12.3
    assert sorted(loaded["findings"][0]) == ["audited_claim", "bound", "claim", "counts", "entry", "pair", "runs",
                                             "settings", "warned"]
    assert loaded["skipped"][1] == {"id": "lib.skip1 / ends", "reason": "reason 1 | with a bar"}
    (tmp_path / "pure-ldp.json").write_text(json.dumps({"library": "opendp"}))
    with pytest.raises(InputError, match="not the record of pure-ldp"):
        scans.read_records(tmp_path)


def test_the_page_lists_every_finding_control_entry_and_skipped_case():
    n = 75  # past the 60 rows the framework's page shows of a table (experiments.docs_page.MAX_ROWS)
    record = scans.build_record("diffprivlib", synthetic_report("diffprivlib", n, 9, 4), 7.0,
                                "miaudit scan diffprivlib --seed 0", RUN)
    page = scans.page_markdown({"diffprivlib": record}, "docs/benchmarks/scans.md")
    expected = []
    for i in range(n):
        bound = f"ε ≥ {1 + i / 100:.3g}" + ("; δ ≥ 0.01" if i % 3 == 0 else "")
        expected.append(f"| `lib.mech{i}(epsilon={i})` | ends | dp:{i} ({i}-DP) | {10 + i}/100 vs {i}/100 | {bound} | "
                        f"{1000 + i} | {'yes' if i % 4 == 0 else 'no'} |")
    rows = [line for line in page.splitlines() if line.startswith("| `lib.mech")]
    assert rows == expected
    assert f"### Findings ({n})" in page
    assert "`lib.safe0` (3), `lib.safe1` (3), `lib.safe2` (3)." in page
    assert all(f"| `lib.skip{k} / ends` | reason {k} \\| with a bar |" in page for k in range(4))
    assert "| diffprivlib | 9.9 | 88 | 75 | 9 | 4 | 7.0 | 2026-01-02 03:04:05 |" in page
    for target in scans.TARGETS[1:]:
        assert f"| {target.name} | {target.version} | not run yet |" in page
        command = f"MIAUDIT_SCANS={target.name} miaudit experiment scans --seed 0 --page docs/benchmarks/scans.md"
        assert f"Not run yet: `{command}`" in page
    assert "load average 1.50 at the start and 1.50 at the end of this scan" in page


@pytest.fixture
def fake_scans(monkeypatch):
    """The experiment with each library's scan replaced by a synthetic ``scan.json`` (3 findings, 2 controls,
    1 skipped case), the machine, load average and clock fixed; the scanned libraries in ``calls``."""
    calls = []

    def fake_run(command, **kwargs):
        name, folder = command[4], command[command.index("--out") + 1]
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "scan.json"), "w", encoding="utf-8") as handle:
            json.dump(synthetic_report(name, 3, 2, 1), handle)
        calls.append(name)
        return SimpleNamespace(returncode=0, stderr="", stdout="")

    monkeypatch.setattr(scans, "subprocess", SimpleNamespace(run=fake_run))
    monkeypatch.setattr(scans, "_interpreter", lambda case, venvs: ("python", "this interpreter"))
    for module in (scans, framework):
        monkeypatch.setattr(module, "machine_description", lambda device: "a machine")
        monkeypatch.setattr(module, "load_average", lambda: 1.5)
    monkeypatch.setattr(scans, "_utc_now", lambda: ENDED)
    return calls


def test_a_selected_rerun_keeps_the_other_libraries_records(fake_scans, tmp_path, monkeypatch):
    page = tmp_path / "docs" / "scans.md"
    records = tmp_path / "docs" / "scans"
    for name in ("pure-ldp", "opendp"):
        scans.write_record(records, scans.build_record(name, synthetic_report(name, 1, 1, 0), 1.0,
                                                       f"miaudit scan {name} --seed 0", RUN))
    kept = {name: (records / f"{name}.json").read_bytes() for name in ("pure-ldp", "opendp")}
    monkeypatch.setenv("MIAUDIT_SCANS", "diffprivlib,opendp")
    framework.run_experiment(scans.EXPERIMENTS[0], out_dir=tmp_path / "out", page=page, seed=0)
    assert fake_scans == ["diffprivlib", "opendp"]
    assert (records / "pure-ldp.json").read_bytes() == kept["pure-ldp"]
    assert (records / "opendp.json").read_bytes() != kept["opendp"]  # rescanned: 3 findings now
    assert sorted(p.name for p in records.iterdir()) == ["diffprivlib.json", "opendp.json", "pure-ldp.json"]
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Scans of real libraries")  # the experiment's page, not the framework's
    assert "| pure-ldp | 9.9 | 2 | 1 | 1 | 0 | 1.0 |" in text
    assert "| diffprivlib | 9.9 | 6 | 3 | 2 | 1 |" in text and "| opendp | 9.9 | 6 | 3 | 2 | 1 |" in text
    assert text.count("not run yet |") == 4  # multi-freq-ldpy, python-dp, pipeline-dp, smartnoise-sql
    assert text == scans.page_markdown(scans.read_records(records), str(page))  # rebuilt alone: the same page
    monkeypatch.setenv("MIAUDIT_SCANS", "diffprivlib,numpy")
    with pytest.raises(InputError, match="MIAUDIT_SCANS names numpy"):
        scans.run(SimpleNamespace(out_dir=tmp_path / "out", quick=False, seed=0, page=page))


def test_importing_a_run_folder_builds_the_records_the_run_wrote(fake_scans, tmp_path, monkeypatch):
    out, page = tmp_path / "out", tmp_path / "run-page.md"
    monkeypatch.setenv("MIAUDIT_SCANS", "pure-ldp,python-dp")
    framework.run_experiment(scans.EXPERIMENTS[0], out_dir=out, page=page, seed=0)
    written = scans.read_records(tmp_path / "run-page")
    for name in written:
        stamp = ENDED.timestamp()
        os.utime(out / f"scan-{name}" / "scan.json", (stamp, stamp))
    before = sorted((p.relative_to(out), p.stat().st_mtime) for p in out.rglob("*"))
    imported = scans.import_run(out, tmp_path / "imported")
    assert sorted((p.relative_to(out), p.stat().st_mtime) for p in out.rglob("*")) == before  # nothing written there
    assert [r["library"] for r in imported] == ["pure-ldp", "python-dp"]
    # The same record, but for the load average, which an imported record has of the whole run (summary.md's).
    assert {r["library"]: r for r in imported} == {
        name: {**record, "run": {**record["run"], "load_over": "experiment run"}} for name, record in written.items()}
    assert scans.read_records(tmp_path / "imported") == {r["library"]: r for r in imported}
    # A later run into the same folder scanning one library: the other's folder, left from the first run, is not
    # this run's (its scans.csv lists only what it scanned), so it is not recorded with this run's seconds and load.
    monkeypatch.setenv("MIAUDIT_SCANS", "python-dp")
    framework.run_experiment(scans.EXPERIMENTS[0], out_dir=out, page=page, seed=0)
    assert (out / "scan-pure-ldp" / "scan.json").is_file()
    assert [r["library"] for r in scans.import_run(out, tmp_path / "later")] == ["python-dp"]
    (out / "summary.md").unlink()
    (out / "scans.csv").unlink()
    bare = scans.import_run(out, tmp_path / "bare")[0]
    assert bare["seconds"] == 3.2 and bare["run"]["load_average"] == [None, None]  # scan.json's own 3.25 s
    with pytest.raises(InputError, match="argument '--import'"):
        scans.import_run(tmp_path / "missing", tmp_path / "bare")


def test_the_command_line_imports_and_rebuilds_the_page(fake_scans, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    monkeypatch.setenv("MIAUDIT_SCANS", "opendp")
    framework.run_experiment(scans.EXPERIMENTS[0], out_dir=out, seed=0)
    assert (out / "scans" / "opendp.json").is_file() and (out / "scans.md").is_file()  # without --page: in --out
    records = tmp_path / "docs" / "scans"
    assert scans.main(["--import", str(out), "--records", str(records)]) == 0
    assert "recorded opendp 9.9: 3 findings, 2 controls, 1 skipped" in capsys.readouterr().out
    page = (tmp_path / "docs" / "scans.md").read_text(encoding="utf-8")
    (tmp_path / "docs" / "scans.md").unlink()
    assert scans.main(["--records", str(records)]) == 0
    assert (tmp_path / "docs" / "scans.md").read_text(encoding="utf-8") == page


def test_an_interrupted_scan_is_resumed_and_an_ended_one_scanned_again(fake_scans, tmp_path, monkeypatch):
    commands = []
    recorded = scans.subprocess.run

    def remember(command, **kwargs):
        commands.append(command)
        return recorded(command, **kwargs)

    monkeypatch.setattr(scans, "subprocess", SimpleNamespace(run=remember))
    out, page = tmp_path / "out", tmp_path / "docs" / "scans.md"
    interrupted = out / "scan-opendp"
    interrupted.mkdir(parents=True)
    # an interrupted scan's state: its settings line, then the two cases it audited, a third ended out of time
    # before its first look (audited again, not kept), a case's second line and one cut short
    (interrupted / "scan-state.jsonl").write_text(
        '{"scan": "opendp"}\n{"id": "a"}\n{"id": "b"}\n{"id": "c", "retry_on_resume": true}\n{"id": "a"}\n{"id": "d", ',
        encoding="utf-8")
    ended = out / "scan-diffprivlib"
    ended.mkdir(parents=True)
    (ended / "scan-state.jsonl").write_text('{"scan": "diffprivlib"}\n{"id": "a"}\n', encoding="utf-8")
    (ended / "scan.json").write_text("{}", encoding="utf-8")
    monkeypatch.setenv("MIAUDIT_SCANS", "diffprivlib,opendp")
    framework.run_experiment(scans.EXPERIMENTS[0], out_dir=out, page=page, seed=0, workers=2)
    by_library = {command[4]: command for command in commands}
    assert "--resume" in by_library["opendp"] and "--resume" not in by_library["diffprivlib"]
    for command in by_library.values():
        assert command[command.index("--workers") + 1] == "2"
    records = scans.read_records(page.parent / page.stem)
    assert records["opendp"]["run"]["resumed_cases"] == 2 and "resumed_cases" not in records["diffprivlib"]["run"]
    text = page.read_text(encoding="utf-8")
    assert text.count("2 of its cases were audited by an earlier, interrupted run") == 1


def test_smartnoise_sql_gets_a_venv_of_its_own_with_its_pin_alone(monkeypatch, tmp_path):
    """smartnoise-sql 1.0.10 pins OpenDP 0.14 (miaudit's tests use another), so it is installed into its own venv,
    named after its pin (``venvs/smartnoise-sql-1.0.10``), with nothing beside it: its own requirements bring
    OpenDP."""
    from experiments import real_bugs

    commands = []
    monkeypatch.setattr(real_bugs, "subprocess", SimpleNamespace(
        run=lambda command, **kwargs: commands.append(command) or SimpleNamespace(returncode=0, stderr="")))
    target = next(t for t in scans.TARGETS if t.name == "smartnoise-sql")
    python, how = real_bugs._interpreter(target.install_case(), tmp_path)
    assert (python, how) == (str(tmp_path / "smartnoise-sql-1.0.10" / "bin" / "python"), "new venv smartnoise-sql-1.0.10")
    assert commands[0][1:] == ["-m", "venv", "--system-site-packages", str(tmp_path / "smartnoise-sql-1.0.10")]
    assert commands[1][1:] == ["-m", "pip", "install", "--quiet", "smartnoise-sql==1.0.10"]
