"""evalcase.transport against real servers on 127.0.0.1: answers, failures as values, the
proxy the environment names, and many requests in flight on one loop."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from evalcase import transport
from tests.helpers import serving

pytest.importorskip("aiohttp")


@contextmanager
def server(delay: float = 0.0) -> Iterator[tuple[str, list[str], dict[str, int]]]:
    """Answers every POST with its own path as JSON after ``delay``; counts the peak of
    requests in flight."""
    paths: list[str] = []
    flight = {"now": 0, "peak": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                paths.append(self.path)
                flight["now"] += 1
                flight["peak"] = max(flight["peak"], flight["now"])
            time.sleep(delay)
            with lock:
                flight["now"] -= 1
            data = json.dumps({"path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return None

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.handle_error = lambda *args: None  # type: ignore[method-assign]  # a client gone: expected
    with serving(httpd) as url:
        yield url, paths, flight


def test_an_answer_comes_back_whole() -> None:
    with server() as (url, paths, _):
        answer = transport.post_json(f"{url}/v1/x", b"{}", {}, time.monotonic() + 30)
    assert isinstance(answer, transport.Answer) and answer.status == 200
    assert answer.json() == {"path": "/v1/x"} and paths == ["/v1/x"]


def test_a_port_that_does_not_listen_is_unreachable_not_retried() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        outcome = transport.post_with_retries(
            f"http://127.0.0.1:{port}/v1", b"{}", {}, time.monotonic() + 30,
            transport.RetryPolicy(backoff_s=0.01),
        )  # fmt: skip
    assert isinstance(outcome.result, transport.Failure)
    assert outcome.result.kind == "unreachable" and outcome.events == []


def test_a_slow_server_ends_as_a_timeout_at_the_deadline() -> None:
    with server(delay=3.0) as (url, _, _):
        answer = transport.post_json(f"{url}/v1", b"{}", {}, time.monotonic() + 0.5)
    assert isinstance(answer, transport.Failure) and answer.kind == "timeout"


def test_the_proxy_the_environment_names_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The request for a host that does not exist reaches the proxy, as an absolute URL."""
    with server() as (proxy, paths, _):
        monkeypatch.setattr(transport, "_proxies", {})  # looked up afresh, forgotten after
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        target = "http://model.invalid/v1/chat/completions"
        answer = transport.post_json(target, b"{}", {}, time.monotonic() + 30)
    assert isinstance(answer, transport.Answer) and answer.status == 200
    assert paths == [target]


def test_requests_from_many_threads_are_in_flight_at_once() -> None:
    with server(delay=0.3) as (url, paths, flight), ThreadPoolExecutor(16) as pool:
        answers = list(
            pool.map(
                lambda i: transport.post_json(f"{url}/{i}", b"{}", {}, time.monotonic() + 60),
                range(32),
            )
        )
    assert all(isinstance(a, transport.Answer) and a.status == 200 for a in answers)
    assert sorted(paths) == sorted(f"/{i}" for i in range(32)) and flight["peak"] > 1
