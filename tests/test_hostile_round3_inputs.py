"""Robustness round three (issue 43), inputs: NaN and hostile ``--pair`` files (and ``[[pairs]]``), k-row
relations with malformed pairs, declared domains that contradict the pair, a user's ``--statistic`` that
fails, and scan targets whose import or entry points misbehave.

An audit case ends in one stderr line naming the argument (or the user function) with exit status 2
(bad input) or 1 (a user function that fails), before any mechanism runs where the input alone is wrong
(:func:`test_hostile_round3._one_line`). A scan case ends with the report written and the misbehaving module
or entry point listed as skipped with its reason, stdout holding only the scan's JSON. The cases come from
small tables; their count joins the round's (``test_hostile_round3.ALL_CASES``).

A statistic raising ``KeyboardInterrupt`` where no Ctrl-C arrived is its failure, exit 1 (tests/test_hostile_round5.py).
A per-database function's statistic that hangs (inside the function's call, which ``--timeout`` bounds) is
tests/test_user_statistic.py's. Entry points that crash, hang, allocate, print or change globals
when called are tests/test_scan_workers.py's.
"""

from __future__ import annotations

import itertools
import json
import textwrap
from contextlib import redirect_stdout
from io import StringIO

import numpy as np
import pytest
from test_hostile_round3 import _one_line

from audit.cli.main import main

#: A per-database mechanism that reads a missing value as 0 and takes any shape: the audits that run use it.
MECHANISM = '''import numpy as np


def nan_sum(db, rng):
    return float(np.nansum(db) + rng.laplace(0.0, 4.0))
'''

ROW = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])


def _with(value, row=0, column=0, base=ROW):
    out = base.copy()
    out[row, column] = value
    return out


#: Named databases written as .npy files: (3, 2) unless the name says otherwise.
ARRAYS = {"base": ROW, "near": _with(1.0), "nan": _with(np.nan), "nan_far": _with(np.nan, 2, 1),
          "near_nan": _with(np.nan, 1, 1, _with(1.0)), "inf": _with(np.inf), "ninf": _with(-np.inf),
          "nan_inf": _with(np.inf, 1, 1, _with(np.nan)), "short": ROW[:2], "nan_short": _with(np.nan)[:2], "short_nan": _with(np.nan, 0, 0, ROW[:2]),
          "short_inf": _with(np.inf, 1, 1, ROW[:2]), "far2": _with(5.0, 1, 0, _with(5.0)),
          "far3": _with(5.0, 2, 0, _with(5.0, 1, 0, _with(5.0))), "wide": np.zeros((3, 3)),
          "empty_rows": np.zeros((0, 2)), "one_row": ROW[:1], "long": np.vstack([ROW, ROW]),
          "flat": ROW[:, 0], "big_values": _with(1e6), "negative": _with(-50.0)}


def _hostile_files(folder):
    """Files that are not a database: each refused naming ``--pair`` (or the ``[[pairs]]`` entry)."""
    import numpy.lib.format as npy_format

    (folder / "empty.npy").write_bytes(b"")
    (folder / "truncated.npy").write_bytes((folder / "base.npy").read_bytes()[:20])
    (folder / "text.npy").write_text("0,0\n1,1\n0,1\n")
    np.save(folder / "objects.npy", np.array([[{"a": 1}, None]] * 3, dtype=object), allow_pickle=True)
    np.save(folder / "strings.npy", np.array([["a", "b"]] * 3))
    np.save(folder / "complex.npy", ROW + 1j)
    np.save(folder / "scalar.npy", np.array(1.0))
    np.save(folder / "cube.npy", np.zeros((3, 2, 1)))
    np.save(folder / "bools.npy", np.zeros((3, 2), dtype=bool))
    np.save(folder / "records.npy", np.zeros(3, dtype=[("a", "f8"), ("b", "f8")]))
    with (folder / "huge.npy").open("wb") as handle:
        npy_format.write_array_header_1_0(handle, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 12, 2)})
        handle.write(b"\0" * 64)
    (folder / "folder.npy").mkdir()
    np.save(folder / "with,comma.npy", ROW)


HOSTILE_FILES = ("empty", "truncated", "text", "objects", "strings", "complex", "scalar", "cube", "bools",
                 "records", "huge", "folder", "missing", "flat")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile_inputs")
    for name, array in ARRAYS.items():
        np.save(folder / f"{name}.npy", array)
    _hostile_files(folder)
    (folder / "mechanism.py").write_text(MECHANISM)
    (folder / "statistics.py").write_text(STATISTICS)
    return folder


def _audit(files, *flags):
    return ["audit", "--mechanism", f"{files / 'mechanism.py'}:nan_sum", "--per-database", "--claim", "dp:1",
            "--samples", "400", "--quiet", *flags]


def _pair(files, first, second):
    return ["--pair", f"{files / first}.npy,{files / second}.npy"]


# -- 1. NaN pair files and hostile .npy files ---------------------------------------------------------

NAN_PAIRS = [("base", "nan"), ("nan", "base"), ("nan", "nan_far"), ("near_nan", "nan"), ("base", "short_nan")]
INF_PAIRS = [("base", "inf"), ("inf", "base"), ("base", "ninf"), ("ninf", "inf"), ("nan", "nan_inf"),
             ("nan_inf", "near"), ("base", "short_inf")]
#: A file name holding a comma: split where both readings name files, equal to base, or beside a missing file.
COMMA_PAIRS = (("with,comma", "base"), ("base", "with,comma"), ("with,comma", "missing"), ("missing", "with,comma"),
               ("with,comma", "with,comma"), ("with,comma", "with,missing"))
RELATIONS = ((), ("--relation", "add-remove"), ("--relation", "replace:2"))

PAIR_FILE_CASES = [(first, second, (), relation, ("--pair", "--allow-nan")) for first, second in NAN_PAIRS
                   for relation in RELATIONS] + \
                  [(first, second, flags, relation, ("--pair", "contains inf", ".npy") if flags else ("--pair",))
                   for first, second in INF_PAIRS for flags in ((), ("--allow-nan",)) for relation in RELATIONS] + \
                  [(first, second, flags, (), ("--pair", name) if name != "bools" else ("--pair",)) for name in HOSTILE_FILES
                   for first, second in (("base", name), (name, "base")) for flags in ((), ("--allow-nan",))] + \
                  [(first, second, (), (), ("--pair",)) for first, second in COMMA_PAIRS]


@pytest.mark.parametrize("first,second,flags,relation,named", PAIR_FILE_CASES)
def test_a_nan_inf_or_hostile_pair_file_is_one_line_naming_pair(first, second, flags, relation, named, files,
                                                                 capsys):
    line = _one_line(_audit(files, *_pair(files, first, second), *flags, *relation), capsys)
    assert all(word in line for word in named), line


def _config(files, first, second, allow_nan, inline=False):
    if inline:  # TOML writes nan and inf as numbers
        rows = [", ".join(f"[{', '.join(_toml(v) for v in row)}]" for row in ARRAYS[name]) for name in (first, second)]
        pair = f"first = [{rows[0]}]\nsecond = [{rows[1]}]"
    else:
        pair = f'first = "{first}.npy"\nsecond = "{second}.npy"'
    text = textwrap.dedent(f"""\
        [mechanism]
        spec = "mechanism.py:nan_sum"
        per_database = true
        [claim]
        spec = "dp:1"
        [audit]
        samples = 400
        allow_nan = {str(allow_nan).lower()}
        [[pairs]]
        """) + pair + "\n"
    path = files / f"config-{first}-{second}-{allow_nan}-{inline}.toml"
    path.write_text(text)
    return ["audit", str(path), "--quiet"]


def _toml(value):
    return "nan" if np.isnan(value) else ("inf" if value == np.inf else "-inf" if value == -np.inf else repr(float(value)))


CONFIG_CASES = [(first, second, False, inline, ("[[pairs]]", "allow")) for first, second in NAN_PAIRS[:4]
                for inline in (False, True)] + \
               [(first, second, allow, inline, ("[[pairs]]", "inf") if allow else ("[[pairs]]",))
                for first, second in INF_PAIRS[:6]
                for allow in (False, True) for inline in (False, True)] + \
               [("base", name, allow, False, ("[[pairs]]", name) if name != "bools" else ("[[pairs]]",))
                for name in HOSTILE_FILES[:12]
                for allow in (False, True)]


@pytest.mark.parametrize("first,second,allow_nan,inline,named", CONFIG_CASES)
def test_a_nan_inf_or_hostile_pairs_entry_is_one_line_naming_it(first, second, allow_nan, inline, named, files,
                                                                capsys):
    line = _one_line(_config(files, first, second, allow_nan, inline), capsys)
    assert all(word in line for word in named), line


@pytest.mark.parametrize("argv", [("base", "nan", ()), ("nan", "nan_short", ("--relation", "add-remove")),
                                  ("nan_far", "short", ("--relation", "add-remove"))])
def test_with_allow_nan_a_pair_with_nan_in_one_database_is_audited(argv, files, capsys):
    first, second, relation = argv
    assert main(_audit(files, *_pair(files, first, second), "--allow-nan", *relation, "--json")) == 0
    assert json.loads(capsys.readouterr().out)["claim"]


# -- 2. k-row relations with malformed pairs -----------------------------------------------------------

K_PAIRS = {1: [("base", "far2"), ("base", "far3"), ("base", "one_row"), ("long", "base")],
           2: [("base", "far3"), ("long", "base"), ("long", "one_row")],
           3: [("long", "one_row"), ("one_row", "long")]}
SHAPE_PAIRS = [("base", "wide"), ("wide", "short"), ("base", "flat"), ("base", "base"), ("near", "near"),
               ("empty_rows", "empty_rows"), ("empty_rows", "base"), ("one_row", "empty_rows")]

K_CASES = [(first, second, f"{kind}:{k}") for k, pairs in K_PAIRS.items() for first, second in pairs
           for kind in ("replace", "add-remove")] + \
          [(first, second, relation) for first, second in SHAPE_PAIRS
           for relation in ("replace-one", "add-remove", "replace:2", "add-remove:2", "replace:3", "add-remove:3")]


@pytest.mark.parametrize("first,second,relation", K_CASES)
def test_a_pair_beyond_its_relation_or_malformed_is_one_line_naming_pair(first, second, relation, files, capsys):
    line = _one_line(_audit(files, *_pair(files, first, second), "--relation", relation), capsys)
    assert "--pair" in line or "--relation" in line, line


MIXED = [(("base", "near"), ("base", "short")), (("base", "far2"), ("long", "base")),
         (("base", "short"), ("long", "one_row")), (("base", "near"), ("base", "wide")),
         (("base", "near"), ("base", "nan"))]


@pytest.mark.parametrize("pairs", MIXED)
@pytest.mark.parametrize("relation", ("replace-one", "add-remove", "replace:2", "add-remove:3"))
def test_several_pairs_of_mixed_relations_are_one_line_naming_pair(pairs, relation, files, capsys):
    flags = [flag for first, second in pairs for flag in _pair(files, first, second)]
    line = _one_line(_audit(files, *flags, "--relation", relation), capsys)
    assert "--pair" in line or "--relation" in line, line


# -- 3. declared domains that contradict the pair ----------------------------------------------------

DOMAIN_CASES = [(("base", "big_values"), "0,1"), (("base", "negative"), "0,1"), (("base", "near"), "2,3"),
                (("base", "near"), "0,0.5"), (("base", "near"), "0,1;0,1;0,1"), (("base", "near"), "0,1;0,1;0,1;0,1"),
                (("base", "near"), "0,1;5,6"), (("wide", "wide"), "0,1;0,1"), (("base", "big_values"), "-inf,1"),
                (("base", "near"), "0,1;0,0.5")]


@pytest.mark.parametrize("pair,domain", DOMAIN_CASES)
@pytest.mark.parametrize("relation", ((), ("--relation", "add-remove"), ("--relation", "replace:2")))
def test_a_domain_the_pair_contradicts_is_one_line_naming_it(pair, domain, relation, files, capsys):
    line = _one_line(_audit(files, *_pair(files, *pair), f"--domain={domain}", *relation), capsys)
    assert "--domain" in line or "--pair" in line, line


# -- 4. a user's statistic that fails -------------------------------------------------------------------

STATISTICS = '''import numpy as np

CALLS = []


def raises(y):
    raise ZeroDivisionError("no")


def matrix(y):
    return np.zeros((2, 2))


def changing(y):
    CALLS.append(1)
    return np.zeros(1 + len(CALLS) % 2)


def empty(y):
    return np.zeros(0)


def not_a_number(y):
    return float("nan")


def infinite(y):
    return float("inf")


def text(y):
    return "high"


def nothing(y):
    return None


def generator(y):
    return (v for v in np.ravel(y))


def exits(y):
    raise SystemExit(3)


def interrupts(y):
    raise KeyboardInterrupt


def deep(y):
    return deep(y)


def objects(y):
    return [object()]


def ragged(y):
    return [[1.0], [1.0, 2.0]]


def mapping(y):
    return {"a": 1.0}


def complex_value(y):
    return 1j


def huge(y):
    return 10 ** 400


def hangs(y):
    import time

    while True:
        time.sleep(0.05)


def not_callable_yet(y):
    return not_callable_yet


NOT_A_FUNCTION = 3
'''

#: (function, what its line names besides it)
STATISTIC_CASES = ("raises", "matrix", "changing", "empty", "not_a_number", "infinite", "text", "nothing",
                   "generator", "exits", "deep", "objects", "ragged", "mapping", "complex_value", "huge",
                   "not_callable_yet", "NOT_A_FUNCTION", "missing_name")


@pytest.mark.parametrize("name", STATISTIC_CASES)
def test_a_statistic_that_fails_is_one_line_naming_it(name, files, capsys):
    line = _one_line(_audit(files, *_pair(files, "base", "near"), "--statistic", f"{files / 'statistics.py'}:{name}"),
                     capsys, statuses=(1, 2))
    assert name in line and "statistic" in line, line




def test_a_statistic_that_hangs_on_the_outputs_is_bounded_by_timeout_and_named(files, capsys):
    # A catalog mechanism's outputs are read by the statistic after the runs, outside the mechanism's calls.
    line = _one_line(["audit", "--mechanism", "catalog:laplace_sum", "--samples", "400", "--quiet", "--timeout", "0.5",
                      "--statistic", f"{files / 'statistics.py'}:hangs"], capsys, statuses=(1,))
    assert "statistic" in line and "hangs" in line and "--timeout" in line, line


# -- 5. scan targets whose import or entry points misbehave ------------------------------------------

#: A module body that misbehaves as it is imported, and what the scan's skipped row says of it.
IMPORTS = {"raises_at_import": ('raise RuntimeError("no import")', "import error: RuntimeError: no import"),
           "hangs_at_import": ("import time\nwhile True:\n    time.sleep(0.05)", "did not end within 3 s"),
           "exits_at_import": ("import os\nos._exit(4)", "exited with code 4"),
           "sys_exits_at_import": ("import sys\nsys.exit(0)", "called sys.exit"),
           "interrupts_at_import": ("raise KeyboardInterrupt", "called sys.exit (or raised KeyboardInterrupt)"),
           "allocates_at_import": ("import numpy as np\nKEPT = [np.ones(2 ** 24) for _ in range(10 ** 6)]",
                                   "ran out of the memory"),
           "prints_at_import": ('print("printed at import")\nimport os\nos._exit(5)', "exited with code 5")}
ENTRY = "\n\n\ndef noisy(array, epsilon=1.0):\n    return float(sum(array))\n"

#: Entry points that misbehave when called, and what their skipped row says (test_scan_workers has those that
#: crash, hang, allocate, print and poison globals).
ENTRY_POINTS = {"gives_generator": ("return (v for v in array)", "is a generator"),
                "gives_huge_int": ("return 10 ** 400", "beyond float64's range"),
                "gives_itself": ("return gives_itself", "is a function"),
                "recurses": ("return recurses(array, epsilon)", "RecursionError"),
                # No Ctrl-C arrived (the case's process ignores SIGINT): the entry point's failure, named as for
                # GeneratorExit (mechanisms.calls.interrupts).
                "interrupts": ("raise KeyboardInterrupt", "raised KeyboardInterrupt on the first database (a "
                                                          "BaseException that is not an Exception"),
                "generator_exit": ("raise GeneratorExit", "raised GeneratorExit"),
                "exits": ("import sys\n    sys.exit(2)", "called sys.exit(2)"),
                "exits_process": ("import os\n    os._exit(6)", "called os._exit(6)"),
                "raises": ('raise ValueError("bad epsilon")', "ValueError on the first database: bad epsilon"),
                "needs_more": ("return float(sum(array)) + undefined_name", "NameError")}


def _scan(target, out, capsys, *flags):
    """The scan's JSON (stdout, nothing else on it) and its skipped rows, after asserting the report is written."""
    assert main(["scan", str(target), "--epsilons", "1", "--max-runs", "60000", "--timeout", "3", "--listing-timeout",
                 "3", "--memory-limit", "256M", "--out", str(out), "--json", *flags]) == 0
    payload = json.loads(capsys.readouterr().out)
    report = json.loads((out / "scan.json").read_text(encoding="utf-8"))
    assert (out / "scan.md").is_file() and payload["skipped"] == len(report["skipped"])
    return payload, {row.get("id", row.get("what")): row["reason"] for row in report["skipped"]}


@pytest.mark.integration  # a trial import in a forked child; one waits out --listing-timeout
@pytest.mark.parametrize("as_module", (False, True))
@pytest.mark.parametrize("name", sorted(IMPORTS))
def test_a_module_that_misbehaves_at_import_is_listed_as_skipped_and_the_report_written(name, as_module, tmp_path,
                                                                                       capsys, monkeypatch):
    body, reason = IMPORTS[name]
    (tmp_path / f"{name}.py").write_text(body + ENTRY)
    monkeypatch.syspath_prepend(str(tmp_path))
    payload, skipped = _scan(name if as_module else tmp_path / f"{name}.py", tmp_path / "out", capsys)
    assert payload["cases"] == 0 and list(skipped) == [name] and reason in skipped[name], skipped
    assert "no entry point could be listed: see the skipped rows" in payload["statement"]


@pytest.mark.integration  # a trial import in a forked child
@pytest.mark.parametrize("name", sorted(IMPORTS))
def test_a_package_whose_submodule_misbehaves_at_import_is_listed_as_skipped(name, tmp_path, capsys, monkeypatch):
    package = tmp_path / f"package_of_{name}"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(IMPORTS[name][0] + ENTRY)
    monkeypatch.syspath_prepend(str(tmp_path))
    payload, skipped = _scan(package.name, tmp_path / "out", capsys)
    (reason,) = skipped.values()
    assert payload["cases"] == 0 and IMPORTS[name][1] in reason, skipped


@pytest.mark.integration  # a trial import in a forked child
@pytest.mark.parametrize("as_module", (False, True))
def test_what_a_module_prints_at_import_stays_off_the_scans_json(as_module, tmp_path, capsys, monkeypatch):
    name = f"chatty_{as_module}"
    (tmp_path / f"{name}.py").write_text('print("printed at import")\n\n\ndef helper(values):\n    return values\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["scan", name if as_module else str(tmp_path / f"{name}.py"), "--out", str(tmp_path / "out"),
                 "--json"]) == 0
    printed = capsys.readouterr()
    assert json.loads(printed.out)["cases"] == 0 and "printed at import" in printed.err


@pytest.fixture(scope="module")
def entry_point_scan(tmp_path_factory):
    """One scan of a module holding every entry point of :data:`ENTRY_POINTS` (one worker process for them all)."""
    folder = tmp_path_factory.mktemp("entry_points")
    source = "\n\n".join(f"def {name}(array, epsilon=1.0):\n    {body}\n" for name, (body, _) in ENTRY_POINTS.items())
    (folder / "misbehaving.py").write_text("import numpy as np\n\n\n" + source)
    printed = StringIO()
    with redirect_stdout(printed):
        status = main(["scan", str(folder / "misbehaving.py"), "--epsilons", "1", "--max-runs", "60000", "--timeout",
                       "1", "--memory-limit", "256M", "--out", str(folder / "out"), "--json"])
    return status, printed.getvalue(), folder / "out"


@pytest.mark.integration  # the scan's worker process
@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_an_entry_point_that_misbehaves_costs_its_case_with_the_reason(name, entry_point_scan):
    status, printed, out = entry_point_scan
    payload = json.loads(printed)  # stdout holds the scan's JSON alone
    report = json.loads((out / "scan.json").read_text(encoding="utf-8"))
    assert status == 0 and (out / "scan.md").is_file() and payload["cases"] == len(ENTRY_POINTS)
    (reason,) = [row["reason"] for row in report["skipped"] if f".{name}(" in row["id"]]
    assert ENTRY_POINTS[name][1] in reason, reason

ALL_CASES = list(itertools.chain(PAIR_FILE_CASES, CONFIG_CASES, K_CASES, itertools.product(MIXED, range(4)),
                                 itertools.product(DOMAIN_CASES, range(3)), STATISTIC_CASES, ["hangs"],
                                 itertools.product(IMPORTS, range(3)), ENTRY_POINTS, range(2)))
