"""``openai:MODEL``: a built-in tool-calling agent over any OpenAI-compatible
chat-completions endpoint (hosted APIs, vLLM, Ollama, llama.cpp...), through the official
``openai`` client. No agent code needed: the case's tools are offered as functions and the
model's replies are the agent's replies.

Settings (``[run.agents.NAME]``, ``--base-url``, or the environment): ``base_url`` (else
``OPENAI_BASE_URL``, else the client's default, api.openai.com), ``api_key_env`` (the NAME
of the variable holding the key, default ``OPENAI_API_KEY``; the key itself is never
written anywhere), ``max_retries`` (default 4), ``backoff_s`` (first wait, default 1.0,
doubled per retry, unless the server sends ``retry-after``), ``preflight`` (default true:
check the endpoint once before the run), ``preflight_timeout_s`` (default 5), ``extra``
(more request fields). ``temperature``, ``max_tokens``, ``top_p``, ``seed`` and ``stop``
come from the case's ``generation_config`` (or the prompt fixture's). What the model
receives is rendered by :mod:`evalcase.run.chat_view` (system prompt, context block,
turns, tools; its version is recorded in run.json).

What is retried (each retry is a ``retry`` event in the attempt's trace): 429 and 503,
after the server's ``retry-after`` (or ``retry-after-ms``) when it sends one, else the
backoff; 408, 502, 504 and a connection reset by the server, after the backoff; a 500 at
most once (a deterministic server error does not get better). Nothing else: any other
4xx, an unreachable endpoint or a ``retry-after`` past the attempt's deadline is the
attempt's ``adapter`` error at once.

One client (and so one connection pool) per endpoint and key is shared by every attempt
of the process, so a run at ``--concurrency 200`` keeps 200 connections open instead of
opening one per attempt.

Passing: the endpoint answers a chat completion; its ``usage`` and each choice's
``finish_reason`` are recorded (``length``, a reply cut at ``max_tokens``, marks the
attempt ``truncated``).
Failing (recorded): 429/5xx after every retry (``adapter``), a reply without choices or
with malformed tool calls (``protocol``), a body that is not JSON (``bad_json``).
Failing before the run (exit 2, nothing recorded, see :func:`preflight`): the ``openai``
package missing, the key variable unset, the endpoint not answering or refusing the key.
"""

from __future__ import annotations

import email.utils
import os
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalcase.run import chat_view
from evalcase.run.protocol import AgentFault, Reply, ToolCall

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob

# How requests become chat messages (recorded in run.json as agent.rendering).
RENDERING = chat_view.VERSION
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
INSTALL_HINT = "pip install 'evalcase[openai]'"
# Retried after retry-after (when sent) or the backoff; 500 separately, at most once.
RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
RETRY_500_TIMES = 1
# One pool can hold every connection of a --concurrency 1024 run (the option's maximum).
POOL_CONNECTIONS = 1024

_clients: dict[tuple[str | None, str], Any] = {}
_clients_lock = threading.Lock()


class Settings:
    """Where the endpoint is and which variable holds its key, from the agent's options."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.key_env = str(options.get("api_key_env") or DEFAULT_KEY_ENV)
        self.key_env_given = bool(options.get("api_key_env"))
        raw = options.get("base_url") or os.environ.get(BASE_URL_ENV)
        self.base_url = str(raw).rstrip("/") if raw else None
        self.api_key = os.environ.get(self.key_env) or None

    def key_problem(self) -> str | None:
        """Local servers (vLLM, Ollama, llama.cpp) take any key, so a missing key is a
        problem only for the default endpoint or when ``api_key_env`` names a variable."""
        if self.api_key or (self.base_url is not None and not self.key_env_given):
            return None
        return (
            f"openai: the variable {self.key_env} holding the API key is not set "
            f"(export {self.key_env}=...; api_key_env in [run.agents.NAME] names another)"
        )


def shared_client(openai: Any, settings: Settings) -> Any:
    """The process's client for this endpoint and key (thread-safe, one pool)."""
    key = (settings.base_url, settings.api_key or "unused")
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = openai.OpenAI(
                api_key=key[1],
                base_url=settings.base_url,
                max_retries=0,  # retries are ours: only what can succeed, each in the trace
                http_client=openai.DefaultHttpxClient(limits=_pool_limits(openai)),
            )
            _clients[key] = client
    return client


def _pool_limits(openai: Any) -> Any:
    """The client's connection limits with every connection kept alive: at high
    concurrency the default (100 kept of 1,000) reconnects for most requests. Built from
    the client's own default, as the HTTP library behind it differs between versions."""
    from openai._constants import DEFAULT_CONNECTION_LIMITS as default

    return type(default)(
        max_connections=POOL_CONNECTIONS,
        max_keepalive_connections=POOL_CONNECTIONS,
        keepalive_expiry=30.0,
    )


class OpenAISession:
    def __init__(self, model: str, options: Mapping[str, Any]) -> None:
        try:
            import openai
        except ModuleNotFoundError:
            raise AgentFault(
                "adapter", f"openai: needs the 'openai' package: {INSTALL_HINT}"
            ) from None
        self.openai = openai
        settings = Settings(options)
        problem = settings.key_problem()
        if problem:
            raise AgentFault("adapter", problem)
        self.client = shared_client(openai, settings)
        self.model = model
        self.max_retries = int(options.get("max_retries", 4))
        self.backoff = float(options.get("backoff_s", 1.0))
        self.extra = dict(options.get("extra") or {})

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        body = chat_view.render(request).body(self.model)
        body.update(self.extra)
        completion, events = self.create(body, deadline)
        return self._reply(completion, events)

    def create(self, body: Mapping[str, Any], deadline: float) -> tuple[Any, list[dict[str, Any]]]:
        """One completion, retrying what can succeed on a retry; the retries as events."""
        openai = self.openai
        events: list[dict[str, Any]] = []
        served_500 = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault("timeout", "no reply before the attempt's deadline", events)
            try:
                # The client's post, not chat.completions.create: the same request, errors
                # and auth, without re-validating our own body and building pydantic models
                # (two thirds of the CPU a request costs, what limits a --concurrency 200 run).
                answer = self.client.post(
                    "/chat/completions", body=body, cast_to=dict, options={"timeout": remaining}
                )
                return answer, events
            except openai.APITimeoutError:
                raise AgentFault(
                    "timeout", "no reply before the attempt's deadline", events
                ) from None
            except openai.APIStatusError as exc:
                status = int(exc.status_code)
                asked = _retry_after(exc.response.headers)
                if status == 500:
                    served_500 += 1
                retryable = status in RETRY_STATUSES or (
                    status == 500 and served_500 <= RETRY_500_TIMES
                )
                why = f"HTTP {status}"
                if not retryable:
                    gave_up = f" after {len(events)} retries" if events else ""
                    raise AgentFault(
                        "adapter", f"HTTP {status}{gave_up}: {_short(exc)}", events
                    ) from None
            except openai.APIConnectionError as exc:
                if not _is_reset(exc):
                    raise AgentFault(
                        "adapter", f"cannot reach the endpoint: {_cause(exc)}", events
                    ) from None
                asked, why = None, f"connection reset ({_cause(exc)})"
            except ValueError as exc:  # the client could not decode the body
                raise AgentFault(
                    "bad_json", f"the endpoint's reply is not JSON: {exc}", events
                ) from None
            if len(events) >= self.max_retries:
                raise AgentFault(
                    "adapter", f"{why} after {len(events)} retries (max_retries)", events
                )
            wait = asked if asked is not None else self.backoff * (2 ** len(events))
            left = deadline - time.monotonic()
            if wait >= left:
                raise AgentFault(
                    "adapter",
                    f"{why}; the next try would be after {wait:g} s, past the attempt's "
                    f"deadline ({max(0.0, left):.1f} s left)",
                    events,
                )
            events.append(
                {
                    "type": "retry",
                    "reason": why,
                    "wait_s": round(wait, 3),
                    "retry_after": asked is not None,
                    "retry": len(events) + 1,
                }
            )
            time.sleep(wait)

    def _reply(self, completion: Any, events: list[dict[str, Any]]) -> Reply:
        choices = completion.get("choices") if isinstance(completion, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise AgentFault("protocol", "the endpoint's reply has no choices[0].message", events)
        calls = []
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise AgentFault("protocol", "the endpoint's tool_calls is not a list", events)
        for index, call in enumerate(raw_calls):
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            call_id = call.get("id") if isinstance(call, dict) else None
            if not isinstance(name, str) or not name or not call_id:
                raise AgentFault(
                    "protocol", f"tool_calls[{index}] lacks an id or a function name", events
                )
            arguments = function.get("arguments") if isinstance(function, dict) else None
            calls.append(
                ToolCall(str(call_id), name, arguments if isinstance(arguments, str) else "{}")
            )
        content = message.get("content")
        content = content if isinstance(content, str) else None
        if content is None and not calls:
            content = ""
        usage: dict[str, Any] = {"retries": len(events)}
        counted = completion.get("usage")
        if isinstance(counted, dict):
            for key in ("prompt_tokens", "completion_tokens"):
                value = counted.get(key)
                usage[key] = value if isinstance(value, int) and not isinstance(value, bool) else 0
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        model = completion.get("model")
        return Reply(
            content,
            tuple(calls),
            usage,
            f"openai:{model if isinstance(model, str) and model else self.model}",
            finish_reason=finish if isinstance(finish, str) else None,
            events=tuple(events),
        )

    def close(self) -> None:
        return None  # the client is shared by the process's attempts


def _retry_after(headers: Any) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, ``retry-after`` as seconds or
    as an HTTP date; None when it says nothing usable."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
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


# By class name: the client's HTTP library is httpx or httpx2 depending on its version.
_NEVER_CONNECTED = frozenset({"ConnectError", "ConnectTimeout", "ConnectionRefusedError"})
_RESET = frozenset(
    {"RemoteProtocolError", "ReadError", "WriteError", "ConnectionResetError", "BrokenPipeError"}
)


def _is_reset(exc: BaseException) -> bool:
    """A connection the server dropped mid-request (worth a retry), not one that was never
    made (connection refused, unknown host: every retry would fail alike)."""
    cause = exc.__cause__
    for _ in range(10):  # bounded: a cause chain can be a cycle
        if cause is None:
            return False
        name = type(cause).__name__
        if name in _NEVER_CONNECTED:
            return False
        if name in _RESET:
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__
    return f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)


def _short(exc: Any) -> str:
    return str(getattr(exc, "message", exc))[:300]


def preflight(target: str, options: Mapping[str, Any]) -> str | None:
    """What would fail every attempt alike, checked once before the run: the model name,
    the ``openai`` package, the key variable, and (unless ``preflight = false``) that the
    endpoint answers ``GET /models`` within ``preflight_timeout_s`` and accepts the key."""
    if not target:
        return "openai: needs a model name, as in openai:gpt-4o-mini"
    try:
        import openai
    except ModuleNotFoundError as exc:
        return (
            f"openai:{target} needs the '{exc.name}' package, which is not installed in this "
            f"environment ({INSTALL_HINT})"
        )
    settings = Settings(options)
    problem = settings.key_problem()
    if problem:
        return problem
    if options.get("preflight") is False:
        shared_client(openai, settings)
        return None
    base = settings.base_url or str(openai.OpenAI(api_key="unused").base_url).rstrip("/")
    url, userinfo = _split_userinfo(f"{base}/models")  # the URL shown never holds a password
    timeout = float(options.get("preflight_timeout_s", 5.0))
    status = _get_status(url, settings.api_key, timeout, userinfo)
    if isinstance(status, str):
        return (
            f"openai:{target}: the endpoint does not answer (GET {url}: {status}; waited at "
            f"most {timeout:g} s); start the server or point base_url ([run.agents.NAME], "
            f"--base-url or {BASE_URL_ENV}) at it"
        )
    if status in (401, 403):
        return (
            f"openai:{target}: the endpoint refuses the key in {settings.key_env} "
            f"(GET {url}: HTTP {status})"
        )
    # Any other answer (even 404: no /models route) means it is there. The attempts' shared
    # client is built now, on one thread: 200 attempts starting at once would otherwise
    # queue behind the first one building it.
    shared_client(openai, settings)
    return None


def _split_userinfo(url: str) -> tuple[str, str]:
    """``http://user:pw@host/v1`` -> (``http://host/v1``, ``user:pw``): urllib cannot open
    a URL with userinfo, and a message must not print it."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, ""
    return urlunsplit(parts._replace(netloc=host)), userinfo


def _get_status(url: str, api_key: str | None, timeout: float, userinfo: str = "") -> int | str:
    """The HTTP status of a GET, or why there was none (stdlib: no client needed)."""
    import base64
    import urllib.error
    import urllib.request
    from urllib.parse import unquote

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    if userinfo and not api_key:  # the URL's own credentials, as the client would send them
        basic = base64.b64encode(unquote(userinfo).encode()).decode()
        headers = {"Authorization": f"Basic {basic}"}
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{type(reason).__name__}: {reason}"


def open(target: str, options: Mapping[str, Any], job: AttemptJob) -> OpenAISession:
    if not target:
        raise AgentFault("adapter", "openai: needs a model name, as in openai:gpt-4o-mini")
    return OpenAISession(target, options)
