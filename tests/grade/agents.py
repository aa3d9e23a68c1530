"""``py:tests.grade.agents:NAME`` agents for grading tests (real functions, run by the
real py: adapter); each sees only its request (the case's agent view)."""

from __future__ import annotations

import json
from typing import Any


def talker(request: dict[str, Any]) -> dict[str, Any]:
    """Plays ``context.talk``: ``[text, tool, args]`` steps, each an assistant message with
    that text and one tool call, then the final answer ``context.final``."""
    messages = request["messages"]
    steps = request["context"]["talk"]
    done = sum(1 for m in messages if m["role"] == "assistant")
    if done < len(steps):
        text, tool, args = steps[done]
        call = {
            "id": f"t{done}",
            "type": "function",
            "function": {"name": tool, "arguments": json.dumps(args)},
        }
        return {"role": "assistant", "content": text, "tool_calls": [call]}
    return {"role": "assistant", "content": request["context"]["final"]}
