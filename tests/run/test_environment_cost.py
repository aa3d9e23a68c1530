"""What a tool call costs: the CEL scope is converted once per change of the state, not
once per evaluation, in process and in the worker; a record does not grow with the state.

Counts, not times (times are in benchmarks/tau2_bench.py and docs/performance.md)."""

from __future__ import annotations

import copy
import json
import secrets
import time
from typing import Any

from evalcase.contract import records
from evalcase.run import celworker
from evalcase.run.environment import Environment, Recorder
from evalcase.run.expr import bounded
from tests.run.support import job, run_attempt, tool, view

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
    "required": ["order_id"],
}
# Eight evaluations reading `orders` (a when, a result, paths and values), no change of it.
LOOKUP = tool(
    "lookup",
    schema=SCHEMA,
    responses=(
        {
            "when": "args.order_id in orders && orders[args.order_id].status == 'open'",
            "result_from": "{'status': orders[args.order_id].status, "
            "'n': size(orders), 'first': orders[args.order_id].items[0]}",
            "state_change": [
                {"set": "log.{args.order_id}", "value_from": "orders[args.order_id].items"},
                {"increment": "seen", "value_from": "size(orders[args.order_id].items)"},
            ],
        },
    ),
)
# Changes `orders`, then reads it again.
CLOSE = tool(
    "close",
    side_effect=True,
    schema=SCHEMA,
    responses=(
        {
            "when": "args.order_id in orders",
            "result": {"ok": True},
            "state_change": [
                {"set": "orders.{args.order_id}.status", "value": "closed"},
                {"set": "last", "value_from": "orders[args.order_id].status"},
            ],
        },
    ),
)


def state(orders: int) -> dict[str, Any]:
    return {
        "orders": {
            f"ORDER_{i}": {"status": "open", "items": [{"sku": f"S{i}", "qty": 1}] * 3}
            for i in range(orders)
        },
        "log": {},
        "seen": 0,
    }


def environment(orders: int = 2000) -> Environment:
    spec = job(view("x", tools=(LOOKUP, CLOSE)), (LOOKUP, CLOSE), state=state(orders)).env
    return Environment(spec, Recorder())


def call(env: Environment, name: str, order_id: str) -> dict[str, Any]:
    arguments = json.dumps({"order_id": order_id})
    return env.call(f"c{len(env.calls)}", name, arguments, user_confirmed=True)


def test_a_call_converts_the_state_once_whatever_it_evaluates() -> None:
    env = environment()
    call(env, "lookup", "ORDER_1")
    assert env.calls[-1].error is None and env.calls[-1].result["n"] == 2000
    assert env.scopes.conversions["orders"] == 1  # eight evaluations read it
    for i in range(2, 6):  # other calls, other arguments, changes elsewhere
        call(env, "lookup", f"ORDER_{i}")
    assert env.scopes.conversions["orders"] == 1
    assert env.state["seen"] == 15 and len(env.state["log"]) == 5
    call(env, "close", "ORDER_1")  # changes orders, then reads it
    assert env.calls[-1].error is None and env.state["last"] == "closed"
    assert env.scopes.conversions["orders"] == 2
    call(env, "lookup", "ORDER_7")
    assert env.scopes.conversions["orders"] == 2


def test_the_worker_is_sent_the_state_once_not_per_evaluation() -> None:
    # Expressions with + or a comprehension run in a worker (bounded): the state goes by
    # token after the first time.
    _state_sent_once()


def test_the_state_is_sent_once_however_many_workers_are_idle() -> None:
    # Earlier work leaves idle workers (up to 32) in the process; evaluations one after
    # another go to the worker used last, which holds the state, not to the next idle one
    # in line (which alternated between two idle workers: the state sent twice, and this
    # file's test above passed or failed by what ran before it in its process).
    from evalcase.run import celworker

    spare = [celworker.Worker(celworker.DEFAULT_MEMORY_MB) for _ in range(2)]
    with celworker._lock:
        celworker._idle[:0] = spare
    try:
        _state_sent_once()
    finally:
        with celworker._lock:
            for worker in spare:
                if worker in celworker._idle:
                    celworker._idle.remove(worker)
        for worker in spare:
            worker.kill()


def _state_sent_once() -> None:
    search = tool(
        "search",
        schema=SCHEMA,
        responses=(
            {
                "when": "orders.exists(k, k == args.order_id)",
                "result_from": "orders.filter(k, orders[k].status == 'open').size() + 0",
                "state_change": [
                    {"set": "log.{args.order_id + ''}", "value_from": "orders.size() + 1"}
                ],
            },
        ),
    )
    orders = state(3000)
    # orders no earlier test sent (a worker keeps a value by its content: the same orders
    # sent by an earlier test in this process would rightly not be sent again)
    orders["orders"]["ORDER_0"]["note"] = secrets.token_hex(8)
    spec = job(view("x", tools=(search,)), (search,), state=orders).env
    env = Environment(spec, Recorder())
    before = celworker.SENT.get("orders", 0)
    with bounded(time.monotonic() + 120):
        for i in range(4):
            call(env, "search", f"ORDER_{i}")
    assert [c.error for c in env.calls] == [None] * 4
    assert [c.result for c in env.calls] == [3000] * 4
    assert env.state["log"] == {f"ORDER_{i}": 3001 for i in range(4)}
    assert celworker.SENT.get("orders", 0) - before == 1  # 12 evaluations, one send


def test_a_record_does_not_grow_with_the_state() -> None:
    script = {"script": [[("lookup", {"order_id": "ORDER_1"}), ("close", {"order_id": "ORDER_1"})]]}
    sizes = []
    for orders in (50, 20_000):
        initial = state(orders)
        record = run_attempt(
            job(view("x", tools=(LOOKUP, CLOSE), context=script), (LOOKUP, CLOSE), state=initial)
        )
        assert record["status"] == "completed", record["error"]
        assert "initial_state" not in record
        assert record["initial_state_digest"] == records.state_digest(initial)
        final = records.final_state(record, initial)
        assert final is not None and final["orders"]["ORDER_1"]["status"] == "closed"
        sizes.append(len(records.dumps(record)))
    state_growth = len(json.dumps(state(20_000))) - len(json.dumps(state(50)))
    assert state_growth > 1_000_000
    # Only the numbers in the record differ (size(orders), times): not the state.
    assert abs(sizes[1] - sizes[0]) < 200, sizes


SEARCH = tool(
    "search",
    schema=SCHEMA,
    responses=(
        {
            "when": "args.order_id in orders",
            "result_from": "orders.filter(k, orders[k].status == 'open').size() + 0",
        },
    ),
)


def test_attempts_on_one_initial_state_send_it_to_the_worker_once() -> None:
    # Every attempt parses the same content: an unchanged key keeps one worker token
    # across attempts; a changed one gets a new token, so no attempt reads another's.
    # 2,999 orders: a content no other test's worker may hold already.
    spec = job(view("x", tools=(SEARCH, CLOSE)), (SEARCH, CLOSE), state=state(2999)).env
    before = celworker.SENT.get("orders", 0)
    first = Environment(spec, Recorder())
    with bounded(time.monotonic() + 120):
        call(first, "search", "ORDER_1")
        call(first, "close", "ORDER_1")
        call(first, "search", "ORDER_1")  # orders changed: sent again
    assert [c.result for c in first.calls] == [2999, {"ok": True}, 2998]
    assert celworker.SENT.get("orders", 0) - before == 2
    second = Environment(spec, Recorder())
    with bounded(time.monotonic() + 120):
        call(second, "search", "ORDER_1")
    assert second.calls[-1].result == 2999  # the initial orders, not the first's
    assert celworker.SENT.get("orders", 0) - before == 2  # held by the worker already


def test_attempts_share_the_parsed_initial_state_and_never_change_it() -> None:
    spec = job(view("x", tools=(LOOKUP, CLOSE)), (LOOKUP, CLOSE), state=state(10)).env
    first, second = Environment(spec, Recorder()), Environment(spec, Recorder())
    assert first.initial_state is second.initial_state  # parsed once per spec
    call(first, "close", "ORDER_1")
    diff = first.final_diff()
    assert diff == [
        {"path": "last", "before": None, "after": "closed", "op": "set"},
        {"path": "orders.ORDER_1.status", "before": "open", "after": "closed", "op": "set"},
    ]
    assert second.initial_state["orders"]["ORDER_1"]["status"] == "open"
    assert second.state["orders"]["ORDER_1"]["status"] == "open"
    assert second.final_diff() == []


def test_a_large_value_is_sized_for_a_literal_once_per_change_not_per_evaluation(
    monkeypatch: Any,
) -> None:
    """After a change, an older activation lacks the new ``orders``: each evaluation asked
    whether the 2,000 orders could be written as a literal (walking 4,096 nodes to say
    no), four times a call; the answer is kept until the next change."""
    from evalcase.contract import cel

    sized: list[Any] = []
    real = cel.literal

    def counted(value: Any, budget: int = cel._LITERAL_NODES) -> str | None:
        sized.append(value)
        return real(value, budget)

    monkeypatch.setattr(cel, "literal", counted)
    env = environment()
    orders = env.state["orders"]
    call(env, "lookup", "ORDER_1")
    call(env, "close", "ORDER_1")  # a change: orders is sized again, once
    for i in range(2, 8):
        call(env, "lookup", f"ORDER_{i}")
    assert sum(1 for v in sized if v is orders) == 1
    call(env, "close", "ORDER_3")
    for i in range(2, 8):
        call(env, "lookup", f"ORDER_{i}")
    assert sum(1 for v in sized if v is orders) == 2
    # the one lookup of a closed order (ORDER_3, after it was closed) has no response
    assert [c.error is None for c in env.calls].count(False) == 1
    assert env.state["orders"]["ORDER_3"]["status"] == "closed"
    assert env.scopes.conversions["orders"] == 3  # converted as before: once per change


def test_a_container_larger_than_the_budget_has_no_literal_without_a_walk() -> None:
    from evalcase.contract import cel

    assert cel.literal({f"k{i}": i for i in range(5000)}) is None
    assert cel.literal(list(range(10))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
    assert cel.literal([[1, 2]] * 3, budget=10) == "[[1, 2], [1, 2], [1, 2]]"  # 10 nodes
    assert cel.literal([[1, 2]] * 3, budget=9) is None


def test_attempts_share_what_they_do_not_write_and_see_none_of_each_others_writes() -> None:
    # An attempt's state is a copy on write of the one parsed initial document: what it
    # has not written is the shared document's (tau2 airline's 3 MB database was parsed
    # again by every attempt and every gold replay); what it writes is its own, every
    # container on the path copied first, whatever the operation (set, increment, append,
    # delete, a list item, an undone call).
    spec = job(view("x", tools=(LOOKUP, CLOSE)), (LOOKUP, CLOSE), state=state(10)).env
    initial = copy.deepcopy(spec.initial_state)
    first, second = Environment(spec, Recorder()), Environment(spec, Recorder())
    # shared, not parsed again (a top-level container is each attempt's own shallow copy)
    assert first.state["orders"]["ORDER_1"] is second.state["orders"]["ORDER_1"]
    assert first.state["orders"] is not second.state["orders"]
    call(first, "close", "ORDER_1")
    call(first, "lookup", "ORDER_2")
    for op, path, value in (
        ("append", "orders.ORDER_3.items", {"sku": "NEW", "qty": 2}),
        ("increment", "orders.ORDER_4.items.0.qty", 5),
        ("set", "orders.ORDER_5.items.1", {"sku": "X"}),
        ("delete", "orders.ORDER_6", None),
        ("delete", "orders.ORDER_7.items.0", None),
        ("set", "orders.ORDER_7.items.0.qty", 9),  # after the delete shifted the list
    ):
        first.change(op, path, value, {})
    first._undo = []  # a call's journal: its writes, then undone
    first.change("set", "orders.ORDER_8.status", "gone", {})
    first.change("append", "orders.ORDER_8.items", {"sku": "Z"}, {})
    for _root, undo in reversed(first._undo):
        undo()
    first._undo = None
    mine = first.state["orders"]
    assert mine["ORDER_1"]["status"] == "closed" and first.state["seen"] == 3
    assert [i["sku"] for i in mine["ORDER_3"]["items"]] == ["S3", "S3", "S3", "NEW"]
    assert mine["ORDER_4"]["items"][0]["qty"] == 6 and mine["ORDER_5"]["items"][1] == {"sku": "X"}
    assert "ORDER_6" not in mine and mine["ORDER_7"]["items"][0]["qty"] == 9
    assert mine["ORDER_8"] == initial["orders"]["ORDER_8"]
    assert mine["ORDER_9"] is second.state["orders"]["ORDER_9"]  # never written: shared
    # No other attempt, earlier or later, and not the initial document, sees any of it.
    third = Environment(spec, Recorder())
    for other in (second, third):
        assert other.state == initial and other.final_diff() == []
    assert first.initial_state == initial and spec.initial_state == initial
    # The diff of its calls (the direct writes above are no call's), from the shared one.
    assert [d["path"] for d in first.final_diff()] == [
        "last",
        "log.ORDER_2",
        "orders.ORDER_1.status",
        "seen",
    ]


def test_attempts_on_one_initial_state_size_an_unchanged_key_for_a_literal_once(
    monkeypatch: Any,
) -> None:
    # An activation made for an expression that reads only ``args`` lacks ``orders``: the
    # next expression reading orders asks whether they can be written as a CEL literal
    # (walking 4,096 of 2,000 orders' nodes to say no). The answer depends on the content
    # only, which the unchanged key's pinned token names: the first attempt on the initial
    # state asks, the others do not; a changed key is sized again, as in one attempt.
    from evalcase.contract import cel

    sized: list[Any] = []
    real = cel.literal

    def counted(value: Any, budget: int = cel._LITERAL_NODES) -> str | None:
        sized.append(value)
        return real(value, budget)

    echo = tool(
        "echo",
        schema=SCHEMA,
        responses=({"when": "args.order_id != ''", "result_from": "args.order_id"},),
    )
    monkeypatch.setattr(cel, "literal", counted)
    orders = state(2000)
    orders["orders"]["ORDER_0"]["note"] = secrets.token_hex(8)  # a content no test sized
    tools = (echo, LOOKUP, CLOSE)
    spec = job(view("x", tools=tools), tools, state=orders).env
    envs = [Environment(spec, Recorder()) for _ in range(3)]
    for env in envs:
        call(env, "echo", "ORDER_1")
        call(env, "lookup", "ORDER_2")
    assert [c.error for env in envs for c in env.calls] == [None] * 6
    assert [c.result for c in envs[2].calls] == [c.result for c in envs[0].calls]
    assert sum(1 for v in sized if isinstance(v, dict) and len(v) == 2000) == 1
    call(envs[1], "close", "ORDER_1")
    call(envs[1], "echo", "ORDER_1")
    call(envs[1], "lookup", "ORDER_2")  # orders changed: sized again
    assert sum(1 for v in sized if isinstance(v, dict) and len(v) == 2000) > 1
    assert envs[1].calls[-1].result == envs[0].calls[-1].result
