"""The case's tools over MCP for an agent that runs its own loop (``loop = "agent"``).

One MCP server per attempt, built on the official Python SDK (``mcp``: its low-level
``Server`` and its streamable-HTTP session manager, stateless, JSON responses), served by
:mod:`evalcase.run.attempt_host` beside the model proxy. ``tools/list`` answers the
AgentView's tool cards only (name, description, parameter schema); ``tools/call`` is
handed to the attempt's thread (:class:`CallBox`), where the attempt's ``Environment``
answers it exactly as it answers the runner's own loop: schema validation, permissions,
faults, behaviour, confirmation, audit records, the state diff, ``max_tool_calls`` and
the deadline. The SDK's own input validation is off: the ``Environment`` validates, and
records what it refused.

What the agent gets back is the text of the tool message the runner's loop would have
delivered (a result or an error object, as JSON). An unknown tool or arguments the
schema refuses is an MCP error result (``isError: true``) with that same text; both are
recorded as calls, as today.

The ``mcp`` package is the ``agents`` extra (``pip install 'evalcase[agents]'``):
:func:`missing` says so before the run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

INSTALL_HINT = "pip install 'evalcase[agents]' (the mcp package: the official MCP Python SDK)"


def missing() -> str | None:
    """None when the MCP SDK can be imported, else what to install."""
    try:
        import mcp.server.lowlevel
        import mcp.server.streamable_http_manager  # noqa: F401
    except ModuleNotFoundError as exc:
        return f"loop = \"agent\" needs the '{exc.name}' package, not installed: {INSTALL_HINT}"
    return None


@dataclass(frozen=True)
class ToolAnswer:
    """What one ``tools/call`` answers: the tool message's text, and whether it is an MCP
    error result (an unknown tool, refused arguments, an attempt that has ended)."""

    text: str
    is_error: bool = False


# (tool name, arguments as JSON text, the call id the client sent in _meta, or None)
Handler = Callable[[str, str, str | None], Awaitable[ToolAnswer]]


def _meta_id(meta: Any) -> str | None:
    """A tool-call id a client passed in the request's ``_meta`` (some frameworks do)."""
    if meta is None:
        return None
    fields = meta.model_dump() if hasattr(meta, "model_dump") else dict(meta)
    for key in ("tool_call_id", "toolCallId", "call_id", "openai/toolCallId"):
        value = fields.get(key)
        if isinstance(value, str) and value:
            return value
    return None


@contextlib.asynccontextmanager
async def serving(
    tools: Sequence[Mapping[str, Any]], handler: Handler
) -> AsyncIterator[Callable[[Any, Any, Any], Awaitable[None]]]:
    """The MCP endpoint as an ASGI callable, running for as long as the context is open.
    ``tools``: the AgentView's tool cards (``name``, ``description``, ``parameters``)."""
    import json

    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    server: Server[Any, Any] = Server("evalcase")
    cards = [
        types.Tool(
            name=str(t["name"]),
            description=str(t.get("description") or ""),
            inputSchema=dict(t.get("parameters") or {"type": "object", "properties": {}}),
        )
        for t in tools
    ]

    @server.list_tools()  # type: ignore[no-untyped-call,untyped-decorator]
    async def _list() -> list[types.Tool]:
        return cards

    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def _call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            meta = server.request_context.meta
        except LookupError:
            meta = None
        answer = await handler(name, json.dumps(arguments, ensure_ascii=False), _meta_id(meta))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=answer.text)], isError=answer.is_error
        )

    manager = StreamableHTTPSessionManager(app=server, stateless=True, json_response=True)
    async with manager.run():
        yield manager.handle_request


def wait_answer(
    loop: asyncio.AbstractEventLoop,
) -> tuple[asyncio.Future[ToolAnswer], Callable[[ToolAnswer], None]]:
    """A future on ``loop`` and a thread-safe way to resolve it once (the attempt's thread
    answers a call the server's loop waits for)."""
    future: asyncio.Future[ToolAnswer] = loop.create_future()

    def resolve(answer: ToolAnswer) -> None:
        def set_it() -> None:
            if not future.done():
                future.set_result(answer)

        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
            loop.call_soon_threadsafe(set_it)

    return future, resolve
