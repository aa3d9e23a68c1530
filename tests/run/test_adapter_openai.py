"""The openai: adapter through the real openai client against a real local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcase.run import driver
from evalcase.run.executors import get_executor
from evalcase.run.runner import run_attempt
from tests.run.openai_server import Server, completion
from tests.run.support import job, task_of, tool, view

KEY = "sk-test-7f3a9c1e-never-written"
LOOKUP = tool(
    "order_lookup",
    responses=({"when": {"order_id": "ORDER_1"}, "result": {"status": "signed", "days": 3}},),
)


def _job(server: Server, **kw: Any) -> Any:
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
