"""One attempt end to end through the real py: adapter and the environment."""

from __future__ import annotations

import json
import pickle

from evalcase.contract import records
from evalcase.run.executors import Limits, get_executor
from tests.run.support import as_json, job, run_attempt, tool, view

LOOKUP = tool(
    "order_lookup",
    responses=(
        {"when": {"order_id": "ORDER_1"}, "result": {"status": "signed"}},
        {"when": "args.order_id in orders", "result_from": "orders[args.order_id]"},
    ),
    default={"error": {"code": "not_found", "message": "no such order"}},
)
SUBMIT = tool(
    "refund_submit",
    side_effect=True,
    responses=(
        {
            "when": "args.order_id in orders",
            "result": {"status": "refund_submitted"},
            "state_change": [
                {"set": "orders.{args.order_id}.refund_status", "value": "refund_submitted"},
                {"increment": "orders.{args.order_id}.attempts", "by": 1},
                {"append": "log", "value_from": "args.order_id"},
            ],
        },
    ),
)
STATE = {
    "orders": {"ORDER_2": {"refund_status": "not_started"}},
    "session": {"user_authenticated": True},
}


def script(*turns: list[tuple[str, dict[str, str]]]) -> dict[str, object]:
    return {"script": [[list(step) for step in turn] for turn in turns]}


def test_tool_calls_results_and_state_changes_are_recorded() -> None:
    v = view(
        "look up my orders",
        "now refund ORDER_2",
        tools=(LOOKUP, SUBMIT),
        context=script(
            [("order_lookup", {"order_id": "ORDER_1"}), ("order_lookup", {"order_id": "ORDER_2"})],
            [("refund_submit", {"order_id": "ORDER_2"})],
        ),
    )
    record = run_attempt(job(v, (LOOKUP, SUBMIT), state=STATE, confirmations=(1,)))
    assert record["status"] == "completed", record["error"]
    calls = record["calls"]
    assert [c["tool"] for c in calls] == ["order_lookup", "order_lookup", "refund_submit"]
    assert calls[0]["result"] == {"status": "signed"}
    assert calls[1]["result"] == {"refund_status": "not_started"}
    submit = calls[2]
    assert submit["side_effect"] and submit["user_confirmed"]
    assert (
        records.state_before(record, 2, STATE)["orders"]["ORDER_2"]["refund_status"]
        == "not_started"
    )
    assert [c["path"] for c in submit["changes"]] == [
        "orders.ORDER_2.refund_status",
        "orders.ORDER_2.attempts",
        "log",
    ]
    assert submit["audit"]["user_confirmation"] is True
    assert submit["audit"]["identity_verification_result"] is True
    assert records.final_state(record, STATE)["orders"]["ORDER_2"] == {
        "refund_status": "refund_submitted",
        "attempts": 1,
    }
    assert "initial_state" not in record  # the case's, rebuilt at grading
    assert record["initial_state_digest"] == records.state_digest(STATE)
    assert {d["path"] for d in record["state_diff"]} == {
        "orders.ORDER_2.refund_status",
        "orders.ORDER_2.attempts",
        "log",
    }
    types = [e["type"] for e in record["trace"]]
    assert types.count("user") == 2 and types.count("state_change") == 3 and "audit" in types
    assert record["output"].startswith("turn 1 done")
    tool_messages = [m for m in record["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c0_0", "c0_1", "c1_0"]
    json.dumps(record)  # a record is JSON as it is


def test_every_attempt_starts_from_a_fresh_state() -> None:
    v = view(
        "refund", tools=(SUBMIT,), context=script([("refund_submit", {"order_id": "ORDER_2"})])
    )
    j = job(v, (SUBMIT,), state=STATE)
    first, second = run_attempt(j), run_attempt(j)
    assert records.final_state(first, STATE) == records.final_state(second, STATE)
    assert (
        records.state_before(second, 0, STATE)["orders"]["ORDER_2"]["refund_status"]
        == "not_started"
    )
    assert STATE["orders"]["ORDER_2"] == {"refund_status": "not_started"}


def test_invalid_arguments_get_the_error_a_real_api_gives() -> None:
    v = view("x", tools=(LOOKUP,), context=script([("order_lookup", {"order_id": "12"})]))
    record = run_attempt(job(v, (LOOKUP,)))
    call = record["calls"][0]
    assert call["valid"] is False and call["error"]["code"] == "invalid_arguments"
    assert "order_id" in call["error"]["message"] and "does not match" in call["error"]["message"]
    assert record["status"] == "completed"  # the agent got an error; it is not the agent's fault


def test_default_and_no_matching_response() -> None:
    bare = tool("order_lookup", responses=({"when": {"order_id": "ORDER_1"}, "result": {}},))
    v = view("x", tools=(bare,), context=script([("order_lookup", {"order_id": "ORDER_9"})]))
    assert run_attempt(job(v, (bare,)))["calls"][0]["error"]["code"] == "no_matching_response"
    v = view("x", tools=(LOOKUP,), context=script([("order_lookup", {"order_id": "ORDER_9"})]))
    assert run_attempt(job(v, (LOOKUP,), state=STATE))["calls"][0]["error"]["code"] == "not_found"
    # Without an ``orders`` key the when cannot be evaluated: the case's error, not a match.
    record = run_attempt(job(v, (LOOKUP,)))
    assert record["status"] == "error" and record["error"]["kind"] == "case_expression"
    assert "args.order_id in orders" in record["error"]["message"]


def test_jobs_pickle_and_the_local_executor_yields_one_record_per_job() -> None:
    v = view("hello", context=script([]))
    jobs = [job(v, attempt=i, agent="py:tests.run.agents:echo") for i in range(1, 7)]
    assert pickle.loads(pickle.dumps(jobs[0])) == jobs[0]
    records = list(as_json(get_executor("local").run(jobs, concurrency=3)))
    assert sorted(r["attempt"] for r in records) == [1, 2, 3, 4, 5, 6]
    assert {r["output"] for r in records} == {"echo: hello"}


def test_async_py_agent() -> None:
    record = run_attempt(job(view("hi"), agent="py:tests.run.agents:async_echo"))
    assert record["output"] == "async hi"


def test_agent_faults_are_recorded_not_raised() -> None:
    cases = {
        "crash": "agent_exit",
        "hang": "timeout",
        "wrong_shape": "protocol",
        "unknown_tool": "unknown_tool",
        "loops": "protocol",
    }
    for name, kind in cases.items():
        record = run_attempt(
            job(
                view("x", tools=(LOOKUP,)),
                (LOOKUP,),
                agent=f"py:tests.run.agents:{name}",
                timeout=0.5,
                limits=Limits(max_steps=5),
            )
        )
        assert record["status"] == "error", name
        assert record["error"]["kind"] == kind, (name, record["error"])
    missing = run_attempt(job(view("x"), agent="py:tests.run.agents:nope"))
    assert missing["error"]["kind"] == "adapter"
    bad_scheme = run_attempt(job(view("x"), agent="carrier-pigeon:coo"))
    assert (
        bad_scheme["error"]["kind"] == "adapter"
        and "unknown agent scheme" in bad_scheme["error"]["message"]
    )


def test_an_attempt_comes_back_typed_and_is_written_as_json_only_by_the_driver() -> None:
    from evalcase.contract.attempt import AttemptRecord, ToolCallRecord
    from evalcase.run import runner

    v = view("where is my order", tools=(LOOKUP,),
             context={"script": [[["order_lookup", {"order_id": "ORDER_1"}]]]})  # fmt: skip
    record = runner.run_attempt(job(v, (LOOKUP,), state=STATE))
    assert isinstance(record, AttemptRecord) and record.status == "completed"
    assert all(isinstance(c, ToolCallRecord) for c in record.calls) and record.calls
    assert AttemptRecord.from_json(record.to_json()).to_json() == record.to_json()
    lost = runner.lost_record(job(v, (LOOKUP,)), "gone")
    assert isinstance(lost, AttemptRecord) and lost.error is not None
    assert lost.error.kind == "worker_lost"
