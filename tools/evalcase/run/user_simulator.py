"""The simulated user: the model behind ``[run.user_simulator]`` writes the user's turns.

A case with ``user_simulator:`` (docs/contract.md#simulated-users) is played against a
model on any OpenAI-compatible chat-completions endpoint, configured like the judge::

    [run.user_simulator]
    base_url = "http://127.0.0.1:8000/v1"
    model = "gpt-4.1-mini"
    api_key_env = "EVALCASE_USER_API_KEY"   # the NAME of the variable, never the key
    temperature = 0.0
    max_tokens = 1024
    timeout_s = 60

The requests go through the client of the ``openai:`` adapter
(:class:`evalcase.run.adapters.openai.OpenAISession`: one shared connection pool per
endpoint and key, the same retries, each retry a trace event), and the prompt is
:mod:`evalcase.run.user_prompt` (versioned). The model's name and the prompt version are
recorded in ``run.json`` (``user_simulator``) and on every simulated ``user`` trace event.

A case with ``user_simulator.tools`` (two actors, docs/contract.md#user-tools) offers the
model those tools (name, description, parameters, as the agent's are offered) with
tau2-bench's tool-aware prompt: :meth:`Simulator.next_turn` may then answer with tool
calls instead of a message; the runner makes them on the shared state as actor ``user``
and hands the results back (:meth:`Simulator.answered`), to the simulator only, until it
writes a message (:class:`evalcase.run.conversation.Conversation`).

Failing mid-attempt (the endpoint down, an HTTP error after the retries, an empty or cut
answer, no answer within ``timeout_s`` or the attempt's deadline) is the attempt's
recorded error of kind ``user_simulator``: never a pass. Failing before the run (exit 2,
no run folder, see :func:`preflight`): a selected case needs a simulator and the section
has no ``model``, the ``aiohttp`` package is missing, the key variable is unset, or the
endpoint does not answer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalcase import chat_completions
from evalcase.chat_completions import ToolCall
from evalcase.contract.task import ToolBehaviour
from evalcase.run import user_prompt
from evalcase.run.protocol import AgentFault
from evalcase.run.spec import UserSimulatorSpec

KIND = "user_simulator"
# A simulated user speaks a few sentences: a longer answer is refused as oversized.
MAX_REPLY_BYTES = 1 << 20
# Settings of [run.user_simulator] that shape the request (the rest reach the client).
_GENERATION = ("temperature", "max_tokens", "top_p", "stop")
DEFAULTS: Mapping[str, Any] = {"temperature": 0.0, "max_tokens": 1024, "timeout_s": 60.0}


class UserSimulatorFault(AgentFault):
    """The simulator failed: the attempt's ``user_simulator`` error (never the agent's)."""

    def __init__(self, message: str, events: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(KIND, message, events)


@dataclass(frozen=True)
class SimulatedTurn:
    """The simulator's answer: a message (``content``), or, for a user with tools, the
    calls it makes first (``tool_calls``; then ``content`` is never sent)."""

    content: str
    usage: Mapping[str, Any]
    events: tuple[Mapping[str, Any], ...]
    tool_calls: tuple[ToolCall, ...] = ()


def configured(settings: Mapping[str, Any] | None) -> bool:
    return bool(settings and isinstance(settings.get("model"), str) and settings["model"])


def record_of(settings: Mapping[str, Any] | None, tools: bool = False) -> dict[str, Any] | None:
    """What run.json says of the simulator (no key: only its variable's name); ``tools``:
    a selected case gives the user tools (its prompt version is recorded too)."""
    if not configured(settings):
        return None
    assert settings is not None
    return {
        "model": settings["model"],
        "base_url": settings.get("base_url"),
        "api_key_env": settings.get("api_key_env"),
        "prompt_version": user_prompt.PROMPT_VERSION,
        **({"prompt_version_tools": user_prompt.PROMPT_VERSION_TOOLS} if tools else {}),
        **{
            k: settings.get(k, DEFAULTS.get(k))
            for k in _GENERATION
            if k in settings or k in DEFAULTS
        },
    }


class Simulator:
    """One attempt's simulated user (the client behind it is shared by the process)."""

    def __init__(
        self,
        spec: UserSimulatorSpec,
        settings: Mapping[str, Any],
        seed: int,
        tools: Sequence[ToolBehaviour] = (),
    ) -> None:
        from evalcase.run.adapters.openai import OpenAISession

        if not configured(settings):
            raise UserSimulatorFault("[run.user_simulator] has no model")
        self.spec = spec
        self.tools = tuple(tools)
        # The user's own tool calls and results, by the user turns sent before them.
        self.exchanges: dict[int, list[dict[str, Any]]] = {}
        self._at = 0
        self.model = str(settings["model"])
        self.settings = {**DEFAULTS, **settings}
        self.seed = seed
        try:
            self.session = OpenAISession(self.model, self.settings, MAX_REPLY_BYTES)
        except AgentFault as fault:
            raise UserSimulatorFault(fault.message, fault.events) from None

    @property
    def trace_fields(self) -> dict[str, Any]:
        return {
            "simulated": True,
            "model": self.model,
            "prompt_version": self.prompt_version,
        }

    @property
    def prompt_version(self) -> str:
        return user_prompt.PROMPT_VERSION_TOOLS if self.tools else user_prompt.PROMPT_VERSION

    def answered(self, turn: SimulatedTurn, results: Sequence[Mapping[str, Any]]) -> None:
        """The results (``tool`` messages) of ``turn``'s calls: shown to the simulator
        next time, after its calls, and never to the agent."""
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in turn.tool_calls
        ]
        said = turn.content or None
        exchange = self.exchanges.setdefault(self._at, [])
        exchange.append({"role": "assistant", "content": said, "tool_calls": calls})
        exchange.extend(dict(r) for r in results)

    def next_turn(
        self, conversation: Sequence[Mapping[str, Any]], deadline: float
    ) -> SimulatedTurn:
        self._at = sum(
            1
            for m in conversation
            if m.get("role") == "user" and isinstance(m.get("content"), str) and m["content"]
        )
        body: dict[str, Any] = {
            "model": self.model,
            "messages": user_prompt.messages(
                self.spec.instructions, conversation, self.exchanges, bool(self.tools)
            ),
            "seed": self.seed,
        }
        if self.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in self.tools
            ]
        for key in _GENERATION:
            if self.settings.get(key) is not None:
                body[key] = self.settings[key]
        body.update(dict(self.settings.get("extra") or {}))
        until = min(deadline, time.monotonic() + float(self.settings["timeout_s"]))
        try:
            completion, events = self.session.create(body, until)
        except AgentFault as fault:
            why = fault.message
            if fault.kind == "timeout":
                why = (
                    f"no answer within timeout_s ({float(self.settings['timeout_s']):g} s) "
                    "or before the attempt's deadline"
                )
            raise UserSimulatorFault(
                f"the user simulator ({self.model}) failed: {why}", _tagged(fault.events)
            ) from None
        events = _tagged(events)
        answer = chat_completions.read(completion, with_tools=bool(self.tools))
        if isinstance(answer, chat_completions.Unreadable):
            raise UserSimulatorFault(
                f"the user simulator ({self.model}) answered unreadable tool calls: "
                f"{answer.message}",
                events,
            )
        content = answer.content
        if answer.cut:
            raise UserSimulatorFault(
                f"the user simulator's answer was cut at max_tokens ({body.get('max_tokens')}): "
                "raise [run.user_simulator] max_tokens",
                events,
            )
        if answer.tool_calls:
            said = content if isinstance(content, str) else ""
            return SimulatedTurn(said, dict(answer.usage), tuple(events), answer.tool_calls)
        if not isinstance(content, str) or not content.strip():
            raise UserSimulatorFault(f"the user simulator ({self.model}) answered no text", events)
        return SimulatedTurn(content, dict(answer.usage), tuple(events))


def _tagged(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The client's events (retries) marked as the simulator's, not the agent's."""
    return [{**e, "source": KIND} for e in events]


def preflight(settings: Mapping[str, Any] | None, needed_by: Sequence[str]) -> str | None:
    """What stops every simulated attempt before the run, or None. ``needed_by``: the
    selected cases with a ``user_simulator``."""
    if not needed_by:
        return None
    shown = ", ".join(needed_by[:3]) + (
        f" and {len(needed_by) - 3} more" if len(needed_by) > 3 else ""
    )
    if not configured(settings):
        return (
            f"the user simulator is not configured: {shown} "
            f"{'has' if len(needed_by) == 1 else 'have'} a user_simulator, and "
            "[run.user_simulator] in evalcase.toml names no model (base_url, model, api_key_env)"
        )
    assert settings is not None
    from evalcase import transport

    missing = transport.available()
    if missing:
        return f"the user simulator needs {missing} ({transport.INSTALL_HINT})"
    from evalcase.run.adapters import openai as adapter

    options = {**DEFAULTS, **settings}
    found = adapter.Settings(options)
    if found.key_missing:
        return (
            f"the user simulator cannot run: the variable {found.key_env} holding its API key "
            f"is not set (export {found.key_env}=...; api_key_env in [run.user_simulator] "
            "names another)"
        )
    if options.get("preflight") is False:
        return transport.warm()
    url, status, timeout = adapter.probe_models(found, options)
    if isinstance(status, str):
        return (
            f"the user simulator cannot run: its endpoint does not answer (GET {url}: "
            f"{status}; waited at most {timeout:g} s); start the server or point "
            "[run.user_simulator] base_url at it"
        )
    if status in (401, 403):
        return (
            f"the user simulator cannot run: its endpoint refuses the key in {found.key_env} "
            f"(GET {url}: HTTP {status})"
        )
    return transport.warm()
