"""The per-attempt servers of an agent-owned loop: the MCP endpoint and the model proxy.

One HTTP server per attempt (uvicorn, on :mod:`evalcase.transport`'s event loop, the
process's one loop: no thread per attempt), with two routes:

- ``/<token>/mcp``: the case's tools (:mod:`evalcase.run.mcp_server`);
- ``/v1/...``: the model proxy (:mod:`evalcase.run.model_proxy`), the token as the
  bearer key.

Unsandboxed it listens on a loopback port (``127.0.0.1``, port chosen by the system);
sandboxed, on a unix socket in the attempt's folder, which the sandbox's relay
(:mod:`evalcase.run.relay`) serves on the sandbox's own ``127.0.0.1``. Either way a
request without the attempt's token is refused and recorded, and nothing is served once
the attempt has ended.

Everything the servers learn reaches the attempt's thread through :attr:`AttemptHost.inbox`
(a FIFO queue) and a wake-up pipe the thread watches beside the agent's output: a tool
call waits for the thread to answer it with the attempt's ``Environment`` (which is
single-threaded, and bounded per thread by :func:`evalcase.run.expr.bounded`), so every
guarantee of the runner's loop holds. A request body over ``max_reply_bytes`` is refused
(413) before it is read further.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import secrets
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcase.run import mcp_server
from evalcase.run.model_proxy import Budget, ModelProxy, Upstream, error_body, read_body, respond

UVICORN_LOGGERS = ("uvicorn.error", "uvicorn.access", "uvicorn.asgi")


def _quiet_uvicorn() -> None:
    """uvicorn's loggers at critical only, set when they are not. uvicorn's own
    configuration (a ``dictConfig`` of its defaults, then a ``setLevel`` per logger, each
    clearing the cache of every logger in the process) ran for every attempt's server, on
    the one event loop: the largest part of a server's start."""
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level != logging.CRITICAL:
            logger.setLevel(logging.CRITICAL)


@dataclass(frozen=True)
class Item:
    """One thing the servers tell the attempt's thread: ``kind`` is ``tool`` (a call to
    answer: ``resolve`` answers it), ``model_call``, ``proxy_refused``, ``mcp_refused`` or
    ``budget``."""

    kind: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    resolve: Any = None


class AttemptHost:
    def __init__(
        self,
        tools: Sequence[Mapping[str, Any]],
        upstream: Upstream,
        budget: Budget,
        limit: int,
        deadline: float,
        socket_path: Path | None = None,
    ) -> None:
        self.tools = tools
        self.limit = limit
        self.deadline = deadline
        self.token = "evalcase-" + secrets.token_urlsafe(24)
        self.inbox: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.socket_path = socket_path
        self.port: int | None = None
        self.ended = False
        self.proxy = ModelProxy(upstream, self.token, budget, limit, deadline, self.notify)
        self._server: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._mcp: mcp_server.Endpoint | None = None
        self._waiting: set[asyncio.Future[mcp_server.ToolAnswer]] = set()

    # -- what the attempt's thread reads -------------------------------------------------
    def notify(self, kind: str, fields: Mapping[str, Any], resolve: Any = None) -> None:
        self.inbox.put(Item(kind, dict(fields), resolve))
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self.wake_w, b"x")

    def drain_wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self.wake_r, 4096):
                pass

    def pending(self) -> list[Item]:
        out = []
        while True:
            try:
                out.append(self.inbox.get_nowait())
            except queue.Empty:
                return out

    # -- the URLs the agent gets --------------------------------------------------------
    def urls(self, port: int | None = None) -> tuple[str, str]:
        """(OPENAI_BASE_URL, EVALCASE_MCP_URL) on ``port`` (the relay's inside a sandbox)."""
        at = port if port is not None else self.port
        base = f"http://127.0.0.1:{at}"
        return f"{base}/v1", f"{base}/{self.token}/mcp"

    # -- serving ---------------------------------------------------------------------
    async def _app(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            return
        path = str(scope.get("path") or "")
        if path.startswith("/v1/") or path == "/v1":
            await self.proxy(scope, receive, send)
            return
        mcp_path = f"/{self.token}/mcp"
        if path.rstrip("/") != mcp_path:
            kind = "wrong_token" if path.endswith("/mcp") else "not_found"
            status = 401 if kind == "wrong_token" else 404
            await self._refuse(send, status, kind, kind, path=path[-40:])
            return
        if self.ended:
            await self._refuse(send, 410, "attempt_ended", "the attempt has ended")
            return
        body = await read_body(receive, self.limit)
        if body is None:
            over = f"request over max_reply_bytes ({self.limit})"
            await self._refuse(send, 413, "oversized", "request too large", message=over)
            return
        if self._mcp_handle is None:
            try:
                # The loop's one MCP server, made (the SDK imported) on the run's first MCP
                # request; this attempt's cards and calls registered on its first.
                shared = await mcp_server.endpoint()
            except Exception as exc:  # a broken install: said, recorded, never a hang
                said = f"the MCP server cannot start: {type(exc).__name__}: {exc}"[:500]
                await self._refuse(send, 500, "mcp_unavailable", said, message=said)
                return
            if self.ended:  # the attempt ended while the server was being made
                await self._refuse(send, 410, "attempt_ended", "the attempt has ended")
                return
            self._mcp = shared
            self._mcp_handle = shared.add(self.token, self.tools, self._tool)
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:  # after the body: what the connection says next (a disconnect)
                return dict(await receive())
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self._mcp_handle(scope, replay, send)

    async def _refuse(self, send: Any, status: int, reason: str, said: str, **fields: str) -> None:
        """An MCP request refused: recorded (``mcp_refused``, with ``fields``) and answered
        ``status`` with an error body saying ``said``."""
        self.notify("mcp_refused", {"status": status, "reason": reason, **fields})
        await respond(send, status, error_body(said, reason))

    async def _tool(self, name: str, arguments: str, meta_id: str | None) -> mcp_server.ToolAnswer:
        if self.ended:
            self.notify("mcp_refused", {"status": 410, "reason": "attempt_ended", "tool": name})
            return mcp_server.ToolAnswer("the attempt has ended", True)
        assert self._loop is not None
        future, resolve = mcp_server.wait_answer(self._loop)
        self._waiting.add(future)
        self.notify("tool", {"tool": name, "arguments": arguments, "meta_id": meta_id}, resolve)
        try:
            async with asyncio.timeout_at(self.deadline + 1):
                return await future
        except TimeoutError:
            return mcp_server.ToolAnswer("the attempt's deadline passed", True)
        finally:
            self._waiting.discard(future)

    async def _start(self) -> None:
        import uvicorn

        self._loop = asyncio.get_running_loop()
        if self.socket_path is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(str(self.socket_path))
        else:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
            # Accepted connections inherit it: an answer's head and body, written apart,
            # must not wait for the client's delayed ACK (40 ms a request, keep-alive).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.listen(256)
        sock.setblocking(False)
        _quiet_uvicorn()
        config = uvicorn.Config(
            self._app,
            lifespan="off",
            log_config=None,  # quieted once per process (_quiet_uvicorn), not per attempt
            log_level=None,
            access_log=False,
            timeout_graceful_shutdown=1,
            ws="none",
            interface="asgi3",
            proxy_headers=False,
        )
        config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        self._server = server
        self._sock = sock

    _mcp_handle: Any = None

    def start(self) -> None:
        from evalcase import transport

        loop, _ = transport.shared()
        asyncio.run_coroutine_threadsafe(self._start(), loop).result(timeout=30)

    async def _shutdown(self) -> None:
        server = self._server
        if server is not None:
            for s in server.servers:
                s.close()
            server.force_exit = True
            for connection in list(server.server_state.connections):
                connection.shutdown()
            with contextlib.suppress(Exception):
                self._sock.close()
        if self._mcp is not None:
            self._mcp.remove(self.token)
        for future in list(self._waiting):  # a call that raced the end: answered, not kept
            if not future.done():
                future.set_result(mcp_server.ToolAnswer("the attempt has ended", True))

    def end(self) -> None:
        """The attempt has ended: every request from now on is refused (and recorded)."""
        self.ended = True
        self.proxy.ended = True

    def stop(self) -> None:
        """End the servers: nothing is served after this."""
        self.end()
        if self._loop is not None:
            future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            with contextlib.suppress(Exception):
                future.result(timeout=3)
        for fd in (self.wake_r, self.wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                self.socket_path.unlink()
