"""An agent that owns its loop (loop = "agent"): real agent processes, a real MCP server
and model proxy per attempt, a real deterministic model on 127.0.0.1 (tests.run.byo_model).

The agent here is tests/run/cmd_agents/loop_agent.py (standard library only, so these
stay fast); the frameworks' examples are tests/examples/test_byo_agents.py."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract.records import dumps
from evalcase.run import isolation
from evalcase.run.executors import Limits
from tests.run.byo_model import ModelServer
from tests.run.support import fault, job, run_attempt, tool, view

AGENT = Path(__file__).parent / "cmd_agents" / "loop_agent.py"
RESPONSES_AGENT = Path(__file__).parent / "cmd_agents" / "responses_agent.py"
KEY = "sk-upstream-9c2e71-never-leaked"
KEY_ENV = "EVALCASE_TEST_UPSTREAM_KEY"
LOOKUP = tool(
    "order_lookup",
    responses=({"when": {"order_id": "ORDER_1"}, "result": {"status": "signed", "items": []}},),
)
CANCEL_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "user_confirmed": {"type": "boolean"}},
    "required": ["order_id"],
}
STATUS = tool(
    "shop_order_status",
    responses=({"when": {"order_id": "ORDER_7"}, "result": {"status": "processing", "items": []}},),
)
CANCEL = tool(
    "shop_order_cancel",
    side_effect=True,
    schema=CANCEL_SCHEMA,
    responses=(
        {
            "when": {"order_id": "ORDER_7"},
            "state_change": [{"set": "orders.ORDER_7.status", "value": "cancelled"}],
            "result": {"status": "cancelled"},
        },
    ),
)
SANDBOX = isolation.sandbox_problem() is None


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with ModelServer().running() as s:
        yield s


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def loop_job(
    server: ModelServer,
    mode: str,
    *turns: str,
    tools: tuple[Any, ...] = (LOOKUP,),
    sandbox: bool = False,
    model: str | None = "english-1",
    budget: dict[str, Any] | None = None,
    timeout: float = 30.0,
    extra: tuple[str, ...] = (),
    agent: Path = AGENT,
    **kw: Any,
) -> Any:
    j = job(
        view(*(turns or ("where is ORDER_1?",)), tools=tools),
        tools,
        agent=f"cmd:{sys.executable} {agent} {mode} {' '.join(extra)}".strip(),
        timeout=timeout,
        **kw,
    )
    upstream: dict[str, Any] = {"base_url": server.url, "api_key_env": KEY_ENV}
    if model:
        upstream["model"] = model
    options: dict[str, Any] = {
        "loop": "agent",
        "upstream": upstream,
        "sandbox": sandbox,
        "secret_env": [KEY_ENV],
    }
    if budget:
        options["budget"] = budget
    return type(j)(**{**j.__dict__, "adapter_options": options})


def events(record: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in record["trace"] if e["type"] == kind]


def test_the_agent_calls_tools_over_mcp_and_the_model_through_the_proxy(
    server: ModelServer,
) -> None:
    record = run_attempt(loop_job(server, "loop"))
    assert record["status"] == "completed", record["error"]
    assert record["loop"] == "agent"
    assert record["output"] == "Order ORDER_1 is signed."
    assert [(c["tool"], c["args"]) for c in record["calls"]] == [
        ("order_lookup", {"order_id": "ORDER_1"})
    ]
    assert [m["status"] for m in record["model_calls"]] == [200, 200]
    assert record["usage"]["prompt_tokens"] == 60 and record["usage"]["completion_tokens"] == 20
    (proposal,) = record["proposals"]
    assert proposal["executed"] and proposal["call"] == 0 and proposal["link"] == "name_args"
    assert record["calls"][0]["id"] == proposal["id"]
    # The upstream got the real key; the agent only ever had the attempt's token.
    assert server.headers[-1]["Authorization"] == f"Bearer {KEY}"
    assert KEY not in dumps(record)


def test_a_proposal_the_agent_refused_is_kept_never_executed(server: ModelServer) -> None:
    record = run_attempt(
        loop_job(
            server,
            "refuse",
            "Please cancel ORDER_7.",
            tools=(STATUS, CANCEL),
            model="eager-1",
            state={"orders": {"ORDER_7": {"status": "processing"}}},
        )
    )
    assert record["status"] == "completed", record["error"]
    assert [c["tool"] for c in record["calls"]] == ["shop_order_status"]
    assert record["state_diff"] == []
    refused = [p for p in record["proposals"] if not p["executed"]]
    assert [(p["tool"], p["call"]) for p in refused] == [("shop_order_cancel", None)]
    unexecuted = events(record, "proposal_unexecuted")
    assert [e["tool"] for e in unexecuted] == ["shop_order_cancel"]


def test_a_confirmation_turn_makes_the_later_call_confirmed_and_the_fault_is_seen(
    server: ModelServer,
) -> None:
    record = run_attempt(
        loop_job(
            server,
            "loop",
            "Please cancel ORDER_7.",
            "Yes, please cancel it.",
            tools=(STATUS, CANCEL),
            confirmations=(1,),
            faults=(fault("shop_order_status", "rate_limited", {"call": 1}),),
            state={"orders": {"ORDER_7": {"status": "processing"}}},
        )
    )
    assert record["status"] == "completed", record["error"]
    calls = record["calls"]
    assert [c["tool"] for c in calls] == [
        "shop_order_status",
        "shop_order_status",
        "shop_order_cancel",
    ]
    assert calls[0]["fault"] == "rate_limited" and calls[1]["fault"] is None
    assert [c["user_confirmed"] for c in calls] == [False, False, True]
    assert record["state_diff"] == [
        {"path": "orders.ORDER_7.status", "before": "processing", "after": "cancelled", "op": "set"}
    ]
    assert record["output"] == "Order ORDER_7 is now cancelled."


def test_identical_parallel_proposals_are_linked_with_the_ambiguity_stated(
    server: ModelServer,
) -> None:
    # Two identical lookups in one answer: which call answers which proposal is unknown.
    twins = {
        "id": "x",
        "type": "function",
        "function": {"name": "order_lookup", "arguments": '{"order_id": "ORDER_1"}'},
    }
    server.script = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{**twins, "id": "c1"}, {**twins, "id": "c2"}],
        }
    ]
    try:
        record = run_attempt(loop_job(server, "twins"))
    finally:
        server.script = []
    assert record["status"] == "completed", record["error"]
    assert len(record["calls"]) == 2
    first, second = record["proposals"]
    assert first["call"] == 0 and second["call"] == 1
    assert "2 identical proposals" in first["ambiguity"]
    assert events(record, "link_ambiguous")


def test_an_agent_that_never_connects_nor_answers_times_out(server: ModelServer) -> None:
    record = run_attempt(loop_job(server, "silent", timeout=2.0))
    assert record["status"] == "error"
    assert record["error"]["kind"] == "timeout"
    assert record["model_calls"] == [] and record["calls"] == []


def test_a_call_after_the_turn_ended_is_refused_and_recorded_not_made(server: ModelServer) -> None:
    record = run_attempt(loop_job(server, "late"))
    assert record["status"] == "completed", record["error"]
    assert record["calls"] == []
    late = events(record, "late_call") + [
        e for e in events(record, "mcp_refused") if e["reason"] == "attempt_ended"
    ]
    assert late, record["trace"]


def test_an_oversized_mcp_request_is_refused_and_recorded(server: ModelServer) -> None:
    limits = Limits(max_reply_bytes=100_000)
    record = run_attempt(loop_job(server, "oversized", limits=limits))
    assert record["status"] == "completed", record["error"]
    assert record["output"] == "status 413"
    assert [e["reason"] for e in events(record, "mcp_refused")] == ["oversized"]
    assert record["calls"] == []


def test_a_wrong_token_is_refused_and_recorded(server: ModelServer) -> None:
    before = len(server.requests)
    record = run_attempt(loop_job(server, "wrong_token"))
    assert record["output"] == "status 401"
    assert [e["reason"] for e in events(record, "proxy_refused")] == ["wrong_token"]
    assert len(server.requests) == before  # nothing reached the upstream
    assert record["model_calls"] == []


@pytest.mark.slow  # the openai client's import, in the agent
@pytest.mark.parametrize("mode", ["plain", "stream"])
def test_an_openai_client_on_the_responses_api_is_recorded_call_by_call(
    server: ModelServer, mode: str
) -> None:
    """The Responses API end to end: ``client.responses.create`` (streamed and not)
    through the proxy to an upstream serving it; every model call is recorded."""
    record = run_attempt(loop_job(server, mode, agent=RESPONSES_AGENT))
    assert record["status"] == "completed", record["error"]
    assert record["output"] == "Order ORDER_1 is signed."
    assert [(c["tool"], c["args"]) for c in record["calls"]] == [
        ("order_lookup", {"order_id": "ORDER_1"})
    ]
    calls = record["model_calls"]
    assert [(m["endpoint"], m["stream"], m["status"]) for m in calls] == [
        ("responses", mode == "stream", 200)
    ] * 2
    assert [m["finish_reason"] for m in calls] == ["completed", "completed"]
    assert [m["usage"] for m in calls] == [{"prompt_tokens": 30, "completion_tokens": 10}] * 2
    assert [m["request"]["input"][-1]["role"] for m in calls[:1]] == ["user"]
    assert calls[1]["request"]["input"][-1]["type"] == "function_call_output"
    assert [o["type"] for o in calls[0]["response"]["output"]] == ["function_call"]
    assert calls[1]["response"]["output"][0]["content"][0]["text"] == "Order ORDER_1 is signed."
    assert record["usage"]["prompt_tokens"] == 60 and record["usage"]["completion_tokens"] == 20
    (proposal,) = record["proposals"]
    assert proposal["executed"] and proposal["call"] == 0 and proposal["tool"] == "order_lookup"
    assert KEY not in dumps(record)


@pytest.mark.slow  # the openai client's import, in the agent
@pytest.mark.parametrize("mode", ["plain", "stream"])
def test_a_token_budget_counts_the_responses_apis_usage(server: ModelServer, mode: str) -> None:
    record = run_attempt(loop_job(server, mode, agent=RESPONSES_AGENT, budget={"tokens": 40}))
    assert record["status"] == "error"
    assert record["error"]["kind"] == "budget", record["error"]
    assert "40 tokens" in record["error"]["message"]
    # Refused once: the 429 says not to retry (x-should-retry), and the client does not.
    assert len(events(record, "budget")) == 1
    assert len(record["model_calls"]) == 1 and record["calls"][0]["tool"] == "order_lookup"


def test_a_model_the_upstream_does_not_serve_is_a_recorded_error(server: ModelServer) -> None:
    record = run_attempt(loop_job(server, "loop", model="no-such-model-1"))
    (call,) = record["model_calls"]
    assert call["status"] == 404 and "does not exist" in call["error"]
    assert record["output"].startswith("model: HTTP 404")
    assert record["calls"] == []


def test_a_spent_budget_of_model_calls_ends_the_attempt(server: ModelServer) -> None:
    record = run_attempt(loop_job(server, "loop", budget={"model_calls": 1}))
    assert record["status"] == "error"
    assert record["error"]["kind"] == "budget" and "1 model calls" in record["error"]["message"]
    assert len(record["model_calls"]) == 1


@pytest.mark.parametrize(
    "sandbox",
    [
        False,
        pytest.param(
            True, marks=pytest.mark.skipif(not SANDBOX, reason="bubblewrap does not work here")
        ),
    ],
)
def test_the_key_is_never_in_the_agents_environment_nor_its_proc(
    server: ModelServer, sandbox: bool
) -> None:
    record = run_attempt(loop_job(server, "environ", sandbox=sandbox))
    assert record["status"] == "completed", record["error"]
    seen = json.loads(record["output"])
    env = seen["environ"]
    assert env["OPENAI_API_KEY"].startswith("evalcase-") and KEY_ENV not in env
    assert env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
    assert env["EVALCASE_MCP_URL"].startswith("http://127.0.0.1:")
    assert KEY not in seen["proc"] and KEY not in dumps(record)
    assert events(record, "loop")[0]["sandboxed"] is sandbox


@pytest.mark.skipif(not SANDBOX, reason="bubblewrap does not work here")
def test_sandboxed_the_agent_reaches_its_servers_at_127_0_0_1_and_nothing_else(
    server: ModelServer,
) -> None:
    record = run_attempt(loop_job(server, "loop", sandbox=True))
    assert record["status"] == "completed", record["error"]
    assert record["output"] == "Order ORDER_1 is signed."
    assert events(record, "loop")[0]["sandboxed"] is True
    # The model server itself, on the host's loopback, is out of its reach.
    other = run_attempt(
        loop_job(server, "other_host", sandbox=True, extra=(server.url + "/models",))
    )
    assert other["output"].startswith("unreachable"), other["output"]


def test_a_simulated_user_drives_the_turns_of_a_loop_agent(server: ModelServer) -> None:
    from evalcase.contract.task import UserSimulatorSpec
    from tests.run.openai_server import Server, completion

    script = [
        (200, completion("Hi, where is my order ORDER_1?"), {}),
        (200, completion("Thanks, that is all. ###STOP###"), {}),
    ]
    with Server(script).running() as user:
        base = loop_job(
            server, "loop", user_simulator=UserSimulatorSpec({"text": "You wait for ORDER_1."}, 5)
        )
        settings = {"base_url": user.url, "model": "sim-model-1", "max_retries": 0, "timeout_s": 5}
        record = run_attempt(type(base)(**{**base.__dict__, "user_simulator": settings}))
    assert record["status"] == "completed", record["error"]
    # The scripted turn, one simulated turn, and the stop (recorded, never sent).
    assert record["conversation"] == {"ended_by": "user_stop", "user_turns": 3}
    assert [c["tool"] for c in record["calls"]] == ["order_lookup", "order_lookup"]
    assert record["output"] == "Order ORDER_1 is signed."
    assert [m["role"] for m in record["messages"]] == ["user", "assistant"] * 2
    assert record["messages"][2]["content"] == "Hi, where is my order ORDER_1?"


@pytest.mark.parametrize(
    "sandbox",
    [
        False,
        pytest.param(
            True, marks=pytest.mark.skipif(not SANDBOX, reason="bubblewrap does not work here")
        ),
    ],
)
def test_an_agent_taking_only_stdio_servers_uses_the_shim(
    server: ModelServer, sandbox: bool
) -> None:
    record = run_attempt(loop_job(server, "stdio", sandbox=sandbox))
    assert record["status"] == "completed", record["error"]
    assert record["output"] == "Order ORDER_1 is signed."
    assert [c["tool"] for c in record["calls"]] == ["order_lookup"]
    assert record["proposals"][0]["call"] == 0
