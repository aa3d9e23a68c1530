"""`evalcase new`: next free ID, placeholders lint reports by field, --from drafts."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from evalcase.authoring.fmt import EXECUTION, JUDGING
from evalcase.authoring.ids import next_case_id
from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.loader import load
from evalcase.placeholders import is_placeholder
from evalcase.yamlwrite import round_trip_dump, round_trip_load
from tests.helpers import BASE_REPO, REPO_ROOT, commit_all, git, init_repo, invoke

NEW = "datasets/sample_set/cases/refund_account_change_001.yaml"

# What a person writes over the placeholders of a new tool case in the base repository.
FILLED: dict[str, Any] = {
    "title": "已验证用户修改退款账户",
    "scenario": "退款账户修改",
    "user_task": "修改退款到账账户",
    "ability_tags": ["工具调用"],
    "risk_level": "P2",
    "difficulty": "Medium",
    "source": "产品需求改写",
    "input": "我想把退款改到另一张卡，订单 ORDER_123。",
    "available_tools": ["order_lookup"],
    "tool_schema": {"order_lookup": "v1"},
    "expected_calls": {
        "order": "in_order",
        "calls": [{"tool": "order_lookup", "args": {"order_id": "ORDER_123"}}],
    },
    "expected_behavior": ["先查询订单再说明修改流程。"],
    "negative_behavior": ["未查询订单就承诺修改成功。"],
    "rubric": "refund_policy_faithfulness_v1",
    "evaluator_config": {
        "rule_checks": ["no_privacy_leak"],
        "graders": [{"type": "trace_rule"}],
    },
}


def repo_copy(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    return repo


def findings_on(repo: Path, path: str) -> list[tuple[str, int, str]]:
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    return [(f.code, f.line, f.message) for f in result.findings if f.path == path]


def placeholder_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        out = [(*path, k) for k in value if is_placeholder(k)]
        for k, v in value.items():
            out += placeholder_paths(v, (*path, k))
        return out
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in placeholder_paths(v, (*path, i))]
    return [path] if is_placeholder(value) else []


def test_new_then_filled_lints_clean_and_unfilled_names_each_field(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    made = invoke(
        "new", "sample_set", "--type", "tool", "--scenario", "refund_account_change", cwd=repo
    )
    assert made.returncode == 0, made.stderr
    assert f"wrote {NEW}" in made.stdout
    text = (repo / NEW).read_text("utf-8")
    data = load(NEW, text.encode()).data
    assert data["case_version"] == "v1"
    assert data["dataset_version"] == "v2"  # the manifest's
    assert data["metadata"]["review_status"] == "draft"
    assert "review_records" not in data["metadata"]
    assert data["case_types"] == ["tool"]
    # The contract's form, not expected_tool_sequence / expected_args.
    assert set(data["expected_calls"]) == {"order", "calls"}
    assert "expected_tool_sequence" not in data

    found = findings_on(repo, NEW)
    holes = placeholder_paths(data)
    assert {code for code, _, _ in found} == {"EC451"}, found
    assert len(found) == len(holes)
    messages = " ".join(m for _, _, m in found)
    for field in ("title", "expected_behavior[0]", "expected_calls.calls[0].tool", "risk_level"):
        assert f"{field} is still a placeholder" in messages

    doc = round_trip_load(text)
    for field, value in FILLED.items():
        doc[field] = value
    doc["metadata"]["dataset_role"] = "iteration"
    doc["metadata"]["usage_rights_status"] = "approved_for_evaluation"
    (repo / NEW).write_text(round_trip_dump(doc), "utf-8")
    assert placeholder_paths(load(NEW, (repo / NEW).read_bytes()).data) == []
    assert findings_on(repo, NEW) == []

    doc["expected_behavior"] = ["TODO: What should happen"]
    (repo / NEW).write_text(round_trip_dump(doc), "utf-8")
    left = findings_on(repo, NEW)
    assert [(c, m.split(" is ")[0]) for c, _, m in left] == [("EC451", "expected_behavior[0]")]


def test_from_an_approved_golden_case_gives_a_draft_without_approvals(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    source_id = "tool_refund_submit_confirmed_010"
    source_path = repo / f"datasets/refund_regression_set/cases/{source_id}.yaml"
    source = load("s", source_path.read_bytes()).data
    assert source["metadata"]["review_status"] == "approved"
    assert "golden" in str(source["metadata"]["dataset_role"])
    assert source["metadata"]["review_records"]

    made = invoke("new", "refund_regression_set", "--from", source_id, cwd=repo)
    assert made.returncode == 0, made.stderr
    rel = made.stdout.split("wrote ", 1)[1].strip()
    assert rel == "datasets/refund_regression_set/cases/tool_refund_submit_confirmed_011.yaml"
    copy = load(rel, (repo / rel).read_bytes()).data
    meta = copy["metadata"]
    assert meta["review_status"] == "draft"
    assert "review_records" not in meta
    role = meta["dataset_role"]
    roles = role if isinstance(role, list) else [role]
    assert "golden" not in roles
    assert copy["case_version"] == "v1"
    for field in EXECUTION:
        if field in source:
            assert copy[field] == source[field], field
    judged = [f for f in JUDGING if f in copy and f not in ("rubric",)]
    assert judged and all(placeholder_paths(copy[f]) for f in judged)
    codes = {c for c, _, _ in findings_on(repo, rel)}
    # Unfilled expectations; the input is still the source's (EC408 near-duplicate) until
    # the variant's input is written. Nothing about approvals: there are none.
    assert "EC451" in codes and not codes & {"EC402", "EC403"}, codes


def test_the_next_number_skips_ids_deleted_in_history(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    init_repo(repo)
    case = (repo / "datasets/sample_set/cases/refund_eligibility_001.yaml").read_text("utf-8")
    for n in (2, 3):
        (repo / f"datasets/sample_set/cases/refund_eligibility_00{n}.yaml").write_text(
            case.replace("refund_eligibility_001", f"refund_eligibility_00{n}"), "utf-8"
        )
    commit_all(repo, "three cases")
    git(repo, "rm", "-q", "datasets/sample_set/cases/refund_eligibility_003.yaml")
    commit_all(repo, "delete the third")
    made = invoke("new", "sample_set", "--type", "llm", "--scenario", "refund_eligibility",
                   cwd=repo)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "refund_eligibility_004.yaml" in made.stdout


def test_next_case_id_is_one_past_the_highest_ever_used() -> None:
    used = {"refund_policy_001", "refund_policy_007", "refund_policy_edge_009", "other_002"}
    assert next_case_id("refund_policy", used) == "refund_policy_008"
    assert next_case_id("refund_new_words", used) == "refund_new_words_001"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--type", "tool", "--scenario", "refunds_policy_x"], "'refunds' is not a domain"),
        (["--type", "tool", "--scenario", "refund_flying_x"], "'flying' is not an ability"),
        (["--type", "robot", "--scenario", "refund_policy_x"], "unknown case type robot"),
        (["--type", "tool"], "give --scenario"),
        (["--from", "no_such_case_001"], "no case 'no_such_case_001'"),
    ],
)
def test_bad_requests_are_clear_errors(tmp_path: Path, args: list[str], message: str) -> None:
    repo = repo_copy(tmp_path)
    (repo / "evalcase.toml").write_text(
        '[naming]\ndomains = ["refund"]\nabilities = ["eligibility", "policy", "account"]\n',
        "utf-8",
    )
    proc = invoke("new", "sample_set", *args, cwd=repo)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_unknown_dataset_is_a_clear_error(tmp_path: Path) -> None:
    proc = invoke("new", "nope_set", "--type", "llm", "--scenario", "refund_policy_x",
                   cwd=repo_copy(tmp_path))  # fmt: skip
    assert proc.returncode == 2 and "no dataset 'nope_set'" in proc.stderr
