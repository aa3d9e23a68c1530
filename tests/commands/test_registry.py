"""The command registry of evalcase.cli: every command in one module of
evalcase.commands, named in COMMAND_MODULES, and cli.py holding no command body."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import click

from evalcase import cli

PACKAGE = Path(cli.__file__).resolve().parent


def test_every_command_module_lists_exactly_the_commands_the_registry_gives_it() -> None:
    areas = set(cli.COMMAND_MODULES.values())
    for area in sorted(areas):
        commands = importlib.import_module(f"evalcase.commands.{area}").COMMANDS
        names = {c.name for c in commands}
        assert names == {n for n, a in cli.COMMAND_MODULES.items() if a == area}, area
    on_disk = {p.stem for p in (PACKAGE / "commands").glob("*.py")} - {"__init__", "common"}
    assert on_disk == areas


def test_the_group_lists_and_finds_every_registered_command() -> None:
    ctx = click.Context(cli.main)
    assert cli.main.list_commands(ctx) == sorted(cli.COMMAND_MODULES)
    for name in cli.COMMAND_MODULES:
        assert cli.main.get_command(ctx, name) is not None
    assert cli.main.get_command(ctx, "no-such-command") is None


def test_cli_py_holds_no_command_body() -> None:
    tree = ast.parse((PACKAGE / "cli.py").read_text("utf-8"))
    bodies = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and any("command" in ast.unparse(d) for d in node.decorator_list)
    ]
    assert bodies == []


def test_no_function_of_the_run_command_is_over_60_lines() -> None:
    tree = ast.parse((PACKAGE / "commands" / "run.py").read_text("utf-8"))
    long = [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.end_lineno is not None
        if node.end_lineno - node.lineno + 1 > 60
    ]
    assert long == []
