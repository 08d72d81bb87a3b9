"""Robustness round three (issue 43): scripted hostile input over the surfaces added this round — the
scanner's target and flags, and the spellings of the audit's --domain, --arithmetic, --statistic, --relation and
--max-runs. NaN and hostile pair files, k-row relations with malformed pairs, domains that contradict the pair,
user statistics that fail and scan targets that misbehave at import are in tests/test_hostile_round3_inputs.py.

Every case must end in one line on stderr naming the argument (or the user function) with exit
status 2 (bad input) or 1 (a user function that fails), before any mechanism runs where the input
alone is wrong. The cases are generated from small tables of hostile values per flag; the count is
checked (at least 300 here, as many there, 700 in all) so the round cannot shrink unnoticed.
"""

from __future__ import annotations

import itertools

import pytest

from audit.cli.main import main

#: Hostile spellings of a number, for any flag that takes one.
BAD_NUMBERS = ("", " ", "nan", "NaN", "inf", "-inf", "1e400", "-1", "0x10", "1_0", "one", "1,2", "--", "１", "1e",
               "+-1", ".", "-0.5e-400x")
#: Hostile spellings of a positive integer.
BAD_INTEGERS = BAD_NUMBERS + ("0", "1.5", "-0")
#: Hostile spellings of a comma-separated list of numbers.
BAD_LISTS = ("", ",", "1,,2", "0.1;1", "a,b", "1,nan", "inf", "0,1", "-1,1", "1e400", " , ", "1,2,")


def _one_line(argv, capsys, statuses=(2,)) -> str:
    """The one stderr line of a failing command (exit status in ``statuses``)."""
    try:
        status = main(argv)
    except SystemExit as stop:
        status = stop.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line and not line.startswith("usage:") and not line.startswith(" ")]
    assert status in statuses, (argv, status, err)
    assert len(lines) == 1 and "Traceback" not in err, (argv, err)
    return lines[0]


SCAN_TARGETS = ("nonexistent_lib_xyz", "no_such.module", "./missing.py", "", "a b", "diffprivlib.nonexistent",
                "../../etc/passwd.py", "x.py:fn", ":", "-", "audit..scan", "1abc", "\x00")
SCAN_FLAG_VALUES = [("--max-runs", value) for value in BAD_INTEGERS] + \
                   [("--timeout", value) for value in BAD_NUMBERS + ("0",)] + \
                   [("--alpha", value) for value in BAD_NUMBERS + ("0", "1", "1.5")] + \
                   [("--epsilons", value) for value in BAD_LISTS] + \
                   [("--seed", value) for value in ("-1", "1.5", "x", "")] + \
                   [("--workers", value) for value in BAD_INTEGERS + ("Auto", "auto,2", "99999")] + \
                   [("--backend", value) for value in ("", "spark", "RAY", "local,ray", "ray ")] + \
                   [("--memory-limit", value) for value in ("", "0", "-1", "1e400", "2X", "nan", "one", "1G2", "inf",
                                                            "0M", "１G", "NONE?", "63M")] + \
                   [("--ray-address", value) for value in ("localhost:6379", "auto")]

SCAN_CASES = [(["scan", target], "target") for target in SCAN_TARGETS] + \
             [(["scan", target, flag, value], flag) for target in ("diffprivlib", "json")
              for flag, value in SCAN_FLAG_VALUES]


@pytest.mark.parametrize("argv,named", SCAN_CASES)
def test_hostile_scan_input_is_one_line_naming_the_argument(argv, named, capsys, tmp_path):
    line = _one_line([*argv, "--out", str(tmp_path / "scan"), "--quiet"], capsys)
    assert named in line, line


MECHANISMS = ("catalog:laplace_sum", "catalog:histogram_buggy", "catalog:randomized_response")
BAD_DOMAINS = ("", ",", "1", "a,b", "1,0", "nan,1", ";", "1e400,2", "0,1;2", "missing.txt",
               "0,1,2", " ", "1;2", "0,1;a,b", "(0,1)")
BAD_RELATIONS = ("", "add", "replace", "add-remove:0", "k", "ADD-REMOVE", "replace one")
BAD_ARITHMETIC = ("", "Float", "ideal,float", "exact", "real")
BAD_STATISTICS = ("x.py", "missing.py:fn", ":", "fn", "a.py:", "", "x.py:1fn")

AUDIT_CASES = [(["audit", "--mechanism", mechanism, "--samples", "400", flag, value], flag)
               for mechanism in MECHANISMS
               for flag, values in (("--domain", BAD_DOMAINS), ("--arithmetic", BAD_ARITHMETIC),
                                    ("--statistic", BAD_STATISTICS), ("--relation", BAD_RELATIONS),
                                    ("--max-runs", BAD_INTEGERS))
               for value in values]


@pytest.mark.parametrize("argv,named", AUDIT_CASES)
def test_hostile_audit_input_is_one_line_naming_the_flag(argv, named, capsys, tmp_path):
    line = _one_line([f"{argv[0]}", *argv[1:]], capsys)
    assert named in line, line


def test_the_round_has_at_least_300_cases():
    from test_hostile_round3_inputs import ALL_CASES as INPUT_CASES  # the round's other half: files, user code

    assert len(ALL_CASES) >= 300 and len(INPUT_CASES) >= 300, (len(ALL_CASES), len(INPUT_CASES))
    assert len(ALL_CASES) + len(INPUT_CASES) >= 700, len(ALL_CASES) + len(INPUT_CASES)


ALL_CASES = list(itertools.chain(SCAN_CASES, AUDIT_CASES))
