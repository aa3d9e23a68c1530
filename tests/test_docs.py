"""The documentation is true to the code: generated reference pages are fresh, every
command, option and configuration key is documented, the README stays a front door and
its test command is exactly what CI runs."""

from __future__ import annotations

import re
import shlex

import click

from evalcase import docgen
from evalcase.cli import main
from evalcase.lint.rules import RULES
from evalcase.schemas import raw_schemas
from tests.helpers import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"


def test_generated_reference_is_fresh() -> None:
    stale = [str(path.relative_to(REPO_ROOT)) for path, _ in docgen.stale()]
    assert stale == [], f"stale: {stale}; run .venv/bin/python -m evalcase.docgen"


def test_a_changed_docstring_makes_the_rules_page_stale() -> None:
    """The freshness check can fail: a rules page that misses a word of a docstring."""
    text = (DOCS / "rules.md").read_text("utf-8")
    rule = RULES["EC104"]
    first = rule.doc.strip().splitlines()[0]
    assert first in text
    damaged = text.replace(first, first + " (edited by hand)")
    assert docgen.render_file(damaged, "rules", docgen.rules_markdown()) == text


def test_every_rule_is_in_the_rules_page() -> None:
    text = (DOCS / "rules.md").read_text("utf-8")
    for code, rule in RULES.items():
        assert f"### {code} {rule.name}" in text


def test_every_command_and_option_is_documented() -> None:
    text = (DOCS / "commands.md").read_text("utf-8")
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        assert f"### `evalcase {name}`" in text, name
        for param in command.params:
            if isinstance(param, click.Option):
                for opt in param.opts:
                    assert f"`{opt}" in text or f", {opt}" in text, (name, opt)
    assert "`--root DIR`" in text


def test_every_configuration_key_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text("utf-8")
    schema = raw_schemas()["config.schema.json"]
    for section, spec in schema["properties"].items():
        if "properties" not in spec:
            assert f"| `{section}` |" in text, section
            continue
        for key in spec["properties"]:
            assert f"| `{section}.{key}` |" in text, f"{section}.{key}"


def test_the_readme_fits_on_a_screen() -> None:
    assert len(README.read_bytes()) < 12 * 1024


def _readme_commands() -> list[str]:
    text = README.read_text("utf-8")
    quick = text.split("## Quick start", 1)[1]
    block = re.search(r"```console\n(.*?)```", quick, re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    commands = _readme_commands()
    assert len(commands) == 2
    ci = (REPO_ROOT / ".ci" / "run").read_text("utf-8").strip().splitlines()[-1]
    assert shlex.split(commands[1]) == shlex.split(ci)
    assert "--full" in shlex.split(ci), "CI runs every test, slow ones included"


def test_the_first_command_prepares_what_this_repositorys_hooks_use() -> None:
    """This repository's .pre-commit-config.yaml runs evalcase from .venv, which the
    README's first command creates; nothing relies on an activated environment."""
    first = _readme_commands()[0]
    assert first.startswith("python3 -m venv .venv") and ".venv/bin/evalcase" in first
    config = (REPO_ROOT / ".pre-commit-config.yaml").read_text("utf-8")
    assert "entry: .venv/bin/evalcase lint --staged" in config
    assert "language: system" not in config.replace(
        "entry: .venv/bin/evalcase lint --staged\n        language: system", ""
    )


def test_links_to_this_repositorys_pages_resolve() -> None:
    """Every relative link and image in the README and docs/ points at a file that exists."""
    for page in [README, *DOCS.glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
            assert (page.parent / target).exists(), (page.name, target)
