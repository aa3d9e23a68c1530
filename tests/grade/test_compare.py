"""evalcase compare: two runs in which the agent changed list exactly the regressed and
fixed cases; runs over different dataset content warn and name the changed cases, which
are their own bucket (never regressed); --require-same-content refuses them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.grade.judge_server import Script, judge_server, top_marks
from tests.grade.runs import (
    case_version,
    check_008,
    crashed,
    duplicate_003,
    refund_repo,
    write_run,
)
from tests.helpers import commit_all, run_cli


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    repo, commit = refund_repo(tmp_path_factory.mktemp("compare"))
    # Agent A gets the duplicate-submit case wrong; agent B the eligibility check.
    write_run(
        repo,
        commit,
        "run-a",
        [
            check_008(True),
            duplicate_003(False),
            crashed("llm_instruction_001", "agent_exit"),
            crashed("refund_intent_venting_002", "timeout"),
        ],
    )
    write_run(
        repo,
        commit,
        "run-b",
        [
            check_008(False),
            duplicate_003(True),
            crashed("llm_instruction_001", "agent_exit"),
            crashed("refund_eligibility_001", "agent_exit"),
        ],
    )
    # The dataset changes: one case gets a new version.
    case = repo / "datasets/refund_regression_set/cases/tool_refund_check_008.yaml"
    old = case_version(repo, "tool_refund_check_008")
    new = f"v{int(old[1:]) + 1}"
    text = case.read_text("utf-8").replace(f"case_version: {old}", f"case_version: {new}", 1)
    case.write_text(text.replace("帮我看看这个订单能不能退", "帮我看看这个订单还能不能退"), "utf-8")
    changed = commit_all(repo, "tool_refund_check_008 v2")
    write_run(
        repo, changed, "run-c", [{**check_008(True), "case_version": "v2"}, duplicate_003(True)]
    )
    # Over the changed content the changed case fails: a different case, not a regression.
    write_run(
        repo, changed, "run-d", [{**check_008(False), "case_version": "v2"}, duplicate_003(False)]
    )
    script = Script(responder=top_marks)
    with judge_server(script) as url:
        env = {"EVALCASE_JUDGE_BASE_URL": url, "EVALCASE_JUDGE_MODEL": "judge-test"}
        for run in ("run-a", "run-b", "run-c", "run-d"):
            proc = run_cli("grade", run, cwd=repo, env=env)
            assert proc.returncode in (0, 1), proc.stderr
        yield {"repo": repo, "env": env}


def compare(runs: dict[str, Any], base: str, new: str) -> tuple[dict[str, Any], str]:
    proc = run_cli("compare", base, new, "--format", "json", cwd=runs["repo"])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.slow
def test_regressed_and_fixed_exactly(runs: dict[str, Any]) -> None:
    result, _ = compare(runs, "run-a", "run-b")
    assert result["regressed"] == ["tool_refund_check_008"]
    assert result["fixed"] == ["agent_refund_duplicate_submit_003"]
    assert result["still_failing"] == ["llm_instruction_001"]
    assert result["new_cases"] == ["refund_eligibility_001"]
    assert result["removed_cases"] == ["refund_intent_venting_002"]
    assert result["warnings"] == []
    p0 = result["slices"]["risk_level"]["P0"]
    assert (p0["base"], p0["new"], p0["change"]) == (0.0, 1.0, 1.0)


def test_text_output_and_regression_exit(runs: dict[str, Any]) -> None:
    proc = run_cli("compare", "run-a", "run-b", "--fail-on-regression", cwd=runs["repo"])
    assert proc.returncode == 1
    assert "regressed (1): tool_refund_check_008" in proc.stdout
    assert "fixed (1): agent_refund_duplicate_submit_003" in proc.stdout
    assert "WARNING" not in proc.stderr


def test_different_dataset_content_warns_and_names_cases(runs: dict[str, Any]) -> None:
    result, _ = compare(runs, "run-a", "run-c")
    assert result["changed_cases"] == ["tool_refund_check_008"]
    assert len(result["warnings"]) == 1
    assert "DIFFERENT DATASET CONTENT" in result["warnings"][0]
    assert "tool_refund_check_008" in result["warnings"][0]
    proc = run_cli("compare", "run-a", "run-c", cwd=runs["repo"])
    assert "WARNING: DIFFERENT DATASET CONTENT" in proc.stderr
    assert "tool_refund_check_008" in proc.stderr


def test_a_changed_case_is_changed_never_regressed(runs: dict[str, Any]) -> None:
    result, _ = compare(runs, "run-a", "run-d")
    # tool_refund_check_008 passed in A and fails in D, but D graded its v2.
    assert result["changed_cases"] == ["tool_refund_check_008"]
    assert result["regressed"] == []
    assert "tool_refund_check_008" not in result["still_passing"] + result["still_failing"]
    assert result["still_failing"] == ["agent_refund_duplicate_submit_003"]
    proc = run_cli("compare", "run-a", "run-d", "--fail-on-regression", cwd=runs["repo"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changed (1): tool_refund_check_008" in proc.stdout
    assert "regressed (0)" in proc.stdout
    # A real regression on the unchanged case still fails the gate.
    proc = run_cli("compare", "run-b", "run-d", "--fail-on-regression", cwd=runs["repo"])
    assert proc.returncode == 1
    assert "regressed (1): agent_refund_duplicate_submit_003" in proc.stdout


def test_require_same_content_refuses_different_content(runs: dict[str, Any]) -> None:
    proc = run_cli("compare", "run-a", "run-d", "--require-same-content", cwd=runs["repo"])
    assert proc.returncode == 2
    assert "graded different dataset content" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    # The same content compares as usual.
    same = run_cli("compare", "run-a", "run-b", "--require-same-content", cwd=runs["repo"])
    assert same.returncode == 0, same.stderr
    assert "regressed (1): tool_refund_check_008" in same.stdout


def test_unknown_run_is_a_clear_error(runs: dict[str, Any]) -> None:
    proc = run_cli("compare", "run-a", "nope", cwd=runs["repo"])
    assert proc.returncode == 2
    assert "no graded run 'nope'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_judge_recorded_in_reports(runs: dict[str, Any]) -> None:
    report = next(Path(runs["repo"], "reports").glob("*/run-b/report.json"))
    judges = json.loads(report.read_text("utf-8"))["provenance"]["judges"]
    assert judges and all(j["model"] == "judge-test" for j in judges)


def test_pending_cases_have_their_own_bucket() -> None:
    from evalcase.report.compare import compare as compare_reports

    def report(run: str, statuses: dict[str, str]) -> dict[str, Any]:
        cases = [{"case_id": c, "case_version": "v1", "status": s} for c, s in statuses.items()]
        return {"run": {"run_id": run, "commit": "c0"}, "summary": {}, "cases": cases}

    base = report("a", {"judged": "pending", "waits": "pass", "fails": "fail", "ok": "pass"})
    new = report("b", {"judged": "fail", "waits": "pending", "fails": "fail", "ok": "fail"})
    result = compare_reports(base, new)
    assert result.pending == ("judged", "waits")  # undecided on one side: no verdict
    assert result.still_failing == ("fails",)
    assert result.regressed == ("ok",)
    assert "waits" not in result.regressed and "judged" not in result.still_failing
    assert result.to_dict()["pending"] == ["judged", "waits"]


def test_a_pending_case_regresses_when_a_decided_grader_breaks() -> None:
    """With no judge, most cases are pending: a grader that passed in every BASE attempt
    and fails in NEW still makes the case regressed; a failure on a grader BASE never
    decided (the judge now configured) does not."""
    from evalcase.report.compare import compare as compare_reports
    from evalcase.report.compare import grader_verdicts

    def report(run: str, statuses: dict[str, str]) -> dict[str, Any]:
        cases = [{"case_id": c, "case_version": "v1", "status": s} for c, s in statuses.items()]
        return {"run": {"run_id": run, "commit": "c0"}, "summary": {}, "cases": cases}

    def grades(rows: list[tuple[str, int, str, str]]) -> dict[str, dict[str, str]]:
        return grader_verdicts(
            {"case_id": c, "attempt": a, "grader": g, "verdict": v} for c, a, g, v in rows
        )

    base = report("a", {"broke": "pending", "judged": "pending", "flaky": "pending"})
    new = report("b", {"broke": "fail", "judged": "fail", "flaky": "fail"})
    before = grades(
        [
            ("broke", 1, "citation", "pass"),
            ("broke", 1, "llm_rubric", "pending"),
            ("judged", 1, "citation", "pass"),
            ("judged", 1, "llm_rubric", "pending"),
            ("flaky", 1, "tool_calls", "pass"),
            ("flaky", 2, "tool_calls", "pending"),  # not decided on every attempt
        ]
    )
    after = grades(
        [
            ("broke", 1, "citation", "fail"),
            ("broke", 1, "llm_rubric", "pending"),
            ("judged", 1, "citation", "pass"),
            ("judged", 1, "llm_rubric", "fail"),
            ("flaky", 1, "tool_calls", "fail"),
        ]
    )
    result = compare_reports(base, new, base_grades=before, new_grades=after)
    assert result.regressed == ("broke",)
    assert result.pending == ("flaky", "judged") and result.still_failing == ()
    assert compare_reports(base, new).regressed == ()  # without grades: pending stays pending


def test_with_repeats_a_change_is_regressed_only_beyond_noise() -> None:
    """Fisher's exact test per case: 4/4 -> 0/4 regressed (p = 1/70), 4/4 -> 3/4 and
    3/4 -> 1/4 within noise, 1/4 -> 4/4 fixed only beyond noise too; single attempts keep
    the plain rule (a flip is a regression); a changed case is never tested."""
    from evalcase.report.compare import compare as compare_reports

    def report(run: str, rows: dict[str, str], digest: str = "d1") -> dict[str, Any]:
        word = {"p": "pass", "f": "fail"}
        cases = []
        for case, letters in rows.items():
            verdicts = [word[x] for x in letters]
            status = "pass" if set(letters) == {"p"} else ("flaky" if "p" in letters else "fail")
            cases.append({"case_id": case, "case_version": "v1", "status": status,
                          "verdicts": verdicts, "attempts": len(verdicts),
                          "passed": letters.count("p"),
                          "digest": digest if case == "changed" else "d1"})  # fmt: skip
        return {"run": {"run_id": run, "commit": "c0"}, "summary": {}, "cases": cases}

    base = report("a", {"broke": "pppp", "luck": "pppp", "drift": "pppf", "healed": "ffff",
                        "single": "p", "changed": "pppp", "same": "ppfp"})  # fmt: skip
    new = report("b", {"broke": "ffff", "luck": "pppf", "drift": "pfff", "healed": "pppp",
                       "single": "f", "changed": "ffff", "same": "pfpp"}, digest="d2")  # fmt: skip
    result = compare_reports(base, new)
    assert result.regressed == ("broke", "single")
    assert result.fixed == ("healed",)
    assert result.within_noise == ("drift", "luck")
    assert result.changed_cases == ("changed",)
    assert result.still_failing == ("same",)  # 3 of 4 on both sides: no change to test
    assert result.noise["broke"] == {"base": "4/4", "new": "0/4", "p": 0.014286,
                                     "verdict": "regressed"}  # fmt: skip
    assert result.noise["luck"]["p"] == 0.5
    assert "single" not in result.noise and "changed" not in result.noise
    # A stricter alpha leaves even 4/4 -> 0/4 within noise.
    strict = compare_reports(base, new, alpha=0.01)
    assert strict.regressed == ("single",)
    assert strict.to_dict()["changed_within_noise"] == ["broke", "drift", "healed", "luck"]
