"""The openai: adapter (evalcase.transport) against a real local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcase.run import driver
from evalcase.run.executors import get_executor
from tests.run.openai_server import RESET, TRICKLE, Server, completion
from tests.run.support import job, run_attempt, task_of, tool, view

KEY = "sk-test-7f3a9c1e-never-written"
LOOKUP = tool(
    "order_lookup",
    responses=({"when": {"order_id": "ORDER_1"}, "result": {"status": "signed", "days": 3}},),
)


def _job(server: Server, **kw: Any) -> Any:
    # Generous: the first attempt of the process starts the event loop, slow on a busy machine.
    kw.setdefault("timeout", 120.0)
    j = job(view("where is ORDER_1?", tools=(LOOKUP,)), (LOOKUP,), agent="openai:local-model", **kw)
    options = {"base_url": server.url, "api_key_env": "EVALCASE_TEST_OPENAI_KEY", "backoff_s": 0.01}
    return type(j)(**{**j.__dict__, "adapter_options": options})


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCASE_TEST_OPENAI_KEY", KEY)


def _call(args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "call_9",
        "type": "function",
        "function": {"name": "order_lookup", "arguments": json.dumps(args)},
    }


def test_tool_calls_round_trip_and_usage_is_recorded() -> None:
    server = Server(
        [
            (200, completion(tool_calls=[_call({"order_id": "ORDER_1"})]), {}),
            (200, completion("Signed 3 days ago."), {}),
        ]
    )
    with server.running():
        record = run_attempt(_job(server))
    assert record["status"] == "completed", record["error"]
    assert record["output"] == "Signed 3 days ago."
    assert record["calls"][0]["result"] == {"status": "signed", "days": 3}
    assert record["usage"]["prompt_tokens"] == 22 and record["usage"]["completion_tokens"] == 14
    assert record["agent_version"] == "openai:local-model-1"
    first, second = server.requests
    assert first["model"] == "local-model"
    assert first["tools"][0]["function"]["name"] == "order_lookup"
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": json.dumps({"status": "signed", "days": 3}),
    }
    headers = {k.lower(): v for k, v in server.headers[0].items()}
    assert headers["authorization"] == f"Bearer {KEY}"


def test_a_429_then_success_is_retried_with_backoff() -> None:
    server = Server(
        [
            (429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"retry-after": "0"}),
            (503, {"error": {"message": "busy"}}, {}),
            (200, completion("fine"), {}),
        ]
    )
    with server.running():
        record = run_attempt(_job(server))
    assert record["status"] == "completed", record["error"]
    assert record["usage"]["retries"] == 2
    assert len(server.requests) == 3


def test_retries_give_up_as_a_recorded_error() -> None:
    server = Server([(429, {"error": {"message": "no"}}, {"retry-after": "0"})] * 6)
    with server.running():
        record = run_attempt(_job(server))
    assert record["error"]["kind"] == "adapter" and "429" in record["error"]["message"]


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("this is not json {", "bad_json"),
        ({"id": "x", "object": "chat.completion", "choices": []}, "protocol"),
        (
            completion(
                tool_calls=[{"id": "c", "type": "function", "function": {"arguments": "{}"}}]
            ),
            "protocol",
        ),
    ],
)
def test_a_malformed_reply_is_a_recorded_error(body: Any, kind: str) -> None:
    server = Server([(200, body, {})])
    with server.running():
        record = run_attempt(_job(server))
    assert record["status"] == "error"
    assert record["error"]["kind"] == kind, record["error"]


def test_the_api_key_is_in_no_file_the_run_writes(tmp_path: Path) -> None:
    server = Server([(200, completion("ok"), {}), (200, completion("ok"), {})])
    j = _job(server)

    source = driver.Source("ds", "v1", "dd", "0" * 40, False, "WORKTREE")
    options = driver.RunOptions(
        agent=j.adapter, agent_options=dict(j.adapter_options), repeat=2, concurrency=1
    )
    with server.running():
        result = driver.start(tmp_path, source, [task_of(j)], options, get_executor("local"))
    assert result.attempts == 2 and result.errors == 0
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in written} == {"run.json", "attempts.jsonl", ".lock"}
    for path in written:
        assert KEY not in path.read_text("utf-8"), path
    meta = json.loads((result.path / "run.json").read_text("utf-8"))
    assert meta["agent"]["options"]["api_key_env"] == "EVALCASE_TEST_OPENAI_KEY"


def _retries(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in record["trace"] if e["type"] == "retry"]


def test_a_503_with_retry_after_is_retried_after_the_servers_wait() -> None:
    server = Server(
        [
            (503, {"error": {"message": "loading"}}, {"retry-after": "0.3"}),
            (200, completion("ok"), {}),
        ]
    )
    with server.running():
        record = run_attempt(_job(server))
    assert record["status"] == "completed", record["error"]
    (retry,) = _retries(record)
    # the server's 0.3 s, not the adapter's own 0.01 s backoff
    assert retry == {**retry, "reason": "HTTP 503", "wait_s": 0.3, "retry_after": True, "retry": 1}
    first, second = server.times
    assert second - first >= 0.3  # the wait happened (a lower bound holds on any machine)
    assert record["usage"]["retries"] == 1


def test_a_500_is_retried_once_then_recorded() -> None:
    server = Server([(500, {"error": {"message": "model crashed"}}, {})] * 3)
    with server.running():
        record = run_attempt(_job(server))
    assert record["error"]["kind"] == "adapter", record["error"]
    assert "HTTP 500 after 1 retries" in record["error"]["message"]
    assert len(server.requests) == 2
    assert [e["reason"] for e in _retries(record)] == ["HTTP 500"]
    assert record["trace"][-1]["type"] == "error"


def test_a_single_500_then_success_completes() -> None:
    server = Server([(500, {"error": {"message": "hiccup"}}, {}), (200, completion("ok"), {})])
    with server.running():
        record = run_attempt(_job(server))
    assert record["status"] == "completed" and len(_retries(record)) == 1


@pytest.mark.parametrize("status", [408, 502, 504, RESET])
def test_transient_failures_are_retried(status: int) -> None:
    server = Server(
        [(status, {"error": {"message": "transient"}}, {}), (200, completion("ok"), {})]
    )
    with server.running():
        record = run_attempt(_job(server))
    assert record["status"] == "completed", record["error"]
    (retry,) = _retries(record)
    assert (
        ("connection reset" in retry["reason"])
        if status == RESET
        else (retry["reason"] == f"HTTP {status}")
    )
    assert retry["retry_after"] is False and retry["wait_s"] == 0.01


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_a_client_error_is_not_retried(status: int) -> None:
    server = Server([(status, {"error": {"message": "bad request"}}, {})] * 3)
    with server.running():
        record = run_attempt(_job(server))
    assert record["error"]["kind"] == "adapter" and f"HTTP {status}" in record["error"]["message"]
    assert len(server.requests) == 1 and _retries(record) == []


def test_a_retry_after_past_the_deadline_gives_up_at_once() -> None:
    server = Server([(429, {"error": {"message": "quota"}}, {"retry-after": "3600"})] * 2)
    with server.running():
        record = run_attempt(_job(server, timeout=120))
    assert record["error"]["kind"] == "adapter"
    assert "after 3600 s, past the attempt's deadline" in record["error"]["message"]
    assert len(server.requests) == 1


def test_a_reply_cut_at_the_token_limit_is_flagged_truncated_and_fails_as_such() -> None:
    from evalcase.grade.context import GradeContext
    from evalcase.grade.engine import grade_attempt, grade_lines
    from evalcase.grade.spec import judge_spec_from_case

    server = Server(
        [(200, completion("Your order was signed for three da", finish_reason="length"), {})]
    )
    with server.running():
        record = run_attempt(_job(server))
    assert record["status"] == "completed" and record["truncated"] is True
    (answer,) = [e for e in record["trace"] if e["type"] == "assistant"]
    assert answer["finish_reason"] == "length"
    # graded: the cut text would pass the grader, the attempt fails as truncated
    spec = judge_spec_from_case(
        {
            "case_id": "x",
            "evaluator_config": {"graders": [{"type": "must_include", "values": ["signed"]}]},
        }
    )
    result = grade_attempt(spec, record, GradeContext())
    assert result.verdict == "fail" and result.failure_class == "truncated"
    by_grader = {line["grader"]: line for line in grade_lines(result)}
    assert by_grader["must_include"]["verdict"] == "pass"
    assert by_grader["finish_reason"]["verdict"] == "fail"
    assert by_grader["finish_reason"]["evidence"] == [{"step": answer["step"], "path": None}]


def test_a_finished_reply_is_not_truncated() -> None:
    server = Server([(200, completion("Signed 3 days ago."), {})])
    with server.running():
        record = run_attempt(_job(server))
    assert record["truncated"] is False
    assert [e["finish_reason"] for e in record["trace"] if e["type"] == "assistant"] == ["stop"]


def test_a_reply_trickled_a_byte_at_a_time_ends_at_the_deadline_as_a_timeout() -> None:
    """The deadline is one watchdog over the whole reply, not a per-read timeout that
    every byte resets. (Were it reset per byte, the trickle would end after 100 bytes of
    a longer body: a dropped connection, retried, then the script's 500, not a timeout.)"""
    server = Server([(TRICKLE, completion("a long answer, a byte at a time"), {})])
    with server.running():
        record = run_attempt(_job(server, timeout=1.5))
    assert record["status"] == "error" and record["error"]["kind"] == "timeout"
    assert len(server.requests) == 1  # the deadline ended it: no retry after it


def test_a_reply_over_max_reply_bytes_is_not_read_further() -> None:
    from evalcase.run.executors.base import Limits

    server = Server([(200, completion("x" * 5000), {})])
    with server.running():
        record = run_attempt(_job(server, limits=Limits(max_reply_bytes=1000)))
    assert record["status"] == "error" and record["error"]["kind"] == "oversized"


def test_each_repeat_attempt_sends_its_own_seed_and_user() -> None:
    """--repeat N: each attempt of a case is its own sample to the server, not the same
    request N times: its seed (the run's, derived from the case and the attempt number,
    recorded in the attempt) and an end-user id of its own."""
    server = Server([(200, completion("Signed."), {}) for _ in range(3)])
    records = []
    with server.running():
        for attempt in (1, 2, 3):
            j = _job(server, attempt=attempt)
            j = type(j)(**{**j.__dict__, "seed": driver.seed_for(7, j.case_id, attempt)})
            records.append(run_attempt(j))
    assert [r["status"] for r in records] == ["completed"] * 3
    sent = server.requests
    assert [r["seed"] for r in sent] == [r["seed"] for r in records]
    assert len({r["seed"] for r in sent}) == 3
    key = records[0]["attempt_key"]
    assert [r["user"] for r in sent] == [f"{key}-{n}" for n in (1, 2, 3)]


def test_a_seed_the_case_sets_is_sent_as_given() -> None:
    server = Server([(200, completion("Signed."), {})])
    j = _job(server, attempt=2)
    pinned = type(j.agent)(**{**j.agent.__dict__, "params": {**j.agent.params, "seed": 42}})
    with server.running():
        record = run_attempt(type(j)(**{**j.__dict__, "agent": pinned, "seed": 9}))
    assert record["status"] == "completed", record["error"]
    assert server.requests[0]["seed"] == 42
