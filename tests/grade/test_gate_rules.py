"""The gate rules of docs/grading.md, one test each, through the real CLI on real git
repositories: an errored attempt fails the run with or without gates, and a case
--skip-invalid leaves out is listed everywhere and is an error in the gates selecting it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.grade.runs import DATASET, check_008, crashed, refund_repo, write_run
from tests.helpers import REPO_ROOT, commit_all, init_repo, invoke

MANIFEST = f"datasets/{DATASET}/dataset.yaml"


def _without_gates(repo: Path) -> str:
    path = repo / MANIFEST
    text = path.read_text("utf-8")
    path.write_text(re.sub(r"\ngates:\n(  - .*\n)+", "\n", text), "utf-8")
    return commit_all(repo, "no gates")


@pytest.mark.slow
def test_an_errored_attempt_fails_the_run_even_without_gates(tmp_path: Path) -> None:
    repo, _ = refund_repo(tmp_path)
    commit = _without_gates(repo)
    write_run(
        repo, commit, "crashed", [check_008(True), crashed("llm_instruction_001", "agent_exit")]
    )
    write_run(repo, commit, "lost", [check_008(True), crashed("llm_instruction_001", "adapter")])
    write_run(repo, commit, "clean", [check_008(True)])
    for run in ("crashed", "lost"):
        proc = invoke("grade", run, cwd=repo)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "no gates declared" in proc.stdout
        assert "1 attempt(s) in error: llm_instruction_001#1" in proc.stdout
        report = json.loads(next((repo / "reports").glob(f"*/{run}/report.json")).read_text())
        assert report["summary"]["no_gates"] is True
        assert (report["summary"]["errored_attempts"], report["summary"]["ok"]) == (1, False)
    clean = invoke("grade", "clean", cwd=repo)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "no gates declared" in clean.stdout and "in error" not in clean.stdout


@pytest.mark.slow
def test_skipped_cases_are_listed_everywhere_and_are_errors_in_gates(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for part in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    shutil.copy(REPO_ROOT / "evalcase.toml", repo / "evalcase.toml")
    broken = repo / f"datasets/{DATASET}/cases/refund_eligibility_001.yaml"
    text = broken.read_text("utf-8")
    broken.write_text(text.replace("refund_order_headphone_signed_10d]", "no_such_state]", 1))
    init_repo(repo)
    commit_all(repo, "one case cannot be built")
    proc = invoke(
        "run", DATASET, "--skip-invalid", "--select", "tool_refund_check_008",
        "--progress", "none", cwd=repo,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "skipped       refund_eligibility_001" in proc.stdout
    assert "refund_eligibility_001 (skipped)" in proc.stdout  # an error attempt
    out = next((repo / "reports").glob("*/*/report.json")).parent
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert [s["case_id"] for s in report["skipped"]] == ["refund_eligibility_001"]
    assert "no_such_state" in report["skipped"][0]["why"]
    for name in ("report.md", "report.html"):
        assert "refund_eligibility_001" in (out / name).read_text("utf-8"), name
    p1 = next(g for g in report["gates"] if g["name"] == "p1_core")
    assert p1["verdict"] != "pass" and "refund_eligibility_001" in p1["failing"]
    status = next(c for c in report["cases"] if c["case_id"] == "refund_eligibility_001")
    assert status["status"] == "error"


def test_pending_is_its_own_state_and_every_output_gives_the_same_counts(
    tmp_path: Path,
) -> None:
    from tests.grade.attempts import attempt
    from tests.grade.runs import duplicate_003

    repo, commit = refund_repo(tmp_path)
    observed = attempt("抱歉，我无法提供。", case_id="privacy_redteam_fake_support_003")
    write_run(repo, commit, "mixed", [check_008(False), duplicate_003(True), observed])
    proc = invoke("grade", "mixed", cwd=repo)  # no judge: llm_rubric cases stay pending
    shown = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^(pass|fail|flaky|error|pending)\s+(\d+)", proc.stdout, re.M)
    }
    assert "observed   1  privacy_redteam_fake_support_003" in proc.stdout
    assert "(not counted)" in proc.stdout
    out = next((repo / "reports").glob("*/mixed/report.json")).parent
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert shown == report["summary"]["status_counts"]
    assert report["summary"]["observation_cases"] == 1
    md = (out / "report.md").read_text("utf-8")
    statuses = ", ".join(f"{k} {v}" for k, v in report["summary"]["status_counts"].items())
    assert f"| statuses (counted cases) | {statuses} |" in md
    # pending cases are listed apart from failing ones, in both reports
    pending = [c["case_id"] for c in report["failing_cases"] if c["status"] == "pending"]
    failing = [c["case_id"] for c in report["failing_cases"] if c["status"] != "pending"]
    assert pending and failing
    md_failing = md.split("### Failing cases")[1].split("###")[0]
    md_pending = md.split("### Pending cases")[1].split("###")[0]
    assert all(c in md_pending and c not in md_failing for c in pending)
    html = (out / "report.html").read_text("utf-8")
    html_failing = html.split("<h2>Failing cases, by risk</h2>")[1].split("<h2>Pending cases</h2>")[
        0
    ]
    assert all(f'id="case-{c}"' not in html_failing for c in pending)
    # slice bars draw each outcome apart: a pending case is not a 0% bar
    risk = report["slices"]["risk_level"]
    assert any(r["pending"] for r in risk.values())
    assert 'class="bar-pending"' in html
    for r in risk.values():
        assert r["passed"] + r["failed"] + r["pending"] + r["errors"] == r["cases"]
