"""Where the bounds, calibration and calculator code lives (issue 16, items 2-4), and the shared
flag and array helpers that replaced the per-module copies."""

import ast
import pathlib

import numpy as np
import pytest

from audit.config.flag_values import integer, number_list, with_flag_names
from estimators.validation import InputError, as_positive_array, plain, scalar_or_array

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _imports(path: pathlib.Path):
    """(module imported, at module level?) for every import statement of ``path``."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append(("." * node.level + (node.module or ""), id(node) in top))
    return found


MATHS_FILES = sorted((ROOT / "audit" / "bounds").rglob("*.py")) + sorted((ROOT / "mechanisms").rglob("*.py"))


@pytest.mark.parametrize("path", MATHS_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_maths_modules_know_nothing_of_the_command_line(path):
    tree = ast.parse(path.read_text())
    assert all(not name.startswith(("argparse", "audit.cli")) for name, _ in _imports(path))
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "CALCULATORS" not in names and "args" not in names  # no calculator list, no parsed flags


@pytest.mark.parametrize("path", sorted((ROOT / "mechanisms").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_mechanisms_do_not_import_the_audit_layer(path):
    assert all(not name.startswith("audit") for name, _ in _imports(path))


@pytest.mark.parametrize("path", sorted((ROOT / "mechanisms" / "calibration").glob("*.py")),
                         ids=lambda p: p.name)
def test_calibration_imports_only_at_module_level(path):
    # A call-time import was how the gaussian/noisy/projection/result cycle was papered over.
    assert all(top for _, top in _imports(path))


def test_calibration_modules_form_no_import_cycle():
    folder = ROOT / "mechanisms" / "calibration"
    graph = {p.stem: {name.lstrip(".") for name, _ in _imports(p) if name.startswith(".") and name != "."}
             for p in folder.glob("*.py")}
    state = {}

    def visit(node, trail):
        assert state.get(node) != "open", f"import cycle: {' -> '.join(trail + [node])}"
        if state.get(node) == "done":
            return
        state[node] = "open"
        for child in graph.get(node, ()):
            visit(child, trail + [node])
        state[node] = "done"

    for module in graph:
        visit(module, [])


def test_local_mi_paper_code_is_placed_by_the_rule():
    assert not list((ROOT / "audit" / "bounds").glob("local_mi_*.py"))
    assert (ROOT / "audit" / "bounds" / "local_mi" / "conversions.py").exists()
    assert (ROOT / "mechanisms" / "calibration" / "local_mi.py").exists()


def test_number_list():
    assert number_list("1,-2.5,3e-3,", "--x") == [1.0, -2.5, 0.003]
    assert number_list(None, "--x") is None
    for bad in ("1,x", "", "1,nan", "inf"):
        with pytest.raises(InputError, match="'--x'"):
            number_list(bad, "--x")


def test_integer_flag_values():
    assert integer("1000000000") == integer("1e9") == 10**9
    assert integer("-3") == -3
    for bad in ("1.5", "inf", "nan", "x"):
        with pytest.raises(ValueError):
            integer(bad)


def test_with_flag_names():
    flags = {"l1_sensitivity": "--l1-sensitivity", "mu": "--mu"}
    assert with_flag_names("argument 'l1_sensitivity' must be > 0; 'other' stays", flags) == \
        "argument '--l1-sensitivity' must be > 0; 'other' stays"


def test_as_positive_array_and_scalar_or_array():
    assert as_positive_array([0.5, 2], "epsilon").tolist() == [0.5, 2.0]
    assert as_positive_array(0.0, "mu", allow_zero=True).tolist() == 0.0
    for bad in (0.0, -1.0, np.nan, np.inf, [], "1", [1.0, -1.0]):
        with pytest.raises(InputError, match="'epsilon'"):
            as_positive_array(bad, "epsilon")
    assert type(scalar_or_array(np.float64(2.0))) is float
    assert isinstance(scalar_or_array(np.array([2.0])), np.ndarray)


def test_plain_writes_plain_numbers():
    assert plain(np.float64(1e-05)) == "1e-05"
    assert plain(np.int64(3)) == "3"
    assert plain(np.array([1.0, 2.0])) == "[1.0, 2.0]"
    assert plain(list(range(8))) == "[0, 1, 2, 3, 4, 5, ...]"
    with pytest.raises(InputError) as info:
        as_positive_array(np.array([np.float64(-1.0)]), "epsilon")
    assert "np.float64" not in str(info.value) and "array(" not in str(info.value)
