"""What the runner executes: the agent's view and the environment's spec of one case.

These mirror ``contract/task.py`` of the design (docs/design/execution-contract.md,
section 2). The runner never reads a ``JudgeSpec``: nothing here can carry one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class ToolCard:
    """What the agent sees of a tool."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class Turn:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class AgentView:
    """All an agent may ever receive."""

    attempt_key: str
    system: str | None
    history: tuple[Turn, ...]
    user_turns: tuple[str, ...]
    context: Mapping[str, Any]
    tools: tuple[ToolCard, ...]
    params: Mapping[str, Any]


@dataclass(frozen=True)
class ToolBehaviour:
    """What only the environment knows about a tool."""

    name: str
    side_effect: bool
    parameters: Mapping[str, Any]
    responses: tuple[Mapping[str, Any], ...] = ()
    default: Mapping[str, Any] | None = None
    handler: str | None = None
    latency_ms: int | None = None


@dataclass(frozen=True)
class Fault:
    """An injected failure: ``kind`` is one of timeout, rate_limited, permission_denied,
    empty_result, dirty_data, slow, error; ``when`` is ``{"call": N}``, ``{"calls": [..]}``,
    ``{"first": N}``, ``"every"`` (also None) or a CEL string over ``args`` and ``call``."""

    tool: str
    kind: str
    when: Any = "every"
    applied: bool = False
    code: str | None = None
    message: str | None = None
    retry_after_ms: int | None = None
    latency_ms: int | None = None
    data: Any = None


@dataclass(frozen=True)
class Permission:
    """A policy: calls to ``tools`` are refused with ``error`` unless ``condition`` holds."""

    name: str
    tools: tuple[str, ...]
    condition: str
    error: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Passage:
    passage_id: str
    doc_id: str
    text: str
    title: str = ""
    effective_date: str | None = None


@dataclass(frozen=True)
class Corpus:
    corpus_id: str
    passages: tuple[Passage, ...]


@dataclass(frozen=True)
class EnvSpec:
    """What only the environment knows: state, tool behaviour, faults, permissions, corpora."""

    initial_state: Mapping[str, Any]
    tools: Mapping[str, ToolBehaviour]
    faults: tuple[Fault, ...] = ()
    permissions: tuple[Permission, ...] = ()
    corpora: tuple[Corpus, ...] = ()
    confirmations: tuple[int, ...] = ()
    effective_at: str | None = None
