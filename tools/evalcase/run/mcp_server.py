"""The case's tools over MCP for an agent that runs its own loop (``loop = "agent"``).

One MCP server per event loop (:class:`Endpoint`), built on the official Python SDK
(``mcp``: its low-level ``Server`` and its streamable-HTTP session manager, stateless,
JSON responses), serving every attempt on the loop: each attempt's server
(:mod:`evalcase.run.attempt_host`, beside the model proxy) names the attempt in the
request's ASGI scope, and the request gets that attempt's cards and calls only.
``tools/list`` answers the AgentView's tool cards only (name, description, parameter
schema); ``tools/call`` is handed to the attempt's thread, where the attempt's ``Environment``
answers it exactly as it answers the runner's own loop: schema validation, permissions,
faults, behaviour, confirmation, audit records, the state diff, ``max_tool_calls`` and
the deadline. The SDK's own input validation is off: the ``Environment`` validates, and
records what it refused.

What the agent gets back is the text of the tool message the runner's loop would have
delivered (a result or an error object, as JSON). An unknown tool or arguments the
schema refuses is an MCP error result (``isError: true``) with that same text; both are
recorded as calls, as today.

The ``mcp`` package is the ``agents`` extra (``pip install 'evalcase[agents]'``):
:func:`missing` says so before the run. The SDK itself is imported on the first MCP request
a run's agents make, not before.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalcase import __version__

INSTALL_HINT = "pip install 'evalcase[agents]' (the mcp package: the official MCP Python SDK)"


def missing() -> str | None:
    """None when the MCP SDK is installed, else what to install. Found, not imported: the
    SDK (about 0.35 s of CPU with pydantic's models) is imported when the run's first agent
    asks its MCP endpoint for something (:func:`endpoint`), so that a run whose agents use
    only the model never pays for it. ``mcp`` installed without what the server needs
    (a broken install) is an error of the first MCP request, recorded."""
    if importlib.util.find_spec("mcp") is None:  # a module already imported: its spec
        return f"loop = \"agent\" needs the 'mcp' package, not installed: {INSTALL_HINT}"
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


# The ASGI scope key by which a request names its attempt (set by the attempt's server,
# evalcase.run.attempt_host, never by the client).
ATTEMPT_KEY = "evalcase.attempt"


@dataclass(frozen=True)
class _Attempt:
    cards: list[Any]  # mcp.types.Tool
    handler: Handler


class Endpoint:
    """One MCP server and streamable-HTTP session manager per event loop, serving every
    attempt on it: each request names its attempt in the ASGI scope (:data:`ATTEMPT_KEY`),
    and gets that attempt's cards and handler. Built per attempt, the SDK's ``Server``, its
    handlers and the manager's task group (started, then cancelled) were most of what an
    attempt's servers cost to start and stop."""

    def __init__(self) -> None:
        import json

        from mcp import types
        from mcp.server.lowlevel import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        self.attempts: dict[str, _Attempt] = {}
        # Its version given: without one the SDK reads the mcp package's metadata
        # (importlib.metadata, an email-header parse) for every stateless request, 0.25 ms
        # of the event loop's CPU each (a tools/list: 2.18 -> 1.94 ms).
        server: Server[Any, Any] = Server("evalcase", version=__version__)

        def attempt() -> _Attempt | None:
            try:
                request = server.request_context.request
            except LookupError:
                return None
            scope = getattr(request, "scope", None) or {}
            return self.attempts.get(str(scope.get(ATTEMPT_KEY)))

        @server.list_tools()  # type: ignore[no-untyped-call,untyped-decorator]
        async def _list() -> list[types.Tool]:
            found = attempt()
            return list(found.cards) if found is not None else []

        @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
        async def _call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
            found = attempt()
            if found is None:  # the attempt has ended (its server refuses before this)
                answer = ToolAnswer("the attempt has ended", True)
            else:
                meta = server.request_context.meta
                text = json.dumps(arguments, ensure_ascii=False)
                answer = await found.handler(name, text, _meta_id(meta))
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=answer.text)],
                isError=answer.is_error,
            )

        self.manager = StreamableHTTPSessionManager(app=server, stateless=True, json_response=True)

    async def hold(self, ready: asyncio.Future[None]) -> None:
        """Run the session manager for as long as the loop runs."""
        try:
            async with self.manager.run():
                ready.set_result(None)
                await asyncio.Event().wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    def add(
        self, key: str, tools: Sequence[Mapping[str, Any]], handler: Handler
    ) -> Callable[[Any, Any, Any], Awaitable[None]]:
        """Serve ``tools`` (the AgentView's cards: ``name``, ``description``,
        ``parameters``) to the requests naming ``key``; the ASGI callable to hand them to."""
        from mcp import types

        cards = [
            types.Tool(
                name=str(t["name"]),
                description=str(t.get("description") or ""),
                inputSchema=dict(t.get("parameters") or {"type": "object", "properties": {}}),
            )
            for t in tools
        ]
        self.attempts[key] = _Attempt(cards, handler)
        manager = self.manager

        async def handle(scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request({**scope, ATTEMPT_KEY: key}, receive, send)

        return handle

    def remove(self, key: str) -> None:
        self.attempts.pop(key, None)


_ENDPOINTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[Endpoint]] = (
    weakref.WeakKeyDictionary()
)


async def endpoint() -> Endpoint:
    """The running loop's :class:`Endpoint`, started on first use."""
    loop = asyncio.get_running_loop()
    found = _ENDPOINTS.get(loop)
    if found is None:
        found = loop.create_future()
        _ENDPOINTS[loop] = found
        try:
            made = Endpoint()
            ready: asyncio.Future[None] = loop.create_future()
            task = asyncio.ensure_future(made.hold(ready))
            _HELD.add(task)  # the loop keeps only weak references to its tasks
            await ready
        except BaseException as exc:
            del _ENDPOINTS[loop]
            found.set_exception(exc)
            found.exception()  # retrieved: the callers waiting get it; nobody else need
            raise
        found.set_result(made)
    return await asyncio.shield(found)


_HELD: set[asyncio.Future[None]] = set()


@contextlib.asynccontextmanager
async def serving(
    tools: Sequence[Mapping[str, Any]], handler: Handler, key: str
) -> AsyncIterator[Callable[[Any, Any, Any], Awaitable[None]]]:
    """The MCP endpoint of one attempt (``key``: its token) as an ASGI callable, served for
    as long as the context is open. ``tools``: the AgentView's tool cards (``name``,
    ``description``, ``parameters``)."""
    shared = await endpoint()
    handle = shared.add(key, tools, handler)
    try:
        yield handle
    finally:
        shared.remove(key)


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
