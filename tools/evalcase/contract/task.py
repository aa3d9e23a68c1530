"""The typed task a runner executes and graders judge: frozen, picklable data.

A :class:`Task` has three parts that never mix:

- :class:`AgentView`: ALL an agent may ever receive (input, conversation history, tool
  cards with name, description and parameter schema only, run parameters);
- :class:`EnvSpec`: what only the simulated environment knows (merged initial state, tool
  behaviours, faults, permissions, corpora, which user turns confirm, when each scripted
  user turn is sent, the simulated user's instructions);
- :class:`JudgeSpec`: everything graders read (the answer key).

Built by :func:`evalcase.contract.build.build_task`; read for a whole dataset by
:func:`evalcase.index.dataset.load_dataset`. Mappings are plain dicts (picklable: Ray
ships tasks to workers); treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Role = Literal["system", "user", "assistant"]
Order = Literal["exact", "in_order", "any_order"]


@dataclass(frozen=True)
class ToolCard:
    """What the agent sees of a tool."""

    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON Schema of the arguments


@dataclass(frozen=True)
class Turn:
    role: Role
    content: str


@dataclass(frozen=True)
class AgentView:
    """ALL an agent may ever receive."""

    attempt_key: str  # opaque digest, never the case_id (case IDs describe the scenario)
    system: str | None
    history: tuple[Turn, ...]
    user_turns: tuple[str, ...]  # the user turns the agent answers, in order
    context: Mapping[str, Any]  # case.context without fixture references
    tools: tuple[ToolCard, ...]
    params: Mapping[str, Any]  # generation_config, "now" (effective_at), locale


@dataclass(frozen=True)
class ToolError:
    """``message_from``: CEL giving the message (over the response's variables, its
    ``let`` names included); a static ``message`` is the fallback when it fails."""

    code: str
    message: str = ""
    message_from: str | None = None


@dataclass(frozen=True)
class StateOp:
    """One state change: ``set`` / ``delete`` / ``append`` / ``increment`` at ``path``
    (dotted, ``{CEL}`` segments allowed). ``value_from``: CEL giving the value;
    ``by_from``: CEL giving an increment's amount. ``when``: CEL; the step applies only
    when it holds. ``foreach``: CEL giving a list; the steps ``do`` apply once per element,
    the element named ``as_`` (``path`` is then empty). ``fail``: the call fails with the
    :class:`ToolError` in ``value`` (every write of the call undone)."""

    op: Literal["set", "delete", "append", "increment", "foreach", "fail"]
    path: str
    value: Any = None
    value_from: str | None = None
    by: int | float = 1
    by_from: str | None = None
    when: str | None = None
    as_: str = "item"
    do: tuple[StateOp, ...] = ()


@dataclass(frozen=True)
class Response:
    """One rule of a tool's behaviour; the first whose ``when`` matches answers.

    ``when``: None (always), a mapping (subset match on the arguments, equality), or a
    CEL string over ``args``, ``call`` and the state. ``let``: ordered ``(name, CEL)``
    bindings evaluated once per call after the match. The answer is ``error``, else
    ``state_change`` applied atomically, then ``result_from`` (CEL reading the state
    after the change), else ``result``. ``ends_conversation``: the conversation ends
    once this answer is delivered."""

    when: Mapping[str, Any] | str | None = None
    result: Any = None
    result_from: str | None = None
    error: ToolError | None = None
    state_change: tuple[StateOp, ...] = ()
    latency_ms: int | None = None
    let: tuple[tuple[str, str], ...] = ()
    ends_conversation: bool = False

    @property
    def catch_all(self) -> bool:
        return self.when is None or (isinstance(self.when, Mapping) and not self.when)


@dataclass(frozen=True)
class ToolBehaviour:
    """What only the environment knows about a tool."""

    name: str
    side_effect: bool
    parameters: Mapping[str, Any]
    responses: tuple[Response, ...]
    default: Response | None  # when nothing matches; else a no_matching_response error
    handler: str | None  # "package.module:function" escape hatch: (args, state) -> result
    latency_ms: int | None
    fixture_id: str = ""
    # What the tool does, in words: shown to a simulated user offered its own tools.
    description: str = ""


@dataclass(frozen=True)
class Trigger:
    """When a fault fires: on the listed call numbers (1-based, per tool), on the first
    ``first`` calls, on every call, or when the CEL ``condition`` over ``args`` and
    ``call`` holds."""

    calls: tuple[int, ...] = ()
    first: int | None = None
    every: bool = False
    condition: str | None = None


FaultKind = Literal[
    "timeout", "rate_limited", "permission_denied", "empty_result", "dirty_data", "slow", "error"
]
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)


@dataclass(frozen=True)
class Fault:
    tool: str
    kind: FaultKind
    when: Trigger
    code: str | None = None  # error code (kind error), else a default per kind
    message: str | None = None
    applied: bool = False  # timeout: the side effect still happened
    latency_ms: int | None = None
    retry_after_ms: int | None = None
    data: Any = None  # dirty_data: what the tool returns instead


@dataclass(frozen=True)
class Permission:
    """A named policy: calls to ``tools`` are refused with ``error`` unless the CEL
    ``condition`` holds (over ``args``, ``call``, ``calls``, ``state`` and state keys)."""

    name: str
    tools: tuple[str, ...]
    condition: str
    error: ToolError


@dataclass(frozen=True)
class Passage:
    doc_id: str
    passage_id: str
    text: str
    title: str = ""
    effective_date: str | None = None


@dataclass(frozen=True)
class Corpus:
    fixture_id: str
    corpus_version: str | None
    knowledge_base: str | None
    passages: tuple[Passage, ...]  # those in effect at EnvSpec.effective_at


# What a simulated user's reply may contain to end the conversation (tau2-bench's tokens),
# and the name each ending is recorded under (``conversation.ended_by``).
USER_SIGNALS: Mapping[str, str] = {
    "###STOP###": "user_stop",
    "###TRANSFER###": "user_transfer",
    "###OUT-OF-SCOPE###": "user_out_of_scope",
}
INSTRUCTION_PARTS = (
    "persona", "domain", "reason_for_call", "known_info", "unknown_info", "task_instructions",
)  # fmt: skip
MAX_TURNS_DEFAULT = 30
MAX_TURNS_LIMIT = 1000
# How a conversation may end that counts as ended by a stop signal (tau2-bench's
# agent_stop / user_stop): the rest (max_turns, max_steps, max_tool_errors, script_end,
# error) is a premature end, which the ``conversation_end`` grader fails.
STOP_SIGNALS = ("user_stop", "user_transfer", "user_out_of_scope", "ends_conversation")


@dataclass(frozen=True)
class UserSimulatorSpec:
    """A simulated user (``user_simulator:``): environment-side, never in the AgentView.

    ``instructions``: the parts of :data:`INSTRUCTION_PARTS` that were given, or ``text``
    for instructions written as one text. ``max_turns``: most user turns, scripted and
    simulated together. ``tools``: the tool fixtures the user may call on the shared state
    (two actors, docs/contract.md#user-tools); never offered to the agent. ``max_steps``
    and ``max_tool_errors`` (None: no limit) end the conversation as tau2-bench's
    orchestrator does (``ended_by`` ``max_steps``, ``max_tool_errors``)."""

    instructions: Mapping[str, str]
    max_turns: int = MAX_TURNS_DEFAULT
    tools: tuple[str, ...] = ()
    max_steps: int | None = None
    max_tool_errors: int | None = None


@dataclass(frozen=True)
class EnvSpec:
    initial_state: Mapping[str, Any]
    tools: Mapping[str, ToolBehaviour]
    faults: tuple[Fault, ...]
    permissions: tuple[Permission, ...]
    corpora: tuple[Corpus, ...]
    confirmations: tuple[int, ...]  # indexes into AgentView.user_turns that confirm
    effective_at: str | None
    state_fixtures: tuple[str, ...] = ()  # the fixtures merged into initial_state, in order
    sandbox: Any = None
    # The CEL ``when`` of each AgentView.user_turns entry (None: always), for the reactive
    # script; empty when no turn has one (the turns are played in order, as written).
    user_conditions: tuple[str | None, ...] = ()
    user_simulator: UserSimulatorSpec | None = None
    # Two actors: the user's own tools (``user_simulator.tools``), answered for the user
    # only and never offered to the agent, and the calls each scripted user turn makes
    # before it is sent (indexes as AgentView.user_turns; empty when no turn makes one).
    user_tools: Mapping[str, ToolBehaviour] = field(default_factory=dict)
    user_calls: tuple[tuple[ExpectedCall, ...], ...] = ()


Actor = Literal["agent", "user"]
ACTORS: tuple[Actor, ...] = ("agent", "user")


@dataclass(frozen=True)
class ExpectedCall:
    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)  # compared on these fields only
    actor: Actor = "agent"  # who makes it: the agent, or the user with its own tools


@dataclass(frozen=True)
class CallPlan:
    order: Order
    calls: tuple[ExpectedCall, ...]


@dataclass(frozen=True)
class ExpectedCalls:
    """Acceptable call sequences: any one of the alternatives passes."""

    any_of: tuple[CallPlan, ...]


@dataclass(frozen=True)
class Transition:
    """A state transition at ``path`` (dotted, ``{CEL}`` allowed) from one of ``from_``
    to one of ``to``; ``label`` names it."""

    path: str
    from_: tuple[Any, ...] = ()
    to: tuple[Any, ...] = ()
    label: str = ""


@dataclass(frozen=True)
class SideEffectPolicy:
    tool: str
    preconditions: tuple[str, ...] = ()  # CEL (mapping sugar already rewritten)
    confirmation_required: bool = False
    idempotency_key: tuple[str, ...] = ()  # argument names
    allowed_transitions: tuple[Transition, ...] = ()
    forbidden_transitions: tuple[Transition, ...] = ()
    audit_requirement: tuple[str, ...] = ()


@dataclass(frozen=True)
class StateExpectation:
    expected: Mapping[str, Any] = field(default_factory=dict)  # dotted path -> value
    unchanged: tuple[str, ...] = ()  # paths; "*" = everything not named in expected
    absent: tuple[str, ...] = ()
    asserts: tuple[str, ...] = ()  # CEL over final state, initial, calls, output


@dataclass(frozen=True)
class FinalStateCheck:
    any_of: tuple[StateExpectation, ...]
    # The gold end state is what replaying ``expected_calls`` on a fresh environment of
    # the case produces (faults off, permissions on); compared over ``paths`` (dotted),
    # or the whole state when none are named.
    from_expected_calls: bool = False
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class GraderConfig:
    """A grader as the case configures it: ``weight`` None when not written (it counts
    1), ``hard`` from the grader's ``hard`` (default true), ``options`` its other keys.
    :func:`evalcase.grade.spec.grader_configs` gives them under their current names."""

    type: str
    weight: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    hard: bool = True

    @property
    def counted_weight(self) -> float:
        """The weight the grader counts with (1 when none is written)."""
        return 1.0 if self.weight is None else self.weight


@dataclass(frozen=True)
class Rubric:
    id: str | None  # fixture ID, None when inline
    version: str | None
    data: Mapping[str, Any]


@dataclass(frozen=True)
class GoldEvidence:
    """One ``gold_evidence`` entry: the passage a correct answer rests on (values as the
    case wrote them) and whether it is ``required``."""

    doc_id: Any
    passage_id: Any
    required: bool = False

    @property
    def name(self) -> str:
        return f"{self.doc_id}#{self.passage_id}"


@dataclass(frozen=True)
class JudgeSpec:
    """ALL graders may read (plus the attempt record)."""

    case_id: str
    case_version: str
    risk_level: str
    case_types: tuple[str, ...]
    expected_calls: ExpectedCalls | None
    forbidden_tools: tuple[str, ...]
    required_tools: tuple[str, ...]
    side_effect_policies: tuple[SideEffectPolicy, ...]
    final_state_check: FinalStateCheck | None
    graders: tuple[GraderConfig, ...]
    rule_checks: tuple[str, ...]
    rubric: Rubric | None
    judge: Mapping[str, Any]
    pass_k: int | None
    text: Mapping[str, Any]
    rag: Mapping[str, Any]
    trace_rules: tuple[str, ...]
    raw: Mapping[str, Any]
    # The environment a ``final_state_check: {from_expected_calls: true}`` replays its
    # gold calls in (set by build_task; None where the case's environment is not known).
    replay_env: EnvSpec | None = None

    @property
    def gold_evidence(self) -> tuple[GoldEvidence, ...]:
        """The case's ``gold_evidence`` entries that are mappings, in order."""
        raw = self.rag.get("gold_evidence")
        items = raw if isinstance(raw, list | tuple) else [] if raw is None else [raw]
        return tuple(
            GoldEvidence(g.get("doc_id"), g.get("passage_id"), bool(g.get("required")))
            for g in items
            if isinstance(g, Mapping)
        )


@dataclass(frozen=True)
class Task:
    case_id: str
    case_version: str
    dataset_id: str
    agent: AgentView
    env: EnvSpec
    judge: JudgeSpec
    meta: Mapping[str, Any]
    digest: str
    fixture_versions: Mapping[str, str]
    path: str = ""
