"""``openai:MODEL``: a built-in tool-calling agent over any OpenAI-compatible
chat-completions endpoint (hosted APIs, vLLM, Ollama, llama.cpp...). No agent code
needed: the case's tools are offered as functions and the model's replies are the
agent's replies. It speaks the chat-completions wire format itself, through
:mod:`evalcase.transport` (aiohttp on one event loop per process: every request of the
run in flight on one connection pool), not through the ``openai`` client, whose import
and per-request work cost more CPU than a ``--concurrency 200`` run can spare.

Settings (``[run.agents.NAME]``, ``--base-url``, or the environment): ``base_url`` (else
``OPENAI_BASE_URL``, else https://api.openai.com/v1), ``api_key_env`` (the NAME of the
variable holding the key, default ``OPENAI_API_KEY``; the key itself is never written
anywhere), ``max_retries`` (default 4), ``backoff_s`` (first wait, default 1.0, doubled
per retry, unless the server sends ``retry-after``), ``preflight`` (default true: check
the endpoint once before the run), ``preflight_timeout_s`` (default 5), ``extra`` (more
request fields). ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID``, when set, are sent as the
``OpenAI-Organization`` and ``OpenAI-Project`` headers, as the official client does.
``temperature``, ``max_tokens``, ``top_p``, ``seed`` and ``stop`` come from the case's
``generation_config`` (or the prompt fixture's). What the model receives is rendered by
:mod:`evalcase.run.chat_view` (system prompt, context block, turns, tools; its version
is recorded in run.json).

The attempt's deadline bounds each reply as a whole (connecting, sending, waiting, every
byte of the answer, and the retries with their waits): a server that trickles its answer
ends as ``timeout`` at the deadline. An answer over ``max_reply_bytes`` is not read
further (``oversized``).

What is retried (each retry is a ``retry`` event in the attempt's trace): 429 and 503,
after the server's ``retry-after`` (or ``retry-after-ms``) when it sends one, else the
backoff; 408, 502, 504 and a connection reset by the server, after the backoff; a 500 at
most once (a deterministic server error does not get better). Nothing else: any other
4xx, an unreachable endpoint or a ``retry-after`` past the attempt's deadline is the
attempt's ``adapter`` error at once.

Passing: the endpoint answers a chat completion; its ``usage`` and each choice's
``finish_reason`` are recorded (``length``, a reply cut at ``max_tokens``, marks the
attempt ``truncated``).
Failing (recorded): 429/5xx after every retry (``adapter``), a reply without choices or
with malformed tool calls (``protocol``), a body that is not JSON (``bad_json``).
Failing before the run (exit 2, nothing recorded, see :func:`preflight`): the ``aiohttp``
package missing, the key variable unset, the endpoint not answering or refusing the key.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalcase import __version__, keys, transport
from evalcase.run import chat_view
from evalcase.run.protocol import AgentFault, Reply, ToolCall, dumps_strict

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob

# How requests become chat messages (recorded in run.json as agent.rendering).
RENDERING = chat_view.VERSION
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
INSTALL_HINT = transport.INSTALL_HINT
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Retried after retry-after (when sent) or the backoff; 500 separately, at most once.
RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
RETRY_500_TIMES = 1


class Settings:
    """Where the endpoint is and which variable holds its key, from the agent's options."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.key_env = str(options.get("api_key_env") or DEFAULT_KEY_ENV)
        self.key_env_given = bool(options.get("api_key_env"))
        raw = options.get("base_url") or os.environ.get(BASE_URL_ENV)
        self.base_url = str(raw).rstrip("/") if raw else None
        self.api_key = keys.get(self.key_env) or None

    @property
    def key_missing(self) -> bool:
        """Local servers (vLLM, Ollama, llama.cpp) take any key, so a missing key is a
        problem only for the default endpoint or when ``api_key_env`` names a variable."""
        return not self.api_key and (self.base_url is None or self.key_env_given)

    def key_problem(self) -> str | None:
        if not self.key_missing:
            return None
        return (
            f"openai: the variable {self.key_env} holding the API key is not set "
            f"(export {self.key_env}=...; api_key_env in [run.agents.NAME] names another)"
        )


def request_headers(settings: Settings) -> tuple[str, dict[str, str]]:
    """The chat-completions URL and the headers every request sends (the key as a bearer
    token; a URL's own ``user:password`` as basic auth when there is no key)."""
    base = settings.base_url or DEFAULT_BASE_URL
    url, userinfo = _split_userinfo(f"{base}/chat/completions")
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"evalcase/{__version__}",
    }
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    elif userinfo:
        import base64
        from urllib.parse import unquote

        basic = base64.b64encode(unquote(userinfo).encode()).decode()
        headers["Authorization"] = f"Basic {basic}"
    for variable, header in (
        ("OPENAI_ORG_ID", "OpenAI-Organization"),
        ("OPENAI_PROJECT_ID", "OpenAI-Project"),
    ):
        value = os.environ.get(variable)
        if value:
            headers[header] = value
    return url, headers


class OpenAISession:
    def __init__(self, model: str, options: Mapping[str, Any], limit: int) -> None:
        missing = transport.available()
        if missing:
            raise AgentFault("adapter", f"openai: needs {missing} ({INSTALL_HINT})")
        settings = Settings(options)
        problem = settings.key_problem()
        if problem:
            raise AgentFault("adapter", problem)
        self.url, self.headers = request_headers(settings)
        self.model = model
        self.limit = limit
        self.policy = transport.RetryPolicy(
            max_retries=int(options.get("max_retries", 4)),
            backoff_s=float(options.get("backoff_s", 1.0)),
            statuses=RETRY_STATUSES,
            times_500=RETRY_500_TIMES,
            deadline_name="the attempt's deadline",
        )
        self.extra = dict(options.get("extra") or {})

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        body = chat_view.render(request).body(self.model)
        body.update(self.extra)
        completion, events = self.create(body, deadline)
        return self._reply(completion, events)

    def create(self, body: Mapping[str, Any], deadline: float) -> tuple[Any, list[dict[str, Any]]]:
        """One completion, retrying what can succeed on a retry; the retries as events."""
        if time.monotonic() >= deadline:
            raise AgentFault("timeout", "no reply before the attempt's deadline")
        data = dumps_strict(body).encode("utf-8")
        outcome = transport.post_with_retries(
            self.url, data, self.headers, deadline, self.policy, self.limit
        )
        events, result = outcome.events, outcome.result
        if isinstance(result, transport.Failure):
            if result.kind == "timeout":
                raise AgentFault("timeout", "no whole reply before the attempt's deadline", events)
            if result.kind == "oversized":
                raise AgentFault(
                    "oversized", f"the endpoint's reply exceeds max_reply_bytes ({self.limit})",
                    events,
                )  # fmt: skip
            if outcome.gave_up:
                raise AgentFault("adapter", outcome.gave_up, events)
            raise AgentFault("adapter", f"cannot reach the endpoint: {result.message}", events)
        if outcome.gave_up:
            raise AgentFault("adapter", outcome.gave_up, events)
        if result.status >= 400:
            gave_up = f" after {len(events)} retries" if events else ""
            raise AgentFault("adapter", f"HTTP {result.status}{gave_up}: {result.text()}", events)
        try:
            return result.json(), events
        except ValueError as exc:  # UnicodeDecodeError is one
            raise AgentFault(
                "bad_json", f"the endpoint's reply is not JSON: {exc}", events
            ) from None

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
        return None  # the connection pool is the process's (evalcase.transport)


def preflight(target: str, options: Mapping[str, Any]) -> str | None:
    """What would fail every attempt alike, checked once before the run: the model name,
    the ``aiohttp`` package, the key variable, and (unless ``preflight = false``) that the
    endpoint answers ``GET /models`` within ``preflight_timeout_s`` and accepts the key."""
    if not target:
        return "openai: needs a model name, as in openai:gpt-4o-mini"
    missing = transport.available()
    if missing:
        return f"openai:{target} needs {missing} ({INSTALL_HINT})"
    settings = Settings(options)
    problem = settings.key_problem()
    if problem:
        return problem
    if options.get("preflight") is False:
        return transport.warm()
    url, status, timeout = probe_models(settings, options)
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
    # Any other answer (even 404: no /models route) means it is there. The event loop and
    # its connection pool start now, on one thread: 200 attempts starting at once would
    # otherwise queue behind the first one starting them.
    return transport.warm()


def probe_models(settings: Settings, options: Mapping[str, Any]) -> tuple[str, int | str, float]:
    """``GET {base_url}/models`` within ``preflight_timeout_s`` (default 5 s): the URL as
    shown (never with a password), the HTTP status or why there was none, the timeout.
    The preflights of ``openai:`` agents and of the user simulator share it."""
    base = settings.base_url or DEFAULT_BASE_URL
    url, userinfo = _split_userinfo(f"{base}/models")
    timeout = float(options.get("preflight_timeout_s", 5.0))
    return url, _get_status(url, settings.api_key, timeout, userinfo), timeout


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
    return OpenAISession(target, options, job.limits.max_reply_bytes)
