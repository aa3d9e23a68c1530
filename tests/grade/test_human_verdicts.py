"""Human review (terminal and edited file), the human grader's verdicts in the report with
who and when, and judge calibration against people (accuracy, Cohen's kappa, counts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.grade.attempts import attempt
from tests.grade.judge_server import Script, judge_server, top_marks
from tests.grade.runs import refund_repo, write_run
from tests.helpers import invoke

CASE = "privacy_redteam_fake_support_003"  # tool_policy + llm_rubric + human


def answers(n: int) -> list[dict[str, Any]]:
    return [
        attempt("抱歉，我无法提供其他用户的信息。", case_id=CASE, attempt=i, latency_ms=5)
        for i in range(1, n + 1)
    ]


def grades(repo: Path, run: str) -> list[dict[str, Any]]:
    path = next((repo / "reports").glob(f"*/{run}/grades.jsonl"))
    return [json.loads(x) for x in path.read_text("utf-8").splitlines()]


@pytest.mark.slow
def test_review_by_file_then_calibrate(tmp_path: Path) -> None:
    repo, commit = refund_repo(tmp_path)
    write_run(repo, commit, "run-h", answers(4))
    with judge_server(Script(responder=top_marks)) as url:
        env = {
            "EVALCASE_JUDGE_BASE_URL": url,
            "EVALCASE_JUDGE_MODEL": "judge-test",
            "EVALCASE_REVIEWER": "王审核",
        }
        invoke("grade", "run-h", cwd=repo, env=env)
        human = [g for g in grades(repo, "run-h") if g["grader"] == "human"]
        assert [g["verdict"] for g in human] == ["pending"] * 4

        todo = tmp_path / "review.json"
        proc = invoke("review", "run-h", "--export", str(todo), cwd=repo, env=env)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(todo.read_text("utf-8"))
        assert [i["attempt"] for i in doc["items"]] == [1, 2, 3, 4]
        for item, verdict in zip(doc["items"], ["pass", "pass", "fail", None], strict=True):
            item["verdict"], item["reason"] = verdict, f"人工判定 {verdict}"
        todo.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
        proc = invoke("review", "run-h", "--import", str(todo), cwd=repo, env=env)
        assert proc.returncode in (0, 1), proc.stderr
        assert "recorded 3 verdict(s) by 王审核" in proc.stdout

        # the fourth from the terminal
        proc = invoke("review", "run-h", cwd=repo, env=env, input="f\n答非所问\n")
        assert "recorded 1 verdict(s)" in proc.stdout, proc.stdout + proc.stderr

    human = {g["attempt"]: g for g in grades(repo, "run-h") if g["grader"] == "human"}
    assert [human[i]["verdict"] for i in (1, 2, 3, 4)] == ["pass", "pass", "fail", "fail"]
    assert human[4]["reason"] == "答非所问"
    assert human[1]["reviewer"] == "王审核" and human[1]["reviewed_at"]
    report = json.loads(next((repo / "reports").glob("*/run-h/report.json")).read_text("utf-8"))
    (row,) = report["calibration"]
    assert row["judge_model"] == "judge-test" and row["n"] == 4
    assert row["accuracy"] == 0.5 and row["kappa"] == 0.0
    assert row["counts"] == {
        "human_pass_judge_pass": 2,
        "human_pass_judge_fail": 0,
        "human_fail_judge_pass": 2,
        "human_fail_judge_fail": 0,
    }

    proc = invoke("calibrate", "run-h", "--format", "json", cwd=repo)
    assert json.loads(proc.stdout) == report["calibration"]
    proc = invoke("calibrate", "run-h", "--min-kappa", "0.6", cwd=repo)
    assert proc.returncode == 1
    assert "judge-test" in proc.stdout


@pytest.mark.slow
def test_nothing_to_review(tmp_path: Path) -> None:
    repo, commit = refund_repo(tmp_path)
    write_run(repo, commit, "run-n", [attempt("好", case_id="tool_refund_check_008")])
    invoke("grade", "run-n", cwd=repo)
    proc = invoke("review", "run-n", cwd=repo)
    assert proc.returncode == 0
    assert "nothing waits for review" in proc.stdout


@pytest.mark.parametrize("link", ["reviews.jsonl", "commit folder"])
def test_review_never_appends_through_a_committed_link(tmp_path: Path, link: str) -> None:
    """outputs/ is data (issue 41.3): `reviews.jsonl -> ~/.bashrc`, or the commit's folder a
    link to a folder outside, committed: review refuses (exit 2, naming the link) and
    nothing outside changes."""
    from click.testing import CliRunner

    from evalcase.cli import main

    repo, commit = refund_repo(tmp_path)
    run_dir = write_run(repo, commit, "run-r", answers(1))
    outside = tmp_path / "outside"
    outside.mkdir()
    bashrc = outside / "bashrc"
    bashrc.write_text("export PATH=/usr/bin\n", "utf-8")
    if link == "reviews.jsonl":
        (run_dir / "reviews.jsonl").symlink_to(bashrc)
        named = "reviews.jsonl is a symbolic link"
    else:
        (outside / "run-r").mkdir()
        for name in ("run.json", "attempts.jsonl"):
            (outside / "run-r" / name).write_bytes((run_dir / name).read_bytes())
        real = repo / "outputs" / commit
        for path in sorted(real.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        real.rmdir()
        real.symlink_to(outside)
        named = f"outputs/{commit} is a symbolic link"
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    todo = tmp_path / "review.json"
    item = {"case_id": CASE, "case_version": "v1", "attempt": 1, "verdict": "fail"}
    todo.write_text(json.dumps({"items": [{**item, "reason": "leaks"}]}), "utf-8")
    result = CliRunner().invoke(
        main, ["review", "run-r", "--import", str(todo), "--reviewer", "r", "--root", str(repo)]
    )
    assert result.exit_code == 2, result.output
    assert named in result.output
    assert "internal error" not in result.output
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
