"""``docs/theorems.md`` stays true: each listed function exists, each listed test file exists, and
each public function or class of the packages and the experiments whose docstring cites a numbered result
is listed (issue 16, item 5).

Checked from the source text (no imports), so the test is quick and needs no optional package.
"""

import ast
import functools
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
INDEX = ROOT / "docs" / "theorems.md"
PACKAGES = ("estimators", "mechanisms", "audit", "experiments")
# A numbered result: "Theorem 4", "Thm 8", "Corollary 3", "Prop. 1", "Remark 11", "Eq. (7)", ...
CITES = re.compile(r"\b(Theorem|Thm|Corollary|Cor\.|Proposition|Prop\.|Lemma|Remark|Algorithm|Definition)\s*\.?\s*\d"
                   r"|Eqs?\.\s*\(\d")
ROW = re.compile(r"^\|(?P<result>[^|]+)\|\s*`(?P<path>[\w.]+)`\s*\|(?P<tests>[^|]+)\|\s*$")


def _rows():
    section, rows = None, []
    for line in INDEX.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:]
        match = ROW.match(line)
        if match:
            rows.append((section, match["result"].strip(), match["path"], re.findall(r"`(tests/[\w/]+\.py)`",
                                                                                     match["tests"])))
    return rows


@functools.lru_cache(maxsize=None)
def _parsed(source: pathlib.Path) -> ast.Module:
    """The syntax tree of ``source``, parsed once for all the tests here (rows share modules)."""
    return ast.parse(source.read_text())


def _top_level_names(module_path: str):
    """(file, names defined at the top level) for a dotted module path, or (None, set())."""
    parts = module_path.split(".")
    for candidate in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if candidate.exists():
            tree = _parsed(candidate)
            return candidate, {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    return None, set()


def test_the_index_has_a_section_per_paper_and_one_for_classical_results():
    sections = {section for section, *_ in _rows()}
    for paper in ("Pufferfish", "Local-MI", "LIP", "PML", "Classical"):
        assert any(section.startswith(paper) for section in sections), paper


def test_every_listed_function_and_test_file_exists():
    rows = _rows()
    assert len(rows) > 50
    for _, result, path, tests in rows:
        module, name = path.rsplit(".", 1)
        source, names = _top_level_names(module)
        assert source is not None, f"no module {module}"
        assert name in names, f"{path} is not defined"
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
