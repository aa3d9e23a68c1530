"""evalcase.gitio on real repositories: the questions it answers through GitPython, and
the git executable both of its paths run (GIT_PYTHON_GIT_EXECUTABLE, GitPython's own
setting), with a clear error when that executable does not run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalcase.gitio import Repo
from evalcase.model import FatalError
from tests.helpers import BASE_REPO, GIT_ENV, REPO_ROOT, git, init_repo, run_cli

CASE = "datasets/sample_set/cases/refund_eligibility_001.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", BASE_REPO)


def logging_git(tmp_path: Path) -> tuple[Path, Path]:
    """A git executable that writes each subcommand it runs to a log, then runs git."""
    log = tmp_path / "git.log"
    script = tmp_path / "logging-git"
    script.write_text(f'#!/bin/sh\necho "$1" >> {log}\nexec git "$@"\n', "utf-8")
    script.chmod(0o755)
    return script, log


def python(code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **GIT_ENV, "PYTHONPATH": str(REPO_ROOT / "tools"), **env}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=full, capture_output=True, text=True
    )


def test_remote_urls_come_as_git_rewrites_them(repo: Path) -> None:
    gitio = Repo(repo)
    try:
        assert gitio.remote_url() is None
        git(repo, "remote", "add", "origin", "gh:acme/evals.git")
        git(repo, "config", "url.https://github.com/.insteadOf", "gh:")
        assert gitio.remote_url() == "https://github.com/acme/evals.git"
        assert gitio.remote_url("upstream") is None
    finally:
        gitio.close()


def test_dirty_paths_name_staged_modified_and_untracked_files(repo: Path) -> None:
    gitio = Repo(repo)
    try:
        assert gitio.dirty_paths(["datasets"]) == []
        (repo / "README.md").write_text("untracked, outside the roots\n", "utf-8")
        # Tracked, outside the roots: a run's inputs all the same.
        fixture = repo / "fixtures/conversation/refund_history_001.yaml"
        fixture.write_text(fixture.read_text("utf-8") + "\n", "utf-8")
        (repo / CASE).write_text((repo / CASE).read_text("utf-8") + "\n", "utf-8")
        git(repo, "add", CASE)
        (repo / "datasets" / "new.yaml").write_text("x: 1\n", "utf-8")
        assert sorted(gitio.dirty_paths(["datasets"])) == sorted(
            ["fixtures/conversation/refund_history_001.yaml", CASE, "datasets/new.yaml"]
        )
    finally:
        gitio.close()


def test_paths_in_history_keep_deleted_files(repo: Path) -> None:
    git(repo, "rm", "-q", CASE)
    git(repo, "commit", "-q", "-m", "drop a case")
    gitio = Repo(repo)
    try:
        paths = gitio.paths_in_history(["datasets"])
    finally:
        gitio.close()
    assert CASE in paths
    assert all(p.startswith("datasets/") for p in paths)


def test_an_existing_tag_is_never_moved_and_git_says_why(repo: Path) -> None:
    gitio = Repo(repo)
    try:
        head = gitio.rev_parse("HEAD")
        gitio.create_annotated_tag("set@v1", "first\n\nline two\n", head)
        message = git(repo, "tag", "-l", "--format=%(contents)", "set@v1")
        assert message == "first\n\nline two\n\n"  # verbatim; for-each-ref adds one
        (repo / "x.txt").write_text("x\n", "utf-8")
        git(repo, "add", "x.txt")
        git(repo, "commit", "-q", "-m", "x")
        with pytest.raises(FatalError, match=r"could not create tag 'set@v1': .*already exists"):
            gitio.create_annotated_tag("set@v1", "again", "HEAD")
    finally:
        gitio.close()
    assert git(repo, "rev-parse", "set@v1^{commit}").strip() == head


def test_the_hook_and_gitpython_run_the_configured_git(repo: Path, tmp_path: Path) -> None:
    script, log = logging_git(tmp_path)
    env = {"GIT_PYTHON_GIT_EXECUTABLE": str(script), "HOME": str(tmp_path)}
    (repo / CASE).write_text((repo / CASE).read_text("utf-8") + "\n", "utf-8")
    git(repo, "add", CASE)
    proc = run_cli("lint", "--staged", CASE, cwd=repo, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    hook = log.read_text("utf-8").split()
    assert {"rev-parse", "diff-index", "cat-file"} <= set(hook)
    assert "version" not in hook  # GitPython was not imported: no executable check

    log.unlink()
    git(repo, "remote", "add", "origin", "https://example.invalid/evals.git")
    code = "from pathlib import Path\nfrom evalcase.gitio import Repo\nRepo(Path('.')).remote_url()"
    proc = python(code, repo, env)
    assert proc.returncode == 0, proc.stderr
    # GitPython checks the executable it was given as it is imported, then runs it.
    assert log.read_text("utf-8").split() == ["version", "version", "remote"]


def test_a_git_that_does_not_run_is_one_clear_error(repo: Path, tmp_path: Path) -> None:
    env = {"GIT_PYTHON_GIT_EXECUTABLE": str(tmp_path / "no-such-git")}
    proc = run_cli("lint", cwd=repo, env=env)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"cannot run git ({tmp_path / 'no-such-git'})" in proc.stderr
    assert "GIT_PYTHON_GIT_EXECUTABLE" in proc.stderr

    code = (
        "from pathlib import Path\nfrom evalcase.gitio import Repo\n"
        "from evalcase.model import FatalError\n"
        "try:\n    Repo(Path('.')).remote_url()\n"
        "except FatalError as exc:\n    print(exc)\n"
    )
    proc = python(code, repo, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        f"cannot run git ({tmp_path / 'no-such-git'}): GitPython could not run it; put git on "
        "PATH or set GIT_PYTHON_GIT_EXECUTABLE to a git executable\n"
    )


def test_staged_contents_of_many_long_paths_never_deadlock(tmp_path: Path) -> None:
    """Far more request bytes than a pipe holds (1,200 paths of ~110 bytes): the
    requests go to cat-file in parts that fit, and every staged text comes back."""
    repo = init_repo(tmp_path / "r")
    folder = repo / "datasets" / ("a_rather_long_dataset_name_" * 2) / "cases"
    folder.mkdir(parents=True)
    names = [f"case_with_a_long_descriptive_name_{i:05d}.yaml" for i in range(1200)]
    for name in names:
        (folder / name).write_text(f"case_id: {name}\n", "utf-8")
    git(repo, "add", "-A")
    rel = [str((folder / n).relative_to(repo)) for n in names]
    assert sum(len(p) + 2 for p in rel) > 100_000
    found = Repo(repo).staged_contents([*rel, "datasets/not_staged.yaml", "has space.yaml"])
    assert len(found) == 1200
    assert found[rel[777]] == f"case_id: {names[777]}\n".encode()


def test_a_repo_nobody_closed_ends_its_cat_file_process_when_it_goes(repo: Path) -> None:
    # A snapshot a command dropped (the grading load of a run's commit) kept its
    # `git cat-file --batch` running until the process exited: one per in-process run.
    import gc

    from evalcase.files import GitTree

    tree = GitTree(repo, Repo(repo).rev_parse("HEAD"))
    files = tree.files()
    assert tree.read([files[0].path])
    proc = tree.repo._cat
    assert proc is not None and proc.poll() is None
    del tree
    gc.collect()
    assert proc.wait(timeout=30) is not None  # ended, not left running
