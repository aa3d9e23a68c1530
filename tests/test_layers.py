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
