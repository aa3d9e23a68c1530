"""An agent that owns its loop through the Responses API, as an ``openai`` client user
writes it: ``client.responses.create`` (``stream`` when argv[1] is ``stream``) against
OPENAI_BASE_URL with OPENAI_API_KEY, its tools through EVALCASE_MCP_URL (MCP JSON-RPC
over HTTP POST, standard library), until the model answers with text."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

from openai import OpenAI

STREAM = sys.argv[1] == "stream"
client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY, as the owner's code would read them


def call_tool(name: str, arguments: str) -> str:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": json.loads(arguments or "{}")},
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    request = urllib.request.Request(
        os.environ["EVALCASE_MCP_URL"], json.dumps(body).encode(), headers
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as r:
            answer = json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return json.dumps({"error": {"code": "mcp", "message": str(exc.code)}})
    return str(answer["result"]["content"][0]["text"])


def create(items: list[Any], tools: list[dict[str, Any]]) -> Any:
    model = os.environ.get("OPENAI_MODEL", "english-1")
    if not STREAM:
        return client.responses.create(model=model, input=items, tools=tools)
    final = None
    for event in client.responses.create(model=model, input=items, tools=tools, stream=True):
        if event.type == "response.completed":
            final = event.response
    assert final is not None, "the stream ended without response.completed"
    return final


def turn(request: dict[str, Any]) -> str:
    items: list[Any] = [
        {"role": m["role"], "content": m["content"]}
        for m in request["messages"]
        if m["role"] in ("system", "user", "assistant")
    ]
    tools = [{"type": "function", **t["function"]} for t in request.get("tools") or ()]
    for _ in range(12):
        response = create(items, tools)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return str(response.output_text)
        for c in calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": c.call_id,
                    "name": c.name,
                    "arguments": c.arguments,
                }
            )
            output = call_tool(c.name, c.arguments)
            items.append({"type": "function_call_output", "call_id": c.call_id, "output": output})
    return "too many steps"


for line in sys.stdin:
    print(json.dumps({"role": "assistant", "content": turn(json.loads(line))}), flush=True)
