#!/usr/bin/env python3
"""Oracle: replays the agent's side of a tau2 telecom task's gold (evalcase's cmd: protocol).

    cmd:{python} agents/replay_agent.py oracle/replay.json

Paired with the replay user of a ``build.py --replay`` repository: the user's scripted
turns make the user's gold calls, and this agent, after the k-th user turn, makes the
agent's gold calls of segment k, one per reply (whatever the result said, as tau2's gold
replay goes on), then answers with text. The task is named by the opening turn's
``[replay of tau2 telecom task NNN]`` line (an oracle, not an example to imitate).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

VERSION = "tau2_telecom_replay/1.0"
MARK = re.compile(r"\[replay of tau2 telecom task ([0-9a-z_]+)\]")


def reply(request: dict[str, Any], oracle: dict[str, Any]) -> dict[str, Any]:
    messages = request.get("messages") or []
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    found = MARK.search(str(messages[users[0]].get("content") or "")) if users else None
    plan = oracle.get(found.group(1)) if found else None
    if plan is None:
        return {
            "role": "assistant",
            "content": "I do not know this task.",
            "agent_version": VERSION,
        }
    segment = len(users) - 1
    calls = plan[segment] if segment < len(plan) else []
    sent = sum(
        1 for m in messages[users[-1] :] if m.get("role") == "assistant" and m.get("tool_calls")
    )
    if sent < len(calls):
        call = calls[sent]
        return {
            "role": "assistant",
            "content": f"Calling {call['tool']}.",
            "agent_version": VERSION,
            "tool_calls": [
                {
                    "id": f"call_{segment}_{sent}",
                    "type": "function",
                    "function": {"name": call["tool"], "arguments": json.dumps(call["args"])},
                }
            ],
        }
    return {"role": "assistant", "content": "Done.", "agent_version": VERSION}


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
