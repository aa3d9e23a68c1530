"""The bundled English dataset: it lints clean, and its example agent (a real cmd:
subprocess) runs it with zero errors and passes what it can pass without a judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import bundled_repo, invoke

DATASET = "english_support_set"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("english") / "repo"
    return bundled_repo(root, ("/outputs/", "/reports/", "/.evalcase/"))


@pytest.mark.slow
def test_the_english_dataset_lints_clean(repo: Path) -> None:
    proc = invoke("lint", f"datasets/{DATASET}", "fixtures", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All checks passed" in proc.stdout


@pytest.mark.slow
def test_the_example_agent_runs_it_with_zero_errors(repo: Path) -> None:
    proc = invoke("run", DATASET, "--progress", "none", cwd=repo)
    # the gate over every case is pending without a judge (3 llm_rubric grades): exit 1
    assert proc.returncode in (0, 1), proc.stderr
    run_dir = repo / proc.stdout.splitlines()[0].split(" -> ")[-1]
    records = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text("utf-8").splitlines()]
    assert len(records) == 10 and [r["error"] for r in records if r["error"]] == []
    meta = json.loads((run_dir / "run.json").read_text("utf-8"))
    assert meta["agent"]["name"] == "english_agent"
    by_case = {r["case_id"]: r for r in records}
    cancel = by_case["agent_state_order_cancel_confirmed_001"]
    assert [c["tool"] for c in cancel["calls"]] == [
        "shop_order_status", "shop_order_status", "shop_order_cancel"
    ]  # fmt: skip
    assert cancel["calls"][0]["fault"] == "rate_limited"
    assert cancel["calls"][-1]["user_confirmed"] is True
    # Records (version 3) carry the diff, not the initial state (graders rebuild it from
    # the case): the cancellation is the one change to the order's status.
    assert "initial_state" not in cancel and cancel["initial_state_digest"]
    changed = {d["path"]: d["after"] for d in cancel["state_diff"]}
    assert changed.get("orders.ORDER_4101.status") == "cancelled", cancel["state_diff"]
    shipped = by_case["agent_status_shipped_order_002"]
    assert all(c["tool"] != "shop_order_cancel" for c in shipped["calls"])
    report_dir = repo / "reports" / run_dir.parent.name / run_dir.name
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    verdicts = {c["case_id"]: c for c in report["cases"]}
    passed = sorted(k for k, c in verdicts.items() if c["pass@1"] == 1.0)
    assert len(passed) >= 7, verdicts.keys()
    assert all(k.startswith(("llm_intent_", "agent_")) for k in passed)
