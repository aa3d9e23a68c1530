"""The commit hook checks what a change reaches: a staged fixture re-checks the cases
that reference it (the index's reverse references), and the findings quote the text
their positions come from (the staged blob, whatever the work tree holds now).

Real git repositories, the real `evalcase lint --staged` process, and once the real
pre-commit consuming the published hook."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import bundled_repo, git, invoke
from tests.published_hook import PublishedHook, run

TOOL = "fixtures/tool/order_lookup.yaml"
CASES = "datasets/refund_regression_set/cases"


def rename_parameter(repo: Path) -> None:
    """order_lookup's ``order_id`` becomes ``order_no``, bumped v2 -> v3 as lint asks."""
    path = repo / TOOL
    text = path.read_text("utf-8")
    assert "fixture_version: v2" in text and "      order_id:\n" in text
    text = text.replace("fixture_version: v2", "fixture_version: v3", 1)
    text = text.replace("      order_id:\n", "      order_no:\n", 1)
    text = text.replace("required: [order_id]", "required: [order_no]", 1)
    path.write_text(text, "utf-8")


def findings(proc: subprocess.CompletedProcess[str]) -> set[tuple[str, str]]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return {(f["code"], f["path"]) for f in json.loads(proc.stdout)}


@pytest.mark.slow
def test_a_staged_fixture_reports_the_cases_it_breaks(tmp_path: Path) -> None:
    repo = bundled_repo(tmp_path / "cases")
    rename_parameter(repo)
    git(repo, "add", TOOL)  # the fixture alone: no case is staged
    hook = invoke("lint", "--staged", "--format", "json", TOOL, cwd=repo)
    assert hook.returncode == 1, hook.stdout + hook.stderr
    found = findings(hook)
    # cases that call order_lookup with order_id (EC304) and pin it at v2 (EC309)
    assert ("EC304", f"{CASES}/tool_refund_check_008.yaml") in found
    assert ("EC309", f"{CASES}/tool_refund_check_008.yaml") in found
    assert ("EC309", f"{CASES}/privacy_redteam_order_lookup_002.yaml") in found
    # the whole repository's lint finds the same breakage, no more and no less
    full = findings(invoke("lint", "--format", "json", cwd=repo))
    wanted = {"EC304", "EC309"}
    assert {f for f in found if f[0] in wanted} == {f for f in full if f[0] in wanted}
    # a case that does not use the tool is not re-checked
    assert not any("crm_safety_set" in path for _, path in found)
    # what lint found before the change is not the hook's to report
    git(repo, "checkout", "--", ".")
    git(repo, "reset", "-q")
    clean = invoke("lint", "--staged", "--format", "json", TOOL, cwd=repo)
    assert clean.returncode == 0 and findings(clean) == set(), clean.stdout


@pytest.mark.slow
def test_hook_findings_quote_the_staged_text(tmp_path: Path) -> None:
    repo = bundled_repo(tmp_path / "cases")
    case = f"{CASES}/tool_refund_check_008.yaml"
    path = repo / case
    staged = path.read_text("utf-8").replace(
        'args: {order_id: "ORDER_123"}', 'args: {order_id: "ORDER_123", limit: 3}', 1
    )
    assert staged != path.read_text("utf-8")
    path.write_text(staged, "utf-8")
    git(repo, "add", case)
    # A formatter rewrites the work tree's file after staging: three lines above the
    # finding's line, so the work tree's line at the staged position is another one.
    path.write_text("# one\n# two\n# three\n" + staged, "utf-8")
    hook = invoke("lint", "--staged", case, cwd=repo)
    assert hook.returncode == 1, hook.stdout + hook.stderr
    lines = hook.stdout.splitlines()
    (at,) = [i for i, line in enumerate(lines) if " EC304 " in line and "'limit'" in line]
    number = int(lines[at].split(":")[1])
    assert lines[at + 1] == f"{number:>5} | {staged.splitlines()[number - 1]}"
    assert "limit: 3" in lines[at + 1]


@pytest.mark.slow
def test_pre_commit_refuses_a_fixture_change_that_breaks_other_cases(
    tmp_path: Path, published_hook: PublishedHook
) -> None:
    repo = bundled_repo(tmp_path / "cases")
    (repo / ".pre-commit-config.yaml").write_text(published_hook.config("evalcase-lint"), "utf-8")
    git(repo, "add", ".pre-commit-config.yaml")
    git(repo, "commit", "-q", "-m", "hook")
    env = published_hook.env()
    installed = run([sys.executable, "-m", "pre_commit", "install"], repo, env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    rename_parameter(repo)
    git(repo, "add", TOOL)
    refused = run(["git", "commit", "-m", "rename order_id"], repo, env)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output
    assert f"{CASES}/tool_refund_check_008.yaml" in output
    assert "EC304" in output and "EC309" in output


def staged_lint(repo: Path, path: str, *, cache: bool) -> tuple[set[tuple[str, str]], int | None]:
    """The hook in this process, with or without the store: (code, path) of its findings
    and how many files the partial run loaded (None: it loaded every file)."""
    from evalcase.config import load_config
    from evalcase.lint import linter as linter_module
    from evalcase.lint.api import lint_repository

    loaded: list[int] = []
    original = linter_module.Linter._partial

    def spy(self: linter_module.Linter, state: object, focus: set[str]) -> object:
        sources, results, contents = original(self, state, focus)  # type: ignore[arg-type]
        loaded.append(len(results))
        return sources, results, contents

    linter_module.Linter._partial = spy  # type: ignore[assignment,method-assign]
    try:
        result = lint_repository(
            load_config(repo), paths=[path], cwd=repo, staged=True, use_cache=cache, jobs=1
        )
    finally:
        linter_module.Linter._partial = original  # type: ignore[method-assign]
    return {(f.code, f.path) for f in result.findings}, (loaded[0] if loaded else None)


@pytest.mark.slow
def test_a_fixture_change_no_case_check_reads_reaches_no_case(example_repo: Path) -> None:
    """A new description re-checks no case (as a retitled case re-checks no other case),
    and the hook loads every fixture and manifest but no case; a change a check reads
    (a moved line, a renamed parameter) re-checks the cases that use the fixture, and
    loads those only. The store changes nothing the hook reports."""
    from tests.helpers import commit_all, init_repo

    init_repo(example_repo)
    broken = f"{CASES}/tool_refund_check_008.yaml"
    path = example_repo / broken
    path.write_text(
        path.read_text("utf-8").replace(
            'args: {order_id: "ORDER_123"}', 'args: {order_id: "ORDER_123", limit: 3}', 1
        ),
        "utf-8",
    )
    # Committed without the hook: HEAD already holds an EC304 on a case using the tool.
    commit_all(example_repo, "examples, one case broken")
    assert ("EC304", broken) in staged_lint(example_repo, broken, cache=True)[0]
    cases = len(list(example_repo.glob("datasets/*/cases/*.yaml")))
    others = len(list(example_repo.glob("fixtures/*/*.yaml"))) + len(
        list(example_repo.glob("datasets/*/dataset.yaml"))
    )
    tool = example_repo / TOOL
    text = tool.read_text("utf-8")
    assert text.count("\ndescription: ") == 1
    # 1. The description: nothing a check of a case reads.
    tool.write_text(text.replace("\ndescription: ", "\ndescription: （新说明）", 1), "utf-8")
    git(example_repo, "add", TOOL)
    found, loaded = staged_lint(example_repo, TOOL, cache=True)
    assert found == set() == staged_lint(example_repo, TOOL, cache=False)[0]
    assert loaded == others  # every fixture and manifest, no case
    # 2. The description grows a line: every later position moves, the cases are checked.
    tool.write_text(text.replace("\ndescription: ", "\ndescription: |-\n  新说明\n  ", 1), "utf-8")
    git(example_repo, "add", TOOL)
    found, loaded = staged_lint(example_repo, TOOL, cache=True)
    assert ("EC304", broken) in found
    assert found == staged_lint(example_repo, TOOL, cache=False)[0]
    assert loaded is not None and others < loaded < cases + others
    # 3. A renamed parameter: every case calling the tool breaks; the store agrees.
    tool.write_text(text, "utf-8")
    rename_parameter(example_repo)
    git(example_repo, "add", TOOL)
    found, loaded = staged_lint(example_repo, TOOL, cache=True)
    assert {("EC304", broken), ("EC309", broken)} <= found
    assert not any("crm_safety_set" in p for _, p in found)
    assert found == staged_lint(example_repo, TOOL, cache=False)[0]
    assert loaded is not None and others < loaded < cases + others


def test_staged_sources_read_a_window_at_a_time(tmp_path: Path) -> None:
    """What a hook quotes is read from the index a few files at a time, in the order the
    reporter asks: the staged text (not the work tree's), every file's, holding at most
    a window of them; a path that is not staged has none."""
    from evalcase.config import load_config
    from evalcase.lint.api import StagedSources
    from tests.helpers import init_repo

    repo = init_repo(tmp_path / "repo")
    names = [f"datasets/d/cases/c{k}.yaml" for k in range(5)]
    for k, name in enumerate(names):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"staged: {k}\n", "utf-8")
    git(repo, "add", *names)
    for name in names:
        (repo / name).write_text("rewritten after staging\n", "utf-8")
    shown = {f"evals/{name}": name for name in [*names, "datasets/d/cases/absent.yaml"]}
    sources = StagedSources(load_config(repo), shown, window=2)
    try:
        seen = []
        for name in names:
            seen.append(sources[f"evals/{name}"])
            assert len(sources._loaded) <= 2  # never every file at once
        assert seen == [f"staged: {k}\n".encode() for k in range(5)]
        assert sources.get(f"evals/{names[1]}") == b"staged: 1\n"  # back again: read again
        assert sources.get("evals/datasets/d/cases/absent.yaml") is None
        assert sources.get("not/a/finding's/path.yaml") is None
        assert list(sources) == list(shown) and len(sources) == 6
    finally:
        sources.close()
