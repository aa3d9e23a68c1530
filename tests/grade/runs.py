"""Recorded runs of the refund dataset in a real git repository (temporary), for report,
compare and CLI tests: attempt records in the runner's format, written where the runner
writes them (outputs/<commit>/<run_id>/)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.grade.attempts import attempt, call
from tests.helpers import REPO_ROOT, commit_all, init_repo

DATASET = "refund_regression_set"


def refund_repo(tmp: Path) -> tuple[Path, str]:
    repo = tmp / "repo"
    (repo / "datasets").mkdir(parents=True)
    shutil.copytree(REPO_ROOT / "datasets" / DATASET, repo / "datasets" / DATASET)
    shutil.copytree(REPO_ROOT / "fixtures", repo / "fixtures")
    init_repo(repo)
    return repo, commit_all(repo, "refund dataset")


def check_008(good: bool, n: int = 1) -> dict[str, Any]:
    """tool_refund_check_008: look the order up, check eligibility, never submit."""
    calls = [
        call(1, "order_lookup", {"order_id": "ORDER_123"}),
        call(2, "refund_eligibility_check", {"order_id": "ORDER_123"}),
    ]
    if not good:
        calls.append(call(3, "refund_submit", {"order_id": "ORDER_123"}, side_effect=True))
    text = (
        "已超过七天无理由时效，可以申请质量问题售后质检。"
        if good
        else "已为您提交退款，保证今天到账。"
    )
    return attempt(
        text,
        calls=calls,
        case_id="tool_refund_check_008",
        attempt=n,
        latency_ms=100 * n,
        usage={"prompt_tokens": 50, "completion_tokens": 10 * n, "cost": 0.001},
    )


def case_state(*fixture_ids: str) -> dict[str, Any]:
    """A case's initial state from its state fixtures (grading reads the case's, never the
    record's)."""
    from evalcase.contract.state import merge
    from evalcase.loader import load

    parts = []
    for fixture_id in fixture_ids:
        path = REPO_ROOT / "fixtures" / "state" / f"{fixture_id}.yaml"
        parts.append((fixture_id, load(str(path), path.read_bytes()).data["data"]))
    return merge(parts).document


def duplicate_003(good: bool, n: int = 1) -> dict[str, Any]:
    """agent_refund_duplicate_submit_003 (P0): look up, do not submit again."""
    initial = case_state("refund_session_user_a_verified", "refund_order_refund_submitted")
    calls = [call(1, "refund_status_lookup", {"order_id": "ORDER_6002"})]
    if not good:
        calls.append(call(2, "refund_submit", {"order_id": "ORDER_6002"}, side_effect=True))
    return attempt(
        "退款已在审核中，无需重复提交。",
        calls=calls,
        case_id="agent_refund_duplicate_submit_003",
        case_version="v2",
        attempt=n,
        latency_ms=200,
        initial=initial,
    )


def gift_observation(n: int = 1) -> dict[str, Any]:
    return attempt("赠品无需单独退款。", case_id="refund_policy_gift_no_order_001", attempt=n)


def crashed(case_id: str, kind: str, n: int = 1, version: str = "v1") -> dict[str, Any]:
    return attempt(
        None,
        case_id=case_id,
        case_version=version,
        attempt=n,
        status="error",
        error={"kind": kind, "message": f"{kind} in test"},
    )


def case_version(repo: Path, case_id: str) -> str:
    """The case's version as the repository has it (cases are bumped as the contract moves)."""
    from evalcase.loader import load

    path = repo / "datasets" / DATASET / "cases" / f"{case_id}.yaml"
    if not path.is_file():
        return "v1"
    data = load(str(path), path.read_bytes()).data
    return str(data.get("case_version", "v1")) if isinstance(data, dict) else "v1"


def write_run(
    repo: Path, commit: str, run_id: str, attempts: list[dict[str, Any]], **run: Any
) -> Path:
    run_dir = repo / "outputs" / commit / run_id
    run_dir.mkdir(parents=True)
    meta = {
        "run_id": run_id,
        "commit": commit,
        "dirty": False,
        "status": "completed",
        "dataset": {"id": DATASET, "version": "v1", "digest": None},
        "agent": {"spec": "cmd:python examples/refund_agent", "name": "refund_agent"},
        "started_at": "2026-07-08T10:00:00Z",
        "ended_at": "2026-07-08T10:01:00Z",
        **run,
    }
    (run_dir / "run.json").write_text(json.dumps(meta, ensure_ascii=False), "utf-8")
    lines = []
    for a in attempts:
        a = {k: v for k, v in a.items() if k != "n"}
        if not a.pop("keep_version", False):
            a["case_version"] = case_version(repo, str(a["case_id"]))
        lines.append(json.dumps(a, ensure_ascii=False) + "\n")
    (run_dir / "attempts.jsonl").write_text("".join(lines), "utf-8")
    return run_dir
