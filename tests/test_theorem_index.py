"""``docs/theorems.md`` stays true: each listed function exists, each listed test file exists, and
each public function or class of the packages and the experiments whose docstring cites a numbered result
is listed (issue 16, item 5).

Checked from the source text (no imports), so the test is quick and needs no optional package.
"""

import ast
import functools
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
INDEX = ROOT / "docs" / "theorems.md"
PACKAGES = ("estimators", "mechanisms", "audit", "experiments")
# A numbered result: "Theorem 4", "Thm 8", "Corollary 3", "Prop. 1", "Remark 11", "Eq. (7)", ...
CITES = re.compile(r"\b(Theorem|Thm|Corollary|Cor\.|Proposition|Prop\.|Lemma|Remark|Algorithm|Definition)\s*\.?\s*\d"
                   r"|Eqs?\.\s*\(\d")
# Cells are split on unescaped "|" only: a result writes "q(x \| y)" so that its "|" stays in its cell.
CELL_SEPARATOR = re.compile(r"(?<!\\)\|")
HEADER = ("result", "implemented by", "checked in")


def _parse_row(line: str):
    """(result, names, test files) of one table row of the index, or None for a line that is no body row.

    A body row has three cells: the result, one or more backticked dotted names, the backticked test files.
    The header and the ``| --- |`` separator are not body rows.
    """
    if not line.startswith("|"):
        return None
    cells = [cell.strip() for cell in CELL_SEPARATOR.split(line.rstrip())]
    assert cells[0] == "" and cells[-1] == "", f"a row starts and ends with '|': {line!r}"
    cells = cells[1:-1]
    assert len(cells) == 3, f"a row has 3 cells (result, implemented by, checked in): {line!r}"
    if tuple(cells) == HEADER or all(set(cell) <= set("-: ") for cell in cells):
        return None
    names = re.findall(r"`([\w.]+)`", cells[1])
    return cells[0].replace("\\|", "|"), names, re.findall(r"`(tests/[\w/]+\.py)`", cells[2])


def _rows():
    """(section, result, dotted name, test files) for each name of each body row of the index."""
    section, rows = None, []
    for line in INDEX.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:]
        parsed = _parse_row(line)
        if parsed is not None:
            result, names, tests = parsed
            assert names, f"a row names no function: {line!r}"
            rows.extend((section, result, name, tests) for name in names)
    return rows


@functools.lru_cache(maxsize=None)
def _parsed(source: pathlib.Path) -> ast.Module:
    """The syntax tree of ``source``, parsed once for all the tests here (rows share modules)."""
    return ast.parse(source.read_text())


def _source_of(module_path: str):
    """The file of a dotted module path, or None."""
    parts = module_path.split(".")
    for candidate in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if candidate.exists():
            return candidate
    return None


def _defined(dotted: str):
    """(module, whether ``dotted`` names a function or class there) for a name such as ``package.module.f`` or
    ``package.module.Class.method``: the longest prefix that is a module file, the rest walked through classes."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:split])
        source = _source_of(module)
        if source is None:
            continue
        body = _parsed(source).body
        for name in parts[split:]:
            found = [node for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and node.name == name]
            if not found:
                return module, False
            body = found[0].body
        return module, True
    return None, False


def test_the_index_has_a_section_per_paper_and_one_for_classical_results():
    sections = {section for section, *_ in _rows()}
    for paper in ("Pufferfish", "Local-MI", "LIP", "PML", "Classical"):
        assert any(section.startswith(paper) for section in sections), paper


def test_every_listed_function_and_test_file_exists():
    rows = _rows()
    assert len(rows) > 50
    for _, result, path, tests in rows:
        module, defined = _defined(path)
        assert module is not None, f"no module for {path}"
        assert defined, f"{path} is not defined in {module}"
        assert tests, f"{path} has no test file"
        for test in tests:
            assert (ROOT / test).exists(), f"{test} (for {path}) does not exist"
        assert result, f"{path} names no result"


def test_classical_results_are_cited_by_author_and_year():
    for section, result, path, _ in _rows():
        if section.startswith("Classical"):
            assert re.search(r"[A-Z][a-z]+.*\b(19|20)\d\d\b", result), f"{path}: cite {result!r} by author and year"


def test_every_public_function_citing_a_numbered_result_is_listed():
    listed = {path for _, _, path, _ in _rows()}
    missing = []
    for package in PACKAGES:
        for source in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(source.relative_to(ROOT).with_suffix("").parts)
            for node in _parsed(source).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                    if CITES.search(ast.get_docstring(node) or "") and f"{module}.{node.name}" not in listed:
                        missing.append(f"{module}.{node.name}")
    assert not missing, f"add these to docs/theorems.md: {missing}"


def test_a_row_with_one_name_parses():
    line = "| Theorem 4 | `mechanisms.calibration.gaussian.mi_variance` | `tests/test_calibration_rules.py` |"
    assert _parse_row(line) == ("Theorem 4", ["mechanisms.calibration.gaussian.mi_variance"],
                                ["tests/test_calibration_rules.py"])


def test_a_row_with_several_names_and_test_files_gives_each():
    line = ("| Bonferroni; Clopper and Pearson 1934 | `audit.search.event_choice._Predictor.lower_share`, "
            "`audit.search.event_search.event_search` | `tests/test_event_test.py`, `tests/test_x.py` |")
    assert _parse_row(line) == ("Bonferroni; Clopper and Pearson 1934",
                                ["audit.search.event_choice._Predictor.lower_share",
                                 "audit.search.event_search.event_search"],
                                ["tests/test_event_test.py", "tests/test_x.py"])


def test_an_escaped_pipe_stays_inside_its_cell():
    line = r"| Barber and Agakov 2003 (T = log q(x \| y) − log π̂(x)) | `a.b.f` | `tests/test_a.py` |"
    assert _parse_row(line) == ("Barber and Agakov 2003 (T = log q(x | y) − log π̂(x))", ["a.b.f"],
                                ["tests/test_a.py"])


def test_the_header_separator_and_prose_are_no_rows():
    assert _parse_row("| result | implemented by | checked in |") is None
    assert _parse_row("| --- | --- | --- |") is None
    assert _parse_row("Every theorem ... `tests/test_theorem_index.py` keeps this table true") is None


def test_a_row_with_a_wrong_number_of_cells_is_reported():
    with pytest.raises(AssertionError, match="3 cells"):
        _parse_row("| Theorem 4 | `a.b.f` | q(x | y) | `tests/test_a.py` |")


def test_the_five_rows_the_single_name_pattern_missed_are_read():
    listed = {path for _, _, path, _ in _rows()}
    for path in ("audit.search.event_choice._Predictor.lower_share", "audit.search.event_search.event_search",
                 "audit.certificates.rate_ratio.draw_run_counts", "audit.certificates.claim_tests.cross_checks",
                 "audit.statistics.classifier.FeatureDesign.start_hessians",
                 "audit.statistics.classifier_critic.fit_classifier_critics"):
        assert path in listed, path


def test_names_in_classes_resolve_and_missing_ones_do_not():
    module = "audit.statistics.classifier"
    assert _defined(f"{module}.FeatureDesign.start_hessians") == (module, True)
    assert _defined(f"{module}.FeatureDesign.no_such_method") == (module, False)
    assert _defined(f"{module}.no_such_function") == (module, False)
    assert not _defined("audit.statistics.no_such_module.f")[1]
    assert _defined("no_such_package.module.f") == (None, False)
