"""The per-attempt servers of an agent-owned loop (evalcase.run.attempt_host): what an
attempt's start and end cost the runner's one event loop is paid per attempt, so nothing
the process needs only once is redone there."""

from __future__ import annotations

import http.client
import json
import logging
import logging.config
import select
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from evalcase.run import mcp_server
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


def _post(host: AttemptHost, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
    """POST ``body`` (as JSON) to the attempt's server: the status and the JSON answer."""
    assert host.port is not None
    conn = http.client.HTTPConnection("127.0.0.1", host.port, timeout=30)
    conn.request("POST", path, json.dumps(body), headers)
    answer = conn.getresponse()
    data = json.loads(answer.read())
    conn.close()
    return answer.status, data


def _mcp_path(host: AttemptHost) -> str:
    return host.urls()[1].split(str(host.port), 1)[1]


def _rpc(host: AttemptHost, method: str, params: dict[str, Any]) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    return _post(host, _mcp_path(host), body, headers)[1]


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
    _tools_list(warm)  # the loop's MCP server is made on the first MCP request
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
            request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            headers = {
                "Authorization": f"Bearer {host.token}",
                "Content-Type": "application/json",
            }
            status, data = _post(host, "/v1/chat/completions", request, headers)
        finally:
            host.stop()
    assert status == 200
    assert data["choices"][0]["message"]["content"] == "word " * 20_000
    calls = [item.fields for item in host.pending() if item.kind == "model_call"]
    assert len(calls) == 1
    assert calls[0]["response"]["usage"] == {"prompt_tokens": 1, "completion_tokens": 2}


# A fresh process: whether the SDK is imported is the process's state.
MODEL_ONLY = """
import http.client, json, sys, time
from evalcase.run import mcp_server
from evalcase.run.attempt_host import AttemptHost
from evalcase.run.model_proxy import Budget, Upstream
assert mcp_server.missing() is None  # as the run's preflight asks
cards = [{"name": "order_lookup", "description": "d", "parameters": {"type": "object"}}]
host = AttemptHost(cards, Upstream("http://127.0.0.1:1/v1", None), Budget(), 100_000,
                   time.monotonic() + 60)
host.start()
def post(path, body, headers):
    conn = http.client.HTTPConnection("127.0.0.1", host.port, timeout=30)
    conn.request("POST", path, json.dumps(body), headers)
    answer = conn.getresponse()
    data = answer.read()
    conn.close()
    return answer.status, data
model = post("/v1/chat/completions", {"model": "m", "messages": []},
             {"Authorization": "Bearer " + host.token, "Content-Type": "application/json"})[0]
before = sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp."))
status, data = post(host.urls()[1].split(str(host.port), 1)[1],
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    {"Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream"})
host.stop()
print(json.dumps({"model": model, "before": before, "list": status,
                  "tools": [t["name"] for t in json.loads(data)["result"]["tools"]],
                  "after": "mcp.server.lowlevel" in sys.modules}))
"""


def test_an_attempt_whose_agent_never_asks_for_its_tools_never_imports_the_mcp_sdk() -> None:
    """The SDK (about 0.35 s of CPU: pydantic's models) was imported by every run of a
    loop agent, before its first attempt's servers started, though an agent that uses
    only the model never asks its MCP endpoint for anything. It is imported on the
    first MCP request: preflight's check and the model call before it leave ``mcp``
    unimported, and the tools are listed right after."""
    proc = subprocess.run(
        [sys.executable, "-c", MODEL_ONLY], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["model"] == 502  # the upstream is not there: the proxy answered, and said so
    assert seen["before"] == []
    assert (seen["list"], seen["tools"], seen["after"]) == (200, ["order_lookup"], True)


def test_an_mcp_server_that_cannot_start_is_an_error_answered_and_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broken install (the SDK imports but its server fails to start) is found on the
    first MCP request: answered 500 with why, recorded as refused, never a hang."""

    async def broken() -> Any:
        raise ImportError("cannot import name 'StreamableHTTPSessionManager'")

    monkeypatch.setattr(mcp_server, "endpoint", broken)
    host = _host()
    host.start()
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        status, data = _post(host, _mcp_path(host), body, {"Content-Type": "application/json"})
    finally:
        host.stop()
    assert status == 500
    assert data["error"]["code"] == "mcp_unavailable"
    assert "StreamableHTTPSessionManager" in data["error"]["message"]
    refused = [item.fields for item in host.pending() if item.kind == "mcp_refused"]
    assert [(r["status"], r["reason"]) for r in refused] == [(500, "mcp_unavailable")]


def test_a_missing_mcp_package_is_said_before_the_run_without_importing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Preflight finds the package, it does not import it (the first MCP request does)."""
    assert mcp_server.missing() is None
    monkeypatch.setitem(sys.modules, "mcp", None)
    found = mcp_server.missing()
    assert found is not None and "pip install 'evalcase[agents]'" in found
