"""The published pre-commit hook, consumed the way another repository consumes it.

A snapshot of this project is committed to a temporary git repository; a consumer
repository of cases points its .pre-commit-config.yaml at that repository and commit,
runs the real `pre-commit install`, and commits. pre-commit builds the hook's own
virtualenv from the project (pip, from a local wheelhouse), so this is slow; the
snapshot and that virtualenv are shared by the run's hook tests (tests/published_hook.py).
The hook runs as pre-commit runs it (git commit, a process); the plain `evalcase lint`
and `bump` beside it are checked by their results, in the test process
(tests.helpers.invoke).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, commit_all, git, init_repo, invoke
from tests.published_hook import PublishedHook, run
from tests.versioning.conftest import CASE, line_of, replace_in, review_again


@pytest.mark.slow
def test_the_published_hook_refuses_an_unbumped_case_until_bumped(
    tmp_path: Path, published_hook: PublishedHook
) -> None:
    consumer = tmp_path / "cases"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, consumer / part)
    (consumer / ".pre-commit-config.yaml").write_text(
        published_hook.config("evalcase-lint"), "utf-8"
    )
    init_repo(consumer)
    commit_all(consumer, "cases")
    env = published_hook.env()
    installed = run([sys.executable, "-m", "pre_commit", "install"], consumer, env)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    replace_in(consumer, CASE, "但有质量问题，能不能退？", "但有质量问题，还能退吗？")
    # What the hook is about to refuse, plain `evalcase lint` refuses too.
    plain = invoke("lint", cwd=consumer)
    assert plain.returncode == 1 and "EC501" in plain.stdout, plain.stdout
    git(consumer, "add", CASE)
    refused = run(["git", "commit", "-m", "reword the question"], consumer, env)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output
    line = line_of(consumer, CASE, "case_version:")
    assert f"{CASE}:{line}:" in output, output
    assert "EC501" in output and "case-version-not-bumped" in output
    head_before = git(consumer, "rev-parse", "HEAD").strip()

    bumped = invoke("bump", cwd=consumer)
    assert bumped.returncode == 0, bumped.stdout + bumped.stderr
    assert "case_version v5 -> v6" in bumped.stdout
    git(consumer, "add", CASE)
    # The case changed, so its approval (of v5) no longer covers it: a new review.
    stale = run(["git", "commit", "-m", "reword the question"], consumer, env)
    assert stale.returncode != 0 and "EC411" in stale.stdout + stale.stderr
    review_again(CASE, consumer)
    git(consumer, "add", CASE)
    accepted = run(["git", "commit", "-m", "reword the question"], consumer, env)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert git(consumer, "rev-parse", "HEAD~1").strip() == head_before
    assert "case_version: v6" in git(consumer, "show", f"HEAD:{CASE}")


def _findings(proc: subprocess.CompletedProcess[str]) -> set[tuple[str, str, int]]:
    import json

    assert "Traceback" not in proc.stderr, proc.stderr
    return {(f["code"], f["path"], f["line"]) for f in json.loads(proc.stdout)}


@pytest.mark.slow
def test_plain_lint_and_the_hook_agree(tmp_path: Path) -> None:
    """What `evalcase lint` accepts, the commit hook (`lint --staged`) accepts, and the
    other way round: both compare with HEAD."""
    repo = tmp_path / "cases"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    init_repo(repo)
    commit_all(repo, "cases")
    replace_in(repo, CASE, "但有质量问题，能不能退？", "但有质量问题，还能退吗？")
    git(repo, "add", CASE)
    plain = invoke("lint", "--format", "json", cwd=repo)
    hook = invoke("lint", "--staged", "--format", "json", CASE, cwd=repo)
    assert plain.returncode == hook.returncode == 1
    assert _findings(plain) == _findings(hook) != set()
    # The approved content changed (EC419) and its version did not (EC501).
    assert {code for code, _, _ in _findings(plain)} == {"EC501", "EC419"}
    # --no-base is the one way to leave the base out.
    assert {
        c for c, _, _ in _findings(invoke("lint", "--no-base", "--format", "json", cwd=repo))
    } == {"EC419"}
    assert invoke("bump", cwd=repo).returncode == 0
    git(repo, "add", "-A")
    # Bumped, the case's approval (of the old version) no longer covers it: both say so.
    plain = invoke("lint", "--format", "json", cwd=repo)
    hook = invoke("lint", "--staged", "--format", "json", CASE, cwd=repo)
    assert plain.returncode == hook.returncode == 1
    assert _findings(plain) == _findings(hook)
    assert {code for code, _, _ in _findings(plain)} == {"EC411"}
    review_again(CASE, repo)
    git(repo, "add", "-A")
    plain = invoke("lint", "--format", "json", cwd=repo)
    hook = invoke("lint", "--staged", "--format", "json", CASE, cwd=repo)
    assert plain.returncode == hook.returncode == 0
    assert _findings(plain) == _findings(hook) == set()


@pytest.mark.slow
def test_a_configured_base_branch_is_what_plain_lint_compares_with(tmp_path: Path) -> None:
    repo = tmp_path / "cases"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    # The edit also changes approved content (EC419, whatever the base): left out here.
    (repo / "evalcase.toml").write_text(
        '[versioning]\nbase_branch = "main"\n[lint]\nignore = ["EC419"]\n'
    )
    init_repo(repo)
    commit_all(repo, "cases")
    git(repo, "checkout", "-q", "-b", "feature")
    replace_in(repo, CASE, "但有质量问题，能不能退？", "但有质量问题，还能退吗？")
    commit_all(repo, "an unbumped edit, committed on the branch")
    # Against HEAD nothing changed; against main (the configured base) the case did.
    proc = invoke("lint", cwd=repo)
    assert proc.returncode == 1 and "EC501" in proc.stdout, proc.stdout + proc.stderr
    assert invoke("lint", "--base", "HEAD", cwd=repo).returncode == 0
    (repo / "evalcase.toml").write_text(
        '[versioning]\nbase_branch = "trunk"\n[lint]\nignore = ["EC419"]\n'
    )
    commit_all(repo, "a base branch that does not exist")
    proc = invoke("lint", cwd=repo)
    assert proc.returncode == 2 and "base_branch = 'trunk'" in proc.stderr
