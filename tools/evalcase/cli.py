"""The command line: the click group and the registry of its commands. Each command lives
in ``evalcase.commands.<area>`` (it parses options, calls the library and maps results to
exit codes); this module holds no command body.

Exit status: 0 no errors (warnings allowed), 1 at least one error, 2 usage or fatal error.
"""

from __future__ import annotations

import gc
import importlib

import click

from evalcase import __version__
from evalcase.commands.common import root_option

# Every command, by name, with the module of evalcase.commands that defines it (in its
# COMMANDS). A command's module is imported when the command is asked for, or all of them
# for the whole list (help, completion): the commit hook runs `evalcase lint` on every
# commit, and importing every command cost every start. tests/test_layers.py reads this
# table as the import arrows cli -> commands.<area> it stands for.
COMMAND_MODULES: dict[str, str] = {
    "lint": "lint",
    "rules": "lint",
    "rule": "lint",
    "graders": "lint",
    "tag": "versioning",
    "datasets": "versioning",
    "diff": "versioning",
    "bump": "versioning",
    "run": "run",
    "runs": "run",
    "grade": "grade",
    "compare": "grade",
    "review": "grade",
    "calibrate": "grade",
    "init": "authoring",
    "new": "authoring",
    "new-dataset": "authoring",
    "fmt": "authoring",
    "import": "authoring",
    "export": "authoring",
    "coverage": "authoring",
    "stats": "authoring",
    "review-case": "case_review",
    "store": "results",
    "history": "results",
    "flaky": "results",
    "trend": "results",
    "push": "remote",
    "pull": "remote",
    "view": "view",
    "audit": "audit",
    "collect": "collect",
}


def load_commands(area: str) -> tuple[click.Command, ...]:
    """The commands of ``evalcase.commands.<area>``."""
    commands: tuple[click.Command, ...] = importlib.import_module(
        f"evalcase.commands.{area}"
    ).COMMANDS
    return commands


class _Main(click.Group):
    """The top-level group: it imports a command's module when the command is asked for."""

    def _load(self, areas: list[str]) -> None:
        for area in dict.fromkeys(areas):
            for command in load_commands(area):
                if command.name not in self.commands:
                    self.add_command(command)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            self._load([COMMAND_MODULES[cmd_name]])
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load(list(COMMAND_MODULES.values()))
        return super().list_commands(ctx)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalcase")
@root_option
@click.pass_context
def main(ctx: click.Context, root: str | None) -> None:
    """evalcase: a git-native repository of evaluation cases, and the linter that guards it.

    --root DIR may come before or after the command."""
    ctx.ensure_object(dict)
    if root:
        ctx.obj["root"] = root
    # A command is a short-lived process that builds many small containers (parsed cases,
    # cached facts) and no reference cycles worth collecting: the cyclic collector's
    # passes over them cost a third of a warm lint run. Reference counting still frees
    # everything as usual.
    gc.disable()


if __name__ == "__main__":  # pragma: no cover
    main()
