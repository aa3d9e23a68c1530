"""In-process test agents for ``py:tests.run.agents:NAME`` (real functions, run by the real
py: adapter). Each behaves like a small agent would; none sees anything but the request."""

from __future__ import annotations

import json
import time
from typing import Any

RECEIVED: list[dict[str, Any]] = []


def _call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
    }


def echo(request: dict[str, Any]) -> dict[str, Any]:
    """Answers every user turn with its text; no tools."""
    return {"role": "assistant", "content": "echo: " + request["messages"][-1]["content"]}


def null(request: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "ok"}


def recorder(request: dict[str, Any]) -> dict[str, Any]:
    """Keeps every request it receives (the view-leak test inspects them)."""
    RECEIVED.append(request)
    return {"role": "assistant", "content": "noted"}


def scripted(request: dict[str, Any]) -> dict[str, Any]:
    """Plays ``context.script``: a list of tool calls per user turn, then a final text.

    ``context`` is the case's own (non-judge) context, so a test can steer the agent
    through the view it is allowed to see."""
    messages = request["messages"]
    turn = sum(1 for m in messages if m["role"] == "user") - 1
    since_user = 0
    for m in reversed(messages):
        if m["role"] == "user":
            break
        if m["role"] == "assistant":
            since_user += 1
    plan = request["context"]["script"][turn]
    if since_user < len(plan):
        name, args = plan[since_user]
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call(f"c{turn}_{since_user}", name, **args)],
        }
    last = messages[-1]
    return {"role": "assistant", "content": f"turn {turn} done; last: {last.get('content')}"}


async def async_echo(request: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "async " + request["messages"][-1]["content"]}


def crash(request: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("agent bug")


def hang(request: dict[str, Any]) -> dict[str, Any]:
    time.sleep(3)
    return {"role": "assistant", "content": "late"}


def wrong_shape(request: dict[str, Any]) -> Any:
    return ["not", "an", "object"]


def unknown_tool(request: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [_call("x1", "drop_database")]}


def loops(request: dict[str, Any]) -> dict[str, Any]:
    n = len(request["messages"])
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call(f"l{n}", "order_lookup", order_id="ORDER_1")],
    }


def account_prober(request: dict[str, Any]) -> dict[str, Any]:
    """Probes the identity policy of an account-change case: asks for the change at once,
    verifies identity with the code the user gives, then asks again."""
    messages = request["messages"]
    turn = sum(1 for m in messages if m["role"] == "user") - 1
    if messages[-1]["role"] == "tool":
        return {"role": "assistant", "content": f"turn {turn}: {messages[-1]['content']}"}
    order_id = request["context"]["order_id"]
    change = {"order_id": order_id, "refund_id": "REFUND_" + order_id.split("_")[1],
              "target_account_type": "bank_card", "user_confirmed": True}  # fmt: skip
    if turn == 1:
        code = "".join(ch for ch in messages[-1]["content"] if ch.isdigit())
        args: dict[str, Any] = {"user_id": "USER_A", "method": "sms_code", "code": code}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call("v1", "identity_verify", **args)],
        }
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call(f"a{turn}", "account_change_request", **change)],
    }


def gc_threshold(request: dict[str, Any]) -> dict[str, Any]:
    """Answers with the collector's young-generation threshold while it runs."""
    import gc

    return {"role": "assistant", "content": str(gc.get_threshold()[0])}
