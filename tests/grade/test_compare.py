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
from tests.helpers import commit_all, invoke


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
            proc = invoke("grade", run, cwd=repo, env=env)
            assert proc.returncode in (0, 1), proc.stderr
        yield {"repo": repo, "env": env}


def compare(runs: dict[str, Any], base: str, new: str) -> tuple[dict[str, Any], str]:
    proc = invoke("compare", base, new, "--format", "json", "--common", cwd=runs["repo"])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.slow
def test_regressed_and_fixed_exactly(runs: dict[str, Any]) -> None:
    result, _ = compare(runs, "run-a", "run-b")
    assert result["regressed"] == ["tool_refund_check_008"]
    assert result["fixed"] == ["agent_refund_duplicate_submit_003"]
    assert result["still_failing"] == ["llm_instruction_001"]
    # Different case sets, compared with --common: the cases one side lacks are left out.
    assert result["left_out"] == {
        "base": ["refund_intent_venting_002"],
        "new": ["refund_eligibility_001"],
    }
    assert result["new_cases"] == result["removed_cases"] == []
    assert result["warnings"] == []
    p0 = result["slices"]["risk_level"]["P0"]
    assert (p0["base"], p0["new"], p0["change"]) == (0.0, 1.0, 1.0)


def test_text_output_and_regression_exit(runs: dict[str, Any]) -> None:
    proc = invoke("compare", "run-a", "run-b", "--fail-on-regression", "--common", cwd=runs["repo"])
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
    proc = invoke("compare", "run-a", "run-c", "--common", cwd=runs["repo"])
    assert "WARNING: DIFFERENT DATASET CONTENT" in proc.stderr
    assert "tool_refund_check_008" in proc.stderr


def test_a_changed_case_is_changed_never_regressed(runs: dict[str, Any]) -> None:
    result, _ = compare(runs, "run-a", "run-d")
    # tool_refund_check_008 passed in A and fails in D, but D graded its v2.
    assert result["changed_cases"] == ["tool_refund_check_008"]
    assert result["regressed"] == []
    assert "tool_refund_check_008" not in result["still_passing"] + result["still_failing"]
    assert result["still_failing"] == ["agent_refund_duplicate_submit_003"]
    proc = invoke("compare", "run-a", "run-d", "--fail-on-regression", "--common", cwd=runs["repo"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changed (1): tool_refund_check_008" in proc.stdout
    assert "regressed (0)" in proc.stdout
    # A real regression on the unchanged case still fails the gate.
    proc = invoke("compare", "run-b", "run-d", "--fail-on-regression", "--common", cwd=runs["repo"])
    assert proc.returncode == 1
    assert "regressed (1): agent_refund_duplicate_submit_003" in proc.stdout


def test_require_same_content_refuses_different_content(runs: dict[str, Any]) -> None:
    proc = invoke(
        "compare", "run-a", "run-d", "--require-same-content", "--common", cwd=runs["repo"]
    )
    assert proc.returncode == 2
    assert "graded different dataset content" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    # The same content compares as usual.
    same = invoke(
        "compare", "run-a", "run-b", "--require-same-content", "--common", cwd=runs["repo"]
    )
    assert same.returncode == 0, same.stderr
    assert "regressed (1): tool_refund_check_008" in same.stdout


def test_unknown_run_is_a_clear_error(runs: dict[str, Any]) -> None:
    proc = invoke("compare", "run-a", "nope", cwd=runs["repo"])
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


# What compare compares: runs written the way the runner writes run.json, graded by the
# real `evalcase grade`, then compared in process. One commit (main), six runs:
# whole-a, whole-b (refund_agent, both cases), sel (--select one case), rep (refund_agent_v2,
# --repeat 2), dirty (--allow-dirty), broken (interrupted: one of two attempts).
def _meta(started: str, n: int, **extra: Any) -> dict[str, Any]:
    return {"started_at": started, "status": "completed", "planned": n,
            "counts": {"attempts": n, "errors": 0},
            "options": {"repeat": 1, "select": [], "suites": []}, **extra}  # fmt: skip


@pytest.fixture(scope="module")
def picks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    repo, commit = refund_repo(tmp_path_factory.mktemp("picks"))
    v2 = {"spec": "cmd:python examples/refund_agent --v2", "name": "refund_agent_v2"}
    runs = {
        "whole-a": ([check_008(True), duplicate_003(True)], _meta("2026-07-08T10:00:00Z", 2)),
        "whole-b": ([check_008(False), duplicate_003(True)], _meta("2026-07-08T11:00:00Z", 2)),
        "sel": ([check_008(True)], _meta("2026-07-08T12:00:00Z", 1, options={
            "repeat": 1, "select": ["tool_refund_check_008"], "suites": []})),
        "rep": (
            [check_008(True, 1), check_008(True, 2), duplicate_003(True, 1),
             duplicate_003(True, 2)],
            _meta("2026-07-08T13:00:00Z", 4, agent=v2,
                  options={"repeat": 2, "select": [], "suites": []}),
        ),
        "dirty": ([check_008(True), duplicate_003(True)],
                  _meta("2026-07-08T14:00:00Z", 2, dirty=True)),
        "broken": ([check_008(True)], {**_meta("2026-07-08T15:00:00Z", 2), "status":
                   "interrupted", "counts": {"attempts": 1, "errors": 0}}),
    }  # fmt: skip
    for run_id, (attempts, meta) in runs.items():
        write_run(repo, commit, run_id, attempts, **meta)
        proc = invoke("grade", run_id, cwd=repo)
        assert proc.returncode in (0, 1), proc.stderr
    yield repo


def in_process(repo: Path, *args: str) -> Any:
    from click.testing import CliRunner

    from evalcase.commands.grade import compare_command

    return CliRunner().invoke(compare_command, [*args, "--root", str(repo)])


def test_a_run_compared_with_itself_is_refused(picks: Path) -> None:
    """The newest clean, complete run is at main's commit: main and latest are one run."""
    result = in_process(picks, "main", "latest", "--fail-on-regression")
    assert result.exit_code == 2, result.output
    assert "are the same run, rep" in result.output
    assert "Traceback" not in result.output


def test_different_case_sets_are_refused_unless_common(picks: Path) -> None:
    result = in_process(picks, "whole-a", "sel", "--fail-on-regression")
    assert result.exit_code == 2, result.output
    assert "ran different cases (1 case(s) only in BASE: agent_refund_duplicate_submit_003" in (
        result.output
    )
    assert "--common" in result.output
    common = in_process(picks, "whole-a", "sel", "--common", "--format", "json")
    assert common.exit_code == 0, common.output
    data = json.loads(common.stdout)
    assert data["common"] is True
    assert data["left_out"] == {"base": ["agent_refund_duplicate_submit_003"], "new": []}
    assert data["still_passing"] == ["tool_refund_check_008"]
    assert data["new_cases"] == data["removed_cases"] == []
    text = in_process(picks, "whole-a", "sel", "--common")
    assert "left out, only in BASE (1): agent_refund_duplicate_submit_003" in text.stdout
    assert "compared the 1 case(s) both runs ran; left out 1 only in BASE and 0 only in NEW" in (
        text.stdout
    )


def test_references_pick_clean_complete_runs_of_the_agent(picks: Path) -> None:
    def base_of(*args: str) -> str:
        result = in_process(picks, *args, "whole-b", "--format", "json", "--common")
        assert result.exit_code == 0, result.output
        return str(json.loads(result.stdout)["base"]["run_id"])

    # dirty and broken are newer, but a reference passes over them.
    assert base_of("refund_regression_set@v1") == "rep"
    assert base_of("refund_regression_set@v1", "--agent", "refund_agent") == "sel"
    assert base_of("refund_regression_set@v1:refund_agent") == "sel"
    assert base_of("latest~2:refund_agent") == "whole-a"  # sel, whole-b, whole-a
    assert base_of("refund_regression_set@v1", "--allow-dirty") == "dirty"
    assert base_of("broken") == "broken"  # a run ID means that run
    assert base_of("dirty") == "dirty"
    none = in_process(picks, "refund_regression_set@v1:nobody", "whole-b")
    assert none.exit_code == 2
    assert "no clean, complete graded run of agent nobody of refund_regression_set" in none.output
    assert "passed over: " in none.output and "dirty (agent refund_agent)" in none.output


def test_the_header_states_both_sides_and_warns_of_differences(picks: Path) -> None:
    result = in_process(picks, "whole-a", "rep")
    assert result.exit_code == 0, result.output
    assert (
        "  base: refund_regression_set v1, agent refund_agent (version ?), all cases, "
        "repeat 1, clean" in result.stdout
    )
    assert (
        "  new:  refund_regression_set v1, agent refund_agent_v2 (version ?), all cases, "
        "repeat 2, clean" in result.stdout
    )
    assert "WARNING: different agents: BASE refund_agent (version ?), NEW refund_agent_v2" in (
        result.output
    )
    sel = in_process(picks, "sel", "whole-b", "--common")
    assert "different selections: BASE --select tool_refund_check_008, NEW all cases" in (
        sel.output
    )
    dirty = in_process(picks, "whole-a", "dirty", "--format", "json")
    assert dirty.exit_code == 0, dirty.output
    data = json.loads(dirty.stdout)
    assert data["new"]["dirty"] is True
    assert any("NEW dirty is dirty" in w for w in data["warnings"])
