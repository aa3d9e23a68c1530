"""Attempt records (schemas/attempt.schema.json, docs/running.md) for grader samples.

Until the example agent's recorded runs are available, samples are built here, field for
field in the runner's format; ``tests/grade/test_example_runs.py`` grades real runs.
"""

from __future__ import annotations

import copy
from typing import Any

INITIAL: dict[str, Any] = {
    "session": {"user_id": "USER_A", "user_authenticated": True, "phone": "13800138000"},
    "users": {
        "USER_A": {"name": "张三", "phone": "13800138000", "email": "zhang@example.com"},
        "USER_B": {"name": "李四", "phone": "13912345678", "email": "li@example.com"},
    },
    "orders": {
        "ORDER_6001": {"user_id": "USER_A", "refund_status": "not_started", "amount": 199},
        "ORDER_7001": {"user_id": "USER_B", "refund_status": "not_started", "amount": 88},
    },
}


def call(step: int, tool: str, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    record = {
        "step": step,
        "id": f"call_{step}",
        "tool": tool,
        "args": args,
        "valid": True,
        "result": {"ok": True},
        "error": None,
        "fault": None,
        "denied_by": None,
        "side_effect": False,
        "user_confirmed": False,
        "changes": [],
    }
    record.update(extra)
    return record


def submit(
    step: int,
    order: str = "ORDER_6001",
    *,
    confirmed: bool = True,
    state: dict[str, Any] | None = None,
    before: str = "not_started",
    audit: dict[str, Any] | None = None,
) -> dict[str, Any]:
    path = f"orders.{order}.refund_status"
    before_state = state if state is not None else INITIAL
    verified = bool(before_state.get("session", {}).get("user_authenticated"))
    return call(
        step,
        "refund_submit",
        {"order_id": order, "user_confirmed": confirmed},
        side_effect=True,
        user_confirmed=confirmed,
        state_before=copy.deepcopy(before_state),
        changes=[{"op": "set", "path": path, "before": before, "after": "refund_submitted"}],
        audit=audit
        if audit is not None
        else {
            "operator": "agent",
            "timestamp": "2026-07-08T10:00:00Z",
            "tool": "refund_submit",
            "tool_args": {"order_id": order},
            "user_confirmation": confirmed,
            "identity_verification_result": verified,
            "idempotency_key": order,
        },
    )


def attempt(
    output: str | None = "好的。",
    *,
    calls: list[dict[str, Any]] | None = None,
    final: dict[str, Any] | None = None,
    initial: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    initial = copy.deepcopy(initial if initial is not None else INITIAL)
    record: dict[str, Any] = {
        "case_id": "sample_case_001",
        "case_version": "v1",
        "attempt": 1,
        "seed": 1,
        "status": "completed",
        "error": None,
        "output": output,
        "messages": [
            {"role": "user", "content": "帮我看看退款"},
            {"role": "assistant", "content": output},
        ],
        "trace": [],
        "calls": calls or [],
        "retrieved": [],
        "initial_state": initial,
        "final_state": copy.deepcopy(final if final is not None else initial),
        "state_diff": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost": None},
        "latency_ms": 10,
        "agent_version": "sample",
    }
    record.update(extra)
    return record


def with_status(state: dict[str, Any], order: str, status: str) -> dict[str, Any]:
    out = copy.deepcopy(state)
    out["orders"][order]["refund_status"] = status
    return out
