#!/usr/bin/env python3
"""Oracle: replays a tau2 task's expected actions, turn by turn (evalcase's cmd: protocol).

    cmd:{python} agents/replay_agent.py oracle/expected_actions.json

An oracle, not an example to imitate: it reads the answers from the file evalcase.toml's
agent config names (written by build.py outside datasets/ and fixtures/), keyed by the
task's opening user turn. Each reply sends the next expected action as one tool call
(whatever the previous result said: tau2's gold replay also goes on after an error); after
the last one it answers with the task's communicate_info values. An opening it does not
know gets a plain answer without tool calls.
"""

from __future__ import annotations

import json
import sys
from typing import Any

VERSION = "tau2_replay/1.0"


def reply(request: dict[str, Any], oracle: dict[str, Any]) -> dict[str, Any]:
    messages = request.get("messages") or []
    users = [m for m in messages if m.get("role") == "user"]
    entry = oracle.get(str(users[0].get("content") or "")) if users else None
    if entry is None:
        return {
            "role": "assistant",
            "content": "I do not know this task.",
            "agent_version": VERSION,
        }
    sent = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    actions = entry["actions"]
    if sent < len(actions):
        action = actions[sent]
        return {
            "role": "assistant",
            # A line of text with each call: a call that ends the conversation (the
            # transfer) leaves it as the final answer the judge reads.
            "content": f"Calling {action['name']}.",
            "agent_version": VERSION,
            "tool_calls": [
                {
                    "id": f"call_{sent}",
                    "type": "function",
                    "function": {
                        "name": action["name"],
                        "arguments": json.dumps(action["arguments"]),
                    },
                }
            ],
        }
    said = "; ".join(entry["say"])
    return {"role": "assistant", "content": f"Done. {said}".strip(), "agent_version": VERSION}


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        oracle = json.load(handle)
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(reply(json.loads(line), oracle)) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
