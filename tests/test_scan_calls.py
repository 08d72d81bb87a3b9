"""Every call of the entry points a scan's case makes is counted: the cost line's total and each case's
``probe_calls`` (scan.json) against a module that counts its own calls (:func:`audit.scan.case_audit.audit_case`).

The expected counts are written here from what each case does before and beside its audit's runs: the scan's probe,
one call on each database of the pair; the audit's runner's probe, two calls on one database with one seed, and a
third where their outputs differ, as a function drawing from NumPy's global generator makes them (the runner seeds
that generator otherwise on the second call); where its family opts in to a raise as an output and both probe calls
raised, the check that it raises on every call (2 × 50 calls at most); a skipped case's calls until it was skipped.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

import pytest

MODULE = '''
import math

import numpy as np

CALLS = {}


def _geometric(epsilon, sensitivity, rng):
    p = math.exp(-epsilon / sensitivity)
    return int(rng.geometric(1 - p)) - int(rng.geometric(1 - p))


def counted_count(array, epsilon=1.0, random_state=None):
    CALLS["counted_count"] = CALLS.get("counted_count", 0) + 1
    rng = np.random.default_rng(random_state)
    return float(np.sum(np.asarray(array) >= 5) + _geometric(epsilon, 1, rng))


def global_count(array, epsilon=1.0):
    CALLS["global_count"] = CALLS.get("global_count", 0) + 1
    # A continuous draw: the runner's two probe calls, the global generator seeded otherwise, always differ.
    return float(np.sum(np.asarray(array) >= 5) + np.random.laplace(0, 1 / epsilon))


def ratio(array, epsilon=1.0, random_state=None):
    CALLS["ratio"] = CALLS.get("ratio", 0) + 1
    values = np.asarray(array, dtype=float)
    if np.any(values == 0):
        raise ValueError("cannot take a ratio with a zero")
    return float(values[0] / values.mean())
'''

#: The calls each case makes beyond its audit's runs (module docstring): the scan's probe (2), the runner's (2, or 3
#: where the function draws from the global generator).
EXPECTED_PROBE_CALLS = {"counted_count": 2 + 2, "global_count": 2 + 3}


@pytest.fixture
def scanned(plant, monkeypatch):
    """(terminal text, scan.json, the module's own counts) of the module scanned at ε = 1 in process."""
    from audit.cli.main import main

    path = plant("counting_calls", MODULE)
    monkeypatch.delitem(sys.modules, "counting_calls", raising=False)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["scan", "counting_calls", "--epsilons", "1", "--max-runs", "2000", "--out",
                     str(path.parent / "report"), "--in-process", "--quiet"]) == 0
    counts = dict(sys.modules["counting_calls"].CALLS)
    return printed.getvalue(), json.loads((path.parent / "report" / "scan.json").read_text(encoding="utf-8")), counts


def test_each_case_says_its_calls_beyond_its_runs_and_the_cost_line_counts_them_all(scanned):
    from audit.scan.case_audit import probe_calls_bound

    text, report, counts = scanned
    audited = {o["name"]: o for o in report["findings"] + report["controls"]}
    assert sorted(audited) == sorted(EXPECTED_PROBE_CALLS)
    for name, outcome in audited.items():
        assert outcome["probe_calls"] == EXPECTED_PROBE_CALLS[name] <= probe_calls_bound()
        assert counts[name] == outcome["runs"] + outcome["probe_calls"] and outcome["runs"] <= 2000
    # ratio raises on the pair's first database, the first call of its probe: skipped after that one call.
    (skipped,) = [o for o in report["skipped"] if o.get("name") == "ratio"]
    assert skipped["calls"] == counts["ratio"] == 1
    runs = sum(o["runs"] for o in audited.values())
    total = sum(counts.values())
    assert (f"cost: {total:,} calls of the entry points: {runs:,} the audits' runs (at most 2,000 a case, --max-runs; "
            f"a case stops at the first look that refutes it) and {total - runs - 1:,} beyond --max-runs, the probe "
            "calls that time each case's call and check its outputs (4 to 5 a case), and 1 by the skipped cases, ") in text


def test_the_how_to_states_the_bound_on_a_case_s_calls_beyond_max_runs():
    from pathlib import Path

    from audit.gating.look_runs import FLOAT_PROBE_RUNS
    from audit.scan.case_audit import RETIME_CALLS, probe_calls_bound
    from audit.scan.raised import ALWAYS_CALLS

    # The scan's probe, the runner's (at most 3), the retimes, the first audit left as too slow (its runner's probe and
    # the float-bit probe's runs), and an opted-in case's raise check on each database.
    plain = 2 + 3 + RETIME_CALLS + 3 + FLOAT_PROBE_RUNS
    assert probe_calls_bound() == plain == 78
    assert probe_calls_bound(raised_as_output=True) == plain + 2 * ALWAYS_CALLS == 178
    how_to = (Path(__file__).parents[1] / "docs" / "how-to" / "scan-a-library.md").read_text(encoding="utf-8")
    assert "at most 78 calls beyond `--max-runs`" in how_to and "178 for a case" in how_to


#: A profile of the planted raising entry points (tests/planted_lib/_raising.py) whose family opts in to a raise as an
#: output at every grid point, as python-dp's does at its bounds search: its cases make the every-call raise check.
RAISING_PROFILE = '''
from dataclasses import dataclass

from audit.scan.profiles.base import ArrayTool, Profile


@dataclass(frozen=True)
class RaisingTool(ArrayTool):
    def raises_as_output(self, obj, settings):
        return True


PROFILE = Profile(name="planted-raising", modules=("planted_lib._raising",), families=(RaisingTool(),))
'''


@pytest.mark.usefixtures("planted_on_path")
def test_an_opted_in_case_s_raise_check_calls_are_counted_within_the_bound(plant, monkeypatch):
    """Two opted-in cases whose probe calls both raise, so that each makes the check that it raises on every call (50
    rounds of one call on each database). ``raises_at_first`` raises on its first 101 calls, then releases a fair
    coin: the scan's probe (2 calls) and the check (99 raise, the 100th releases) precede the runner's probe (2
    calls with one seed: the same coin) and its audit's runs. ``always_raises`` raises on the probe's 2 and the
    check's 100 calls, and is skipped after them."""
    import planted_lib._raising as raising

    from audit.cli.main import main
    from audit.scan.case_audit import probe_calls_bound
    from audit.scan.profiles import LIBRARIES

    path = plant("raising_profile", RAISING_PROFILE)
    monkeypatch.setitem(LIBRARIES, "planted-raising", "raising_profile")
    monkeypatch.setattr(raising, "COUNTED", {})
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["scan", "planted-raising", "--only", "raises_at_first", "--only", "always_raises", "--epsilons",
                     "1", "--max-runs", "2000", "--out", str(path.parent / "report"), "--in-process", "--quiet"]) == 0
    counted = dict(raising.COUNTED)
    report = json.loads((path.parent / "report" / "scan.json").read_text(encoding="utf-8"))
    (audited,) = report["findings"] + report["controls"]
    assert audited["name"] == "raises_at_first" and audited["status"] == "control" and audited["raised_as_output"]
    beyond_runs = 2 + 2 * 50 + 2  # the scan's probe, the whole raise check, the runner's probe
    assert audited["probe_calls"] == beyond_runs <= probe_calls_bound(raised_as_output=True) == 178
    assert counted["raises_at_first"] == audited["runs"] + beyond_runs and 0 < audited["runs"] <= 2000
    (skipped,) = [o for o in report["skipped"] if o.get("name") == "always_raises"]
    assert skipped["reason"].startswith("the call raised on each of 50 calls on each database")
    assert skipped["calls"] == counted["always_raises"] == 2 + 2 * 50  # the probe and the whole raise check
    text = printed.getvalue()
    total, runs = sum(counted.values()), audited["runs"]
    assert (f"cost: {total:,} calls of the entry points: {runs:,} the audits' runs (at most 2,000 a case, --max-runs; "
            f"a case stops at the first look that refutes it) and {beyond_runs:,} beyond --max-runs, the probe calls "
            f"that time each case's call and check its outputs ({beyond_runs} a case), and {2 + 2 * 50:,} by the "
            "skipped cases, ") in text, text
