"""``http://HOST/PATH``: a served agent. Each request is POSTed as JSON; the response
body is the reply. Stateless: every request carries the whole conversation.

The attempt's deadline bounds the whole exchange (connecting, sending, the status line,
the headers and the body): a watchdog closes the connection at the deadline, so a
service that trickles its answer a byte at a time ends as a ``timeout`` on time.

Passing: a service answering ``{"role": "assistant", "content": "..."}`` with 200.
Failing (recorded): a non-2xx status (``agent_exit``), a body that is not JSON
(``bad_json``) or holds NaN or Infinity (``protocol``), no whole answer before the
deadline (``timeout``), the service unreachable (``adapter``).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalcase.run.protocol import AgentFault, Reply, dumps_strict, parse_reply_text

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob


class HttpSession:
    def __init__(self, url: str, headers: Mapping[str, str], limit: int) -> None:
        self.url = url
        self.parts = urllib.parse.urlsplit(url)
        self.headers = {"Content-Type": "application/json", **headers}
        self.limit = limit

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        host, port = self.parts.hostname or "127.0.0.1", self.parts.port
        if self.parts.scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=timeout)
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AgentFault("timeout", "no reply before the attempt's deadline")
        body = dumps_strict(request).encode("utf-8")
        path = self.parts.path or "/"
        if self.parts.query:
            path += "?" + self.parts.query
        conn = self._connection(remaining)
        expired = threading.Event()

        def stop() -> None:  # the deadline: whatever the exchange is doing, it ends
            expired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        watchdog = threading.Timer(remaining, stop)
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.request("POST", path, body=body, headers=self.headers)
            response = conn.getresponse()
            data = bytearray()
            while len(data) <= self.limit:
                chunk = response.read1(1 << 16) if hasattr(response, "read1") else b""
                if not chunk:
                    break
                data.extend(chunk)
                if time.monotonic() >= deadline:
                    expired.set()
                    break
            status = response.status
        except (OSError, http.client.HTTPException) as exc:
            if expired.is_set() or isinstance(exc, TimeoutError | socket.timeout):
                raise AgentFault(
                    "timeout", "no whole reply before the attempt's deadline"
                ) from None
            raise AgentFault("adapter", f"cannot reach {self.url}: {exc}") from None
        finally:
            watchdog.cancel()
            conn.close()
        if expired.is_set():
            raise AgentFault("timeout", "no whole reply before the attempt's deadline")
        if not 200 <= status < 300:
            raise AgentFault("agent_exit", f"the agent answered HTTP {status}")
        return parse_reply_text(bytes(data[: self.limit + 1]), self.limit)

    def close(self) -> None:
        return None


def _url(target: str) -> str:
    url = target if "://" in target else target.lstrip("/")
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    return url


def preflight(target: str, options: Mapping[str, Any]) -> str | None:
    """The service accepts a connection within ``preflight_timeout_s`` (default 5 s).

    Only a TCP connection is opened and closed: the agent's endpoint answers POSTed
    conversations, and sending it a request before the run could have effects of its own.
    ``preflight = false`` in ``[run.agents.NAME]`` skips the check."""
    url = _url(target)
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:
        return f"{url}: no host in the agent's URL"
    if options.get("preflight") is False:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return f"{url}: {exc}"
    timeout = float(options.get("preflight_timeout_s", 5.0))
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return None
    except OSError as exc:
        return (
            f"{url}: the service does not accept connections ({type(exc).__name__}: {exc}; "
            f"waited at most {timeout:g} s); start it, or fix the URL"
        )


def open(target: str, options: Mapping[str, Any], job: AttemptJob) -> HttpSession:
    url = _url(target)
    headers = {str(k): str(v) for k, v in dict(options.get("headers") or {}).items()}
    return HttpSession(url, headers, job.limits.max_reply_bytes)
