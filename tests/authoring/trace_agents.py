"""``py:tests.authoring.trace_agents:NAME`` agents that make the calls a recorded trace
made, so a test can see the imported fixtures answer them as production did."""

from __future__ import annotations

import json
from typing import Any


def order_lookup_then_answer(request: dict[str, Any]) -> dict[str, Any]:
    """Calls order_lookup for the order named in the user's turn, then answers with the
    tool's result as it read it."""
    messages = request["messages"]
    tool = [m for m in messages if m["role"] == "tool"]
    if not tool:
        user = next(m["content"] for m in messages if m["role"] == "user")
        order = next(w for w in user.replace("？", " ").split() if w.startswith("ORDER_"))
        args = json.dumps({"order_id": order})
        call = {"id": "c1", "type": "function",
                "function": {"name": "order_lookup", "arguments": args}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": "tool said: " + str(tool[-1]["content"])}
