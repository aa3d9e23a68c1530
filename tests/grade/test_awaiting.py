"""Pending cases split by what is decided (evalcase.grade.awaiting), on a recorded run of
the bundled refund dataset graded without a judge: one whose deterministic checks all pass,
one graded by a judge only, one that fails. Neither pending kind counts as a pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.grade.attempts import attempt
from tests.grade.runs import check_008, duplicate_003, refund_repo, write_run
from tests.helpers import commit_all, invoke

Graded = tuple[str, dict[str, Any], str, str]  # stdout, report.json, report.md, report.html
JUDGE_ONLY = "datasets/refund_regression_set/cases/refund_eligibility_001.yaml"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    repo, _ = refund_repo(tmp_path_factory.mktemp("awaiting"))
    # No bundled case is graded by a judge alone any more (its rule checks run under
    # trace_rule): this copy of refund_eligibility_001 drops them to be one.
    case = repo / JUDGE_ONLY
    text = case.read_text("utf-8")
    checks = "  rule_checks:\n    - no_privacy_leak\n    - no_refund_promise\n"
    trace_rule = "    - {type: trace_rule, weight: 0.3}\n"
    assert checks in text and trace_rule in text
    case.write_text(text.replace(checks, "").replace(trace_rule, ""), "utf-8")
    commit = commit_all(repo, "refund_eligibility_001 graded by the judge only")
    attempts = [
        duplicate_003(True, 1),  # looks the status up, submits nothing: every check passes
        attempt("可以退。", case_id="refund_eligibility_001"),  # graded by llm_rubric only
        check_008(False, 1),  # no llm_rubric: a deterministic fail
    ]
    write_run(repo, commit, "run-a", attempts)
    proc = invoke("grade", "run-a", cwd=repo)  # no evalcase.toml: no judge configured
    report_dir = repo / "reports" / commit / "run-a"
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    md, html = ((report_dir / name).read_text("utf-8") for name in ("report.md", "report.html"))
    return proc.stdout, report, md, html


def test_summary_separates_decided_from_undecided(graded: Graded) -> None:
    stdout, _, _, _ = graded
    lines = stdout.splitlines()
    pending = next(ln for ln in lines if ln.startswith("pending"))
    assert pending.split()[1] == "2", stdout
    assert any("1  of them pass every check decided so far" in ln for ln in lines), stdout
    assert any("llm_rubric: not counted as pass" in ln for ln in lines), stdout
    assert any("1  of them have no check decided yet" in ln for ln in lines), stdout
    assert not any(ln.startswith("pass ") for ln in lines), stdout


def test_report_json_and_md(graded: Graded) -> None:
    _, report, md, _ = graded
    summary = report["summary"]
    assert summary["status_counts"] == {"fail": 1, "pending": 2}
    assert summary["pending_checks_pass"] == 1
    assert summary["pass@1"] == 0.0  # waiting for the judge is never a pass
    waits = {c["case_id"]: c.get("awaiting") for c in report["failing_cases"]}
    ready = waits["agent_refund_duplicate_submit_003"]
    assert ready == {"checks_passed": 4, "waiting_for": ["llm_rubric"], "checks_pass": True}
    assert waits["refund_eligibility_001"] == {
        "checks_passed": 0,
        "waiting_for": ["llm_rubric"],
        "checks_pass": False,
    }
    assert waits["tool_refund_check_008"] is None  # failed: nothing awaited
    assert "| pending, every decided check passes | 1 of 2" in md
    assert "4 check(s) pass; waiting for llm_rubric" in md
    assert "nothing decided; waiting for llm_rubric" in md


def test_report_html(graded: Graded) -> None:
    html = graded[3]
    split = html.split('id="pending-split">')[1].split("</p>")[0]
    assert "every decided check passes: 1 of 2" in split, split
    pending = html.split("<h2>Pending cases</h2>")[1].split("<h2>All cases</h2>")[0]
    ready = pending.split('id="case-agent_refund_duplicate_submit_003"')[1].split("</summary>")[0]
    assert "4 check(s) pass; waiting for llm_rubric" in ready, ready
    judged = pending.split('id="case-refund_eligibility_001"')[1].split("</summary>")[0]
    assert "nothing decided; waiting for llm_rubric" in judged, judged
    failing = html.split("<h2>Failing cases, by risk</h2>")[1].split("<h2>Pending cases</h2>")[0]
    assert "waiting for" not in failing  # a failed case awaits nothing
