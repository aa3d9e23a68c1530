"""How an agent request becomes a chat-completions request: the rendering every adapter
that speaks chat uses (``openai:``, and any plugin scheme that sets ``RENDERING``), so
that a model receives the whole :class:`~evalcase.contract.task.AgentView`, exactly as a
``cmd:`` agent does. Its version, :data:`VERSION`, is recorded in ``run.json``
(``agent.rendering``): a change to this module that changes what a model sees bumps it.

``evalcase-chat/1`` renders a request (:func:`evalcase.run.protocol.build_request`) as:

1. the case's system prompt, when it has one (``generation_config.system_prompt``, or
   the prompt fixture the attempt runs with), as the first ``system`` message;
2. one ``system`` message holding the **context block**, when the case has a context
   or a ``now`` / ``locale``: a fixed line of explanation, then YAML::

       Context of this conversation (YAML):
       now: '2026-07-08'
       locale: zh-CN
       context:
         channel: app
         order_id: ORDER_2001

3. the conversation as the runner keeps it: history, user turns, assistant replies and
   tool results, in order;
4. the case's tools as ``tools`` (``type: function``, name, description, parameter
   schema);
5. the generation settings among :data:`GENERATION` from ``params`` as request fields
   (``temperature``, ``top_p``, ``max_tokens``, ``seed``, ``stop``...); without a
   ``seed`` there, the attempt's own (the run's seed derived from the case and the
   attempt number, recorded in the attempt), so the attempts of ``--repeat N`` are N
   samples, not one request sent N times;
6. ``<attempt_key>-<attempt>`` (the key an opaque digest, never the case ID) as the
   request's ``user`` field, which OpenAI-compatible servers accept as an end-user
   identifier: one per attempt, rebuilt from the attempt record's two fields.

Nothing else of the request is sent, and the request holds nothing of the answer key
(the runner never sees a ``JudgeSpec``).

``evalcase-chat/3`` (and ``evalcase-chat/3-py``, the pure-Python emitter's) added the
attempt's seed and the attempt number in ``user`` (6); before, every attempt of a case
sent the same ``user`` and no seed.

``evalcase-chat/2`` is the same as ``/1``, with the YAML written by libyaml's emitter (PyYAML's C
binding: a twentieth of the pure-Python emitter's CPU, which was a third of what an
``openai:`` attempt cost the runner). It writes the same data and the same layout, but
may break a long double-quoted string at another column. Where PyYAML lacks libyaml the
pure-Python emitter writes, and the version recorded stays ``evalcase-chat/1``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML: a base dependency (the loader reads with its libyaml)

_DUMPER = getattr(yaml, "CSafeDumper", None)
VERSION = "evalcase-chat/3" if _DUMPER is not None else "evalcase-chat/3-py"
CONTEXT_HEADER = "Context of this conversation (YAML):"
# Request parameters a model reads as text, in the context block (the rest are settings).
CONTEXT_PARAMS = ("now", "locale")
GENERATION = (
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "stop",
    "presence_penalty",
    "frequency_penalty",
)


@dataclass(frozen=True)
class ChatRequest:
    """The fields of one chat-completions request (the model name is the adapter's)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    generation: dict[str, Any]
    user: str | None

    def body(self, model: str) -> dict[str, Any]:
        out: dict[str, Any] = {"model": model, "messages": self.messages}
        if self.tools:
            out["tools"] = self.tools
        out.update(self.generation)
        if self.user:
            out["user"] = self.user
        return out


def context_block(context: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    """The text of the context message, or None when there is nothing to say."""
    block: dict[str, Any] = {k: params[k] for k in CONTEXT_PARAMS if params.get(k) is not None}
    if context:
        block["context"] = _plain(context)
    if not block:
        return None
    text = yaml.dump(
        block,
        Dumper=_DUMPER or yaml.SafeDumper,
        allow_unicode=True,
        sort_keys=False,
        default_flow_style=False,
    )
    return f"{CONTEXT_HEADER}\n{text.rstrip()}"


def render(request: Mapping[str, Any]) -> ChatRequest:
    """The chat request for one agent request (see the module documentation)."""
    messages = [dict(m) for m in request.get("messages") or ()]
    params = request.get("params") or {}
    block = context_block(request.get("context") or {}, params)
    if block is not None:
        # After the system prompt (a leading system message), before everything else.
        at = 1 if messages and messages[0].get("role") == "system" else 0
        messages.insert(at, {"role": "system", "content": block})
    generation = {k: params[k] for k in GENERATION if params.get(k) is not None}
    seed = request.get("seed")
    if "seed" not in generation and isinstance(seed, int) and not isinstance(seed, bool):
        generation["seed"] = seed
    key = request.get("attempt_key")
    user = f"{key}-{request.get('attempt') or 1}" if key else None
    return ChatRequest(messages, list(request.get("tools") or ()), generation, user)


def _plain(value: Any) -> Any:
    """A mapping as plain dicts/lists YAML's safe dumper accepts (contexts are read-only
    Mappings and may hold tuples)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
