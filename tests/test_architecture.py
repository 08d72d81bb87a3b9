"""The house rules of docs/explanation/architecture.md that the code can be held to: the layering of
the wings, no import circles, and modules of at most 600 lines.

Imports are read from the source (every ``import`` and ``from … import``, at module level or inside a
function: a lazy import is still a dependency), so the test needs nothing installed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("estimators", "mechanisms", "audit", "experiments")

#: Each wing's floor: a module may import modules of its own wing or of a wing on a lower or the same
#: floor, never one above it. A wing is a package folder or a top-level module; the first matching
#: prefix decides.
FLOORS = (
    ("estimators", 0),
    ("mechanisms.errors", 10), ("mechanisms.snapping", 10), ("mechanisms.papers", 10),
    ("mechanisms.calls", 11),
    ("mechanisms.base", 12), ("mechanisms.outputs", 12),
    ("mechanisms.inputs", 13),
    ("mechanisms.claims", 14),
    ("mechanisms.adapters", 15), ("mechanisms.constructions", 15),
    ("mechanisms.calibration", 16), ("mechanisms.training", 16),
    ("mechanisms.catalog", 17),
    ("mechanisms.execution", 18),
    ("mechanisms", 19),
    ("audit.bounds", 20), ("audit.result", 20), ("audit.mi_statement", 20), ("audit.frameworks", 20),
    ("audit.certificates", 21),
    ("audit.statistics", 22),
    ("audit.search", 23),
    ("audit.spec", 24), ("audit.audit_plan", 24), ("audit.critic_cost", 24), ("audit.engine", 24), ("audit.one_run", 24), ("audit.demo", 24),
    ("audit.both_relations", 24),
    ("audit.gating", 25), ("audit.report", 25),
    ("audit.scan", 25.5),
    ("audit.config", 26),
    ("audit.cli", 27), ("audit.pytest_plugin", 27),
    ("audit", 28),
    ("experiments", 30),
)

#: Imports allowed to run upwards: the CLI's commands run experiments; an experiment is not a wing of the product.
UPWARD_ALLOWED = (("audit.cli", "experiments"),)

MAX_LINES = 600


def _modules() -> dict:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            named.add(base)
            named.update(f"{base}.{alias.name}" for alias in node.names)
    resolved = set()
    for target in named:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name and not name.startswith(target + "."):
            resolved.add(target)
    return resolved


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _floor(name: str) -> tuple:
    for prefix, floor in FLOORS:
        if name == prefix or name.startswith(prefix + "."):
            return prefix, floor
    raise AssertionError(f"{name} is in no wing of FLOORS: add it to tests/test_architecture.py and the architecture page")


def test_every_module_has_a_wing():
    for name in MODULES:
        _floor(name)


def test_no_import_runs_up_from_a_lower_wing_to_a_higher_one():
    upward = []
    for name, targets in GRAPH.items():
        wing, floor = _floor(name)
        for target in targets:
            target_wing, target_floor = _floor(target)
            allowed = any(name.startswith(a) and target.startswith(b) for a, b in UPWARD_ALLOWED)
            if target_floor > floor and target_wing != wing and not allowed:
                upward.append(f"{name} ({wing}, floor {floor}) imports {target} ({target_wing}, floor {target_floor})")
    assert not upward, "\n".join(upward)


def _circles() -> list:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, circles, counter = {}, {}, set(), [], [], [0]
    for start in GRAPH:
        if start in index:
            continue
        work = [(start, iter(sorted(GRAPH[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(GRAPH[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_the_circle_finder_finds_a_planted_circle(monkeypatch):
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    monkeypatch.setitem(globals(), "GRAPH", planted)
    assert _circles() == [["a", "b", "c"]]


def test_no_import_circles():
    assert _circles() == []


@pytest.mark.parametrize("package", ["audit", "mechanisms"])
def test_no_module_over_600_lines(package):
    long = {name: len(path.read_text(encoding="utf-8").splitlines())
            for name, path in MODULES.items() if name.split(".")[0] == package}
    assert {name: lines for name, lines in long.items() if lines > MAX_LINES} == {}
