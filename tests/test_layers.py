"""The package layers of docs/design/execution-contract.md section 1: lower layers never
import higher ones (function-level imports included), so there is no import cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tools" / "evalcase"

# package -> packages it must never import
FORBIDDEN = {
    "index": (
        "evalcase.lint",
        "evalcase.versioning",
        "evalcase.run",
        "evalcase.grade",
        "evalcase.actions",
        "evalcase.cli",
        "evalcase.commands",
    ),
    "contract": (
        "evalcase.lint",
        "evalcase.versioning",
        "evalcase.run",
        "evalcase.grade",
        "evalcase.actions",
        "evalcase.cli",
        "evalcase.commands",
    ),
    # Graders read the JudgeSpec and the recorded attempt, never the agent side of the runner.
    "grade": (
        "evalcase.run",
        "evalcase.lint",
        "evalcase.report",
        "evalcase.actions",
        "evalcase.cli",
        "evalcase.commands",
    ),
    "report": ("evalcase.run", "evalcase.lint", "evalcase.cli", "evalcase.commands"),
    "versioning": (
        "evalcase.lint",
        "evalcase.run",
        "evalcase.grade",
        "evalcase.actions",
        "evalcase.cli",
        "evalcase.commands",
    ),
}


def imports_of(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            if node.module == "evalcase":
                out += [(node.lineno, f"evalcase.{alias.name}") for alias in node.names]
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_layers_never_import_higher_ones(package: str) -> None:
    files = sorted((PACKAGE / package).rglob("*.py"))
    assert files, f"no modules in evalcase.{package}"
    bad = [
        f"{path.relative_to(PACKAGE)}:{line}: imports {name}"
        for path in files
        for line, name in imports_of(path)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[package])
    ]
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    from evalcase.lint.linter import Linter\n", encoding="utf-8")
    assert (2, "evalcase.lint.linter") in imports_of(sample)


def module_graph() -> dict[str, set[str]]:
    """evalcase module -> the evalcase modules it imports (function-level and
    TYPE_CHECKING imports included: a circle hidden in a function is still a circle)."""
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    targets.add(name)
        graph[module] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
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
                    found.append(sorted(component))
    return found


def _registry(component: list[str]) -> bool:
    """A registry package and its own modules (the package lists them, they import its
    base): the one circle allowed, since it never crosses a room."""
    package = component[0]
    return all(m == package or m.startswith(package + ".") for m in component)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The package's import graph, parsed once (every module of evalcase: seconds)."""
    return module_graph()


@pytest.mark.slow
def test_no_import_circles(graph: dict[str, set[str]]) -> None:
    bad = [c for c in circles(graph) if not _registry(c)]
    assert not bad, "import circles:\n" + "\n".join(" <-> ".join(c) for c in bad)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("evalcase.grade.engine", "evalcase.grade.failure"),
        ("evalcase.plugins", "evalcase.grade.graders"),
    ],
)
def test_the_two_old_circles_stay_broken(one: str, other: str, graph: dict[str, set[str]]) -> None:
    assert not (other in graph[one] and one in graph[other]), f"{one} <-> {other}"
    assert not any(one in c and other in c for c in circles(graph))


def test_the_circle_check_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "p": {"p.x"}, "p.x": {"p"}}
    found = circles(graph)
    assert ["a", "b", "c"] in found
    assert [c for c in found if not _registry(c)] == [["a", "b", "c"]]
