"""An agent that owns its loop, standard library only: the model through OPENAI_BASE_URL,
the tools through EVALCASE_MCP_URL (MCP JSON-RPC over HTTP POST). One mode per argv[1]:

- ``loop``: the model's proposals are all executed until it answers with text;
- ``refuse``: like ``loop``, but a proposal of a ``*_cancel`` tool is never executed
  (the agent's own guardrail): the model is told it was refused;
- ``stdio``: like ``loop``, its tools through the stdio shim (EVALCASE_MCP_STDIO);
- ``twins``: runs the model once and executes its (identical, parallel) proposals;
- ``silent``: never connects, never replies;
- ``late``: replies, then calls a tool (after its turn ended) and waits for the answer;
- ``oversized``: sends a 2 MB tools/call; replies with the HTTP status it got;
- ``wrong_token``: calls the proxy with another key; replies with the status;
- ``other_host URL``: fetches URL directly; replies with what happened;
- ``environ``: replies with its environment and its /proc/self/environ.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any


def post(url: str, body: Any, key: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    headers["Authorization"] = f"Bearer {key or os.environ.get('OPENAI_API_KEY', '')}"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=20) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"model": os.environ.get("OPENAI_MODEL", "english-1"), "messages": messages}
    if tools:
        body["tools"] = tools
    status, answer = post(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body)
    if status != 200:
        raise RuntimeError(f"model: HTTP {status}: {answer}")
    return dict(answer["choices"][0]["message"])


def mcp(method: str, params: dict[str, Any]) -> tuple[int, Any]:
    return post(
        os.environ["EVALCASE_MCP_URL"],
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
    )


SHIM: subprocess.Popen[str] | None = None


def over_stdio(method: str, params: dict[str, Any]) -> tuple[int, Any]:
    """One request through the stdio shim, started once (initialize first)."""
    global SHIM
    if SHIM is None:
        SHIM = subprocess.Popen(
            shlex.split(os.environ["EVALCASE_MCP_STDIO"]),
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        over_stdio(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "loop_agent", "version": "1"},
            },
        )
        assert SHIM.stdin is not None
        SHIM.stdin.write(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
        )
        SHIM.stdin.flush()
    assert SHIM.stdin is not None and SHIM.stdout is not None
    SHIM.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}) + "\n"
    )
    SHIM.stdin.flush()
    return 200, json.loads(SHIM.stdout.readline())


def call_tool(name: str, arguments: str) -> str:
    send = over_stdio if sys.argv[1] == "stdio" else mcp
    status, answer = send("tools/call", {"name": name, "arguments": json.loads(arguments or "{}")})
    if status != 200 or "result" not in answer:
        return json.dumps({"error": {"code": "mcp", "message": f"{status}: {answer}"}})
    return str(answer["result"]["content"][0]["text"])


def turn(request: dict[str, Any], mode: str) -> str:
    messages = [m for m in request["messages"] if m["role"] in ("system", "user", "assistant")]
    tools = request.get("tools") or []
    for _ in range(12):
        message = model(messages, tools)
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            return str(message.get("content") or "")
        for c in calls:
            fn = c["function"]
            if mode == "refuse" and fn["name"].endswith("_cancel"):
                text = "refused by the agent's guardrail: ask for confirmation first"
            else:
                text = call_tool(fn["name"], fn["arguments"])
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": text})
        if mode == "twins":
            return "done"
    return "too many steps"


def main() -> None:
    mode = sys.argv[1]
    for line in sys.stdin:
        request = json.loads(line)
        if mode == "silent":
            continue
        if mode in ("loop", "refuse", "twins", "stdio"):
            try:
                text = turn(request, mode)
            except RuntimeError as exc:
                text = str(exc)
        elif mode == "late":
            print(json.dumps({"role": "assistant", "content": "done"}), flush=True)
            status, _ = mcp(
                "tools/call", {"name": "order_lookup", "arguments": {"order_id": "ORDER_1"}}
            )
            print(f"late call: {status}", file=sys.stderr, flush=True)
            continue
        elif mode == "oversized":
            status, _ = mcp(
                "tools/call", {"name": "order_lookup", "arguments": {"order_id": "x" * 2_000_000}}
            )
            text = f"status {status}"
        elif mode == "wrong_token":
            status, _ = post(
                os.environ["OPENAI_BASE_URL"] + "/chat/completions",
                {"model": "english-1", "messages": []},
                key="sk-guessed",
            )
            text = f"status {status}"
        elif mode == "other_host":
            try:
                with urllib.request.urlopen(sys.argv[2], timeout=5) as r:
                    text = f"reached {r.status}"
            except (OSError, urllib.error.URLError) as exc:
                text = f"unreachable: {type(exc).__name__}"
        else:  # environ
            with open("/proc/self/environ", "rb") as f:
                proc = f.read().decode("utf-8", "replace")
            text = json.dumps({"environ": dict(os.environ), "proc": proc})
        print(json.dumps({"role": "assistant", "content": text}), flush=True)


if __name__ == "__main__":
    main()
