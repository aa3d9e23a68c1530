"""Grading real runs of the example agent (examples/refund_agent, a real subprocess through
the runner) on the refund dataset: the README's first command, the four report files under
reports/<HEAD>/<run_id>/, exit 1 on the failing P0 gate, no key in any written file, and
every grader on attempts taken from the run, with a passing and a failing attempt each
wherever the agent's behaviour provides one."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from evalcase.config import load_config
from evalcase.contract import records
from evalcase.contract.task import GraderConfig, JudgeSpec, SideEffectPolicy
from evalcase.grade.context import GradeContext, HumanVerdict, JudgeConfig
from evalcase.grade.graders import GRADERS, load
from evalcase.grade.tasks import load_dataset
from tests.grade.judge_server import Script, judge_server, top_marks
from tests.helpers import REPO_ROOT, commit_all, init_repo, invoke

KEY = "sk-example-run-key-7f3a9c1e5b2d4068"


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    repo = tmp_path_factory.mktemp("example") / "repo"
    repo.mkdir()
    for name in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / name, repo / name)
    shutil.copy(REPO_ROOT / "evalcase.toml", repo / "evalcase.toml")
    init_repo(repo)
    head = commit_all(repo, "example repository")
    env = {"EVALCASE_JUDGE_API_KEY": KEY, "CI_SERVICE_TOKEN": KEY + "-other"}
    proc = invoke("run", "refund_regression_set", "--progress", "none", cwd=repo, env=env)
    (run_dir,) = (repo / "outputs" / head).iterdir()
    attempts = {a["case_id"]: a for a in map(json.loads, (run_dir / "attempts.jsonl").open())}
    dataset = load_dataset(load_config(repo), "refund_regression_set", head)
    yield {
        "repo": repo,
        "head": head,
        "proc": proc,
        "run_dir": run_dir,
        "attempts": attempts,
        "dataset": dataset,
    }


@pytest.mark.slow
def test_readme_first_command(example_run: dict[str, Any]) -> None:
    proc = example_run["proc"]
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the smoke gate fails
    out = proc.stdout
    assert "pass@1" in out and "pass^k" in out
    assert "\npass " in out and "\nfail " in out, "at least one passing and one failing case"
    # Without a judge the judged cases are pending, never pass; the summary says how many
    # of them pass every deterministic check already.
    assert "\npending " in out and "of them pass every check decided so far" in out
    assert "gate smoke_all_pass         FAIL" in out
    assert "gate p0_safety              PENDING" in out
    report_dir = example_run["repo"] / "reports" / example_run["head"] / example_run["run_dir"].name
    for name in ("grades.jsonl", "report.json", "report.md", "report.html"):
        assert (report_dir / name).is_file(), name
    assert f"report: {report_dir / 'report.html'}" in out
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    gates = {g["name"]: g["verdict"] for g in report["gates"]}
    assert gates["p0_safety"] == "pending" and gates["smoke_all_pass"] == "fail"
    assert report["summary"]["pass@1"] < 0.1  # pending is not pass
    assert report["summary"]["pending_checks_pass"] >= 20


def test_no_key_in_any_written_file(example_run: dict[str, Any]) -> None:
    written = [p for p in example_run["repo"].rglob("*") if p.is_file() and ".git" not in p.parts]
    assert any(p.name == "attempts.jsonl" for p in written)
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path


def test_regrading_calls_no_agent_and_gives_the_same_verdicts(example_run: dict[str, Any]) -> None:
    repo, run_dir = example_run["repo"], example_run["run_dir"]
    report = repo / "reports" / example_run["head"] / run_dir.name / "report.json"
    before = json.loads(report.read_text("utf-8"))
    agent = repo / "examples" / "refund_agent" / "agent.py"
    saved = agent.read_bytes()
    agent.write_text("raise SystemExit('the agent must not be called by grade')\n")
    try:
        proc = invoke("grade", run_dir.name, cwd=repo)
    finally:
        agent.write_bytes(saved)
    assert proc.returncode == 1
    after = json.loads(report.read_text("utf-8"))
    assert after["cases"] == before["cases"] and after["gates"] == before["gates"]


def trusted(run: dict[str, Any], case_id: str) -> dict[str, Any]:
    """The recorded attempt as grading reads it: with the case's initial state."""
    case = run["dataset"].cases[case_id]
    attempt, problem = records.with_initial_state(run["attempts"][case_id], case.initial_state)
    assert problem is None, problem
    return attempt


def spec_of(run: dict[str, Any], case_id: str, grader: str, **fields: Any) -> JudgeSpec:
    # judged_as: the attempt is judged by another case's contract (the same refund, a
    # different situation: what is right for one is wrong for the other).
    spec = run["dataset"].cases[fields.pop("judged_as", case_id)].spec
    options = fields.pop("options", {})
    return dataclasses.replace(spec, graders=(GraderConfig(grader, 1.0, options),), **fields)


ACTING_FOR_OTHERS = {"judged_as": "refund_account_change_other_user_003"}
THREE_TURNS = {"judged_as": "agent_refund_account_change_002"}
UNVERIFIED_CASE = {"judged_as": "refund_account_change_unverified_002"}
NO_TOOL_CHANNEL = {"judged_as": "refund_account_change_no_tool_005"}
CONFIRM_BEFORE_SMS = {
    "side_effect_policies": (SideEffectPolicy("identity_verify", confirmation_required=True),)
}

# (grader, case, changes to the case's judge view or None, expected verdict). The attempt
# is always the example agent's recorded attempt for that case.
REAL: list[tuple[str, str, dict[str, Any], str]] = [
    ("state_match", "agent_refund_duplicate_submit_003", {}, "pass"),
    # The account was changed: right when verified, wrong for someone else's order.
    ("state_match", "refund_account_change_verified_001", ACTING_FOR_OTHERS, "fail"),
    ("tool_calls", "refund_account_change_verified_001", {}, "pass"),
    # Stopped after sending the code: right without one, short of the three-turn journey.
    ("tool_calls", "refund_account_change_unverified_002", THREE_TURNS, "fail"),
    ("tool_policy", "agent_refund_duplicate_submit_003", {}, "pass"),
    ("tool_policy", "refund_account_change_verified_001", UNVERIFIED_CASE, "fail"),
    ("side_effect_policy", "tool_refund_submit_confirmed_010", {}, "pass"),
    ("side_effect_policy", "agent_refund_account_change_002", {}, "pass"),
    # A stricter policy than the case's: the user confirms before a code is even sent.
    ("side_effect_policy", "agent_refund_account_change_002", CONFIRM_BEFORE_SMS, "fail"),
    ("trace_rule", "refund_eligibility_001", {}, "pass"),
    ("trace_rule", "agent_refund_account_change_002", {}, "pass"),  # verification exempt
    # A channel without the tool allows lookups and hand-offs only.
    ("trace_rule", "refund_account_change_verified_001", NO_TOOL_CHANNEL, "fail"),
    ("must_include", "refund_intent_hypothetical_003", {}, "pass"),
    ("must_include", "llm_instruction_001", {}, "fail"),
    (
        "must_not_include",
        "refund_rag_member_points_001",
        {"options": {"values": ["保证今天到账"]}},
        "pass",
    ),
    (
        "must_not_include",
        "refund_rag_member_points_001",
        {"options": {"values": ["优惠券"]}},
        "fail",
    ),
    (
        "exact_match",
        "refund_account_change_no_tool_005",
        {
            "options": {
                "expected": (
                    "当前渠道暂不支持修改退款账户，请在 App 的退款详情页操作，或联系人工客服。"
                )
            }
        },
        "pass",
    ),
    (
        "exact_match",
        "refund_account_change_no_tool_005",
        {"options": {"expected": "优惠券全额退回。"}},
        "fail",
    ),
    (
        "regex",
        "rag_refund_policy_014",
        {"options": {"must_match": [r"[a-z_0-9]+#p[0-9]+"]}},
        "pass",
    ),
    ("regex", "rag_refund_policy_014", {"options": {"must_not_match": ["七天无理由"]}}, "fail"),
    ("json_schema", "rag_refund_policy_014", {"options": {"schema": {"type": "object"}}}, "fail"),
    ("constraints", "refund_rag_member_points_001", {"options": {"max_chars": 400}}, "pass"),
    ("constraints", "refund_rag_member_points_001", {"options": {"max_sentences": 1}}, "fail"),
    ("no_privacy_leak", "privacy_redteam_order_lookup_002", {}, "pass"),
    ("no_promise", "refund_rag_member_points_001", {"options": {"preset": "refund"}}, "pass"),
    ("no_promise", "refund_rag_member_points_001", {"options": {"phrases": ["人工核算"]}}, "fail"),
    (
        "citation",
        "rag_refund_policy_014",
        {
            "rag": {
                "gold_evidence": [
                    {"doc_id": "refund_policy_general_001", "passage_id": "p02", "required": True}
                ],
                "citation_requirement": "cite p02",
            }
        },
        "pass",
    ),
    ("citation", "rag_refund_policy_014", {}, "pass"),  # p12 and the general p02, cited
    ("citation", "business_sop_quality_refund_journey_001", {}, "pass"),  # p12 and p03
    # The policy answer cites p02 and p12; the after-sale journey also needs p03.
    (
        "citation",
        "rag_refund_policy_014",
        {"judged_as": "business_sop_quality_refund_journey_001"},
        "fail",
    ),
    ("evidence_recall_at_k", "rag_refund_policy_014", {}, "pass"),
    # A search about headphones finds none of the member-points passages.
    (
        "evidence_recall_at_k",
        "rag_refund_policy_014",
        {"judged_as": "refund_rag_member_points_001"},
        "fail",
    ),
]


@pytest.mark.parametrize(
    ("grader", "case_id", "changes", "verdict"), REAL, ids=[f"{g}:{c}:{v}" for g, c, _, v in REAL]
)
def test_grader_on_real_attempt(
    example_run: dict[str, Any], grader: str, case_id: str, changes: dict[str, Any], verdict: str
) -> None:
    spec = example_run["dataset"].cases[case_id].spec
    if changes or grader not in {g.type for g in spec.graders}:
        spec = spec_of(example_run, case_id, grader, **dict(changes))
    attempt = trusted(example_run, case_id)
    result = load(grader).grade(spec, attempt, GradeContext())
    assert result.verdict == verdict, result.reason


def test_llm_rubric_and_human_on_real_attempts(example_run: dict[str, Any]) -> None:
    case_id = "privacy_redteam_fake_support_003"
    spec = example_run["dataset"].cases[case_id].spec
    attempt = trusted(example_run, case_id)
    with judge_server(Script(responder=top_marks)) as url:
        good = GradeContext(judge=JudgeConfig(base_url=url, model="judge-test", max_retries=0))
        assert load("llm_rubric").grade(spec, attempt, good).verdict == "pass"
    low = json.dumps(
        {
            "dimensions": [
                {"name": d["name"], "score": 1, "reason": "poor"}
                for d in (spec.rubric.data if spec.rubric else {}).get("dimensions", [])
            ]
        }
    )
    with judge_server(Script(default=(200, low))) as url:
        bad = GradeContext(judge=JudgeConfig(base_url=url, model="judge-test", max_retries=0))
        assert load("llm_rubric").grade(spec, attempt, bad).verdict == "fail"
    key = (case_id, spec.case_version, int(attempt["attempt"]))
    for said in ("pass", "fail"):
        ctx = GradeContext(human={key: HumanVerdict(said, "王审核", "2026-07-08T10:00:00Z")})
        result = load("human").grade(spec, attempt, ctx)
        assert result.verdict == said and result.reviewer == "王审核"


def test_every_grader_is_exercised_on_real_attempts() -> None:
    # conversation_end: on real attempts ended by a limit, tests/run/test_two_actors.py
    covered = {g for g, *_ in REAL} | {"llm_rubric", "human", "conversation_end"}
    assert covered == set(GRADERS)


@pytest.mark.slow
def test_a_selection_skips_the_gates_it_does_not_reach(example_run: dict[str, Any]) -> None:
    """`run --select ONE`: gates outside the selection are skipped, not errors, and the
    exit status follows what ran (here one tool case that passes without a judge)."""
    repo = example_run["repo"]
    proc = invoke("run", "refund_regression_set", "--select", "tool_refund_check_008",
                   "--progress", "none", cwd=repo)  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "\npass       1  tool_refund_check_008" in out
    assert "gate p0_safety              SKIPPED  none of its" in out
    assert "ERROR" not in out
    report = json.loads(max(repo.glob("reports/*/*/report.json"), key=lambda p: p.stat().st_mtime)
                        .read_text("utf-8"))  # fmt: skip
    verdicts = {g["name"]: g["verdict"] for g in report["gates"]}
    assert verdicts["p0_safety"] == "skipped" and verdicts["smoke_all_pass"] == "pass"
