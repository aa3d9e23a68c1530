"""``openai:MODEL``: a built-in tool-calling agent over any OpenAI-compatible
chat-completions endpoint (hosted APIs, vLLM, Ollama...), through the official ``openai``
client. No agent code needed: the case's tools are offered as functions and the model's
replies are the agent's replies.

Settings (``[run.agents.NAME]`` or the environment): ``base_url`` (else
``OPENAI_BASE_URL``), ``api_key_env`` (the NAME of the variable holding the key, default
``OPENAI_API_KEY``; the key itself is never written anywhere), ``max_retries`` (default 4),
``backoff_s`` (first wait, default 1.0, doubled per retry, or the server's
``retry-after``), ``extra`` (more request fields). ``temperature``, ``max_tokens``,
``top_p``, ``seed`` and ``stop`` come from the case's ``generation_config`` (or the
prompt fixture's). What the model receives is rendered by :mod:`evalcase.run.chat_view`
(system prompt, context block, turns, tools; its version is recorded in run.json).

Passing: the endpoint answers a chat completion; its ``usage`` is recorded.
Failing (recorded): 429/5xx after every retry (``adapter``), a reply without choices or
with malformed tool calls (``protocol``), a body that is not JSON (``bad_json``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalcase.run import chat_view
from evalcase.run.protocol import AgentFault, Reply, ToolCall

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob

# How requests become chat messages (recorded in run.json as agent.rendering).
RENDERING = chat_view.VERSION


class OpenAISession:
    def __init__(self, model: str, options: Mapping[str, Any]) -> None:
        try:
            import openai
        except ModuleNotFoundError:
            raise AgentFault(
                "adapter", "openai: needs the 'openai' package: pip install 'evalcase[openai]'"
            ) from None
        self.openai = openai
        key_var = str(options.get("api_key_env") or "OPENAI_API_KEY")
        api_key = os.environ.get(key_var)
        base_url = options.get("base_url") or os.environ.get("OPENAI_BASE_URL")
        if not api_key:
            if base_url is None:
                raise AgentFault(
                    "adapter", f"openai: the variable {key_var} holding the API key is not set"
                )
            api_key = "unused"  # local servers (vLLM, Ollama) accept any key
        self.client = openai.OpenAI(
            api_key=api_key, base_url=None if base_url is None else str(base_url), max_retries=0
        )
        self.model = model
        self.max_retries = int(options.get("max_retries", 4))
        self.backoff = float(options.get("backoff_s", 1.0))
        self.extra = dict(options.get("extra") or {})

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        openai = self.openai
        body = chat_view.render(request).body(self.model)
        body.update(self.extra)
        retries = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault("timeout", "no reply before the attempt's deadline")
            try:
                completion = self.client.chat.completions.create(**body, timeout=remaining)
                break
            except (openai.RateLimitError, openai.InternalServerError) as exc:
                if retries >= self.max_retries:
                    raise AgentFault(
                        "adapter", f"HTTP {exc.status_code} after {retries} retries"
                    ) from None
                wait = _retry_after(exc) or self.backoff * (2**retries)
                retries += 1
                time.sleep(max(0.0, min(wait, deadline - time.monotonic())))
            except openai.APITimeoutError:
                raise AgentFault("timeout", "no reply before the attempt's deadline") from None
            except openai.APIStatusError as exc:
                raise AgentFault("adapter", f"HTTP {exc.status_code}: {_short(exc)}") from None
            except openai.APIConnectionError as exc:
                raise AgentFault("adapter", f"cannot reach the endpoint: {exc}") from None
            except ValueError as exc:  # the client could not decode the body
                raise AgentFault("bad_json", f"the endpoint's reply is not JSON: {exc}") from None
        return self._reply(completion, retries)

    def _reply(self, completion: Any, retries: int) -> Reply:
        choices = getattr(completion, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise AgentFault("protocol", "the endpoint's reply has no choices[0].message")
        message = choices[0].message
        calls = []
        for index, call in enumerate(message.tool_calls or ()):
            function = getattr(call, "function", None)
            name = getattr(function, "name", None)
            if not isinstance(name, str) or not getattr(call, "id", None):
                raise AgentFault("protocol", f"tool_calls[{index}] lacks an id or a function name")
            arguments = getattr(function, "arguments", None)
            calls.append(
                ToolCall(str(call.id), name, arguments if isinstance(arguments, str) else "{}")
            )
        content = message.content if isinstance(message.content, str) else None
        if content is None and not calls:
            content = ""
        usage: dict[str, Any] = {"retries": retries}
        if completion.usage is not None:
            usage["prompt_tokens"] = int(completion.usage.prompt_tokens or 0)
            usage["completion_tokens"] = int(completion.usage.completion_tokens or 0)
        return Reply(
            content,
            tuple(calls),
            usage,
            f"openai:{getattr(completion, 'model', None) or self.model}",
        )

    def close(self) -> None:
        self.client.close()


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = None if response is None else response.headers.get("retry-after")
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


def _short(exc: Any) -> str:
    return str(getattr(exc, "message", exc))[:300]


def open(target: str, options: Mapping[str, Any], job: AttemptJob) -> OpenAISession:
    if not target:
        raise AgentFault("adapter", "openai: needs a model name, as in openai:gpt-4o-mini")
    return OpenAISession(target, options)
