"""A user tool offered to the agent, or a call made by the wrong actor.

In a case with two actors on one state (``user_simulator.tools``, docs/contract.md#user-tools)
the simulated user's own tools are the user's alone: they are never offered to the agent
(``available_tools``, ``environment.tools``), a scripted user turn's ``calls`` name only
them, and an expected call names the actor that makes it (``actor: user`` for a user
tool; the agent, the default, for the others). A user tool the agent is offered lets the
agent fix the user's phone itself; an expected call with the wrong actor can never be
matched, so the case fails every attempt.

Passing::

    available_tools: [get_customer_by_phone]
    user_simulator:
      instructions: {reason_for_call: My phone has no service.}
      tools: [toggle_airplane_mode]
    expected_calls:
      calls: [{tool: toggle_airplane_mode, actor: user}]

Failing::

    available_tools: [get_customer_by_phone, toggle_airplane_mode]
    user_simulator:
      instructions: {reason_for_call: My phone has no service.}
      tools: [toggle_airplane_mode]
    expected_calls:
      calls: [{tool: get_customer_by_phone, actor: user}]
"""

from collections.abc import Iterable
from typing import Any

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.lint.user_script import script
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC618"
NAME = "user-tool-boundary"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def _names(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _plans(value: Any) -> list[tuple[tuple[str | int, ...], Any]]:
    """Each plan of ``expected_calls`` with its path."""
    if not isinstance(value, dict):
        return []
    alternatives = value.get("any_of")
    if isinstance(alternatives, list):
        return [(("expected_calls", "any_of", i), p) for i, p in enumerate(alternatives)]
    return [(("expected_calls",), value)]


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    simulator = data.get("user_simulator")
    raw_tools = simulator.get("tools") if isinstance(simulator, dict) else None
    user_tools = _names(raw_tools)
    environment = data.get("environment")
    offered = set(_names(data.get("available_tools")))
    if isinstance(environment, dict):
        offered |= set(_names(environment.get("tools")))
    for i, name in enumerate(raw_tools if isinstance(raw_tools, list) else []):
        if name in offered:
            line, col = doc.locate(("user_simulator", "tools", i))
            yield report(
                doc.path,
                line,
                col,
                f"{name!r} is one of the user's tools and is offered to the agent too: "
                "remove it from available_tools / environment.tools (the agent never "
                "sees the user's tools)",
            )
    for index, turn in script(data):
        calls = turn.get("calls")
        for j, call in enumerate(calls if isinstance(calls, list) else []):
            tool = call.get("tool") if isinstance(call, dict) else None
            if isinstance(tool, str) and tool not in user_tools:
                line, col = doc.locate(("interaction", index, "calls", j, "tool"))
                yield report(
                    doc.path,
                    line,
                    col,
                    f"this user turn calls {tool!r}, which is not one of "
                    "user_simulator.tools: add it there, or let the agent make the call",
                )
    for path, plan in _plans(data.get("expected_calls")):
        calls = plan.get("calls") if isinstance(plan, dict) else None
        for j, call in enumerate(calls if isinstance(calls, list) else []):
            if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
                continue
            tool, actor = call["tool"], call.get("actor", "agent")
            if actor == "user" and tool not in user_tools:
                line, col = doc.locate((*path, "calls", j, "actor"))
                yield report(
                    doc.path,
                    line,
                    col,
                    f"expected call {tool!r} says actor user, but {tool!r} is not one of "
                    "user_simulator.tools: no user call can match it; add the tool there "
                    "or drop actor: user",
                )
            elif actor != "user" and tool in user_tools and tool not in offered:
                line, col = doc.locate((*path, "calls", j, "tool"))
                yield report(
                    doc.path,
                    line,
                    col,
                    f"expected call {tool!r} is one of the user's tools, made by the agent: "
                    "no agent call can match it; add actor: user",
                )
