"""The per-attempt servers of an agent-owned loop (evalcase.run.attempt_host): what an
attempt's start and end cost the runner's one event loop is paid per attempt, so nothing
the process needs only once is redone there."""

from __future__ import annotations

import http.client
import json
import logging
import logging.config
import select
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from evalcase.run.attempt_host import AttemptHost
from evalcase.run.mcp_server import ToolAnswer
from evalcase.run.model_proxy import Budget, Upstream
from tests.helpers import serving

pytest.importorskip("mcp")
CARDS = [{"name": "order_lookup", "description": "d", "parameters": {"type": "object"}}]
UVICORN_LOGGERS = ("uvicorn.error", "uvicorn.access", "uvicorn.asgi")


def _host(cards: list[dict[str, Any]] = CARDS) -> AttemptHost:
    return AttemptHost(
        cards, Upstream("http://127.0.0.1:1/v1", None), Budget(), 100_000, time.monotonic() + 60
    )


def _rpc(host: AttemptHost, method: str, params: dict[str, Any]) -> Any:
    assert host.port is not None
    conn = http.client.HTTPConnection("127.0.0.1", host.port, timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    conn.request("POST", host.urls()[1].split(str(host.port), 1)[1], body, headers)
    answer = conn.getresponse()
    data = json.loads(answer.read())
    conn.close()
    return data


def _tools_list(host: AttemptHost) -> Any:
    return _rpc(host, "tools/list", {})


def test_an_attempts_servers_leave_the_logging_configuration_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """uvicorn configures logging from its defaults for every server it builds (a
    ``dictConfig`` and a ``setLevel`` per logger, each clearing every logger's cache): per
    attempt, on the one event loop, that was the largest part of a server's start. The
    servers are quiet (critical only, no access log) and still serve."""
    first = _host()  # the process's once-only setup may happen here
    first.start()
    first.stop()
    configured: list[Any] = []
    levels: list[tuple[str, int]] = []
    real_set_level = logging.Logger.setLevel

    def set_level(self: logging.Logger, level: Any) -> None:
        levels.append((self.name, level))
        real_set_level(self, level)

    monkeypatch.setattr(logging.config, "dictConfig", lambda c: configured.append(c))
    monkeypatch.setattr(logging.Logger, "setLevel", set_level)
    for _ in range(3):
        host = _host()
        host.start()
        try:
            listed = _tools_list(host)
        finally:
            host.stop()
        assert [t["name"] for t in listed["result"]["tools"]] == ["order_lookup"]
    assert configured == []
    assert levels == []
    for name in UVICORN_LOGGERS:
        assert logging.getLogger(name).getEffectiveLevel() == logging.CRITICAL
    assert logging.getLogger("uvicorn.access").propagate is False


def test_the_servers_quiet_uvicorn_again_after_someone_else_configured_it() -> None:
    """Another server in the process (the viewer: ``log_level="warning"``) may lower the
    level; an attempt's servers stay critical-only."""
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    host = _host()
    host.start()
    host.stop()
    assert logging.getLogger("uvicorn.error").level == logging.CRITICAL


def _answer_calls(host: AttemptHost, stop: threading.Event, seen: list[str]) -> None:
    """The attempt's thread: each tool call answered with the attempt's own name."""
    while not stop.is_set():
        if select.select([host.wake_r], [], [], 0.05)[0]:
            host.drain_wake()
            for item in host.pending():
                if item.kind == "tool":
                    seen.append(item.fields["tool"])
                    item.resolve(ToolAnswer(f"answered by {item.fields['tool']}'s attempt"))


def test_one_mcp_server_serves_every_attempt_each_its_own_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The MCP server and its session manager (an SDK ``Server``, its handlers, a task
    group started and cancelled) were built per attempt; one per event loop now serves
    every attempt, each request reaching its own attempt's cards and calls."""
    from mcp.server.lowlevel import Server

    warm = _host()
    warm.start()
    warm.stop()
    built: list[Any] = []
    real_init = Server.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(args)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(Server, "__init__", counting)
    hosts = [
        _host([{"name": name, "description": "d", "parameters": {"type": "object"}}])
        for name in ("alpha", "beta")
    ]
    stop = threading.Event()
    seen: list[list[str]] = [[], []]
    threads = [
        threading.Thread(target=_answer_calls, args=(h, stop, s))
        for h, s in zip(hosts, seen, strict=True)
    ]
    for h in hosts:
        h.start()
    for t in threads:
        t.start()
    try:
        for h, name in zip(hosts, ("alpha", "beta"), strict=True):
            listed = _tools_list(h)
            assert [t["name"] for t in listed["result"]["tools"]] == [name]
            called = _rpc(h, "tools/call", {"name": name, "arguments": {}})
            assert called["result"]["content"][0]["text"] == f"answered by {name}'s attempt"
    finally:
        stop.set()
        for t in threads:
            t.join()
        for h in hosts:
            h.stop()
    assert seen == [["alpha"], ["beta"]]
    assert built == []


class _SplitAnswer(BaseHTTPRequestHandler):
    """An upstream whose answer's body arrives in two pieces, the second after a pause
    (a long completion over a slow link arrives so)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        text = "word " * 20_000
        body = json.dumps(
            {
                "id": "c1",
                "object": "chat.completion",
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 2},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:1000])
        self.wfile.flush()
        time.sleep(0.3)
        self.wfile.write(body[1000:])

    def log_message(self, *args: Any) -> None:
        pass


def test_an_upstream_answer_in_several_pieces_reaches_the_agent_whole() -> None:
    """The proxy read the upstream's answer once (aiohttp's ``read(n)`` returns what has
    arrived, up to n): an answer in two pieces reached the agent cut, and was recorded
    without its response."""
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), _SplitAnswer)) as base:
        host = AttemptHost(
            CARDS, Upstream(f"{base}/v1", None), Budget(), 1_000_000, time.monotonic() + 60
        )
        host.start()
        try:
            assert host.port is not None
            conn = http.client.HTTPConnection("127.0.0.1", host.port, timeout=30)
            request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            headers = {
                "Authorization": f"Bearer {host.token}",
                "Content-Type": "application/json",
            }
            conn.request("POST", "/v1/chat/completions", json.dumps(request), headers)
            answer = conn.getresponse()
            data = json.loads(answer.read())
            conn.close()
        finally:
            host.stop()
    assert answer.status == 200
    assert data["choices"][0]["message"]["content"] == "word " * 20_000
    calls = [item.fields for item in host.pending() if item.kind == "model_call"]
    assert len(calls) == 1
    assert calls[0]["response"]["usage"] == {"prompt_tokens": 1, "completion_tokens": 2}
