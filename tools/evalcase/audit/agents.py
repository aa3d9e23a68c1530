"""The audit's agents: ``py:evalcase.audit.agents:<name>`` functions, run through the
normal runner like any agent (docs/audit.md).

The panel sees only what any agent sees (the request); none of them reads an answer:

- ``silent``: answers every turn with nothing (an empty message);
- ``refuse``: a polite generic refusal, every turn;
- ``handoff``: asks for a human at once; where a tool whose name says transfer, human,
  handoff or escalate is offered, it calls that tool once (arguments valid for its
  schema) before saying so;
- ``echo``: repeats the user's last message;
- ``flail``: calls every offered tool once, in one reply, with arguments valid for its
  schema (:mod:`evalcase.audit.schema_values`), then gives a generic answer.

Two read the case's answer key (:mod:`evalcase.audit.keys`), from the file the audit
wrote and names in their options (``key_file``), looked up by ``attempt_key``:

- ``parrot``: the gold's final answer, word for word, without any tool call;
- ``gold``: the oracle: the expected calls, one per reply, each in the user turn it
  belongs to, then the final answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalcase.audit.schema_values import example

VERSION = "audit-panel/1"
REFUSAL = "I'm sorry, but I can't help with that request."
HANDOFF = "I'll transfer you to a human agent who can help you with this."
GENERIC = "I have looked into this and taken care of it. Is there anything else?"
_HANDOFF_TOOL = re.compile(r"transfer|human|hand_?off|escalat", re.I)


def _say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "agent_version": VERSION}


def _call(index: int, name: str, args: Any) -> dict[str, Any]:
    return {
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
    }


def _tools(request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out = []
    for tool in request.get("tools") or ():
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and function.get("name"):
            out.append(function)
    return out


def _messages(request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [m for m in request.get("messages") or () if isinstance(m, Mapping)]


def _called_since_last_user(request: Mapping[str, Any]) -> int:
    count = 0
    for message in reversed(_messages(request)):
        if message.get("role") == "user":
            break
        if message.get("role") == "assistant":
            count += len(message.get("tool_calls") or ())
    return count


def silent(request: Mapping[str, Any]) -> dict[str, Any]:
    return _say("")


def refuse(request: Mapping[str, Any]) -> dict[str, Any]:
    return _say(REFUSAL)


def handoff(request: Mapping[str, Any]) -> dict[str, Any]:
    transfer = next((t for t in _tools(request) if _HANDOFF_TOOL.search(str(t["name"]))), None)
    already = any(m.get("role") == "assistant" and m.get("tool_calls") for m in _messages(request))
    if transfer is None or already:
        return _say(HANDOFF)
    args = example(transfer.get("parameters") or {"type": "object"})
    reply = _say(HANDOFF)
    reply["tool_calls"] = [_call(1, str(transfer["name"]), args if args is not None else {})]
    return reply


def echo(request: Mapping[str, Any]) -> dict[str, Any]:
    users = [m for m in _messages(request) if m.get("role") == "user"]
    last = users[-1].get("content") if users else ""
    return _say(last if isinstance(last, str) else json.dumps(last, ensure_ascii=False))


def flail(request: Mapping[str, Any]) -> dict[str, Any]:
    done = any(m.get("role") == "assistant" and m.get("tool_calls") for m in _messages(request))
    tools = _tools(request)
    if done or not tools:
        return _say(GENERIC)
    calls = []
    for index, tool in enumerate(tools, 1):
        args = example(tool.get("parameters") or {"type": "object"})
        calls.append(_call(index, str(tool["name"]), args if args is not None else {}))
    reply = _say("Let me check everything.")
    reply["tool_calls"] = calls
    return reply


@lru_cache(maxsize=16)
def _keys(path: str, stamp: float) -> Mapping[str, Any]:
    loaded = json.loads(Path(path).read_text("utf-8"))
    return loaded if isinstance(loaded, Mapping) else {}


def _key(request: Mapping[str, Any], options: Mapping[str, Any]) -> Mapping[str, Any] | None:
    path = options.get("key_file")
    if not isinstance(path, str):
        return None
    stamp = Path(path).stat().st_mtime
    found = _keys(path, stamp).get(str(request.get("attempt_key")))
    return found if isinstance(found, Mapping) else None


def parrot(request: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    key = _key(request, options)
    return _say(str(key["answer"]) if key is not None else GENERIC)


def gold(request: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    key = _key(request, options)
    if key is None:
        return _say("I do not know this case.")
    turns = key.get("turns") or [[]]
    users = sum(1 for m in _messages(request) if m.get("role") == "user")
    turn = max(0, min(users - int(key.get("first_user", 1)), len(turns) - 1))
    calls = turns[turn]
    sent = _called_since_last_user(request)
    if sent < len(calls):
        call = calls[sent]
        reply = _say(f"Calling {call['tool']}.")
        reply["tool_calls"] = [_call(sent + 1, str(call["tool"]), call.get("args") or {})]
        return reply
    later = any(turns[i] for i in range(turn + 1, len(turns)))
    return _say(str(key.get("bridge")) if later else str(key["answer"]))


# name -> the spec the audit runs it with
SPECS: dict[str, str] = {
    name: f"py:evalcase.audit.agents:{name}"
    for name in ("gold", "silent", "refuse", "handoff", "echo", "parrot", "flail")
}
SPECS["mutants"] = SPECS["gold"]  # the gold oracle, each mutant with its own answer key
