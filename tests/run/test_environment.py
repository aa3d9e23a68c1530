"""The environment's tool behaviour, faults, permissions, audit and retrieval, through
whole attempts of the real scripted py: agent."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalcase.contract import records
from evalcase.run.spec import Corpus, Fault, Passage, Permission, ToolError
from tests.run.support import fault, job, run_attempt, tool, view

ACCOUNT_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "user_confirmed": {"type": "boolean"}},
    "required": ["order_id"],
}
VERIFY_SCHEMA = {
    "type": "object",
    "properties": {"user_id": {"type": "string"}, "code": {"type": "string"}},
    "required": ["user_id"],
}
VERIFY = tool(
    "identity_verify",
    schema=VERIFY_SCHEMA,
    responses=(
        {
            "when": {"code": "246810"},
            "result": {"status": "verified"},
            "state_change": {"session.user_authenticated": True},
        },
        {"result": {"status": "code_sent"}},
    ),
)
ACCOUNT = tool(
    "account_change_request",
    side_effect=True,
    schema=ACCOUNT_SCHEMA,
    responses=(
        {
            "result": {"status": "pending_user_input"},
            "state_change": {"refunds.R1.account_change": "pending"},
        },
    ),
)
POLICY = Permission(
    "account_change_requires_identity",
    ("account_change_request",),
    "session.user_authenticated == true",
    ToolError("permission_denied", "verify identity first"),
)
STATE = {
    "session": {"user_authenticated": False, "current_user_id": "USER_A"},
    "refunds": {"R1": {}},
}


def attempt(
    turns: list[list[tuple[str, dict[str, Any]]]], tools: tuple[Any, ...], **kw: Any
) -> dict[str, Any]:
    texts = [f"turn {i}" for i in range(len(turns))]
    context = {"script": [[list(s) for s in t] for t in turns]}
    return run_attempt(job(view(*texts, tools=tools, context=context), tools, **kw))


def test_permission_refuses_before_identity_verification_and_allows_after() -> None:
    record = attempt(
        [
            [("account_change_request", {"order_id": "O1"})],
            [
                ("identity_verify", {"user_id": "USER_A", "code": "246810"}),
                ("account_change_request", {"order_id": "O1"}),
            ],
        ],
        (VERIFY, ACCOUNT),
        state=STATE,
        permissions=(POLICY,),
        confirmations=(1,),
    )
    denied, verified, allowed = record["calls"]
    assert denied["denied_by"] == "account_change_requires_identity"
    assert denied["error"] == {"code": "permission_denied", "message": "verify identity first"}
    assert denied["changes"] == [] and denied["user_confirmed"] is False
    assert denied["audit"]["identity_verification_result"] is False
    assert verified["result"] == {"status": "verified"}
    assert allowed["denied_by"] is None and allowed["result"] == {"status": "pending_user_input"}
    assert (
        allowed["user_confirmed"] is True
        and allowed["audit"]["identity_verification_result"] is True
    )
    assert [e["type"] for e in record["trace"]].count("permission_denied") == 1
    assert records.final_state(record, STATE)["refunds"]["R1"] == {"account_change": "pending"}
    tool_msgs = [json.loads(m["content"]) for m in record["messages"] if m["role"] == "tool"]
    assert tool_msgs[0] == {
        "error": {"code": "permission_denied", "message": "verify identity first"}
    }


SUBMIT = tool(
    "refund_submit",
    side_effect=True,
    responses=(
        {
            "result": {"refund_id": "R9"},
            "state_change": [{"set": "orders.{args.order_id}.refund", "value": "submitted"}],
        },
    ),
)
STATUS = tool(
    "refund_status",
    responses=({"when": "args.order_id in orders", "result_from": "orders[args.order_id]"},),
)
ORDERS = {"orders": {"ORDER_1": {"refund": "none"}}}


def _two_submits(*faults: Fault) -> dict[str, Any]:
    calls = [("refund_submit", {"order_id": "ORDER_1"}), ("refund_submit", {"order_id": "ORDER_1"})]
    return attempt([calls], (SUBMIT,), state=ORDERS, faults=faults)


def test_timeout_applied_changes_state_but_the_agent_sees_a_timeout() -> None:
    record = _two_submits(fault("refund_submit", "timeout", {"call": 1}, applied=True))
    first, second = record["calls"]
    assert (
        first["fault"] == "timeout"
        and first["error"]["code"] == "timeout"
        and first["result"] is None
    )
    assert first["changes"][0]["after"] == "submitted"  # the side effect happened
    assert first["audit"]["timeout_event"] is True and first["audit"]["executed"] is True
    assert second["fault"] is None and second["result"] == {"refund_id": "R9"}
    fault_events = [e for e in record["trace"] if e["type"] == "fault"]
    assert fault_events == [
        {**fault_events[0], "tool": "refund_submit", "kind": "timeout", "applied": True}
    ]


def test_timeout_not_applied_changes_nothing() -> None:
    record = _two_submits(fault("refund_submit", "timeout", {"call": 1}))
    assert record["calls"][0]["changes"] == [] and record["calls"][0]["audit"]["executed"] is False


@pytest.mark.parametrize(
    ("fault", "first", "second"),
    [
        (
            fault("refund_submit", "rate_limited", {"first": 1}, retry_after_ms=2000),
            "rate_limited",
            None,
        ),
        (
            fault("refund_submit", "error", "every", code="upstream_5xx", message="bad gateway"),
            "upstream_5xx",
            "upstream_5xx",
        ),
        (fault("refund_submit", "permission_denied", {"calls": [2]}), None, "permission_denied"),
        (fault("refund_submit", "timeout", "call.n == 2"), None, "timeout"),
    ],
)
def test_fault_schedules(fault: Fault, first: str | None, second: str | None) -> None:
    record = _two_submits(fault)
    codes = [(c["error"] or {}).get("code") for c in record["calls"]]
    assert codes == [first, second]
    if fault.kind == "rate_limited":
        assert record["calls"][0]["error"]["retry_after_ms"] == 2000
    if fault.code:
        assert record["calls"][0]["error"]["message"] == "bad gateway"


def test_dirty_empty_and_slow_results() -> None:
    calls = [[("refund_status", {"order_id": "ORDER_1"})] * 3]
    faults = (
        fault("refund_status", "dirty_data", {"call": 1}, data={"refund": "??", "extra": 1}),
        fault("refund_status", "empty_result", {"call": 2}),
        fault("refund_status", "slow", {"call": 3}, latency_ms=9000),
    )
    record = attempt(calls, (STATUS,), state=ORDERS, faults=faults)
    dirty, empty, slow = record["calls"]
    assert dirty["result"] == {"refund": "??", "extra": 1} and dirty["fault"] == "dirty_data"
    assert empty["result"] == {}
    assert slow["result"] == {"refund": "none"} and slow["latency_ms"] == 9000


def test_handler_escape_hatch() -> None:
    reserve = tool("reserve", side_effect=True, handler="tests.run.handlers:reserve")
    record = attempt(
        [[("reserve", {"order_id": "ORDER_1"})] * 2], (reserve,), state={"stock": {"ORDER_1": 1}}
    )
    ok, out = record["calls"]
    assert ok["result"] == {"reserved": True, "left": 0}
    assert ok["changes"] == [
        {"op": "increment", "path": "stock.ORDER_1", "keys": ["stock", "ORDER_1"], "before": 1,
         "after": 0}
    ]  # fmt: skip
    assert out["error"] == {"code": "out_of_stock", "message": "nothing left"}


def test_state_ops_and_cel_segments() -> None:
    ops = tool(
        "ops",
        responses=(
            {
                "result": {"ok": True},
                "state_change": [
                    {"append": "log", "value_from": "args"},
                    {"delete": "carts.{args.order_id}"},
                    {"increment": "counter"},
                ],
            },
        ),
    )
    initial = {"carts": {"ORDER_7": {"n": 1}, "ORDER_8": {}}}
    record = attempt([[("ops", {"order_id": "ORDER_7"})]], (ops,), state=initial)
    assert records.final_state(record, initial) == {
        "carts": {"ORDER_8": {}},
        "log": [{"order_id": "ORDER_7"}],
        "counter": 1,
    }
    assert {d["path"] for d in record["state_diff"]} == {"carts.ORDER_7", "log", "counter"}


def test_builtin_retrieval_honours_effective_at() -> None:
    corpus = Corpus(
        "policy",
        "policy_v1",
        "refund_policy",
        (
            Passage(
                "general",
                "p01",
                "七天无理由退货：签收后 7 天内可申请退货",
                effective_date="2026-07-01",
            ),
            Passage(
                "member",
                "p07",
                "自 2026-09-01 起积分按比例退回，七天无理由退货规则不变",
                effective_date="2026-09-01",
            ),
            Passage("shipping", "p09", "物流时效说明", effective_date="2026-01-01"),
        ),
    )
    search = tool(
        "policy_search", schema={"type": "object", "properties": {"query": {"type": "string"}}}
    )
    record = attempt(
        [[("policy_search", {"query": "七天无理由退货"})]],
        (search,),
        corpora=(corpus,),
        effective_at="2026-07-08",
    )
    result = record["calls"][0]["result"]
    assert [p["passage_id"] for p in result["passages"]] == [
        "p01"
    ]  # p07 not yet in effect; p09 unrelated
    assert record["retrieved"] == [
        {"passage_id": "p01", "doc_id": "general", "step": record["retrieved"][0]["step"]}
    ]
    assert any(e["type"] == "retrieval" for e in record["trace"])


def test_each_call_is_answered_as_a_typed_record_and_the_agent_gets_its_message() -> None:
    from evalcase.contract.attempt import StateChange, ToolCallRecord
    from evalcase.run.environment import Environment, Recorder, tool_message

    submit = tool(
        "refund_submit",
        side_effect=True,
        responses=(
            {"when": "true", "result": {"ok": True},
             "state_change": {"orders.{args.order_id}.status": "refunded"}},
        ),
    )  # fmt: skip
    spec = job(view("x", tools=(submit,)), (submit,),
               state={"orders": {"ORDER_1": {"status": "paid"}}}).env  # fmt: skip
    env = Environment(spec, Recorder())
    record = env.answer("c1", "refund_submit", '{"order_id": "ORDER_1"}', user_confirmed=True)
    assert isinstance(record, ToolCallRecord) and env.calls == [record]
    assert (record.tool, record.arguments, record.ok, record.side_effect, record.actor) == (
        "refund_submit", {"order_id": "ORDER_1"}, True, True, "agent",
    )  # fmt: skip
    assert record.changes == (
        StateChange("set", "orders.ORDER_1.status", ("orders", "ORDER_1", "status"),
                    "paid", "refunded"),
    )  # fmt: skip
    assert record.audit is not None and record.audit["user_confirmation"] is True
    assert tool_message(record) == {
        "role": "tool", "tool_call_id": "c1", "content": json.dumps({"ok": True}),
    }  # fmt: skip
    # call() is answer() plus the message: the agent sees what it always saw.
    again = env.call("c2", "refund_submit", '{"order_id": "nope"}', user_confirmed=True)
    assert json.loads(again["content"])["error"]["code"] == "invalid_arguments"
    assert env.calls[-1].valid is False and env.calls[-1].ok is False


def test_a_slow_fault_without_a_latency_is_recorded_as_before() -> None:
    lookup = tool("order_lookup", responses=({"when": "true", "result": {"n": 1}},))
    v = view(
        "x", tools=(lookup,), context={"script": [[["order_lookup", {"order_id": "ORDER_1"}]]]}
    )
    record = run_attempt(job(v, (lookup,), faults=(fault("order_lookup", "slow"),)))
    (call,) = record["calls"]
    assert "latency_ms" in call and call["latency_ms"] is None and call["fault"] == "slow"
    from evalcase.attempt_check import problems

    assert problems(record) == []
