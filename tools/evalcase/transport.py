"""One event loop for every model request in flight: the HTTP transport of the
``openai:`` adapter and of the ``llm_rubric`` judge.

A run at ``--concurrency 200`` has 200 requests waiting on a model at once. Made from 200
threads through a synchronous client, each request takes the client's pool lock twice and
fights the other threads for the interpreter lock (on two cores that, not the model, set
the pace). Here the requests are coroutines of one event loop on one background thread,
sharing one aiohttp session (one connection pool, HTTP/1.1 keep-alive, its C HTTP parser);
the caller's thread (an attempt, a grade) only blocks on the result. The loop and the
session are made on first use, once per process (again in a forked child), and closed at
exit.

:func:`post_json` sends one JSON body and returns an :class:`Answer` or a
:class:`Failure` (errors as values). Its ``deadline`` (a ``time.monotonic()`` value, the
loop's clock) bounds the whole exchange -- connecting, sending, the status line, the
headers and every byte of the body -- as one watchdog: a server that trickles its answer
a byte at a time ends as ``timeout`` at the deadline, whatever it sends. A body longer
than ``limit`` bytes is not read further (``oversized``). Headers are bounded by the HTTP
parser (8 KiB a line).

:func:`post_with_retries` adds the retry policy both callers share: retried are the
statuses a retry can cure, after the server's ``retry-after`` (or ``retry-after-ms``)
when it sends one, else an exponential backoff; a connection the server dropped; never a
wait that would end past the deadline. Each retry is returned as a ``retry`` event (the
attempt's trace keeps them).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import email.utils
import json
import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

# aiohttp is a base dependency: missing, the environment is broken, not short of an extra.
INSTALL_HINT = "a dependency of evalcase, missing here: reinstall evalcase (pip install evalcase)"
# One pool holds every connection of a --concurrency 1024 run (the option's maximum), all
# kept alive: at high concurrency a smaller keep-alive pool reconnects for most requests.
POOL_CONNECTIONS = 1024
KEEPALIVE_S = 30.0
# After the deadline the loop's own watchdog has fired; the caller waits this much longer
# for it before abandoning the request (a loop stalled by a bug must not hang a run).
GRACE_S = 2.0
CHUNK = 1 << 16


@dataclass(frozen=True)
class Answer:
    """A whole HTTP answer (any status)."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON; ValueError (or UnicodeDecodeError) when it is not."""
        return json.loads(self.body)

    def text(self, limit: int = 300) -> str:
        return self.body[:limit].decode("utf-8", "replace")


@dataclass(frozen=True)
class Failure:
    """No whole answer. ``kind``: ``timeout`` (the deadline), ``unreachable`` (no
    connection was made: refused, unknown host, a bad URL), ``reset`` (the server dropped
    the connection mid-request: worth a retry), ``oversized`` (a body over the limit),
    ``protocol`` (not HTTP), ``missing`` (aiohttp is not installed)."""

    kind: str
    message: str


@dataclass(frozen=True)
class RetryPolicy:
    """What is retried, how often and after how long."""

    max_retries: int = 4
    backoff_s: float = 1.0  # the first wait; doubled per retry unless the server says
    statuses: frozenset[int] = frozenset({408, 429, 502, 503, 504})
    times_500: int = 1  # a 500 is retried at most this often (deterministic errors repeat)
    retry_resets: bool = True
    deadline_name: str = "the deadline"  # how messages name it ("the attempt's deadline")


@dataclass
class Outcome:
    """The last answer or failure, and the retries made before it."""

    result: Answer | Failure
    events: list[dict[str, Any]] = field(default_factory=list)
    gave_up: str | None = None  # why the last retryable result was not retried


class _Loop:
    """The process's event loop thread and its session."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="evalcase-http", daemon=True
        )
        self.thread.start()
        self.session: Any = asyncio.run_coroutine_threadsafe(self._session(), self.loop).result()

    async def _session(self) -> Any:
        import aiohttp

        connector = aiohttp.TCPConnector(
            limit=POOL_CONNECTIONS, limit_per_host=0, keepalive_timeout=KEEPALIVE_S
        )
        # Not trust_env: aiohttp would then read ~/.netrc and look up the proxy on a
        # worker thread for every request (half the CPU a request costs); the proxy is
        # looked up once per URL instead (_proxy_for). No cookies: attempts share the pool,
        # and a cookie one attempt's server set must not reach the next attempt.
        return aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None),
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    def close(self) -> None:
        async def stop() -> None:
            await self.session.close()

        with contextlib.suppress(Exception):  # closing at exit is best effort
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=GRACE_S)
        self.loop.call_soon_threadsafe(self.loop.stop)


_current: tuple[int, _Loop] | None = None
_lock = threading.Lock()


def available() -> str | None:
    """None when the transport can be used, else what is missing (for a preflight)."""
    try:
        import aiohttp  # noqa: F401
    except ModuleNotFoundError as exc:
        return f"the '{exc.name}' package, which is not installed in this environment"
    return None


def _loop() -> _Loop:
    global _current
    with _lock:
        if _current is None or _current[0] != os.getpid():  # a forked child makes its own
            first = _current is None
            _current = (os.getpid(), _Loop())
            if first:
                atexit.register(_close)
        return _current[1]


def _close() -> None:
    with _lock:
        current = _current
    if current is not None and current[0] == os.getpid():
        current[1].close()


def warm() -> str | None:
    """Start the loop and the session now (at preflight, on one thread), so the first
    attempts do not queue behind the first one making them. The problem, or None."""
    missing = available()
    if missing:
        return missing
    _loop()
    return None


def shared() -> tuple[asyncio.AbstractEventLoop, Any]:
    """The process's event loop and its aiohttp session, for code that runs on the loop
    itself (the model proxy and the MCP server of agent-owned loops: evalcase.run)."""
    current = _loop()
    return current.loop, current.session


def post_json(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    deadline: float,
    limit: int = 64 * 1024 * 1024,
) -> Answer | Failure:
    """POST ``body`` (JSON) to ``url``; the whole answer before ``deadline``, or why not."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return Failure("timeout", "no answer before the deadline")
    missing = available()
    if missing:
        return Failure("missing", missing)
    loop = _loop()
    future = asyncio.run_coroutine_threadsafe(
        _post(loop.session, url, body, dict(headers), deadline, limit, _proxy_for(url)),
        loop.loop,
    )
    try:
        return future.result(timeout=remaining + GRACE_S)
    except FutureTimeout:
        future.cancel()
        return Failure("timeout", "no answer before the deadline")


_proxies: dict[str, str | None] = {}


def _proxy_for(url: str) -> str | None:
    """The proxy ``HTTP(S)_PROXY``/``NO_PROXY`` name for ``url`` (as any HTTP client
    honours them), looked up once per URL."""
    if url in _proxies:
        return _proxies[url]
    proxy = None
    if any(name.lower().endswith("_proxy") for name in os.environ):
        import urllib.request
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if not urllib.request.proxy_bypass(parts.hostname or ""):
            proxy = urllib.request.getproxies().get(parts.scheme)
    _proxies[url] = proxy
    return proxy


async def _post(
    session: Any,
    url: str,
    body: bytes,
    headers: dict[str, str],
    deadline: float,
    limit: int,
    proxy: str | None = None,
) -> Answer | Failure:
    import aiohttp

    try:
        async with asyncio.timeout_at(deadline):  # loop.time() is time.monotonic()
            async with session.post(url, data=body, headers=headers, proxy=proxy) as response:
                data = bytearray()
                while len(data) <= limit:
                    chunk = await response.content.read(CHUNK)
                    if not chunk:
                        break
                    data.extend(chunk)
                if len(data) > limit:
                    return Failure("oversized", f"the answer exceeds {limit} bytes")
                return Answer(response.status, dict(response.headers), bytes(data))
    except TimeoutError:
        return Failure("timeout", "no whole answer before the deadline")
    except aiohttp.ClientConnectorError as exc:
        return Failure("unreachable", f"{type(exc).__name__}: {exc}")
    except aiohttp.InvalidURL as exc:
        return Failure("unreachable", f"not a URL: {exc}")
    except (
        aiohttp.ServerDisconnectedError,
        aiohttp.ClientPayloadError,
        aiohttp.ClientOSError,
    ) as exc:
        return Failure("reset", f"{type(exc).__name__}: {exc}")
    except (aiohttp.ClientError, ValueError) as exc:
        return Failure("protocol", f"{type(exc).__name__}: {exc}")


def post_with_retries(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    deadline: float,
    policy: RetryPolicy,
    limit: int = 64 * 1024 * 1024,
    try_timeout_s: float | None = None,
) -> Outcome:
    """:func:`post_json`, retried as ``policy`` says within ``deadline``; each try also
    within ``try_timeout_s`` when given (a timed-out try is then retried like a reset)."""
    outcome = Outcome(Failure("timeout", "no answer before the deadline"))
    served_500 = 0
    while True:
        until = deadline
        if try_timeout_s is not None:
            until = min(deadline, time.monotonic() + try_timeout_s)
        result = post_json(url, body, headers, until, limit)
        outcome.result = result
        asked: float | None = None
        if isinstance(result, Answer):
            status = result.status
            if status < 400:
                return outcome
            served_500 += status == 500
            retryable = status in policy.statuses or (
                status == 500 and served_500 <= policy.times_500
            )
            if not retryable:
                return outcome
            asked = retry_after(result.headers)
            why = f"HTTP {status}"
        elif result.kind == "reset" and policy.retry_resets:
            why = f"connection reset ({result.message})"
        elif result.kind == "timeout" and until < deadline and time.monotonic() < deadline:
            why = f"no answer within {try_timeout_s:g} s"
        else:
            return outcome
        if len(outcome.events) >= policy.max_retries:
            outcome.gave_up = f"{why} after {len(outcome.events)} retries (max_retries)"
            return outcome
        wait = asked if asked is not None else policy.backoff_s * (2 ** len(outcome.events))
        left = deadline - time.monotonic()
        if wait >= left:
            outcome.gave_up = (
                f"{why}; the next try would be after {wait:g} s, past {policy.deadline_name} "
                f"({max(0.0, left):.1f} s left)"
            )
            return outcome
        outcome.events.append(
            {
                "type": "retry",
                "reason": why,
                "wait_s": round(wait, 3),
                "retry_after": asked is not None,
                "retry": len(outcome.events) + 1,
            }
        )
        time.sleep(wait)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, ``retry-after`` as seconds or
    as an HTTP date; None when it says nothing usable."""
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        ms = lowered.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
    except ValueError:
        pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
