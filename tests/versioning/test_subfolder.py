"""Cases kept below the top of a git repository (``evals/`` of an application): every
command that reads git works there, configured once at the top or with --root, and the
published hook refuses what it must through the real pre-commit.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, commit_all, git, init_repo, invoke
from tests.published_hook import PublishedHook, run
from tests.versioning.conftest import CASE, replace_in, review_again

CRM = "crm_safety_set"
EVALS_CASE = f"evals/{CASE}"


def _app(tmp_path: Path, *, configured: bool) -> Path:
    """An application repository with its cases in evals/, committed."""
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    (app / "src" / "app.py").write_text("print('the application')\n")
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, app / "evals" / part)
    shutil.copy2(REPO_ROOT / "evalcase.toml", app / "evals" / "evalcase.toml")
    if configured:
        own = (app / "evals" / "evalcase.toml").read_text("utf-8")
        (app / "evals" / "evalcase.toml").unlink()
        (app / "evalcase.toml").write_text('root = "evals"\n\n' + own, "utf-8")
    init_repo(app)
    commit_all(app, "application and its evaluation cases")
    return app


@pytest.mark.slow
@pytest.mark.parametrize("configured", [True, False], ids=["evalcase.toml", "--root"])
def test_every_git_command_works_in_a_subfolder(tmp_path: Path, configured: bool) -> None:
    app = _app(tmp_path, configured=configured)
    root = () if configured else ("--root", "evals")

    def cli(*args: str, cwd: Path = app) -> tuple[int, str, str]:
        proc = invoke(*args, *root, cwd=cwd)
        assert "Traceback" not in proc.stderr
        return proc.returncode, proc.stdout, proc.stderr

    # every file lint reads: the manifests, cases and fixtures the app copied
    files = sum(
        1
        for p in (app / "evals").rglob("*.yaml")
        if "cases" in p.parts or p.name == "dataset.yaml" or "fixtures" in p.parts
    )
    assert cli("lint")[:2] == (0, f"All checks passed ({files} files).\n")
    # An edit without its bump: plain lint (against HEAD), --staged and --base see it, and
    # name the file as git does, from the top of the repository.
    replace_in(app, EVALS_CASE, "但有质量问题，能不能退？", "但有质量问题，还能退吗？")
    code, out, _ = cli("lint")
    assert code == 1 and f"{EVALS_CASE}:" in out and "EC501" in out
    # Without a base only the approval says so: it is of other content (EC419).
    code, out, _ = cli("lint", "--no-base")
    assert code == 1 and "EC419" in out and "EC501" not in out, out
    git(app, "add", EVALS_CASE)
    code, out, _ = cli("lint", "--staged", EVALS_CASE, "src/app.py")
    assert code == 1 and "EC501" in out
    assert cli("lint", "--base", "HEAD")[0] == 1
    # bump writes what lint asks for; then everything agrees.
    code, out, _ = cli("bump")
    assert code == 0 and "case_version v5 -> v6" in out, out
    # The approval was of v5: a new review of v6, recorded by review-case, settles it.
    code, out, _ = cli("lint")
    assert code == 1 and "EC411" in out and "EC501" not in out
    review_again(EVALS_CASE, app, *root)
    assert cli("lint")[0] == 0
    git(app, "add", "-A")
    git(app, "commit", "-q", "-m", "reword the question")
    # tag, export and diff read the subfolder at a revision.
    code, out, err = cli("tag", CRM)
    assert (code, out.strip()) == (0, f"created tag {CRM}@v1"), err
    code, out, _ = cli("export", f"{CRM}@v1")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(records) == 6 and records[0]["release"] == f"{CRM}@v1"
    code, out, _ = cli("diff", f"{CRM}@v1", CRM)
    assert code == 0 and CRM in out
    # From inside the subfolder, with or without --root, the same repository is found.
    assert invoke("lint", cwd=app / "evals" / "datasets").returncode == 0
    # An unrelated dirty file of the application does not block a release.
    (app / "src" / "app.py").write_text("print('changed')\n")
    assert cli("tag", "refund_regression_set")[0] == 0


def test_a_configured_root_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    app = init_repo(tmp_path / "app")
    (app / "evalcase.toml").write_text('root = "evlas"\n')
    proc = invoke("lint", cwd=app)
    assert proc.returncode == 2
    assert "root = 'evlas'" in proc.stderr and "no such folder" in proc.stderr


def test_the_hook_without_configuration_does_not_pass_silently(tmp_path: Path) -> None:
    """Cases below the top and nothing saying so: an error that shows where they are,
    never "All checks passed (0 files)"."""
    app = _app(tmp_path, configured=False)
    proc = invoke("lint", "--staged", cwd=app)
    assert proc.returncode == 2
    assert "nothing to check" in proc.stderr and "evals" in proc.stderr


@pytest.mark.slow
def test_the_published_hook_guards_cases_in_a_subfolder(
    tmp_path: Path, published_hook: PublishedHook
) -> None:
    """The real pre-commit, the published hook, cases in evals/ configured at the top."""
    app = _app(tmp_path, configured=True)
    (app / ".pre-commit-config.yaml").write_text(published_hook.config("evalcase-lint"), "utf-8")
    commit_all(app, "hooks")
    env = published_hook.env()
    installed = run([sys.executable, "-m", "pre_commit", "install"], app, env)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    # The case that passed silently before: an invalid risk level below evals/.
    replace_in(app, EVALS_CASE, "risk_level: P1", "risk_level: P7")
    git(app, "add", EVALS_CASE)
    refused = run(["git", "commit", "-m", "raise the risk"], app, env)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output
    assert f"{EVALS_CASE}:" in output and "EC104" in output, output

    # An unbumped edit: refused, and the hook says how to run the bump it asks for.
    replace_in(app, EVALS_CASE, "risk_level: P7", "risk_level: P1")
    replace_in(app, EVALS_CASE, "但有质量问题，能不能退？", "但有质量问题，还能退吗？")
    git(app, "add", EVALS_CASE)
    refused = run(["git", "commit", "-m", "reword"], app, env)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "EC501" in output, output
    assert "not on your PATH" in output and "-m evalcase bump" in output
    command = next(line for line in output.splitlines() if "-m evalcase bump" in line)
    bumped = run(command.split(), app, env)
    assert bumped.returncode == 0 and "case_version v5 -> v6" in bumped.stdout, bumped
    git(app, "add", EVALS_CASE)
    # Bumped, the case is no longer the version its approval judged: a new review.
    stale = run(["git", "commit", "-m", "reword"], app, env)
    assert stale.returncode != 0 and "EC411" in stale.stdout + stale.stderr
    review_again(EVALS_CASE, app)
    git(app, "add", EVALS_CASE)
    accepted = run(["git", "commit", "-m", "reword"], app, env)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "\ncase_version: v6\n" in git(app, "show", f"HEAD:{EVALS_CASE}")


def test_git_answers_are_about_the_subfolder(tmp_path: Path) -> None:
    """History, diffs and trees name paths relative to the case repository, and only
    its paths: a deleted case is still known (no ID reuse), the app's files are not."""
    from evalcase.gitio import Repo

    app = _app(tmp_path, configured=True)
    first = git(app, "rev-parse", "HEAD").strip()
    git(app, "rm", "-q", EVALS_CASE)
    (app / "src" / "app.py").write_text("print('changed')\n")
    second = commit_all(app, "delete a case, change the app")
    repo = Repo(app / "evals")
    try:
        assert CASE in repo.paths_in_history(["datasets"])
        assert [(c.status, c.path) for c in repo.diff_tree(first, second, ["datasets"])] == [
            ("D", CASE)
        ]
        staged = app / "evals" / CASE
        staged.write_text("case_id: back\n", "utf-8")
        git(app, "add", EVALS_CASE)
        assert [c.path for c in repo.diff_index(second, cached=True, paths=["datasets"])] == [CASE]
        assert all(not p.startswith("evals/") for p, *_ in repo.tree_entries(first, ["datasets"]))
    finally:
        repo.close()
