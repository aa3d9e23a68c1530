"""`evalcase run`, `grade` and `runs` against hostile run folders, as a user runs them:
a stopped run, two runners on one run, a damaged line, duplicate records."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalcase.run import outputs
from tests.helpers import GIT_ENV, REPO_ROOT, bundled_repo, invoke, run_cli

HERE = Path(__file__).parent
CASES = ("tool_refund_submit_confirmed_010", "agent_refund_account_change_002")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bundled_repo(tmp_path_factory.mktemp("hostilerun") / "repo", ("/outputs/", "/reports/"))


def agent(flag: Path) -> str:
    return "cmd:" + shlex.join([sys.executable, str(HERE / "hang_if.py"), str(flag)])


def select() -> list[str]:
    return [arg for case in CASES for arg in ("--select", case)]


def _run_dir(stdout: str, root: Path) -> Path:
    return root / stdout.strip().splitlines()[-1].split(" -> ")[-1]


@pytest.mark.slow
def test_sigterm_records_interrupted_and_resume_finishes(repo: Path, tmp_path: Path) -> None:
    flag = tmp_path / "hang"
    flag.touch()
    env = {**os.environ, **GIT_ENV, "PYTHONPATH": str(REPO_ROOT / "tools")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcase", "run", "refund_regression_set", *select(),
         "--no-grade", "--agent", agent(flag), "--progress", "none", "--timeout", "600"],
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    run_json = None
    end = time.monotonic() + 60
    while run_json is None and time.monotonic() < end:
        found = list((repo / "outputs").glob("*/*/run.json")) if (repo / "outputs").exists() else []
        run_json = next((p for p in found if agent(flag) in p.read_text("utf-8")), None)
        time.sleep(0.1)
    assert run_json is not None
    time.sleep(1.0)  # the agents are started and hanging (a backstop wait, not a measure)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    meta = json.loads(run_json.read_text("utf-8"))
    assert meta["status"] == "interrupted"
    assert "--resume" in err
    flag.unlink()
    resumed = invoke("run", "--no-grade", "--resume", meta["run_id"], "--progress", "none",
                      cwd=repo)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    meta = json.loads(run_json.read_text("utf-8"))
    assert meta["status"] == "completed" and meta["counts"]["attempts"] == len(CASES)


@pytest.fixture(scope="module")
def finished(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    flag = tmp_path_factory.mktemp("noflag") / "absent"
    proc = invoke("run", "--no-grade", "refund_regression_set", *select(), "--repeat", "2",
                   "--agent", agent(flag), "--progress", "none", cwd=repo)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return _run_dir(proc.stdout, repo)


@pytest.mark.slow
def test_a_second_runner_on_the_same_run_exits_2(repo: Path, finished: Path) -> None:
    with outputs.RunFolder(finished).lock():
        second = run_cli("run", "--no-grade", "--resume", finished.name, cwd=repo)
    assert second.returncode == 2
    assert "being written by another runner" in second.stderr and "pid" in second.stderr
    assert "Traceback" not in second.stderr


@pytest.mark.slow
def test_a_damaged_line_is_skipped_and_reported_by_resume_grade_and_runs(
    repo: Path, finished: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "outputs" / finished.parent.name / finished.name
    shutil.copytree(finished, run_dir)
    attempts = run_dir / "attempts.jsonl"
    lines = attempts.read_bytes().split(b"\n")
    assert len([x for x in lines if x]) == 2 * len(CASES)
    damaged_key = json.loads(lines[1])
    lines[1] = lines[1][: len(lines[1]) // 2]  # a torn record in the middle of the file
    attempts.write_bytes(b"\n".join(lines))
    out = ["--outputs", str(tmp_path / "outputs")]

    listed = invoke("runs", *out, cwd=repo)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if finished.name in line)
    assert f"{2 * len(CASES) - 1}/{2 * len(CASES)}" in row and "(1 damaged)" in row

    graded = invoke("grade", str(run_dir), cwd=repo)
    assert "Traceback" not in graded.stderr, graded.stderr
    assert "skipped a damaged line" in graded.stdout + graded.stderr
    report = json.loads(
        (repo / "reports" / finished.parent.name / finished.name / "report.json").read_text()
    )
    assert report, "a report was written from the other lines"

    resumed = invoke("run", "--no-grade", "--resume", finished.name, *out, "--progress", "none",
                      cwd=repo)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "skipped a damaged line" in resumed.stderr
    assert "(1 new)" in resumed.stdout  # the damaged attempt, and only it, ran again
    from evalcase.contract import records

    back = list(records.read_jsonl(attempts))
    assert len(back) == 2 * len(CASES)
    assert (damaged_key["case_id"], damaged_key["attempt"]) in {
        (r["case_id"], r["attempt"]) for r in back
    }


def test_grading_keeps_one_record_per_attempt_key(
    repo: Path, finished: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "dup" / finished.parent.name / finished.name
    shutil.copytree(finished, run_dir)
    attempts = run_dir / "attempts.jsonl"
    text = attempts.read_text("utf-8")
    attempts.write_text(text + text, "utf-8")  # as two runners on one run used to write
    from evalcase.grade.recorded_run import read_run

    record = read_run(run_dir)
    assert len(record.attempts) == 2 * len(CASES)
    listed = invoke("runs", "--outputs", str(tmp_path / "dup"), cwd=repo)
    row = next(line for line in listed.stdout.splitlines() if finished.name in line)
    assert f"{2 * len(CASES)}/{2 * len(CASES)}" in row
