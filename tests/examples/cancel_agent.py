#!/usr/bin/env python3
"""A small rule-based airline agent for the tau2 end-to-end tests (cmd: protocol).

It knows nothing of the case: it reads reservation IDs (six capitals and digits) from the
user's words, asks for an explicit confirmation before cancelling, cancels, one call per
reply, exactly the reservations the confirming turn names, then reports what it did.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

RID = re.compile(r"\b(?=[A-Z0-9]*[0-9])(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b")


def say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "agent_version": "cancel_agent/1"}


def reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    users = [m for m in messages if m.get("role") == "user"]
    last = str(users[-1].get("content") or "")
    done = {
        json.loads(c["function"]["arguments"])["reservation_id"]
        for m in messages if m.get("role") == "assistant"
        for c in m.get("tool_calls") or [] if c["function"]["name"] == "cancel_reservation"
    }  # fmt: skip
    if "yes" in last.lower():
        todo = [r for r in RID.findall(last) if r not in done]
        if todo:
            n = len(done)
            # fmt: off
            return {
                "role": "assistant", "content": None, "agent_version": "cancel_agent/1",
                "tool_calls": [{"id": f"c{n}", "type": "function", "function": {
                    "name": "cancel_reservation",
                    "arguments": json.dumps({"reservation_id": todo[0]})}}],
            }
            # fmt: on
        if done:
            return say(f"Reservation {', '.join(sorted(done))} is cancelled.")
    ids = RID.findall(last)
    if "cancel" in last.lower() and ids:
        return say(f"Do you confirm that I cancel {', '.join(ids)}? Please answer yes or no.")
    return say("Is there anything else I can help with?")


if __name__ == "__main__":
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            sys.stdout.write(json.dumps(reply(request.get("messages") or [])) + "\n")
            sys.stdout.flush()
