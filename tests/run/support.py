"""Building views, specs and jobs for runner tests."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evalcase.contract.attempt import AttemptRecord
from evalcase.contract.build import response, trigger
from evalcase.run import runner
from evalcase.run.executors import AttemptJob, Limits
from evalcase.run.spec import AgentView, EnvSpec, Fault, Permission, ToolBehaviour, ToolCard

DEFAULT_LIMITS = Limits()
ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "pattern": "^ORDER_[0-9]+$"}},
    "required": ["order_id"],
    "additionalProperties": False,
}


def tool(
    name: str,
    *,
    side_effect: bool = False,
    schema: dict[str, Any] | None = None,
    responses: tuple[dict[str, Any], ...] = (),
    default: dict[str, Any] | None = None,
    handler: str | None = None,
) -> ToolBehaviour:
    """A tool behaviour written as in a fixture's ``data`` (sugar included)."""
    return ToolBehaviour(
        name=name,
        side_effect=side_effect,
        parameters=schema or ORDER_SCHEMA,
        responses=tuple(response(r) for r in responses),
        default=None if default is None else response(default),
        handler=handler,
        latency_ms=None,
    )


def fault(tool: str, kind: Any, when: Any = "every", **kw: Any) -> Fault:
    """A fault written as in a case (``when`` sugar included)."""
    found = trigger(when)
    assert found is not None, when
    return Fault(tool, kind, found, **kw)


def view(
    *turns: str,
    tools: tuple[ToolBehaviour, ...] = (),
    context: dict[str, Any] | None = None,
    key: str = "k1",
) -> AgentView:
    cards = tuple(ToolCard(t.name, f"the {t.name} tool", t.parameters) for t in tools)
    return AgentView(key, None, (), turns, context or {}, cards, {})


def job(
    v: AgentView,
    tools: tuple[ToolBehaviour, ...] = (),
    *,
    state: dict[str, Any] | None = None,
    faults: tuple[Fault, ...] = (),
    permissions: tuple[Permission, ...] = (),
    confirmations: tuple[int, ...] = (),
    agent: str = "py:tests.run.agents:scripted",
    attempt: int = 1,
    timeout: float = 10.0,
    limits: Limits = DEFAULT_LIMITS,
    case_id: str = "case_1",
    **env: Any,
) -> AttemptJob:
    spec = EnvSpec(
        initial_state=state or {},
        tools={t.name: t for t in tools},
        faults=faults,
        permissions=permissions,
        confirmations=confirmations,
        corpora=env.pop("corpora", ()),
        effective_at=env.pop("effective_at", None),
        **env,
    )
    return AttemptJob(
        case_id,
        "v1",
        v,
        spec,
        agent,
        {},
        seed=attempt,
        attempt=attempt,
        timeout_s=timeout,
        limits=limits,
    )


@dataclass(frozen=True)
class RunTask:
    """Task-shaped value (case identity + view + environment) for driver tests."""

    case_id: str
    case_version: str
    agent: AgentView
    env: EnvSpec
    meta: dict[str, Any] = field(default_factory=dict)
    digest: str = "digest-1"
    fixture_versions: dict[str, str] = field(default_factory=dict)


def task_of(j: AttemptJob, **kw: Any) -> RunTask:
    return RunTask(j.case_id, j.case_version, j.agent, j.env, **kw)


def run_attempt(j: AttemptJob) -> dict[str, Any]:
    """One attempt's record as the driver writes it (its JSON object): what these tests
    read of a record (:func:`evalcase.run.runner.run_attempt` returns the typed record)."""
    return runner.run_attempt(j).to_json()


def as_json(records: Iterable[AttemptRecord]) -> list[dict[str, Any]]:
    """Records an executor yielded, as the driver writes them."""
    return [r.to_json() for r in records]
