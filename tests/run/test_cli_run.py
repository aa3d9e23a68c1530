"""`evalcase run` end to end, as a user runs it: a real git repository with the bundled
datasets and fixtures, the example agent as a real subprocess, outputs on disk."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalcase.index.dataset import load_dataset
from evalcase.run.prompts import plan
from tests.helpers import (
    BUNDLED_DATASETS,
    GIT_ENV,
    REPO_ROOT,
    bundled_repo,
    commit_all,
    git,
    invoke,
    run_cli,
)

DATASETS = BUNDLED_DATASETS


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bundled_repo(tmp_path_factory.mktemp("runrepo") / "repo")


def _run_dir(stdout: str, root: Path) -> Path:
    return root / stdout.strip().splitlines()[-1].split(" -> ")[-1]


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in (run_dir / "attempts.jsonl").read_text("utf-8").splitlines()
    ]


@pytest.mark.slow
def test_the_example_agent_runs_the_refund_dataset_end_to_end(repo: Path) -> None:
    proc = invoke("run", "--no-grade", "refund_regression_set", "--repeat", "2", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    head = git(repo, "rev-parse", "HEAD").strip()
    run_dir = _run_dir(proc.stdout, repo)
    assert run_dir.parent == repo / "outputs" / head
    meta = json.loads((run_dir / "run.json").read_text("utf-8"))
    dataset = load_dataset(repo, "refund_regression_set")
    runnable = {t.case_id for t in dataset.tasks}
    assert set(meta["cases"]) == runnable
    assert meta["skipped"] == {} and not dataset.problems and len(runnable) == 32
    assert (
        meta["agent"]["name"] == "refund_agent" and meta["agent"]["version"] == "refund_agent/1.2"
    )
    assert meta["dirty"] is False and meta["dataset"]["digest"] == dataset.digest
    records = _records(run_dir)
    assert sorted((r["case_id"], r["attempt"]) for r in records) == sorted(
        (c, a) for c in runnable for a in (1, 2)
    )
    by_case = {r["case_id"]: r for r in records if r["attempt"] == 1}
    assert all(r["status"] == "completed" for r in records), [
        r["error"] for r in records if r["error"]
    ]
    # the runner recorded the tool calls, the injected timeout and the state change
    timeout = by_case["tool_refund_submit_timeout_009"]
    submits = [c for c in timeout["calls"] if c["tool"] == "refund_submit"]
    assert submits[0]["fault"] == "timeout" and submits[0]["error"]["code"] == "timeout"
    assert submits[0]["audit"]["timeout_event"] is True
    assert any(e["type"] == "fault" and e["kind"] == "timeout" for e in timeout["trace"])
    assert {
        "path": "orders.ORDER_6001.refund_status",
        "before": "not_started",
        "after": "refund_submitted",
        "op": "set",
    } in [
        {k: d[k] for k in ("path", "before", "after", "op")} for d in timeout["state_diff"]
    ] or any(d["path"] == "orders.ORDER_6001.refund_status" for d in timeout["state_diff"])
    # the injected timeout reached the agent as the tool's answer
    answers = [m for m in timeout["messages"] if m["role"] == "tool"]
    first_submit = next(m for m in answers if m["tool_call_id"] == submits[0]["id"])
    assert json.loads(first_submit["content"])["error"]["code"] == "timeout"
    # after the timeout the example agent looks the status up instead of submitting again
    assert len(submits) == 1 and [c["tool"] for c in timeout["calls"]][-1] == "refund_status_lookup"
    # it verifies identity (a code sent, the code checked) before it changes the account,
    # and the permission guarding the change lets it through
    journey = by_case["agent_refund_account_change_002"]
    assert [c["tool"] for c in journey["calls"]] == [
        "identity_verify",
        "identity_verify",
        "refund_status_lookup",
        "account_change_request",
    ]
    assert journey["calls"][1]["result"] == {"status": "verified"}
    assert journey["calls"][-1]["denied_by"] is None and journey["calls"][-1]["ok"]
    # asked once and never given the code, it never attempts the change
    unverified = by_case["refund_account_change_unverified_002"]
    assert "account_change_request" not in [c["tool"] for c in unverified["calls"]]
    limited = by_case["refund_status_rate_limited_001"]
    assert [(c["tool"], c["fault"]) for c in limited["calls"]][:2] == [
        ("refund_status_lookup", "rate_limited"),
        ("refund_status_lookup", None),
    ]
    assert by_case["tool_refund_submit_confirmed_010"]["state_diff"]
    assert "initial_state" not in by_case["tool_refund_submit_confirmed_010"]
    listing = invoke("runs", cwd=repo)
    assert meta["run_id"] in listing.stdout and "refund_regression_set@v1" in listing.stdout


@pytest.mark.slow
def test_a_recording_agent_receives_no_judge_field_fault_or_fixture_id(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the py: agent lives in tests/
    record_to = tmp_path / "requests.jsonl"
    for dataset_id in DATASETS:
        proc = invoke(
            "run", "--no-grade", dataset_id, "--agent", "py:tests.run.recording_agent:agent",
            cwd=repo, env={"EVALCASE_RECORD_TO": str(record_to)},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        records = _records(_run_dir(proc.stdout, repo))
        assert records and all(r["status"] == "completed" for r in records), records[0]["error"]
    requests = [json.loads(line) for line in record_to.read_text("utf-8").splitlines()]
    by_key: dict[str, list[dict[str, Any]]] = {}
    for request in requests:
        by_key.setdefault(request["attempt_key"], []).append(request)
    checked = 0
    for dataset_id in DATASETS:
        dataset = load_dataset(repo, dataset_id)
        # What the agent is given: each case's view with its prompt fixture rendered on it
        # (a prompt's text, such as a label set, is the agent's by design).
        rendered = {v.case_id: v.view for v in plan(dataset.tasks, dataset.prompts, ())}
        for task in dataset.tasks:
            seen = by_key[task.agent.attempt_key]
            text = json.dumps(seen, ensure_ascii=False)
            assert task.case_id not in text
            secret_ids = set(task.env.state_fixtures) | {c.fixture_id for c in task.env.corpora}
            if task.judge.rubric is not None and task.judge.rubric.id:
                secret_ids.add(task.judge.rubric.id)
            tool_names = {t.name for t in task.agent.tools}
            # an ID the case's own tool cards happen to carry (an enum value) is no leak
            view = json.dumps(dataclasses.asdict(rendered[task.case_id]), ensure_ascii=False)
            for fixture_id in secret_ids - tool_names:
                assert fixture_id in view or fixture_id not in text, (task.case_id, fixture_id)
            judge_texts = [
                v
                for key in (
                    "expected_behavior",
                    "negative_behavior",
                    "success_criteria",
                    "failure_criteria",
                    "reference",
                )
                for v in _strings(task.judge.text.get(key))
                if len(v) > 8
            ]
            # judge text the case also puts in the agent's view is no leak
            for value in judge_texts:
                assert value in view or value not in text, (task.case_id, value)
            keys = _keys(seen)
            assert not keys & {
                "faults",
                "permissions",
                "expected_calls",
                "final_state_check",
                "graders",
                "rubric",
                "on_call",
                "applied",
            }, (task.case_id, keys)
            for fault in task.env.faults:
                assert fault.kind not in {k for r in seen for k in r["params"]}
            checked += 1
    assert checked == len(by_key) > 30


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_runs_keep_the_cyclic_collector_on(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    proc = run_cli(
        "run",
        "--no-grade",
        "refund_regression_set",
        "--select",
        "tool_refund_check_*",
        "--agent",
        "py:tests.run.recording_agent:gc_state",
        cwd=repo,
    )
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(_run_dir(proc.stdout, repo))
    assert record["output"] == "gc enabled: True"


@pytest.mark.slow
def test_dirty_tree_refused_then_recorded_with_allow_dirty(repo: Path) -> None:
    case = repo / "datasets" / "refund_regression_set" / "cases" / "tool_refund_check_008.yaml"
    original = case.read_text("utf-8")
    case.write_text(
        original.replace("帮我看看这个订单能不能退", "帮我看看这个订单还能不能退"), "utf-8"
    )
    try:
        refused = invoke("run", "--no-grade", "refund_regression_set", cwd=repo)
        assert refused.returncode == 2 and "uncommitted changes" in refused.stderr
        assert "tool_refund_check_008.yaml" in refused.stderr
        allowed = invoke(
            "run",
            "--no-grade",
            "refund_regression_set",
            "--allow-dirty",
            "--select",
            "tool_refund_check_*",
            cwd=repo,
        )
        assert allowed.returncode == 0, allowed.stderr
        meta = json.loads((_run_dir(allowed.stdout, repo) / "run.json").read_text("utf-8"))
        assert meta["dirty"] is True
    finally:
        case.write_text(original, "utf-8")


@pytest.mark.slow
def test_a_tag_or_commit_is_run_without_checkout(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "tag", "-a", "refund_regression_set@v1", "-m", "release", first)
    case = repo / "datasets" / "refund_regression_set" / "cases" / "tool_refund_check_008.yaml"
    original = case.read_text("utf-8")
    case.write_text(
        original.replace("帮我看看这个订单能不能退", "请帮我看看这个订单能不能退"), "utf-8"
    )
    second = commit_all(repo, "reword")
    try:
        for spec in ("refund_regression_set@v1", f"refund_regression_set@{first[:12]}"):
            proc = invoke("run", "--no-grade", spec, "--select", "tool_refund_check_*", cwd=repo)
            assert proc.returncode == 0, proc.stderr
            run_dir = _run_dir(proc.stdout, repo)
            assert run_dir.parent.name == first
            (record,) = _records(run_dir)
            assert record["messages"][0]["content"] == "帮我看看这个订单能不能退"
        assert git(repo, "rev-parse", "HEAD").strip() == second  # nothing was checked out
    finally:
        git(repo, "tag", "-d", "refund_regression_set@v1")
        git(repo, "reset", "-q", "--hard", first)


@pytest.mark.slow
def test_bad_selection_and_unknown_agent_are_clear_errors(repo: Path) -> None:
    proc = invoke("run", "--no-grade", "refund_regression_set", "--suite", "nightly", cwd=repo)
    assert proc.returncode == 2 and "no suite 'nightly'" in proc.stderr
    proc = invoke("run", "--no-grade", "refund_regression_set", "--agent", "gibberish", cwd=repo)
    assert proc.returncode == 2 and "neither a [run.agents] name nor a spec" in proc.stderr
    proc = invoke("run", "--no-grade", "no_such_set", cwd=repo)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_the_identity_policy_refuses_before_verification_and_allows_after(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    proc = invoke(
        "run", "--no-grade", "refund_regression_set", "--select", "agent_refund_account_change_002",
        "--agent", "py:tests.run.agents:account_prober", cwd=repo,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(_run_dir(proc.stdout, repo))
    calls = [(c["tool"], c["denied_by"], (c["error"] or {}).get("code")) for c in record["calls"]]
    assert calls == [
        ("account_change_request", "account_change_requires_identity", "permission_denied"),
        ("identity_verify", None, None),
        ("account_change_request", None, None),
    ]
    refused, verified, allowed = record["calls"]
    assert refused["changes"] == [] and refused["audit"]["executed"] is False
    assert verified["changes"][0]["path"] == "session.user_authenticated"
    assert allowed["user_confirmed"] is True and allowed["audit"]["identity_verification_result"]
    assert {d["path"] for d in record["state_diff"]} >= {"session.user_authenticated"}


@pytest.mark.slow
def test_an_unbuildable_case_is_refused_or_skipped_on_request(repo: Path) -> None:
    name = "agent_refund_account_change_002"
    case = repo / "datasets" / "refund_regression_set" / "cases" / f"{name}.yaml"
    original = case.read_text("utf-8")
    found = re.search(r"  permissions:\n(?:    .*\n)+", original)  # the indented block
    assert found is not None
    policy = found.group(0)
    case.write_text(
        original.replace(policy, "  permissions: {account_change_requires_identity: true}\n"),
        "utf-8",
    )
    try:
        refused = invoke("run", "--no-grade", "refund_regression_set", "--allow-dirty", cwd=repo)
        assert refused.returncode == 2 and "cannot be run" in refused.stderr
        assert f"{name}.yaml" in refused.stderr and "--skip-invalid" in refused.stderr
        skipped = invoke(
            "run", "--no-grade", "refund_regression_set", "--allow-dirty", "--skip-invalid",
            "--select", "agent_refund_*", cwd=repo,
        )  # fmt: skip
        assert skipped.returncode == 0, skipped.stderr
        meta = json.loads((_run_dir(skipped.stdout, repo) / "run.json").read_text("utf-8"))
        assert list(meta["skipped"]) == [f"datasets/refund_regression_set/cases/{name}.yaml"]
        assert name not in meta["cases"] and meta["cases"]
    finally:
        case.write_text(original, "utf-8")


@pytest.mark.slow
def test_kill_9_of_evalcase_run_then_resume_gives_the_same_attempt_set(repo: Path) -> None:
    slow = f"cmd:{sys.executable} {Path(__file__).parent / 'cmd_agents' / 'slow.py'}"
    head = git(repo, "rev-parse", "HEAD").strip()
    before = (
        set((repo / "outputs" / head).glob("*")) if (repo / "outputs" / head).exists() else set()
    )
    env = {**os.environ, **GIT_ENV, "PYTHONPATH": str(REPO_ROOT / "tools")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcase", "run", "refund_regression_set", "--repeat", "2",
         "--concurrency", "4", "--agent", slow, "--progress", "none"],
        cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    attempts: Path | None = None
    while time.monotonic() < deadline:
        new = (
            set((repo / "outputs" / head).glob("*")) - before
            if (repo / "outputs" / head).exists()
            else set()
        )
        if new:
            attempts = next(iter(new)) / "attempts.jsonl"
            if attempts.exists() and attempts.read_bytes().count(b"\n") >= 6:
                break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert attempts is not None
    done_before = attempts.read_bytes().count(b"\n")
    assert 6 <= done_before < 64, "the kill must land mid-run"
    run_id = attempts.parent.name
    resumed = invoke("run", "--no-grade", "--resume", run_id, "--progress", "none", cwd=repo)
    assert resumed.returncode == 0, resumed.stderr
    assert f"64 attempts ({64 - done_before} new)" in resumed.stdout
    keys = [(r["case_id"], r["attempt"]) for r in _records(attempts.parent)]
    case_ids = {t.case_id for t in load_dataset(repo, "refund_regression_set").tasks}
    assert len(keys) == len(set(keys)) == 64
    assert set(keys) == {(c, a) for c in case_ids for a in (1, 2)}
    meta = json.loads((attempts.parent / "run.json").read_text("utf-8"))
    assert meta["status"] == "completed" and len(meta["resumed_at"]) == 1
    again = invoke("run", "--no-grade", "--resume", run_id, "--progress", "none", cwd=repo)
    assert again.returncode == 0 and "(0 new)" in again.stdout
