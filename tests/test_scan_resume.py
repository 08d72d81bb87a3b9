"""A resumed scan audits again the cases that ended stuck or out of time before their first look, and no other
(:mod:`audit.scan.running`, "Resume"): such a case made no run its verdict could rest on, so its α/K was unspent and
it gets that same share once; a case whose looks had begun, or that failed for good, keeps its outcome."""

from __future__ import annotations

import json
import pickle
import sys

import pytest

from audit.scan import isolation
from audit.scan.case_audit import RETRY, audit_case, list_cases, skipped_outcome, stuck_outcome
from audit.scan.running import scan

EPSILON = 1.0
#: What a planted call sleeps: far past the tests' timeout (the alarm interrupts it; a test never waits for it).
HANG = 120.0
#: The tests' --timeout: far above what a chunk of the planted quick calls takes even on a loaded machine (~5 ms).
TIMEOUT = 2.0

MODULE = f'''
"""Counts on an array: one hangs on its first call, one exits, one hangs only well into its audit."""
import math
import os
import sys
import time

import numpy as np

__all__ = ["count_a", "count_b", "count_c", "hangs_at_once", "exits_at_once", "hangs_later", "lazy_count"]

CALLS = [0]


def _count(array, epsilon, random_state):
    rng = np.random.default_rng(random_state)
    p = math.exp(-epsilon)
    return float(np.sum(np.asarray(array) >= 5) + int(rng.geometric(1 - p)) - int(rng.geometric(1 - p)))


def count_a(array, epsilon=1.0, random_state=None):
    return _count(array, epsilon, random_state)


def count_b(array, epsilon=1.0, random_state=None):
    return _count(array, epsilon, random_state)


def count_c(array, epsilon=1.0, random_state=None):
    return _count(array, epsilon, random_state)


def hangs_at_once(array, epsilon=1.0, random_state=None):
    time.sleep({HANG})


def exits_at_once(array, epsilon=1.0, random_state=None):
    sys.exit(3)


def hangs_later(array, epsilon=1.0, random_state=None):
    CALLS[0] += 1
    if CALLS[0] > 600:  # past the probe, the float-bit probe and into the first look's runs
        time.sleep({HANG})
    return _count(array, epsilon, random_state)


def _lazy_count(array, epsilon=1.0, random_state=None):
    return _count(array, epsilon, random_state)


def __getattr__(name):
    if name == "lazy_count" and os.environ.get("RESUME_LAZY_HANGS"):
        time.sleep({HANG})
    if name == "lazy_count":  # a lazy import that never ends in a worker where RESUME_LAZY_HANGS is set
        return _lazy_count
    raise AttributeError(name)
'''


@pytest.fixture
def planted(plant):
    return plant("resume_planted", MODULE)


def _case(path, name):
    return next(c for c in list_cases(str(path), (EPSILON,))[1] if c.entry.name == name)


def test_only_a_case_out_of_time_before_its_first_look_is_marked_to_be_audited_again(planted):
    hung = audit_case(_case(planted, "hangs_at_once"), alpha=0.05, max_runs=3000, timeout=TIMEOUT, seed=1)
    assert hung["status"] == "skipped" and "did not return within 2 s on the first database" in hung["reason"]
    assert hung[RETRY] is True
    exited = audit_case(_case(planted, "exits_at_once"), alpha=0.05, max_runs=3000, timeout=TIMEOUT, seed=1)
    assert exited["status"] == "skipped" and "called sys.exit(3)" in exited["reason"] and RETRY not in exited
    later = audit_case(_case(planted, "hangs_later"), alpha=0.05, max_runs=3000, timeout=TIMEOUT, seed=1)
    assert later["status"] == "skipped" and later["reason"].startswith("failed during the audit")
    assert RETRY not in later  # its looks had begun: a second audit would be a second chance at its α


def test_resume_audits_again_only_the_cases_marked_so_at_the_same_share_and_says_how_many(planted, tmp_path,
                                                                                        monkeypatch, capsys):
    import audit.scan.running as running
    from audit.cli.main import main

    made = {"count_a": stuck_outcome, "count_b": skipped_outcome, "count_c": skipped_outcome}
    audited = []

    def fake(case, *, alpha, max_runs, timeout, seed):
        audited.append((case.entry.name, alpha, seed))
        return made[case.entry.name](case, seed, f"planted outcome of {case.entry.name}")

    monkeypatch.setattr(running, "audit_case", fake)
    out = tmp_path / "report"
    argv = ["scan", str(planted), "--out", str(out), "--epsilons", "1", "--max-runs", "3000", "--in-process",
            "--only", "count_", "--seed", "5", "--json"]
    assert main(argv) == 0
    first = sorted(audited)
    assert [name for name, _, _ in first] == ["count_a", "count_b", "count_c"]
    capsys.readouterr()
    audited.clear()
    made["count_a"] = skipped_outcome  # audited again, it now ends for good
    assert main(argv[:-1] + ["--resume"]) == 0
    assert audited == [first[0]]  # count_a alone, at the α/K and seed of the first run
    said = capsys.readouterr().out
    assert "resumed: 2 cases kept from" in said
    assert "1 audited again (they had ended stuck or out of time before their first look)" in said
    lines = (out / "scan-state.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + 3 + 1 and RETRY not in json.loads(lines[-1])
    audited.clear()
    assert main(argv + ["--resume"]) == 0  # its last line is its outcome: nothing left to audit
    assert audited == [] and json.loads(capsys.readouterr().out)["retried"] == 0
    result = scan(str(planted), epsilons=(EPSILON,), max_runs=3000, seed=5, state_file=out / "scan-state.jsonl",
                  resume=True, in_process=True, only="count_")
    assert result.settings["resumed_cases"] == 3 and result.settings["retried_cases"] == 0


def test_a_case_its_worker_did_not_list_in_time_is_skipped_to_be_audited_again(planted, monkeypatch):
    monkeypatch.setattr(isolation, "_CASES", {})
    monkeypatch.setattr(isolation, "_TIMED_OUT", {})
    monkeypatch.setattr(isolation, "_warm", lambda: None)
    case = _case(planted, "lazy_count")  # the scan's process lists it
    monkeypatch.delitem(sys.modules, "resume_planted", raising=False)  # a worker imports it afresh
    monkeypatch.setenv("RESUME_LAZY_HANGS", "1")  # a worker's reading of it does not end within 4 × 0.25 s
    target = isolation.ScanTarget("scan", str(planted), (EPSILON,), 0.25)
    task = isolation.CaseTask(0, case.id, 0.05, 3000, TIMEOUT, 1, None)
    with pytest.raises(isolation.ListingTimedOut, match="did not list it: resume_planted.lazy_count did not return "
                                                        "within 1 s") as caught:
        isolation._case(target, task)
    assert type(pickle.loads(pickle.dumps(caught.value))) is isolation.ListingTimedOut  # as a worker sends it back


def test_a_resumed_scan_whose_listing_differs_keeps_its_first_runs_cases_at_their_share(planted, tmp_path,
                                                                                      monkeypatch):
    # lazy_count's reading sleeps where RESUME_LAZY_HANGS is set, past the 2 s --listing-timeout (the alarm interrupts
    # it). Its listing out of time in one run and not in the other, the first run's cases (K) and α/K still hold.
    import audit.scan.running as running

    audited, made = [], {"count_a": skipped_outcome, "lazy_count": stuck_outcome}

    def fake(case, *, alpha, max_runs, timeout, seed):
        audited.append((case.entry.name, alpha))
        return made[case.entry.name](case, seed, f"planted outcome of {case.entry.name}")

    monkeypatch.setattr(running, "audit_case", fake)
    settings = dict(epsilons=(EPSILON,), max_runs=3000, seed=5, in_process=True, only=["count_a", "lazy_count"],
                    listing_timeout=2.0)
    lazy = "resume_planted.lazy_count(epsilon=1.0) / ends"

    # Listed in the first run (K = 2), lazy_count ended out of time; not listed when resumed, it waits for a later one.
    state = tmp_path / "both.jsonl"
    assert scan(str(planted), state_file=state, **settings).cases == 2
    assert sorted(audited) == [("count_a", 0.025), ("lazy_count", 0.025)]
    audited.clear()
    monkeypatch.setenv("RESUME_LAZY_HANGS", "1")
    resumed = scan(str(planted), state_file=state, resume=True, **settings)
    assert audited == [] and resumed.cases == 2
    assert [(o["id"], o["reason"], o[RETRY]) for o in resumed.outcomes if o["id"] == lazy] == [
        (lazy, running.NOT_LISTED_NOW, True)]
    assert any("lazy_count did not return within 2 s" in row["reason"] for row in resumed.skipped)
    monkeypatch.delenv("RESUME_LAZY_HANGS")
    made["lazy_count"] = skipped_outcome
    again = scan(str(planted), state_file=state, resume=True, **settings)
    assert audited == [("lazy_count", 0.025)]  # at the first run's share, α/2
    assert (again.settings["resumed_cases"], again.settings["retried_cases"]) == (1, 1)

    # Out of time in the first run (K = 1), listed when resumed: it takes no share, the first run's case keeps α.
    audited.clear()
    monkeypatch.setenv("RESUME_LAZY_HANGS", "1")
    state = tmp_path / "one.jsonl"
    assert scan(str(planted), state_file=state, **settings).cases == 1 and audited == [("count_a", 0.05)]
    monkeypatch.delenv("RESUME_LAZY_HANGS")
    audited.clear()
    resumed = scan(str(planted), state_file=state, resume=True, **settings)
    assert audited == [] and resumed.cases == 1 and resumed.settings["listed_on_resume"] == 1
    assert {row["what"]: row["reason"] for row in resumed.skipped} == {lazy: running.NOT_IN_FIRST_RUN}
    with pytest.raises(Exception, match="another scan"):  # another selection is another scan
        scan(str(planted), state_file=state, resume=True, **dict(settings, only="count_"))


#: Reasons as a state file written before the rows' retry marks holds them: out of time in its probe (no run made),
#: killed as stuck at the first limit (its probe may have ended: its reason cannot tell), killed after its probe.
OLD_REASONS = {
    "count_a": "hangs or exits: resume_planted.count_a did not return within 2 s on the first database (the scan's "
               "--timeout)",
    "count_b": "still running 14 s after it started (4 × --timeout + 10 s), stuck where --timeout cannot interrupt "
               "it: its process was killed while running resume_planted.count_b",
    "count_c": "still running 40 s after it started (its probe ended at 0.5 s, then the 30 s its own bounds allow + "
               "10 s), stuck where --timeout cannot interrupt it: its process was killed while running "
               "resume_planted.count_c",
}


@pytest.mark.parametrize("before_marks", [True, False])
def test_a_state_file_from_before_the_marks_is_read_from_its_reasons(planted, tmp_path, monkeypatch, capsys,
                                                                     before_marks):
    import audit.scan.running as running
    from audit.cli.main import main

    audited = []

    def fake(case, *, alpha, max_runs, timeout, seed):
        audited.append((case.entry.name, alpha, seed))
        return skipped_outcome(case, seed, OLD_REASONS[case.entry.name])

    monkeypatch.setattr(running, "audit_case", fake)
    out = tmp_path / "report"
    argv = ["scan", str(planted), "--out", str(out), "--epsilons", "1", "--max-runs", "3000", "--in-process",
            "--only", "count_", "--seed", "5"]
    assert main(argv) == 0
    first = sorted(audited)
    state = out / "scan-state.jsonl"
    lines = state.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header.pop(running.MARKED) is True and all(RETRY not in json.loads(line) for line in lines[1:])
    if before_marks:  # as such a file's first line was
        state.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n", encoding="utf-8")
    capsys.readouterr()
    audited.clear()
    assert main(argv + ["--resume"]) == 0
    said = capsys.readouterr().out
    if not before_marks:  # its rows say it all: kept, none read from its reasons
        assert audited == [] and "predates" not in said
        return
    # count_a's probe ran out of time: audited again, at the α/K (K = 3, from the first line) and seed of the first
    # run; count_b's may or may not have ended its probe: kept, and said so; count_c's had: kept.
    assert audited == [first[0]] and first[0][1] == pytest.approx(0.05 / 3)
    assert "1 audited again" in said
    assert ("the state file predates the marks of the cases to audit again: 1 were found from their reasons; 1 more, "
            "killed as stuck, are kept as they ended") in said
    assert [running.retry_from_reason({"status": "skipped", "reason": OLD_REASONS[name]})
            for name in ("count_a", "count_b", "count_c")] == [True, None, False]
