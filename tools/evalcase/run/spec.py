"""What the runner executes: the agent's view and the environment's spec of one case.

The types are the contract's (``evalcase.contract.task``,
docs/design/execution-contract.md); this module names the ones the runner uses, so that
nothing in ``run/`` imports a ``JudgeSpec``.
"""

from __future__ import annotations

from evalcase.contract.task import (
    AgentView,
    Corpus,
    EnvSpec,
    Fault,
    Passage,
    Permission,
    Response,
    StateOp,
    ToolBehaviour,
    ToolCard,
    ToolError,
    Trigger,
    Turn,
    UserSimulatorSpec,
)

__all__ = [
    "AgentView",
    "Corpus",
    "EnvSpec",
    "Fault",
    "Passage",
    "Permission",
    "Response",
    "StateOp",
    "ToolBehaviour",
    "ToolCard",
    "ToolError",
    "Trigger",
    "Turn",
    "UserSimulatorSpec",
]
