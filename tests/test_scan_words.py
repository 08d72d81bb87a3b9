"""``miaudit scan`` of a newcomer's module, read as a newcomer reads it (:mod:`audit.scan.words`).

The module holds what a first-time user writes: a count with noise calibrated to half its sensitivity (2-DP at the
claimed ε = 1), a sum without noise, a function that raises on zeros, one whose privacy parameter is ``budget`` (a
name the scan does not read) and one that takes a required ``seed`` (a parameter the scan gives no value). The expected words are written here; the numbers they hold are read from the scan's
JSON, which these words do not change.
"""

from __future__ import annotations

import json
import math
import re
import runpy

import pytest

MODULE = '''
import math

import numpy as np


def _geometric(epsilon, sensitivity, rng):
    p = math.exp(-epsilon / sensitivity)
    return int(rng.geometric(1 - p)) - int(rng.geometric(1 - p))


def fast_count(array, epsilon=1.0, random_state=None):
    rng = np.random.default_rng(random_state)
    return float(np.sum(np.asarray(array) >= 5) + _geometric(epsilon, 0.5, rng))


def exact_sum(array, epsilon=1.0, random_state=None):
    return float(np.sum(np.asarray(array)))


def ratio(array, epsilon=1.0, random_state=None):
    values = np.asarray(array, dtype=float)
    if np.any(values == 0):
        raise ValueError("cannot take a ratio with a zero")
    return float(values[0] / values.mean())


def count_budget(array, budget=1.0, random_state=None):
    return float(np.sum(np.asarray(array) >= 5))


def laplace_count(array, epsilon, seed):
    return float(np.sum(np.asarray(array) >= 5) + np.random.default_rng(seed).laplace(0, 1 / epsilon))
'''


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """(terminal text, scan.json, scan.md) of the newcomer's module scanned at ε ∈ {0.1, 1}, in process."""
    import contextlib
    import io
    import sys

    from audit.cli.main import main

    folder = tmp_path_factory.mktemp("newcomer")
    (folder / "newcomer.py").write_text(MODULE, encoding="utf-8")
    out = folder / "report"
    printed = io.StringIO()
    sys.path.insert(0, str(folder))
    try:
        with contextlib.redirect_stdout(printed):
            assert main(["scan", str(folder / "newcomer.py"), "--epsilons", "0.1,1", "--max-runs", "3000",
                         "--out", str(out), "--in-process", "--quiet"]) == 0
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("newcomer", None)
    return (printed.getvalue(), json.loads((out / "scan.json").read_text(encoding="utf-8")),
            (out / "scan.md").read_text(encoding="utf-8"))


def test_the_terminal_says_what_the_counts_the_alpha_and_the_cost_are(scanned):
    text, report, _ = scanned
    # One control: "1 control", not "1 controls".
    assert len(report["controls"]) == 1 and (f"{report['cases']} cases, {len(report['findings'])} findings, 1 control, "
                                             f"{len(report['skipped'])} skipped, ") in text
    assert ("(a case is one entry point at one ε on one pair of neighbouring databases; a finding: its claim refuted; "
            "a control: not refuted within its runs (no proof of privacy") in text
    assert (f"  In words: the chance that even one finding is a false alarm is at most 0.05 (--alpha), shared equally "
            f"by the {report['cases']} cases; each case checked its runs at up to 2 points as they came (its looks)"
            in text)
    runs = sum(o["runs"] for o in report["findings"] + report["controls"])  # the audits' runs
    probes = sum(o["probe_calls"] for o in report["findings"] + report["controls"])
    skipped = sum(o.get("calls", 0) for o in report["skipped"])  # ratio's probe calls, until it raised
    assert (f"cost: {runs + probes + skipped:,} calls of the entry points: {runs:,} the audits' runs (at most 3,000 a "
            f"case, --max-runs;") in text
    assert f" and {probes:,} beyond --max-runs, the probe calls " in text and f", and {skipped} by the skipped" in text
    assert "the rest the scan's own start (importing and listing the target" in text


def test_each_finding_line_names_its_bound_how_it_was_refuted_and_its_folder(scanned):
    text, report, _ = scanned
    for finding in report["findings"]:
        how = ("through the output's floating-point bits" if finding["refuting_test"] == "float"
               else "through the output's values")
        assert (f"  finding: {finding['id']}: {finding['claim']} refuted, certified ε ≥ "
                f"{finding['epsilon_lower_bound']:.3g} {how} (") in text
        assert f"{finding['folder']})" in text
    assert any(f["id"] == "newcomer.fast_count(epsilon=1.0) / ends" for f in report["findings"])


def test_each_skipped_row_says_what_to_do_and_one_reason_is_said_once(scanned):
    text, _, markdown = scanned
    assert ("  skipped: newcomer.count_budget: unknown signature: no parameter 'epsilon' or 'eps'; next: the scan "
            "reads the claim from a parameter named epsilon (a user's module: epsilon or eps; and delta, for (ε, δ)-DP); "
            "a docstring or decorator is not read") in text
    # The reason says what to rename: seed, to rng if it takes a numpy Generator, to random_state if an integer seed.
    assert ("  skipped: newcomer.laplace_count: unknown signature: required parameter(s) seed the profile gives no "
            "value: if seed takes a numpy Generator, rename it rng or generator, or annotate it numpy.random.Generator; "
            "if it takes an integer seed, rename it random_state; next:") in text
    assert ("the audit's numpy Generator as rng (or generator, a parameter annotated numpy.random.Generator, or the "
            "one parameter named like a generator: gen, random_generator)") in text
    # Both grid points of ratio raise for the same reason: one row, naming both, the pair's databases once.
    assert ("  skipped: newcomer.ratio(epsilon=0.1) / ends, newcomer.ratio(epsilon=1.0) / ends: the call raised "
            "ValueError on the first database: cannot take a ratio with a zero; next: the pair's databases were "
            "a = [0, 0, 0] (the first) and b = [10, 0, 0]; a DP entry point must return a release") in text
    assert text.count("cannot take a ratio with a zero") == 1
    assert "then scan it again with --only 'newcomer.ratio'" in markdown
    assert "## Skipped (4)" in markdown  # cases and entry points, as the terminal counts them, in three rows


def test_a_finding_says_its_counts_roles_its_symbols_and_its_meaning_once(scanned):
    _, report, markdown = scanned
    (exact,) = [f for f in report["findings"] if f["id"] == "newcomer.exact_sum(epsilon=1.0) / ends"]
    section = markdown.split("### newcomer.exact\\_sum(epsilon=1.0)")[1].split("###")[0]
    first = "a" if "first input a" in exact["event"] else "b"
    second = "b" if first == "a" else "a"
    (h1, h2), (n1, n2) = exact["hits"], exact["runs_per_input"]
    assert f"(E held in {h1} of {n1} certification runs on {first} and in {h2} of {n2} on {second}" in section
    assert "a = \\[0, 0, 0\\], b = \\[10, 0, 0\\]" in section
    # No noise: the sum is 0 on a and 10 on b in every run, said once, as the advice, not again in the event.
    assert "what it means: the output never varied: y = 0 in all" in section
    assert "add random noise drawn from rng" in section
    assert section.count("y = 0 in") == 1 and "seen under one input only" not in section
    assert "the pair of prior 0 of Θ" not in section and "neighbouring databases differ in" not in section
    assert "where y is the entry point's output; E is the event the test chose on the MI sample" in section
    symbol = "ψ̲" if exact["certificate"] == "odds-ratio" else "ρ̲"
    assert section.count(f"where {symbol} is a lower bound, certified at the test's α") == 1
    (fast,) = [f for f in report["findings"] if f["id"] == "newcomer.fast_count(epsilon=1.0) / ends"]
    fast_section = markdown.split("### newcomer.fast\\_count(epsilon=1.0)")[1].split("###")[0]
    assert fast["refuting_test"] == "event"
    assert "what it means: the output's values, not only their float bits, tell neighbouring databases apart" \
        in fast_section
    assert "Not refuted within each case's runs, which proves no privacy" in markdown
    assert "dp:1.0:1e-05 is (1, 1e-05)-DP" in markdown


LAPLACE = '''
import numpy as np


def laplace_count(array, epsilon=1.0, random_state=None):
    rng = np.random.default_rng(random_state)
    return float(np.sum(np.asarray(array) >= 5) + rng.laplace(0.0, 1.0 / epsilon))
'''


def test_a_float_bit_finding_reproduces_its_float_event_without_miaudit(plant, tmp_path, capsys):
    """A Laplace count at ε = 1 on a = [0, 0, 0] vs b = [10, 0, 0]: b's outputs are 1 ⊕ L, a's are L itself. For
    |L| < 1/2 (probability 1 − e^(−1/2) = 0.39) L's significand is finer than 2⁻⁵³, the spacing of L − 1 in
    [−1.5, −0.5), so the round trip (L − 1) + 1 loses bits and differs from L; on b, y − 1 and + 1 are exact
    where y ∈ [1/2, 2] (Sterbenz) and y ⊖ 1 ⊕ 1 = y elsewhere too, y holding no bit below the grid of 1 ⊕ L.
    So the event holds on about 39% or more of a's runs and on none of b's (Mironov 2012, Section 3)."""
    from types import SimpleNamespace

    from audit.scan.case_audit import _described, list_cases
    from audit.scan.report import REPRODUCE_RUNS, finding_files

    path = plant("laplace_newcomer", LAPLACE)
    _, cases = list_cases(str(path), (1.0,))
    (case,) = [c for c in cases if c.pair.family == "ends"]
    outcome = {**_described(case, 0), "refuting_test": "float"}
    files = finding_files(outcome, SimpleNamespace(target=str(path), version="(a user's module)"))
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    capsys.readouterr()
    runpy.run_path(str(tmp_path / "reproduce.py"), run_name="__main__")
    printed = capsys.readouterr().out
    assert "the finding's event reads the output's floating-point bits, which the threshold event above does not" \
        in printed
    line = next(line for line in printed.splitlines() if line.startswith("number 0: event '(y - c) + c != y, c = 1'"))
    counted = re.search(r": (\d+) of (\d+) runs on the first database, (\d+) on the second;", line)
    first, runs, second = (int(n) for n in counted.groups())
    assert runs == REPRODUCE_RUNS
    assert second == 0 and first >= 0.3 * REPRODUCE_RUNS, line
    assert f"log-ratio {math.log(first):.3f} (a count of 0 read as 1)" in line


def test_a_skipped_row_of_each_kind_says_its_next_step():
    from audit.scan.words import skipped_step

    assert skipped_step("import error: ModuleNotFoundError: No module named 'missing'", "broken") == (
        "next: the module could not be imported, so none of its entry points was listed: install what it imports "
        "(pip install ...) or fix the error, check that `python -c 'import broken'` works from this folder, then "
        "scan again")
    assert skipped_step("hangs or exits: entry point m.f did not return within 60 s on the first database", "m.f") \
        .startswith("next: if a call is meant to take this long, give it more with --timeout S;")
    assert "give it the runs the reason names with --max-runs N (and scan only it with --only 'm.f'" in \
        skipped_step("cannot refute within its 6000 runs (--max-runs, else its family's max_runs): ...", "m.f")
    assert skipped_step("the call raised MemoryError ...", "m.f").startswith("next: allow it more memory with "
                                                                             "--memory-limit SIZE")
    assert skipped_step("releases a function (objective perturbation)", "m.Vector") == ""  # its reason says it all


#: A dict release: 'sum' is the records' sum (0 on a = [0, 0, 0], 10 on b = [10, 0, 0]) plus Laplace noise of scale
#: 10/ε, ε-DP in real arithmetic (sensitivity 10, Dwork et al. 2006) but not in float64, where s ⊕ L on s = 10 lies on
#: other grids than L itself (Mironov 2012); 'zeros' has the same law on both databases. So the claim can be refuted
#: through the bits of 'sum' alone.
DICT_RELEASE = '''
import numpy as np


def leak(db, rng, epsilon=1.0):
    return {"zeros": 5.0 + rng.laplace(0.0, 10.0 / epsilon), "sum": float(np.sum(db[:, 0])) + rng.laplace(0.0, 10.0 / epsilon)}
'''


def test_a_dict_releases_float_finding_names_its_key_in_the_finding_line(plant):
    import sys

    from audit.scan.running import scan
    from audit.scan.words import finding_line

    path = plant("dict_release", DICT_RELEASE)
    sys.modules.pop("dict_release", None)
    try:
        result = scan(str(path), epsilons=(1.0,), max_runs=6000, timeout=60, seed=0, in_process=True)
    finally:
        sys.modules.pop("dict_release", None)
    (finding,) = result.findings
    assert result.in_workers is False  # what the cost line reads
    assert finding["refuting_test"] == "float" and finding["bit_parts"] == ["y{'sum'}"]
    assert finding_line(finding, "findings/01") == (
        f"  finding: dict_release.leak(epsilon=1.0) / ends: dp:1.0 refuted, certified ε ≥ "
        f"{finding['epsilon_lower_bound']:.3g} through the floating-point bits of the output's y{{'sum'}} (findings/01)")
    # A finding of one number names no part: the line is as before.
    plain = dict(finding, bit_parts=None)
    assert "through the output's floating-point bits (findings/01)" in finding_line(plain, "findings/01")


def _result(seconds: float, outcomes: list, side_by_side: int, resumed: int = 0, in_workers: bool = True):
    from audit.scan.running import ScanResult

    settings = {"max_runs": 100, "resumed_cases": resumed}
    return ScanResult("mod", "(a user's module)", 0.05, len(outcomes), outcomes, [], settings, seconds,
                      side_by_side=side_by_side, in_workers=in_workers)


def test_the_cost_line_of_cases_audited_side_by_side_does_not_take_their_seconds_from_the_scan_s():
    from audit.scan.words import cost_words

    case = {"status": "control", "runs": 100, "probe_calls": 4, "seconds": 30.0, "cpu_seconds": 20.0}
    # Two cases of 30 s each, 2 at a time, in a scan of 40 s: 60 s of audits, more than the scan's 40 s.
    text = cost_words(_result(40.0, [dict(case), dict(case)], side_by_side=2))
    assert "208 calls of the entry points: 200 the audits' runs" in text and "8 beyond --max-runs" in text
    assert ("40 s in all, the scan's own start included (importing and listing the target, starting its worker "
            "processes); the cases' audits took 60.0 s summed over the cases, up to 2 at a time (40.0 s of CPU)") in text
    assert "the rest" not in text
    kept = cost_words(_result(40.0, [dict(case), dict(case)], side_by_side=1, resumed=1))
    assert "60.0 s summed over the cases, 1 case of them kept from the state file, timed as they ran then" in kept
    # One at a time, none kept: the audits' seconds are a part of the scan's, the rest its own start.
    one = cost_words(_result(70.0, [dict(case), dict(case)], side_by_side=1))
    assert "70 s in all: 60.0 s auditing the cases (40.0 s of CPU), the rest the scan's own start" in one
    assert one.endswith("(importing and listing the target, starting its worker process)")
    # In this process (--in-process) no worker process was started: the line does not say one was.
    here = cost_words(_result(70.0, [dict(case), dict(case)], side_by_side=1, in_workers=False))
    assert here.endswith("the rest the scan's own start (importing and listing the target; the cases ran in this "
                         "process, --in-process)")


def test_a_raise_s_next_step_says_where_databases_too_wide_to_show_are_and_a_setting_s_default():
    from audit.scan.words import skipped_step

    wide = {"first": [[0, 0], [1, 1]], "second": [[0, 0], [1, 2]]}
    step = skipped_step("the call raised ValueError on the first database: Model is not configured", "lib.Model", wide)
    assert step.startswith("next: the pair's databases were a = 2 records of 2 attributes (the first) and b = 2 "
                           "records of 2 attributes (in scan.json: the case's first and second); ")
    assert "(one that raises whatever the data, as for a setting it lacks, needs that setting's default to work)" in step
    narrow = skipped_step("the call raised ValueError on the first database: zero", "m.f", {"first": [0], "second": [1]})
    assert "in scan.json" not in narrow and "a = [0] (the first) and b = [1];" in narrow
