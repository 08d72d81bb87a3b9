"""``audit.gating.assertions.assert_claim`` and the pytest plugin (audit.pytest_plugin): the α split, the summary
line, the failure message and its reproducing command."""

from __future__ import annotations

import re

import numpy as np
import pytest

from audit.pytest_plugin import summary_line
from audit.gating.assertions import ClaimRefuted, assert_claim, bonferroni_share
from estimators.validation import InputError
from mechanisms.catalog import get_entry

pytest_plugins = ("pytester",)


def _pairs(name):
    pair = get_entry(name).pairs[0]
    return [(pair.first, pair.second)]


def test_a_correct_mechanism_passes_and_a_buggy_one_fails_with_event_counts_certificate_and_command():
    laplace = get_entry("laplace_sum")
    audit = assert_claim(laplace.mechanism, "dp:1", pairs=_pairs("laplace_sum"), max_runs=6000, seed=1)
    assert not audit.refuted and audit.runs <= 6000
    buggy = get_entry("histogram_buggy")
    with pytest.raises(ClaimRefuted) as first:
        assert_claim(buggy.mechanism, "dp:0.5", pairs=_pairs("histogram_buggy"), max_runs=6000, seed=2)
    message = str(first.value)
    for part in ("REFUTED at α = 0.01", "event:", "counts:", "certificate:", "reproduce: assert_claim(", "seed=2"):
        assert part in message
    hits = re.search(r"counts: E held in (\d+) of (\d+) runs on ([ab]), (\d+) of (\d+) on ([ab])\n", message)
    event = first.value.audit.result.event_test
    # Each count names its database as the event's line does: the event's first input (a or b) first.
    first_input = event.event["first_input"]
    assert (hits[3], hits[6]) == (first_input, "b" if first_input == "a" else "a"), hits[0]
    assert f"first input {first_input}, second {hits[6]}" in message
    hits = [None, hits[1], hits[2], hits[4], hits[5]]
    assert int(hits[1]) == round(event.p_first * int(hits[2])) and int(hits[3]) == round(event.p_second * int(hits[4]))
    with pytest.raises(ClaimRefuted) as again:  # deterministic for the seed (times aside)
        assert_claim(buggy.mechanism, "dp:0.5", pairs=_pairs("histogram_buggy"), max_runs=6000, seed=2)
    assert str(again.value) == message


def _sum_with_laplace(dbs, rng):
    """The records' sum plus Laplace(1): values in [0, 1], so 1-DP under add/remove (one record moves the sum
    by at most 1; Dwork and Roth 2014, Theorem 3.6)."""
    return dbs.sum(axis=1) + rng.laplace(scale=1.0, size=(dbs.shape[0], dbs.shape[2]))


def test_relation_passes_through_to_add_remove_pairs():
    # Add/remove neighbours: three records against the same without one (n and n − 1 rows).
    pairs = [(np.ones((3, 1)), np.ones((2, 1)))]
    audit = assert_claim(_sum_with_laplace, "dp:1", pairs=pairs, relation="add-remove", max_runs=6000, seed=4)
    assert audit.result.claim["relation"] == "add-remove" and not audit.refuted
    with pytest.raises(ClaimRefuted, match="does not meet"):
        assert_claim(_sum_with_laplace, "dp:0.2", pairs=pairs, relation="add-remove", max_runs=6000, seed=4)
    # A replace-one claim says nothing about add/remove neighbours: refused, not guessed.
    with pytest.raises(InputError, match="relation|replace"):
        assert_claim(_sum_with_laplace, "dp:1", pairs=pairs, relation="replace-one", max_runs=6000)


@pytest.mark.parametrize("kwargs, match", [
    (dict(relation="swap"), "relation"),
    (dict(pairs=None), "pairs"),
    (dict(pairs=[(1, 2, 3)]), "pairs"),
])
def test_bad_arguments_get_one_clear_error(kwargs, match):
    arguments = dict(pairs=_pairs("laplace_sum"), max_runs=6000) | kwargs
    with pytest.raises(InputError, match=match):
        assert_claim(get_entry("laplace_sum").mechanism, "dp:1", **arguments)


def test_bonferroni_share_and_summary_line():
    assert bonferroni_share(0.03, 3) == pytest.approx(0.01)
    with pytest.raises(InputError):
        bonferroni_share(0.03, 0)
    state = {"alpha": 0.02, "tests": 4, "passed": 3, "failed": 1, "errors": 0, "runs": 1234}
    assert summary_line(state).startswith("miaudit: 4 privacy checks at α = 0.005 each (4 collected, session α = 0.02")
    assert summary_line({**state, "passed": 0, "failed": 0}) is None


SUITE = '''
import pytest
from mechanisms.catalog import get_entry

def _case(name):
    entry = get_entry(name)
    return entry.mechanism, [(entry.pairs[0].first, entry.pairs[0].second)]

@pytest.mark.parametrize("seed", [1, 2])
def test_correct(assert_claim, seed):
    mechanism, pairs = _case("laplace_sum")
    assert_claim(mechanism, "dp:1", pairs=pairs, seed=seed)

def test_buggy(assert_claim):
    mechanism, pairs = _case("histogram_buggy")
    assert_claim(mechanism, "dp:0.5", pairs=pairs, seed=3)

def test_twice(assert_claim):
    mechanism, pairs = _case("laplace_sum")
    assert_claim(mechanism, "dp:1", pairs=pairs)
    assert_claim(mechanism, "dp:1", pairs=pairs)

def test_without_the_fixture():
    pass
'''


@pytest.mark.integration  # runs pytest sessions (in process; the marker check counts them as processes)
def test_plugin_splits_the_session_alpha_over_the_collected_checks_and_prints_one_line(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "audit.pytest_plugin", "--miaudit-alpha=0.04", "--miaudit-max-runs=6000",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=2)
    # Four collected tests use the fixture: each checks at 0.04 / 4.
    result.stdout.fnmatch_lines(["*miaudit: 4 privacy checks at α = 0.01 each (4 collected, session α = 0.04, "
                                 "Bonferroni): 3 passed, 1 refuted, 0 errors*at most 0.04"])
    result.stdout.fnmatch_lines(["*called twice in one test*"])
    text = result.stdout.str()
    command = re.search(r"reproduce: pytest '([^']+)' -p audit.pytest_plugin --miaudit-alpha=(\S+)", text)
    assert command and command[1].endswith("test_suite.py::test_buggy") and float(command[2]) == 0.01
    failure = re.search(r"counts: .*", text)[0]
    # The command reproduces the failure: run alone, the test gets the whole α it names.
    again = pytester.runpytest(command[1], "-p", "audit.pytest_plugin", f"--miaudit-alpha={command[2]}",
                               "--miaudit-max-runs=6000", "-p", "no:cacheprovider")
    again.assert_outcomes(failed=1)
    assert failure in again.stdout.str()
    again.stdout.fnmatch_lines(["*miaudit: 1 privacy check at α = 0.01 each (1 collected*"])


def test_equal_or_far_pairs_are_refused_with_the_message_of_the_cli(tmp_path):
    from mechanisms.inputs.pair_files import pair_from_files

    mechanism = get_entry("laplace_sum").mechanism
    first = np.zeros((3, 2))
    two_changed = first.copy()
    two_changed[:2, 0] = 1.0
    for second, words in ((first.copy(), "the two databases are equal; a neighbouring pair differs in one record"),
                          (two_changed, "the databases differ in records [0, 1]")):
        np.save(tmp_path / "a.npy", first)
        np.save(tmp_path / "b.npy", second)
        with pytest.raises(InputError) as cli:
            pair_from_files(tmp_path / "a.npy", tmp_path / "b.npy", "--pair")
        with pytest.raises(InputError) as api:
            assert_claim(mechanism, "dp:1", pairs=[(first, second)], max_runs=6000)
        assert words in str(cli.value) and str(cli.value).startswith("argument '--pair': ")
        assert str(api.value) == str(cli.value).replace("'--pair'", "'pairs[0]'")


def _noisy_sum_record(db, rng):
    """One database's column sums plus Laplace(1/ε) noise, as a dict: ε-DP for records in [0, 1]
    (Dwork and Roth 2014, Theorem 3.6), with ε = 1."""
    return {"sums": db.sum(axis=0) + rng.laplace(scale=1.0, size=db.shape[1])}


def _exact_count(db, rng):
    """The number of ones, released exactly: no ε-DP for any ε."""
    return {"count": int(db.sum())}


def test_per_database_functions_are_audited_as_the_cli_audits_them():
    first = np.zeros((3, 1))
    second = first.copy()
    second[0, 0] = 1.0
    with pytest.raises(ClaimRefuted, match="reproduce: assert_claim\\(_exact_count, 'dp:1', pairs=..., "
                                           "per_database=True"):
        assert_claim(_exact_count, "dp:1", pairs=[(first, second)], per_database=True, max_runs=6000, seed=5)
    # Without the switch, the same function is called as a batched mechanism and fails as one.
    with pytest.raises(Exception) as batched:
        assert_claim(_exact_count, "dp:1", pairs=[(first, second)], max_runs=6000, seed=5)
    assert not isinstance(batched.value, ClaimRefuted)
    with pytest.raises(InputError, match="argument 'mechanism' is not a function: per_database=True needs .*got the class dict"):
        assert_claim(dict, "dp:1", pairs=[(first, second)], per_database=True)
    with pytest.raises(InputError, match="per_database"):
        assert_claim(_exact_count, "dp:1", pairs=[(first, second)], per_database="yes")


SHORT = '''
import numpy as np

def exact_sum(dbs, rng):
    return dbs.sum(axis=1)

def test_exact_sums(assert_claim):
    first = np.zeros((3, 1))
    second = first.copy()
    second[0, 0] = 1.0
    assert_claim(exact_sum, "dp:1", pairs=[(first, second)], seed=1)

def test_equal_databases(assert_claim):
    first = np.zeros((3, 1))
    assert_claim(exact_sum, "dp:1", pairs=[(first, first.copy())])

def broken(dbs, rng):
    raise ValueError("no noise today")

def test_broken_function(assert_claim):
    first = np.zeros((3, 1))
    second = first.copy()
    second[0, 0] = 1.0
    assert_claim(broken, "dp:1", pairs=[(first, second)])
'''


def _failure_sections(text: str) -> dict:
    """The FAILURES part of a pytest report, split at the ``____ name ____`` headers."""
    body = text.split("= FAILURES =", 1)[1].split("short test summary info", 1)[0]
    sections = re.split(r"^_{3,} (\S+) _{3,}$", body, flags=re.M)
    return {name: [line for line in block.strip("\n").splitlines()] for name, block in
            zip(sections[1::2], sections[2::2])}


@pytest.mark.integration  # runs a pytest session (in process)
def test_a_failing_check_is_at_most_25_lines_led_by_the_verdict(pytester):
    written = pytester.makepyfile(test_short=SHORT)
    raising_line = written.read_text().splitlines().index('    raise ValueError("no noise today")') + 1
    result = pytester.runpytest("-p", "audit.pytest_plugin", "--miaudit-max-runs=6000", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    sections = _failure_sections(result.stdout.str())
    refuted, refused, broken = (sections[name] for name in ("test_exact_sums", "test_equal_databases",
                                                             "test_broken_function"))
    for lines in (refuted, refused, broken):
        assert len(lines) <= 25, "\n".join(lines)
        # Neither the plugin's nor assert_claim's code is shown: the test's own line, then the error.
        assert not any("def assert_claim" in line or "def bound" in line or "claim_spec" in line for line in lines)
    errors = [line for line in refuted if line.startswith("E ")]
    # Three collected checks share the session's default α = 0.01: each at 0.01 / 3.
    assert errors[0].startswith("E       audit.ClaimRefuted: exact_sum does not meet 1-DP: REFUTED at α = 0.00333333, ε ≥ ")
    assert " certified (look 1 of a sequential audit" in errors[0]
    for part in ("E         event: ", "E         counts: ", "E         certificate: ",
                 "E         reproduce: pytest 'test_short.py::test_exact_sums'"):
        assert any(line.startswith(part) for line in errors), part
    assert [line for line in refused if line.startswith("E ")] == [
        "E       estimators.validation.InputError: argument 'pairs[0]': the two databases are equal; a neighbouring "
        "pair differs in one record"]
    assert [line for line in broken if line.startswith("E ")] == [
        "E       mechanisms.errors.MechanismError: mechanism 'broken' raised ValueError on database 0: no noise today "
        f"(at test_short.py line {raising_line}, in broken)"]


def _exact_sums(dbs, rng):
    """Each database's column sums, released exactly: no ε-DP for any ε."""
    return dbs.sum(axis=1)


@pytest.mark.parametrize("as_object", [False, True])
def test_an_equal_pair_fails_loudly_instead_of_passing_exact_sums(as_object):
    # Issue 43 §1: two equal databases give the audit no power, so a pair (Z, Z.copy()) passed a
    # mechanism that releases exact sums at dp:0.1. It must be refused, never pass.
    from mechanisms.inputs.neighbouring_pair import NeighbouringPair

    database = np.random.default_rng(0).integers(0, 2, size=(5, 2)).astype(float)
    pair = (database, database.copy())
    pairs = [NeighbouringPair(*pair)] if as_object else [pair]
    with pytest.raises(InputError, match=r"^argument 'pairs\[0\]': the two databases are equal"):
        assert_claim(_exact_sums, "dp:0.1", pairs=pairs, max_runs=14000, seed=0)
    # The same databases one record apart: refuted at the first look.
    changed = database.copy()
    changed[0] = 1.0 - changed[0]
    with pytest.raises(ClaimRefuted):
        assert_claim(_exact_sums, "dp:0.1", pairs=[(database, changed)], max_runs=14000, seed=0)


XDIST_SUITE = '''
import math

import numpy as np
import pytest

FIRST = np.zeros((3, 2))
SECOND = FIRST.copy()
SECOND[0, 1] = 1.0


def histogram(epsilon):
    """Counts per column plus two-sided geometric noise: epsilon-DP for records in {0, 1}."""
    p = 1 - math.exp(-epsilon)

    def mechanism(dbs, rng):
        shape = (dbs.shape[0], dbs.shape[2])
        return dbs.sum(axis=1) + rng.geometric(p, shape) - rng.geometric(p, shape)
    return mechanism


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_correct(assert_claim, seed):
    assert_claim(histogram(1.0), "dp:1", pairs=[(FIRST, SECOND)], seed=seed)


def test_buggy(assert_claim):
    assert_claim(histogram(4.0), "dp:1", pairs=[(FIRST, SECOND)], seed=4)
'''


@pytest.mark.integration  # a pytest session with two xdist worker processes
def test_under_xdist_the_controller_prints_the_summary_of_all_workers(pytester, monkeypatch):
    from pathlib import Path

    pytest.importorskip("xdist")
    # The workers are new processes: they import this checkout's miaudit.
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    pytester.makepyfile(test_suite=XDIST_SUITE)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "audit.pytest_plugin", "--miaudit-alpha=0.04",
                                           "--miaudit-max-runs=6000", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    lines = [line for line in result.stdout.lines if line.startswith("miaudit: ")]
    # One line, on the controller, with every worker's checks: four collected, each at 0.04 / 4.
    assert len(lines) == 1, result.stdout.str()
    assert lines[0].startswith("miaudit: 4 privacy checks at α = 0.01 each (4 collected, session α = 0.04, "
                               "Bonferroni): 3 passed, 1 refuted, 0 errors, ")
    runs = int(re.search(r"(\d+) mechanism runs", lines[0])[1])
    assert 6000 < runs <= 4 * 6000  # the runs of several checks (at most 6000 each) added up


def test_a_float_bug_fails_with_the_float_bit_tests_event_and_counts():
    # rng.laplace added to an exact count: 1-DP in real arithmetic, refuted through its float bits (Mironov 2012)
    # by the float-bit event test alone; the failure shows that test's event, counts and certified ε.
    from audit.gating.assertions import ClaimRefuted, assert_claim

    def float_laplace_count(dbs, rng):
        return dbs[:, :, 0].sum(axis=1, keepdims=True) + rng.laplace(0.0, 1.0, (len(dbs), 1))

    zeros, one = np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]])
    with pytest.raises(ClaimRefuted) as caught:
        assert_claim(float_laplace_count, "dp:1", pairs=[(zeros, one)], seed=0)
    result = caught.value.audit.result
    assert [r["test"] for r in result.refuted_by] == ["float"]
    float_event = result.float_event_test
    message = str(caught.value)
    assert f"ε ≥ {float_event.epsilon_lower_bound:.4g} certified" in message.splitlines()[0]
    assert f"  event: {float_event.description}" in message


DYNAMIC_SUITE = '''
import pathlib
import types

import audit.gating.assertions as assertions

LEVELS = pathlib.Path(__file__).with_name("levels.txt")


def record(mechanism, claim, *, alpha, **rest):
    """In place of the check: the level the fixture gives it, written down."""
    with LEVELS.open("a", encoding="utf-8") as handle:
        handle.write(f"{alpha!r}\\n")
    return types.SimpleNamespace(runs=0)


assertions.assert_claim = record  # the fixture imports it at each call


def test_argument(assert_claim):
    assert_claim(None, "dp:1")


def test_requested_at_run_time(request):
    request.getfixturevalue("assert_claim")(None, "dp:1")
'''


@pytest.mark.integration  # runs a pytest session (in process)
def test_checks_of_a_session_spend_at_most_its_alpha_when_a_test_requests_the_fixture_at_run_time(pytester):
    # The levels every check of the session is given, read from the checks' calls, summed and compared with the
    # session's α: a test that asks for the fixture by request.getfixturevalue is not among those counted at
    # collection, and must not get a level of its own on top of the split.
    pytester.makepyfile(test_dynamic=DYNAMIC_SUITE)
    result = pytester.runpytest("-p", "audit.pytest_plugin", "--miaudit-alpha=0.04", "-p", "no:cacheprovider")
    levels_file = pytester.path / "levels.txt"
    levels = [float(line) for line in levels_file.read_text(encoding="utf-8").split()] if levels_file.exists() else []
    assert sum(levels) <= 0.04 * (1 + 1e-12), f"the session's checks were given levels {levels}, above α = 0.04"
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*getfixturevalue*counted*"])
