"""The stdio shim of an agent-owned loop's MCP server (standard library only).

For agents that take only stdio MCP servers: ``EVALCASE_MCP_STDIO`` holds the command
line of this shim (``python -I -S .../mcp_stdio.py``), to be started as the agent starts
any stdio server. It reads one JSON-RPC message per line on stdin, posts each to the
attempt's streamable-HTTP endpoint (``EVALCASE_MCP_URL``, or the URL given as its
argument) and writes each answer as one line on stdout; a notification has no answer. It
ends at the end of its input. The endpoint is the attempt's own (its token is in the
URL): the shim adds nothing, holds nothing and decides nothing.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request


def forward(url: str, line: str) -> str | None:
    request = urllib.request.Request(
        url,
        line.encode("utf-8"),
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    body: str
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            body = response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        body = str(exc.read().decode("utf-8", "replace"))
    except OSError as exc:
        body = ""
        problem = f"the MCP endpoint cannot be reached: {type(exc).__name__}"
        message = json.loads(line)
        if isinstance(message, dict) and "id" in message:
            return json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32000, "message": problem},
                }
            )
    body = body.strip()
    if not body:
        return None
    if body.startswith("{") or body.startswith("["):
        return body
    # A server-sent event stream: its data lines.
    data = [x[5:].strip() for x in body.splitlines() if x.startswith("data:")]
    return "\n".join(d for d in data if d) or None


def main() -> int:
    url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("EVALCASE_MCP_URL", "")
    if not url:
        sys.stderr.write("mcp_stdio: no endpoint (EVALCASE_MCP_URL or an argument)\n")
        return 2
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = forward(url, line)
        if answer is not None:
            sys.stdout.write(answer + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
