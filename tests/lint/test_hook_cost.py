"""The fixed cost of the commit hook (`evalcase lint --staged FILE`), paid on every commit
whatever the repository's size: what it imports and how many git processes it starts.
Counted, never timed."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcase import gitio, judging
from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from tests.helpers import BASE_REPO, GIT_ENV, REPO_ROOT, git, init_repo

CASE = "datasets/sample_set/cases/refund_eligibility_001.yaml"

# Modules the hook has no use for: GitPython (evalcase's git library, but lint's
# questions go to the git command line: importing it costs about 90 ms and two
# `git version` processes a commit, docs/performance-lint.md), package metadata (plugins
# are found by a scan first), the command modules other than lint's.
NOT_ON_THE_HOOK_PATH = (
    "git",
    "importlib.metadata",
    "evalcase.commands.run",
    "evalcase.commands.grade",
    "evalcase.commands.authoring",
    "evalcase.commands.case_review",
    "evalcase.commands.versioning",
    # The results store (and its DuckDB) is never on the commit hook's path.
    "evalcase.commands.results",
    "evalcase.results",
    "evalcase.results.store",
    "duckdb",
)


@pytest.fixture
def staged_repo(tmp_path: Path) -> Path:
    """A committed repository with one case's title changed and staged."""
    repo = init_repo(tmp_path / "repo", BASE_REPO)
    case = repo / CASE
    case.write_text(case.read_text("utf-8").replace("title: ", "title: (new) ", 1), "utf-8")
    git(repo, "add", CASE)
    return repo


# Libraries the hook needs only for files it did not change, once the store knows those
# (a fixture's parameter schema against the meta-schema: python-jsonschema), for a
# real phone number (libphonenumber: a date is none), to call a judge (the HTTP client
# and asyncio), or without PyYAML (ruamel.yaml's binding of the same parser). Each is
# 25-125 ms of import on every commit.
NOT_ON_A_WARM_HOOK = (
    "jsonschema",
    "phonenumbers",
    "evalcase.transport",
    "asyncio",
    "ruamel.yaml",
)
TOOL_CASE = "datasets/sample_set/cases/refund_tool_submit_001.yaml"


def _hook_modules(repo: Path, case: str) -> list[str]:
    """The modules a commit hook on ``case`` imported (its exit status checked)."""
    script = (
        "import sys\n"
        "from evalcase.cli import main\n"
        "try:\n"
        f"    main(['lint', '--staged', {case!r}])\n"
        "except SystemExit as exc:\n"
        "    status = exc.code\n"
        "print('\\nMODULES', status, ' '.join(sorted(sys.modules)))\n"
    )
    env = {**os.environ, **GIT_ENV, "PYTHONPATH": str(REPO_ROOT / "tools")}
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    status, *modules = out.rsplit("\nMODULES ", 1)[1].split()
    assert status in ("0", "1"), out
    assert "evalcase.lint.api" in modules  # the hook did run
    return modules


def test_the_hook_imports_nothing_it_does_not_use(staged_repo: Path) -> None:
    assert not set(NOT_ON_THE_HOOK_PATH) & set(_hook_modules(staged_repo, CASE))


def test_a_warm_hook_imports_no_library_it_does_not_use(tmp_path: Path) -> None:
    """A tool case (its arguments checked against the tool's schema), graded by a judge,
    changed on a date: the hook still loads none of those libraries once a full lint
    has filled the store."""
    repo = init_repo(tmp_path / "repo", BASE_REPO)
    lint_repository(load_config(repo), jobs=1)  # the store, as a previous run leaves it
    case = repo / TOOL_CASE
    text = case.read_text("utf-8")
    changed = text.replace("title: 样例", "title: 样例（2026-12-01 修订）", 1).replace(
        "graders: [{type: trace_rule}]", "graders: [{type: trace_rule}, {type: llm_rubric}]", 1
    )
    assert changed.count("2026-12-01") == 1 and "llm_rubric" in changed
    case.write_text(changed, "utf-8")
    git(repo, "add", TOOL_CASE)
    modules = set(_hook_modules(repo, TOOL_CASE))
    assert "evalcase.grade.graders.llm_rubric" in modules  # lint asked what it needs
    assert "jsonschema_rs" in modules  # the arguments were checked
    assert set(NOT_ON_A_WARM_HOOK) & modules == set()


def test_the_hook_asks_git_each_question_once(
    staged_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(staged_repo)
    lint_repository(config, jobs=1)  # the store, as a previous run leaves it
    started: list[list[str]] = []
    real = subprocess.Popen

    def counting(*args: object, **kwargs: object) -> object:
        started.append(list(args[0]))  # type: ignore[call-overload]
        return real(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "Popen", counting)
    lint_repository(config, paths=[CASE], cwd=staged_repo, staged=True, jobs=1)
    # Every process is git (the one GIT_PYTHON_GIT_EXECUTABLE names, if set).
    assert started and {c[0] for c in started} == {gitio.executable()}, started
    commands = [c[1] for c in started]
    assert "version" not in commands  # GitPython's check of its executable
    assert commands.count("rev-parse") == 1, started
    assert len(commands) <= 6, started


@pytest.fixture
def fresh_scan() -> Iterator[None]:
    judging._declared_groups.cache_clear()
    yield
    judging._declared_groups.cache_clear()


def _dist(site: Path, name: str, entry_points: str | None) -> None:
    dist = site / f"{name}-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points is not None:
        (dist / "entry_points.txt").write_text(entry_points)


def test_the_plugin_scan_finds_the_groups_distributions_declare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_scan: None
) -> None:
    site = tmp_path / "site"
    _dist(site, "tool", "[console_scripts]\nevalcase = evalcase.cli:main\n")
    _dist(site, "bare", None)
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing")])
    assert judging._declared_groups() == frozenset()
    assert judging.entry_points(judging.GRADER_GROUP) == []

    judging._declared_groups.cache_clear()
    _dist(site, "acme_eval", "[evalcase.rule_checks]\nno_x = acme_eval.checks:no_x\n")
    assert judging._declared_groups() == {judging.RULE_CHECK_GROUP}
    found = judging.entry_points(judging.RULE_CHECK_GROUP)
    assert [(ep.name, ep.value) for ep in found] == [("no_x", "acme_eval.checks:no_x")]


def test_what_the_plugin_scan_cannot_read_goes_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_scan: None
) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("x-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n")
    monkeypatch.setattr(sys, "path", [str(archive)])
    assert judging._declared_groups() == {
        judging.GRADER_GROUP,
        judging.RULE_CHECK_GROUP,
        judging.HANDLER_GROUP,
    }
