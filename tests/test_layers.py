"""The package's floors (docs/development.md, "Who owns what"): every room (a top-level
module or a package of evalcase) stands on a floor, and imports only rooms on lower
floors (function-level imports and the commands cli.py imports by name included), so
there is no import circle; no module imports another module's private names; and some
pairs of rooms are kept apart whatever their floors (FORBIDDEN). The checks run on the
package and on small synthetic packages that break each rule on purpose."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tools" / "evalcase"
# One worker runs them all: each parses the whole package once (_parsed), about 1.7 s.
pytestmark = pytest.mark.xdist_group("test_layers")

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


def _source(path: Path) -> tuple[str, ast.Module]:
    """A module's text and syntax tree, parsed once for every check here that reads it
    (five checks walk the whole package: each parsed all 360 modules again)."""
    stat = path.stat()
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parsed(path: Path, mtime_ns: int, size: int) -> tuple[str, ast.Module]:
    text = path.read_text(encoding="utf-8")
    return text, ast.parse(text)


def imports_of(path: Path) -> list[tuple[int, str]]:
    tree = _source(path)[1]
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


def _modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` (a folder)."""
    modules: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def command_modules(package: Path) -> dict[str, str]:
    """cli.py's COMMAND_MODULES (command name -> area of commands/), read from its source:
    the modules cli.py imports by name (importlib), as import arrows of the graph."""
    cli = package / "cli.py"
    if not cli.is_file():
        return {}
    for node in ast.walk(_source(cli)[1]):
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "COMMAND_MODULES":
            value = ast.literal_eval(node.value)  # type: ignore[arg-type]
            return {str(k): str(v) for k, v in value.items()}
    return {}


def module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (function-level and
    TYPE_CHECKING imports included: a circle hidden in a function is still a circle; and
    cli's commands, which it imports by name)."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets: set[str] = set()
        tree = _source(path)[1]
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
    cli = f"{package.name}.cli"
    for area in set(command_modules(package).values()):
        graph.setdefault(cli, set()).add(f"{package.name}.commands.{area}")
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


# --- floors: every room, from the ground up ---------------------------------------------
# A room imports only rooms on lower floors. A new top-level module or package must be
# given its floor here (the test names it), which is where it says what it stands on.
FLOORS: dict[str, int] = {
    # ground: shared values and the leaves everything may use
    "evalcase": -1,  # the package itself: __version__, below everything
    "model": 0,
    "naming": 0,
    "pii": 0,
    "keys": 0,
    "suites": 0,
    "transport": 0,
    "chat_completions": 0,
    "plugins": 0,
    "atomic": 0,
    "placeholders": 0,
    "forked": 0,
    # the readers: git, YAML, trust, secrets
    "gitio": 1,
    "loader": 1,
    "trust": 1,
    "scrub": 1,
    # the contract between rooms, the files of a snapshot
    "contract": 2,
    "files": 2,
    "collect": 2,  # the OTLP receiver and its inbox (evalcase collect)
    "yamlwrite": 2,
    "schemas": 3,
    "config": 4,
    "attempt_check": 4,
    "index": 5,
    # the audit's facts (.evalcase/audit/), read by lint, tag and reports
    "audit_facts": 6,
    "versioning": 8,
    "grade": 7,
    "run": 9,
    "report": 9,
    "lint": 9,
    "actions": 10,
    "results": 10,
    "audit": 10,  # the audit itself: built-in agents through the runner, graded
    "authoring": 11,
    "commands": 12,
    "cli": 13,
    "docgen": 14,
    "__main__": 14,
}


def room_of(module: str, floors: dict[str, int] | None = None) -> str:
    """The room of ``module``: its top-level module or package, or the most precise part
    of a package that ``floors`` gives a floor of its own (``package.module``; a package's
    own ``__init__`` as ``package.__init__``)."""
    parts = module.split(".")[1:] or module.split(".")
    if floors is not None:
        for i in range(len(parts), 0, -1):
            key = ".".join(parts[:i])
            if i == len(parts) and f"{key}.__init__" in floors:
                return f"{key}.__init__"
            if key in floors:
                return key
    return parts[0]


def floor_problems(graph: dict[str, set[str]], floors: dict[str, int]) -> list[str]:
    """Rooms without a floor, and every import of a room on the same floor or a higher one."""
    out = sorted({f"{room_of(m, floors)}: no floor (add it to FLOORS)" for m in graph
                  if room_of(m, floors) not in floors})  # fmt: skip
    for module, targets in sorted(graph.items()):
        here = room_of(module, floors)
        for target in sorted(targets):
            there = room_of(target, floors)
            if there == here or here not in floors or there not in floors:
                continue
            if floors[there] >= floors[here]:
                out.append(
                    f"{module} imports {target}: {there} (floor {floors[there]}) is not below "
                    f"{here} (floor {floors[here]})"
                )
    return out


def private_imports(package: Path) -> list[str]:
    """Imports of another module's private names (``from x import _y``, ``x._y``): a
    helper two modules share is public, in the lower one (commands share
    commands/common.py)."""
    modules = _modules(package)
    out = []
    for module, path in sorted(modules.items()):
        tree = _source(path)[1]
        bound: set[str] = set()  # local names of imported modules of the package
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if not node.module.startswith(package.name):
                    continue
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in modules:
                        bound.add(alias.asname or alias.name)
                    elif (
                        alias.name.startswith("_")
                        and not alias.name.startswith("__")
                        and node.module != module
                    ):
                        out.append(f"{module}:{node.lineno}: imports {node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules and alias.asname:
                        bound.add(alias.asname)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                out.append(f"{module}:{node.lineno}: uses {node.value.id}.{node.attr}")
    return out


def test_every_room_imports_only_rooms_below_it(graph: dict[str, set[str]]) -> None:
    assert not floor_problems(graph, FLOORS), "\n".join(floor_problems(graph, FLOORS))


def test_no_module_imports_a_private_name_of_another() -> None:
    found = private_imports(PACKAGE)
    assert not found, "\n".join(found)


def test_the_graph_sees_the_commands_cli_loads_by_name(graph: dict[str, set[str]]) -> None:
    areas = set(command_modules(PACKAGE).values())
    assert areas >= {"lint", "run", "grade"}
    assert {f"evalcase.commands.{a}" for a in areas} <= graph["evalcase.cli"]
    assert all(f"evalcase.commands.{a}" in graph for a in areas)  # each one a real module


# --- the checks catch what they are for: synthetic packages, each with one mistake -------


def _package(root: Path, files: dict[str, str]) -> Path:
    package = root / "evalcase"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


SOUND = {
    "model.py": "X = 1\n",
    "loader.py": "from evalcase.model import X\n",
    "commands/__init__.py": "",
    "commands/common.py": "def config_for(root):\n    return root\n",
    "commands/lint.py": "from evalcase.commands.common import config_for\nCOMMANDS = ()\n",
    "cli.py": "import importlib\nCOMMAND_MODULES = {'lint': 'lint'}\n",
}


def test_a_sound_synthetic_package_passes(tmp_path: Path) -> None:
    package = _package(tmp_path, SOUND)
    graph = module_graph(package)
    assert "evalcase.commands.lint" in graph["evalcase.cli"]
    assert floor_problems(graph, FLOORS) == []
    assert private_imports(package) == []


def test_an_upward_import_is_caught(tmp_path: Path) -> None:
    # The ground-floor model starts reading the loader (floor 1): an arrow that runs up.
    package = _package(
        tmp_path, {**SOUND, "model.py": "def f():\n    from evalcase import loader\n"}
    )
    found = floor_problems(module_graph(package), FLOORS)
    assert found == [
        "evalcase.model imports evalcase.loader: loader (floor 1) is not below model (floor 0)"
    ]
    assert ["evalcase.loader", "evalcase.model"] in circles(module_graph(package))


def test_a_command_module_imported_by_name_is_in_the_graph(tmp_path: Path) -> None:
    # commands/lint.py imports cli (a command reaching up for the group's helpers): the
    # circle goes through importlib, which only COMMAND_MODULES shows.
    lint = "from evalcase.cli import COMMAND_MODULES\nCOMMANDS = ()\n"
    package = _package(tmp_path, {**SOUND, "commands/lint.py": lint})
    graph = module_graph(package)
    assert ["evalcase.cli", "evalcase.commands.lint"] in circles(graph)
    assert any("evalcase.commands.lint imports evalcase.cli" in p
               for p in floor_problems(graph, FLOORS))  # fmt: skip


@pytest.mark.parametrize(
    "lint",
    [
        "from evalcase.cli import _config\nCOMMANDS = ()\n",
        "from evalcase import cli\ndef f(root):\n    return cli._config(root)\nCOMMANDS = ()\n",
        "import evalcase.cli as cli\ndef f(root):\n    return cli._root(root)\nCOMMANDS = ()\n",
    ],
)
def test_a_command_importing_a_private_helper_of_another_module_is_caught(
    tmp_path: Path, lint: str
) -> None:
    cli = SOUND["cli.py"] + "def _config(root):\n    return root\n_root = _config\n"
    package = _package(tmp_path, {**SOUND, "cli.py": cli, "commands/lint.py": lint})
    found = private_imports(package)
    assert len(found) == 1 and found[0].startswith("evalcase.commands.lint:"), found


def test_a_room_without_a_floor_is_named(tmp_path: Path) -> None:
    package = _package(tmp_path, {**SOUND, "helpers.py": "from evalcase.model import X\n"})
    assert floor_problems(module_graph(package), FLOORS) == ["helpers: no floor (add it to FLOORS)"]


LONG = 900


def long_modules_without_a_reason(package: Path) -> list[str]:
    """Modules over LONG lines whose docstring does not say why they are one unit (a
    paragraph "One module of ... lines, on purpose: ...")."""
    out = []
    for path in sorted(package.rglob("*.py")):
        text, tree = _source(path)
        lines = text.count("\n")
        doc = ast.get_docstring(tree) or ""
        if lines > LONG and "on purpose:" not in " ".join(doc.split()):
            out.append(f"{path.relative_to(package.parent)}: {lines} lines")
    return out


def test_a_long_module_says_why_it_is_one_unit(tmp_path: Path) -> None:
    assert long_modules_without_a_reason(PACKAGE) == []
    long = "x = 1\n" * (LONG + 1)
    package = _package(
        tmp_path, {"big.py": long, "ok.py": '"""One module, on purpose: so."""\n' + long}
    )
    assert long_modules_without_a_reason(package) == [f"evalcase/big.py: {LONG + 1} lines"]
