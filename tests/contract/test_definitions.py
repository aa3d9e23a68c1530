"""Shared CEL definitions (issue 45 item 1): a tool fixture that ``uses`` a ``cel``
fixture and calls its definitions behaves exactly as the same tool with the expressions
written in place; a changed definition changes the digest of every case whose tools call
it; an unknown definition, a wrong arity and a cycle stop the case from being built."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalcase.contract import definitions
from evalcase.contract.build import build_task
from evalcase.contract.task import Task
from evalcase.run.environment import Environment, Recorder

STATE: dict[str, Any] = {
    "lines": {
        "L1": {"phone": "555-1", "status": "active", "network": "4G", "roaming": False},
        "L2": {"phone": "555-2", "status": "suspended", "network": "none", "roaming": True},
    },
    "towers": {"T1": {"area": "north", "up": True}, "T2": {"area": "south", "up": False}},
}

NETWORK = {
    "definitions": {
        "line_of": {"params": ["phone"], "expr": "lines.filter(k, lines[k].phone == phone)"},
        "has_line": {"params": ["phone"], "expr": "size(line_of(phone)) > 0"},
        "network_of": {
            "params": ["phone", "fallback"],
            "expr": "has_line(phone) ? lines[line_of(phone)[0]].network : fallback",
        },
        "towers_up": {"params": [], "expr": "towers.filter(t, towers[t].up).size()"},
    }
}


def fixture(fixture_id: str, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"fixture_id": fixture_id, "fixture_version": "v1", "kind": kind, "data": data}


def tool_data(name: str, responses: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    params = {"type": "object", "properties": {"phone": {"type": "string"}}}
    return {"name": name, "parameters": params, "side_effect": True, "responses": responses,
            **extra}  # fmt: skip


# (name, responses calling the definitions, the same responses written out, calls)
CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]] = [
    (
        "network_status",
        [
            {"when": "has_line(args.phone)",
             "result_from": '{"network": network_of(args.phone, "unknown"), "up": towers_up()}'},
            {"error": {"code": "not_found",
                       "message_from": '"no line " + args.phone'
                                       ' + " (" + string(towers_up()) + ")"'}},
        ],
        [
            {"when": "size(lines.filter(k, lines[k].phone == args.phone)) > 0",
             "result_from": '{"network": size(lines.filter(k, lines[k].phone == args.phone)) > 0'
                            ' ? lines[lines.filter(k, lines[k].phone == args.phone)[0]].network'
                            ' : "unknown", "up": towers.filter(t, towers[t].up).size()}'},
            {"error": {"code": "not_found",
                       "message_from": '"no line " + args.phone + " (" +'
                                       ' string(towers.filter(t, towers[t].up).size()) + ")"'}},
        ],
        [{"phone": "555-1"}, {"phone": "555-2"}, {"phone": "555-9"}],
    ),
    (
        "toggle_roaming",
        [
            {"when": "has_line(args.phone)",
             "let": {"line": "line_of(args.phone)[0]"},
             "state_change": [
                 {"set": "lines.{line_of(args.phone)[0]}.roaming",
                  "value_from": "!lines[line].roaming"},
                 {"when": 'network_of(args.phone, "") == "none"',
                  "set": "lines.{line}.status", "value": "checked"},
             ],
             "result_from": "lines[line]"},
        ],
        [
            {"when": "size(lines.filter(k, lines[k].phone == args.phone)) > 0",
             "let": {"line": "lines.filter(k, lines[k].phone == args.phone)[0]"},
             "state_change": [
                 {"set": "lines.{lines.filter(k, lines[k].phone == args.phone)[0]}.roaming",
                  "value_from": "!lines[line].roaming"},
                 {"when": 'lines[lines.filter(k, lines[k].phone == args.phone)[0]].network'
                          ' == "none"',
                  "set": "lines.{line}.status", "value": "checked"},
             ],
             "result_from": "lines[line]"},
        ],
        [{"phone": "555-2"}, {"phone": "555-1"}, {"phone": "555-2"}, {"phone": "555-7"}],
    ),
]  # fmt: skip


def build(name: str, data: dict[str, Any], cel: dict[str, Any] | None = None) -> Task:
    fixtures = {name: fixture(name, "tool", data)}
    if cel is not None:
        fixtures["network"] = fixture("network", "cel", cel)
    case = {"case_id": "telecom_network_001", "case_version": "v1",
            "available_tools": [name], "state": STATE}  # fmt: skip
    built = build_task(case, fixtures, lambda kind, target: [target] if target in fixtures else [],
                       refs=[("available_tools", "fixture_id", name)])  # fmt: skip
    assert isinstance(built, Task), built
    return built


def play(task: Task, name: str, calls: list[dict[str, Any]]) -> list[Any]:
    env = Environment(task.env, Recorder())
    out: list[Any] = []
    for i, args in enumerate(calls):
        message = env.call(f"c{i}", name, json.dumps(args), user_confirmed=True)
        out.append(message["content"])
    out.append(env.state)
    return out


@pytest.mark.parametrize(("name", "shared", "inlined", "calls"), CASES, ids=[c[0] for c in CASES])
def test_a_shared_definition_behaves_as_the_inlined_expression(
    name: str, shared: list[dict[str, Any]], inlined: list[dict[str, Any]],
    calls: list[dict[str, Any]],
) -> None:  # fmt: skip
    with_uses = build(name, tool_data(name, shared, uses=["network"]), NETWORK)
    written_out = build(name, tool_data(name, inlined))
    assert play(with_uses, name, calls) == play(written_out, name, calls)
    # and something happened: the calls are not all errors
    assert "network" in with_uses.fixture_versions


def test_a_changed_definition_changes_the_digest_of_the_case() -> None:
    name, shared = CASES[0][0], CASES[0][1]
    before = build(name, tool_data(name, shared, uses=["network"]), NETWORK)
    changed = json.loads(json.dumps(NETWORK))
    changed["definitions"]["towers_up"]["expr"] = "towers.size()"
    after = build(name, tool_data(name, shared, uses=["network"]), changed)
    assert before.digest != after.digest
    assert play(before, name, [{"phone": "555-1"}]) != play(after, name, [{"phone": "555-1"}])


@pytest.mark.parametrize(
    ("defs", "when", "message"),
    [
        ({"a": {"params": ["x"], "expr": "x"}}, "b(1)", None),  # not a definition: CEL's error
        ({"a": {"params": ["x"], "expr": "x"}}, "a(1, 2) == 1", "takes 1 argument"),
        ({"a": {"params": [], "expr": "b()"}, "b": {"expr": "a()"}}, "a()", "cycle: a -> b -> a"),
        ({"a": {"params": ["x", "x"], "expr": "x"}}, "a(1, 1)", "distinct"),
        ({"a": {"params": ["in"], "expr": "1"}}, "a(1) == 1", "reserved word"),
    ],
)
def test_bad_definitions_stop_the_build(
    defs: dict[str, Any], when: str, message: str | None
) -> None:
    name = "network_status"
    data = tool_data(name, [{"when": when, "result": 1}], uses=["network"])
    fixtures = {name: fixture(name, "tool", data), "network": fixture("network", "cel",
                {"definitions": defs})}  # fmt: skip
    case = {"case_id": "telecom_network_001", "case_version": "v1", "available_tools": [name]}
    built = build_task(case, fixtures, lambda kind, target: [target])
    if message is None:
        assert isinstance(built, Task)
        return
    assert not isinstance(built, Task)
    assert any(message in p.message for p in built), built


def test_expansion_keeps_strings_methods_and_argument_scope() -> None:
    defs = definitions.definitions_of("d", {"data": {"definitions": {
        "plus": {"params": ["a", "b"], "expr": "a + b"},
        "size2": {"params": ["x"], "expr": "size(x) * 2"},
    }}})  # fmt: skip
    assert isinstance(defs, dict)
    text = 'plus(b, a) == 3 && "plus(1, 2)" != x.plus(1) && size2([1, plus(1, 1)]) == 4'
    expanded = definitions.expand(text, defs)
    assert isinstance(expanded, str)
    assert '"plus(1, 2)"' in expanded and "x.plus(1)" in expanded
    from evalcase.contract import cel

    # plus(b, a) with b=1, a=2 outside: the arguments are read in the caller's scope
    value = cel.evaluate(expanded.replace("x.plus(1)", '"y"'), {"a": 2, "b": 1})
    assert value is True


def test_literal_data_is_never_expanded() -> None:
    """``result``, ``value``, a ``{path: value}`` condition and the mapping form of
    ``state_change`` hold data, not CEL: text that looks like a call stays as written."""
    name = "network_status"
    literal = {"when": "has_line(1)", "note": "has_line(args.phone)"}
    responses = [
        {"when": {"phone": "has_line(x)"}, "result": literal,
         "state_change": {"lines.L1.note": "has_line(args.phone)"}},
        {"when": "has_line(args.phone)",
         "state_change": [{"set": "lines.L1.note", "value": literal}], "result": literal},
    ]  # fmt: skip
    fixtures = {
        name: fixture(name, "tool", tool_data(name, responses, uses=["network"])),
        "network": fixture("network", "cel", NETWORK),
    }
    expanded = definitions.expand_tool(fixtures[name], fixtures)
    assert not isinstance(expanded, definitions.DefinitionError)
    first, second = expanded["data"]["responses"]
    assert first == responses[0]
    assert second["result"] == literal and second["state_change"][0]["value"] == literal
    assert second["when"].startswith("cel.bind(")
