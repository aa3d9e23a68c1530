"""Report folders are data (issue 41.3): a link committed under reports/ is never written
through, and a linked report file is never copied into a grading."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evalcase.cli import main
from tests.grade.runs import check_008, refund_repo, write_run
from tests.helpers import commit_all


def _grade(repo: Path, run_id: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["grade", run_id, "--root", str(repo)])
    return result.exit_code, result.output


def test_grade_never_writes_through_a_committed_reports_commit_link(tmp_path: Path) -> None:
    """`reports/<commit> -> outside` committed: grade exits 2 naming the link, writes
    nothing outside."""
    repo, commit = refund_repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "reports").mkdir()
    (repo / "reports" / commit).symlink_to(outside)
    commit_all(repo, "a hostile link")
    write_run(repo, commit, "run-l", [check_008(True, 1)])
    code, output = _grade(repo, "run-l")
    assert code == 2, output
    assert f"reports/{commit} is a symbolic link" in output
    assert "internal error" not in output
    assert list(outside.iterdir()) == []


def test_grade_never_writes_through_a_linked_gradings_folder(tmp_path: Path) -> None:
    repo, commit = refund_repo(tmp_path)
    run_dir = write_run(repo, commit, "run-g", [check_008(True, 1)])
    assert run_dir.is_dir()
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = repo / "reports" / commit / "run-g"
    folder.mkdir(parents=True)
    (folder / "gradings").symlink_to(outside)
    code, output = _grade(repo, "run-g")
    assert code == 2, output
    assert "gradings is a symbolic link" in output
    assert list(outside.iterdir()) == []


def test_an_old_report_that_is_a_link_is_never_copied_into_a_grading(tmp_path: Path) -> None:
    """A report folder from before gradings were versioned whose report.md is a link to a
    secret: the grading 'unversioned' is refused, the secret copied nowhere."""
    repo, commit = refund_repo(tmp_path)
    write_run(repo, commit, "run-u", [check_008(True, 1)])
    secret = tmp_path / "secret.txt"
    secret.write_text("API_KEY=hunter2", "utf-8")
    folder = repo / "reports" / commit / "run-u"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text('{"run": {"graded_at": "2026-01-01T00:00:00Z"}}', "utf-8")
    (folder / "report.md").symlink_to(secret)
    code, output = _grade(repo, "run-u")
    assert code == 2, output
    assert "report.md is a symbolic link" in output
    published = [
        p for p in repo.joinpath("reports").rglob("*") if p.is_file() and not p.is_symlink()
    ]
    assert all("hunter2" not in p.read_text("utf-8", "replace") for p in published)


def test_redacting_a_run_never_copies_what_a_linked_run_json_points_at(tmp_path: Path) -> None:
    """`run --redact` rewrites outputs/<commit>/<run>/: a run.json committed as a link to
    a secret is refused, and the secret lands in no file of the run."""

    from evalcase.atomic import UnsafePath
    from evalcase.report.pipeline import redact_outputs

    repo, commit = refund_repo(tmp_path)
    run_dir = write_run(repo, commit, "run-x", [check_008(True, 1)])
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "hunter2"}', "utf-8")
    (run_dir / "run.json").unlink()
    (run_dir / "run.json").symlink_to(secret)
    with pytest.raises(UnsafePath, match=r"run\.json is a symbolic link"):
        redact_outputs(run_dir, base=repo)
    assert (run_dir / "run.json").is_symlink()
    assert all(b"hunter2" not in p.read_bytes() for p in run_dir.iterdir() if not p.is_symlink())
