"""The replay agent of ``benchmarks/tau2_bench.py``: plays the tool calls its case's
``context.script`` lists (one list per user turn), then answers ``done``.

A benchmark workload, not an agent under evaluation: the script is the workload's own
input (what tau2's expected actions are to the oracle replay), so the environment's cost
is what is measured, not a model's."""

from __future__ import annotations

import json
from typing import Any


def replay(request: dict[str, Any]) -> dict[str, Any]:
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
            "tool_calls": [
                {
                    "id": f"c{turn}_{since_user}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ],
        }
    return {"role": "assistant", "content": "done"}
