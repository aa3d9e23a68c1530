"""Build the :class:`~evalcase.contract.task.Task` of one case from its document and the
fixture documents it references.

``build_task(case, fixtures, resolve)``: ``fixtures`` maps fixture IDs to fixture
documents; ``resolve(kind, target)`` gives the fixture IDs one reference resolves to
(evalcase.index.refs, the one resolver; kind as in ``CaseFacts.refs``). Problems (a
dangling reference, a form that cannot run) come back as a list of :class:`Problem`
values instead of a Task; lint reports the same problems at their line and column.

Older forms are read too: ``expected_tool_sequence`` + ``expected_args`` become
``expected_calls`` (order ``in_order``), a fault's ``fault``/``on_call``/``detail`` become
``kind``/``when``/fields, ``{path: value}`` preconditions become CEL ``path == value``.

One module of about 900 lines, on purpose: the agent view, the environment and the
judge view of one case are built in one pass that reads each field once and reports
each problem once, so lint and the runner see the same problems; the three parts share
that pass's reference resolution and its problem list.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from evalcase.contract import definitions
from evalcase.contract import graders as graders_of
from evalcase.contract import state as state_model
from evalcase.contract.fields import part
from evalcase.contract.task import (
    FAULT_KINDS,
    INSTRUCTION_PARTS,
    MAX_TURNS_DEFAULT,
    MAX_TURNS_LIMIT,
    AgentView,
    CallPlan,
    Corpus,
    EnvSpec,
    ExpectedCall,
    ExpectedCalls,
    Fault,
    FinalStateCheck,
    GraderConfig,
    JudgeSpec,
    Passage,
    Permission,
    Response,
    Rubric,
    SideEffectPolicy,
    StateExpectation,
    StateOp,
    Task,
    ToolBehaviour,
    ToolCard,
    ToolError,
    Transition,
    Trigger,
    Turn,
    UserSimulatorSpec,
)

Resolve = Callable[[str, str], list[str]]

ORDERS = ("exact", "in_order", "any_order")
STATE_OPS = ("set", "delete", "append", "increment")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# evaluator_config keys that are not grader configuration
JUDGE_TEXT = (
    "goal",
    "user_goal",
    "expected_behavior",
    "negative_behavior",
    "reference",
    "constraints",
    "context_policy",
    "success_criteria",
    "failure_criteria",
    "safety_constraints",
    "expected_result_usage",
    "user_journey",
    "sop",
    "policy_constraints",
    "service_level",
    "business_success",
    "audit_requirement",
)
RAG_FIELDS = ("gold_evidence", "citation_requirement", "evaluation_metrics")
_META = (
    "title",
    "scenario",
    "user_task",
    "ability_tags",
    "difficulty",
    "source",
    "business_scenario",
    "risk_level",
    "dataset_version",
)


@dataclass(frozen=True)
class Problem:
    """Why a case cannot be built: the field (dotted) and what is wrong."""

    field: str
    message: str


def literal(value: Any) -> str:
    """A CEL literal for a YAML value (JSON syntax is valid CEL for these)."""
    return json.dumps(value, ensure_ascii=False)


def path_expr(path: str) -> str:
    """A dotted state path as a CEL selection (non-identifier keys indexed)."""
    parts = path.split(".")
    out = parts[0]
    for seg in parts[1:]:
        out += f".{seg}" if _IDENT.match(seg) else f"[{literal(seg)}]"
    return out


def sugar(path: str, value: Any) -> str:
    """CEL of one ``{path: value}`` entry: ``path == value``; a missing last field makes it
    false rather than an error (``has(a.b) && a.b == v``)."""
    expr = path_expr(path)
    parts = path.split(".")
    if len(parts) > 1 and all(_IDENT.match(p) for p in parts):
        return f"has({expr}) && {expr} == {literal(value)}"
    return f"{expr} == {literal(value)}"


def condition_text(item: Any) -> list[str]:
    """CEL conditions of a precondition item: a string as is, a mapping as one
    ``path == value`` per entry (the sugar for equality, see :func:`sugar`)."""
    if isinstance(item, str):
        return [item]
    if isinstance(item, Mapping):
        return [sugar(str(k), v) for k, v in item.items()]
    return []


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _strs(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(v) for v in value if isinstance(v, (str, int, float)))
    return ()


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _same(value: Any) -> Mapping[str, Any]:
    """The mapping itself, not a copy (state merging reuses its result per object)."""
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{a: {b: 1}, c.d: 2}`` -> ``{a.b: 1, c.d: 2}`` (dotted keys kept as written)."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        path = f"{prefix}{key}"
        if isinstance(item, Mapping) and item:
            out.update(flatten(item, path + "."))
        else:
            out[path] = item
    return out


# --- tool behaviour -----------------------------------------------------------------


def tool_error(value: Any) -> ToolError | None:
    if value is None:
        return None
    if isinstance(value, str):
        return ToolError(value)
    if isinstance(value, Mapping):
        return ToolError(
            _str(value.get("code"), "error"),
            _str(value.get("message")),
            _str(value.get("message_from")) or None,
        )
    return ToolError(str(value))


def _number(value: Any, default: int | float) -> int | float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return default


def state_op(item: Mapping[str, Any]) -> StateOp | None:
    """One step of a ``state_change`` list (lint reports a step of no known form)."""
    when = _str(item.get("when")) or None
    if "fail" in item:
        return StateOp("fail", "", value=tool_error(item["fail"]), when=when)
    if "foreach" in item:
        name = item.get("as", "item")
        return StateOp(
            "foreach",
            "",
            value_from=_str(item.get("foreach")) or None,
            when=when,
            as_=name if isinstance(name, str) and name else "item",
            do=state_ops(item.get("do")) if isinstance(item.get("do"), list) else (),
        )
    for op in STATE_OPS:
        if op in item:
            return StateOp(
                cast(Any, op),
                str(item[op]),
                item.get("value"),
                _str(item.get("value_from")) or None,
                _number(item.get("by", 1), 1),
                _str(item.get("by_from")) or None,
                when,
            )
    return None


def state_ops(value: Any) -> tuple[StateOp, ...]:
    """``state_change``: a mapping (sugar: set each path) or a list of operations."""
    if isinstance(value, Mapping):
        return tuple(StateOp("set", str(k), v) for k, v in value.items())
    ops: list[StateOp] = []
    for item in _list(value):
        if isinstance(item, Mapping):
            made = state_op(item)
            if made is not None:
                ops.append(made)
    return tuple(ops)


def lets(value: Any) -> tuple[tuple[str, str], ...]:
    """``let``: a mapping of name to CEL, kept in its written order."""
    if not isinstance(value, Mapping):
        return ()
    return tuple((str(k), v) for k, v in value.items() if isinstance(v, str))


def response(value: Mapping[str, Any]) -> Response:
    when = value.get("when")
    latency = value.get("latency_ms")
    return Response(
        when=when if isinstance(when, (Mapping, str)) else None,
        result=value.get("result"),
        result_from=_str(value.get("result_from")) or None,
        error=tool_error(value.get("error")),
        state_change=state_ops(value.get("state_change")),
        latency_ms=latency if isinstance(latency, int) else None,
        let=lets(value.get("let")),
        ends_conversation=value.get("ends_conversation") is True,
    )


def tool_behaviour(fixture_id: str, fixture: Mapping[str, Any]) -> ToolBehaviour:
    data = _dict(fixture.get("data"))
    default = data.get("default")
    latency = data.get("latency_ms")
    return ToolBehaviour(
        name=_str(data.get("name"), fixture_id),
        side_effect=bool(data.get("side_effect", False)),
        parameters=_dict(data.get("parameters")),
        responses=tuple(
            response(r) for r in _list(data.get("responses")) if isinstance(r, Mapping)
        ),
        default=response(default) if isinstance(default, Mapping) else None,
        handler=_str(data.get("handler")) or None,
        latency_ms=latency if isinstance(latency, int) else None,
        fixture_id=fixture_id,
        description=_str(data.get("description")) or _str(fixture.get("description")),
    )


def tool_card(fixture_id: str, fixture: Mapping[str, Any]) -> ToolCard:
    data = _dict(fixture.get("data"))
    return ToolCard(
        name=_str(data.get("name"), fixture_id),
        description=_str(data.get("description")) or _str(fixture.get("description")),
        parameters=_dict(data.get("parameters")),
    )


# --- faults and permissions -----------------------------------------------------------


def trigger(value: Any) -> Trigger | None:
    if value is None or value == "every":
        return Trigger(every=True)
    if isinstance(value, str):
        return Trigger(condition=value)
    if isinstance(value, Mapping):
        if isinstance(value.get("call"), int):
            return Trigger(calls=(value["call"],))
        if isinstance(value.get("calls"), list):
            return Trigger(calls=tuple(c for c in value["calls"] if isinstance(c, int)))
        if isinstance(value.get("first"), int):
            return Trigger(first=value["first"])
        if value.get("every") is True:
            return Trigger(every=True)
    return None


def fault(value: Mapping[str, Any], where: str) -> Fault | Problem:
    kind = value.get("kind", value.get("fault"))
    if kind not in FAULT_KINDS:
        return Problem(
            f"{where}.kind", f"unknown fault kind {kind!r}; one of {', '.join(FAULT_KINDS)}"
        )
    detail = value.get("detail")
    detail = detail if isinstance(detail, Mapping) else {}
    when_value = value.get("when")
    if when_value is None and isinstance(value.get("on_call"), int):
        when_value = {"call": value["on_call"]}
    when = trigger(when_value)
    if when is None:
        return Problem(
            f"{where}.when", "when must be {call: N}, {calls: [...]}, {first: N}, every, or CEL"
        )

    def pick(name: str, *aliases: str) -> Any:
        for key in (name, *aliases):
            if key in value:
                return value[key]
            if key in detail:
                return detail[key]
        return None

    code = pick("code")
    message = pick("message")
    latency = pick("latency_ms")
    retry = pick("retry_after_ms")
    return Fault(
        tool=_str(value.get("tool")),
        kind=kind,
        when=when,
        code=code if isinstance(code, str) else None,
        message=message if isinstance(message, str) else None,
        applied=bool(pick("applied", "applied_before_timeout")),
        latency_ms=latency if isinstance(latency, int) else None,
        retry_after_ms=retry if isinstance(retry, int) else None,
        data=pick("data"),
    )


def permissions(value: Any) -> tuple[list[Permission], list[Problem]]:
    out: list[Permission] = []
    problems: list[Problem] = []
    for name, policy in _dict(value).items():
        where = f"environment.permissions.{name}"
        if not isinstance(policy, Mapping):
            problems.append(
                Problem(
                    where,
                    "a permission is a named policy {tools: [...], condition: CEL, error: "
                    "{code, message}}; a bare value cannot be enforced",
                )
            )
            continue
        condition = policy.get("condition")
        conditions = condition_text(condition) if condition is not None else []
        if not conditions:
            problems.append(Problem(f"{where}.condition", "missing CEL condition"))
            continue
        error = tool_error(policy.get("error")) or ToolError("permission_denied")
        out.append(
            Permission(
                str(name),
                _strs(policy.get("tools")),
                " && ".join(f"({c})" for c in conditions) if len(conditions) > 1 else conditions[0],
                error,
            )
        )
    return out, problems


# --- expectations -------------------------------------------------------------------------


def call_plan(value: Mapping[str, Any]) -> CallPlan:
    order = value.get("order", "in_order")
    calls = expected_call_list(value.get("calls"))
    return CallPlan(order if order in ORDERS else "in_order", calls)


def expected_call_list(value: Any) -> tuple[ExpectedCall, ...]:
    """``[{tool, args, actor}]`` as expected calls (``actor`` ``agent`` unless ``user``)."""
    return tuple(
        ExpectedCall(
            _str(c.get("tool")),
            _dict(c.get("args")),
            "user" if c.get("actor") == "user" else "agent",
        )
        for c in _list(value)
        if isinstance(c, Mapping)
    )


def expected_calls(case: Mapping[str, Any]) -> ExpectedCalls | None:
    value = case.get("expected_calls")
    if isinstance(value, Mapping):
        if isinstance(value.get("any_of"), list):
            return ExpectedCalls(
                tuple(call_plan(p) for p in value["any_of"] if isinstance(p, Mapping))
            )
        return ExpectedCalls((call_plan(value),))
    sequence = case.get("expected_tool_sequence")
    args = _dict(case.get("expected_args"))
    if isinstance(sequence, list):
        calls = tuple(ExpectedCall(str(t), _dict(args.get(str(t)))) for t in sequence)
        return ExpectedCalls((CallPlan("in_order", calls),))
    if args:
        calls = tuple(ExpectedCall(str(t), _dict(a)) for t, a in args.items())
        return ExpectedCalls((CallPlan("any_order", calls),))
    return None


def transition(value: Any) -> Transition:
    if isinstance(value, str):
        return Transition(path="", label=value)
    item = _dict(value)
    return Transition(
        path=_str(item.get("path")),
        from_=tuple(_list(item.get("from"))),
        to=tuple(_list(item.get("to"))),
        label=_str(item.get("label")),
    )


def side_effect_policies(value: Any) -> tuple[SideEffectPolicy, ...]:
    out = []
    for item in _list(value):
        if not isinstance(item, Mapping):
            continue
        preconditions: list[str] = []
        for pre in _list(item.get("precondition")):
            preconditions += condition_text(pre)
        key = item.get("idempotency_key")
        keys = (
            tuple(k.strip() for k in key.split("+") if k.strip())
            if isinstance(key, str)
            else _strs(key)
        )
        out.append(
            SideEffectPolicy(
                tool=_str(item.get("tool")),
                preconditions=tuple(preconditions),
                confirmation_required=bool(item.get("confirmation_required", False)),
                idempotency_key=keys,
                allowed_transitions=tuple(
                    transition(t) for t in _list(item.get("allowed_state_transition"))
                ),
                forbidden_transitions=tuple(
                    transition(t) for t in _list(item.get("forbidden_state_transition"))
                ),
                audit_requirement=_strs(item.get("audit_requirement")),
            )
        )
    return tuple(out)


def offered_tools(case: Mapping[str, Any]) -> list[str]:
    """The tools a case offers: ``available_tools`` then ``environment.tools``."""
    environment = _dict(case.get("environment"))
    return _unique([*_strs(case.get("available_tools")), *_strs(environment.get("tools"))])


def resolve_policies(
    case_policy: Any, offered: Iterable[str], tool_policies: Mapping[str, Any]
) -> tuple[SideEffectPolicy, ...]:
    """The side-effect policies a case is graded with: its own ``side_effect_policy``
    entries, then, for each tool it offers that its own entries do not govern, the policy
    the tool's fixture declares (``tool_policies``: tool name -> the fixture's
    ``data.side_effect_policy``). A case's entry for a tool replaces the fixture's whole,
    never merged key by key: one policy says what the tool must respect. Lint (EC305,
    EC326) and grading both resolve them here."""
    own = side_effect_policies(case_policy)
    governed = {p.tool for p in own}
    inherited: list[SideEffectPolicy] = []
    for tool in offered:
        raw = tool_policies.get(tool)
        if tool in governed or not isinstance(raw, Mapping):
            continue
        inherited += [replace(p, tool=tool) for p in side_effect_policies({**raw, "tool": tool})]
    return own + tuple(inherited)


def fixture_policies(fixtures: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Tool name -> the ``data.side_effect_policy`` its tool fixture declares."""
    out: dict[str, Any] = {}
    for fixture_id, fixture in fixtures.items():
        if not isinstance(fixture, Mapping) or fixture.get("kind") != "tool":
            continue
        data = _dict(fixture.get("data"))
        if isinstance(data.get("side_effect_policy"), Mapping):
            out[_str(data.get("name"), fixture_id)] = data["side_effect_policy"]
    return out


def state_expectation(value: Mapping[str, Any]) -> StateExpectation:
    expected = value.get("expected")
    return StateExpectation(
        expected=flatten(expected) if isinstance(expected, Mapping) else {},
        unchanged=_strs(value.get("unchanged")),
        absent=_strs(value.get("absent")),
        asserts=_strs(value.get("assert")),
    )


def final_state_check(value: Any) -> FinalStateCheck | None:
    if not isinstance(value, Mapping):
        return None
    gold = value.get("from_expected_calls") is True
    paths = _strs(value.get("paths"))
    if isinstance(value.get("any_of"), list):
        return FinalStateCheck(
            tuple(state_expectation(v) for v in value["any_of"] if isinstance(v, Mapping)),
            gold,
            paths,
        )
    if value.get("type") == "state_unchanged" and "unchanged" not in value:
        value = {**value, "unchanged": ["*"]}
    return FinalStateCheck((state_expectation(value),), gold, paths)


# --- the simulated user ---------------------------------------------------------------


def user_simulator(value: Any) -> UserSimulatorSpec | Problem | None:
    """``user_simulator:`` as the environment's spec; a Problem when it cannot run."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return Problem("user_simulator", "user_simulator is a mapping {instructions, max_turns}")
    raw = value.get("instructions")
    instructions: dict[str, str] = {}
    if isinstance(raw, str) and raw.strip():
        instructions["text"] = raw
    elif isinstance(raw, Mapping):
        instructions = {
            k: raw[k] for k in INSTRUCTION_PARTS if isinstance(raw.get(k), str) and raw[k].strip()
        }
    if not instructions:
        return Problem(
            "user_simulator.instructions",
            "a simulated user needs instructions (persona, reason_for_call, known_info, "
            "unknown_info, task_instructions, or one text)",
        )
    turns = value.get("max_turns", MAX_TURNS_DEFAULT)
    if isinstance(turns, bool) or not isinstance(turns, int) or not 1 <= turns <= MAX_TURNS_LIMIT:
        return Problem(
            "user_simulator.max_turns", f"max_turns must be 1 to {MAX_TURNS_LIMIT}, not {turns!r}"
        )
    limits: dict[str, int | None] = {}
    for name in ("max_steps", "max_tool_errors"):
        limit = value.get(name)
        bad = isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        if limit is not None and bad:
            return Problem(f"user_simulator.{name}", f"{name} must be a whole number >= 1")
        limits[name] = limit
    tools = tuple(_unique(_strs(value.get("tools"))))
    return UserSimulatorSpec(
        instructions, turns, tools, limits["max_steps"], limits["max_tool_errors"]
    )


# --- the task -----------------------------------------------------------------------------


def _digest(value: Any, size: int = 16) -> str:
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    return hashlib.blake2b(blob, digest_size=size).hexdigest()


_FIXTURE_TEXT: dict[int, tuple[Any, bytes]] = {}


def _text(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")


def _case_digest(case: Any, used: Mapping[str, Any]) -> str:
    """``_digest({"case": case, "fixtures": used})``, the same bytes hashed, with each
    fixture's JSON made once per fixture object: 50 cases of a 3 MB state fixture would
    otherwise serialise it 50 times."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(b'{"case": ' + _text(case) + b', "fixtures": {')
    for i, (fixture_id, fixture) in enumerate(sorted(used.items())):
        hit = _FIXTURE_TEXT.get(id(fixture))
        if hit is None or hit[0] is not fixture:
            if len(_FIXTURE_TEXT) > 4096:
                _FIXTURE_TEXT.clear()
            hit = _FIXTURE_TEXT[id(fixture)] = (fixture, _text(fixture))
        digest.update((b", " if i else b"") + _text(fixture_id) + b": " + hit[1])
    digest.update(b"}}")
    return digest.hexdigest()


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def passages(fixture: Mapping[str, Any], effective_at: str | None) -> tuple[Passage, ...]:
    out = []
    for doc in _list(_dict(fixture.get("data")).get("documents")):
        if not isinstance(doc, Mapping):
            continue
        doc_date = doc.get("effective_date")
        for p in _list(doc.get("passages")):
            if not isinstance(p, Mapping):
                continue
            date = p.get("effective_date", doc_date)
            date = str(date) if date is not None else None
            if effective_at is not None and date is not None and date > effective_at:
                continue
            out.append(
                Passage(
                    _str(doc.get("doc_id")),
                    _str(p.get("passage_id")),
                    _str(p.get("text")),
                    _str(doc.get("title")),
                    date,
                )
            )
    return tuple(out)


def gold_passages(gold: Any, corpora: Iterable[Corpus]) -> list[dict[str, Any]]:
    """The text of each gold evidence passage, from the case's corpora (for the judge)."""
    by_key = {(p.doc_id, p.passage_id): p for c in corpora for p in c.passages}
    out = []
    for item in _list(gold):
        if not isinstance(item, Mapping):
            continue
        passage = by_key.get((_str(item.get("doc_id")), _str(item.get("passage_id"))))
        if passage is not None:
            out.append({"doc_id": passage.doc_id, "passage_id": passage.passage_id,
                        "title": passage.title, "text": passage.text})  # fmt: skip
    return out


def grader_config(raw: Mapping[str, Any]) -> GraderConfig:
    """One configured grader: its type, weight (None when not written), ``hard`` (default
    true) and its other keys as options."""
    return GraderConfig(
        _str(raw.get("type")),
        float(raw["weight"]) if isinstance(raw.get("weight"), (int, float)) else None,
        {k: v for k, v in raw.items() if k not in ("type", "weight", "hard")},
        bool(raw.get("hard", True)),
    )


def judge_view(
    case: Mapping[str, Any],
    fixtures: Mapping[str, Mapping[str, Any]],
    corpora: Iterable[Corpus] = (),
) -> JudgeSpec:
    """The judge's view of one case: what ``build_task`` puts in ``Task.judge``. Lint
    calls it with no fixtures (a rubric is then known by its ID only), so the graders'
    ``needs`` predicates see what they will see at grading time."""
    evaluator = _dict(case.get("evaluator_config"))
    graders = tuple(
        grader_config(g) for g in graders_of.configured(evaluator) if isinstance(g, Mapping)
    )
    rubric: Rubric | None = None
    judge = _dict(evaluator.get("judge"))
    rubric_ref = case.get("rubric", judge.get("rubric"))
    if isinstance(rubric_ref, str) and rubric_ref:
        # Without the fixture (lint reads one file) the rubric is known by its ID only.
        rubric_fixture = _dict(fixtures.get(rubric_ref))
        rubric = Rubric(
            rubric_ref,
            _str(rubric_fixture.get("fixture_version")) or None,
            _dict(rubric_fixture.get("data")),
        )
    elif isinstance(rubric_ref, Mapping):
        rubric = Rubric(None, None, dict(rubric_ref))
    elif isinstance(rubric_ref, list) and rubric_ref:  # inline: dimension names only
        rubric = Rubric(None, None, {"dimensions": list(rubric_ref)})
    calls = expected_calls(case)
    required: tuple[str, ...] = ()
    if calls is not None and calls.any_of:
        sets = [set(c.tool for c in plan.calls) for plan in calls.any_of]
        common = set.intersection(*sets)
        required = tuple(t for t in _unique(c.tool for c in calls.any_of[0].calls) if t in common)
    trace = _dict(case.get("trace_requirement"))
    rag: dict[str, Any] = {k: case[k] for k in RAG_FIELDS if k in case}
    gold = gold_passages(rag.get("gold_evidence"), corpora)
    if gold:
        rag["gold_passages"] = gold
    pass_k = evaluator.get("pass_k")
    return JudgeSpec(
        case_id=_str(case.get("case_id")),
        case_version=_str(case.get("case_version")),
        risk_level=_str(case.get("risk_level")),
        case_types=_strs(case.get("case_types")),
        expected_calls=calls,
        forbidden_tools=_strs(case.get("forbidden_tools")),
        required_tools=required,
        side_effect_policies=resolve_policies(
            case.get("side_effect_policy"), offered_tools(case), fixture_policies(fixtures)
        ),
        final_state_check=final_state_check(case.get("final_state_check")),
        graders=graders,
        rule_checks=_strs(evaluator.get("rule_checks")),
        rubric=rubric,
        judge=judge,
        pass_k=pass_k if isinstance(pass_k, int) else None,
        text={k: case[k] for k in JUDGE_TEXT if k in case},
        rag=rag,
        trace_rules=_strs(trace.get("rules")),
        raw=part(dict(case), "judge"),
    )


def _effective_at(case: Mapping[str, Any]) -> str | None:
    """``environment.effective_at``, else ``environment_requirements.effective_at``."""
    effective_at = _dict(case.get("environment")).get("effective_at")
    if effective_at is None:
        effective_at = _dict(case.get("environment_requirements")).get("effective_at")
    return str(effective_at) if effective_at is not None else None


def _initial_state(
    case: Mapping[str, Any], fixtures: Mapping[str, Mapping[str, Any]], problems: list[Problem]
) -> tuple[state_model.MergedState, tuple[str, ...], list[Turn]]:
    """State: tool cases' ``state``, agent cases' ``initial_state``, state fixtures in
    ``context``, merged (a conflict is a problem); and the conversation fixtures' turns."""
    state_parts: list[tuple[str, Any]] = []
    state_ids: list[str] = []
    conversation: list[Turn] = []
    inline: dict[str, Any] = {}
    for fixture_id in _strs(_dict(case.get("context")).get("fixtures")):
        fixture = fixtures.get(fixture_id, {})
        data = _dict(fixture.get("data"))
        if fixture.get("kind") == "conversation":
            for turn in _list(data.get("turns")):
                if isinstance(turn, Mapping) and turn.get("role") in (
                    "system",
                    "user",
                    "assistant",
                ):
                    conversation.append(Turn(turn["role"], _str(turn.get("content"))))
        elif fixture.get("kind") == "state":
            state_parts.append((fixture_id, _same(fixture.get("data"))))
            state_ids.append(fixture_id)
    for block_name in ("state", "initial_state"):
        block = case.get(block_name)
        if not isinstance(block, Mapping):
            continue
        for fixture_id in _strs(block.get("fixtures")):
            state_parts.append((fixture_id, _same(fixtures.get(fixture_id, {}).get("data"))))
            state_ids.append(fixture_id)
        inline.update(state_model.inline_state(block))
    merged = state_model.merge(state_parts, inline)
    for conflict in merged.conflicts:
        problems.append(
            Problem(
                "state",
                f"{conflict.path} is {conflict.first_value!r} in {conflict.first} and "
                f"{conflict.second_value!r} in {conflict.second}",
            )
        )
    return merged, tuple(state_ids), conversation


Expansions = dict[str, Mapping[str, Any] | definitions.DefinitionError]


def _with_definitions(
    case: Mapping[str, Any],
    fixtures: Mapping[str, Mapping[str, Any]],
    problems: list[Problem],
    expansions: Expansions | None = None,
) -> tuple[Mapping[str, Mapping[str, Any]], list[str]]:
    """``fixtures`` with the shared CEL definitions (``data.uses``) expanded into every
    tool fixture the case offers, the agent's and the user's (evalcase.contract.definitions),
    and the ``cel`` fixtures they use: part of the case's digest and fixture versions,
    so a changed definition changes every case whose tools call it. ``expansions``: each
    tool's expansion by name, kept by a caller that builds many cases from this same
    ``fixtures`` (a dataset's load), so that a tool is expanded once, not once per case."""
    environment = _dict(case.get("environment"))
    simulator = _dict(case.get("user_simulator"))
    names = _unique(
        [
            *_strs(case.get("available_tools")),
            *_strs(environment.get("tools")),
            *_strs(simulator.get("tools")),
        ]
    )
    out = dict(fixtures)
    used: dict[str, None] = {}
    for name in names:
        fixture = fixtures.get(name)
        if fixture is None or fixture.get("kind") != "tool" or not definitions.uses_of(fixture):
            continue
        if expansions is not None and name in expansions:
            expanded = expansions[name]
        else:
            expanded = definitions.expand_tool(fixture, fixtures)
            if expansions is not None:
                expansions[name] = expanded
        if isinstance(expanded, definitions.DefinitionError):
            problems.append(Problem(f"tool {name}", expanded.message))
            continue
        out[name] = expanded
        used.update(dict.fromkeys(definitions.uses_of(fixture)))
    return out, list(used)


def _tools(
    case: Mapping[str, Any], fixtures: Mapping[str, Mapping[str, Any]]
) -> tuple[list[ToolCard], dict[str, ToolBehaviour]]:
    """What the agent may call: cards for the agent and behaviours for the environment."""
    environment = _dict(case.get("environment"))
    tool_names = _unique([*_strs(case.get("available_tools")), *_strs(environment.get("tools"))])
    cards: list[ToolCard] = []
    behaviours: dict[str, ToolBehaviour] = {}
    for name in tool_names:
        tool_fixture = fixtures.get(name)
        if tool_fixture is None or tool_fixture.get("kind") != "tool":
            continue
        cards.append(tool_card(name, tool_fixture))
        behaviours[name] = tool_behaviour(name, tool_fixture)
    return cards, behaviours


def _user_tools(
    simulator: UserSimulatorSpec | None, fixtures: Mapping[str, Mapping[str, Any]]
) -> dict[str, ToolBehaviour]:
    """The behaviours of the user's own tools (``user_simulator.tools``): environment-side
    only, no card (the agent is never offered them)."""
    out: dict[str, ToolBehaviour] = {}
    for name in simulator.tools if simulator is not None else ():
        tool_fixture = fixtures.get(name)
        if tool_fixture is not None and tool_fixture.get("kind") == "tool":
            out[name] = tool_behaviour(name, tool_fixture)
    return out


def _faults(environment: Mapping[str, Any], problems: list[Problem]) -> list[Fault]:
    faults: list[Fault] = []
    for i, item in enumerate(_list(environment.get("faults"))):
        if isinstance(item, Mapping):
            made = fault(item, f"environment.faults.{i}")
            if isinstance(made, Problem):
                problems.append(made)
            else:
                faults.append(made)
    return faults


def _corpora(
    case: Mapping[str, Any],
    fixtures: Mapping[str, Mapping[str, Any]],
    resolve: Resolve,
    effective_at: str | None,
) -> tuple[list[Corpus], list[str]]:
    """The corpora the case names (``corpus_version``, ``knowledge_base``), with their
    passages in effect at ``effective_at``, and the fixture IDs they resolved to."""
    environment = _dict(case.get("environment"))
    corpora: list[Corpus] = []
    corpus_ids: list[str] = []
    requirements = _dict(case.get("environment_requirements"))
    if isinstance(requirements.get("corpus_version"), str):
        corpus_ids += resolve("corpus_version", requirements["corpus_version"])
    if isinstance(environment.get("knowledge_base"), str):
        corpus_ids += resolve("knowledge_base", environment["knowledge_base"])
    for fixture_id in _unique(corpus_ids):
        fixture = fixtures.get(fixture_id, {})
        data = _dict(fixture.get("data"))
        corpora.append(
            Corpus(
                fixture_id,
                _str(data.get("corpus_version")) or None,
                _str(data.get("knowledge_base")) or None,
                passages(fixture, effective_at),
            )
        )
    return corpora, corpus_ids


@dataclass(frozen=True)
class _Script:
    """The conversation as the runner plays it: history, the user turns to send, each
    turn's ``when`` and the turns that confirm."""

    history: tuple[Turn, ...]
    user_turns: tuple[str, ...]
    conditions: tuple[str | None, ...]
    confirmations: tuple[int, ...]
    user_calls: tuple[tuple[ExpectedCall, ...], ...] = ()


def _script(case: Mapping[str, Any], conversation: list[Turn]) -> _Script:
    """Assistant turns (and what precedes them) are history; the user turns after the last
    assistant turn are what the agent answers."""
    interaction = [t for t in _list(case.get("interaction")) if isinstance(t, Mapping)]
    history = list(conversation)
    user_turns: list[str] = []
    conditions: list[str | None] = []
    confirmations: list[int] = []
    user_calls: list[tuple[ExpectedCall, ...]] = []
    last_assistant = max(
        (i for i, t in enumerate(interaction) if t.get("role") == "assistant"), default=-1
    )
    for i, turn in enumerate(interaction):
        role, content = turn.get("role"), _str(turn.get("content"))
        if i <= last_assistant:
            if role in ("system", "user", "assistant"):
                history.append(Turn(role, content))
        elif role == "user":
            if turn.get("confirms") is True:
                confirmations.append(len(user_turns))
            user_turns.append(content)
            user_calls.append(expected_call_list(turn.get("calls")))
            when = turn.get("when")
            conditions.append(when if isinstance(when, str) and when.strip() else None)
        elif role == "system":
            history.append(Turn("system", content))
    if not any(t.get("role") == "user" for t in interaction):
        # ``input`` is the first user turn unless the interaction scripts the user's
        # turns (an interaction of history only, e.g. a simulated case's assistant
        # opening, still sends it); a simulated case without it lets the user open.
        value = case.get("input")
        if isinstance(value, str):
            user_turns.append(value)
        elif value is not None:
            user_turns.append(json.dumps(value, ensure_ascii=False))
    return _Script(
        tuple(history),
        tuple(user_turns),
        tuple(conditions),
        tuple(confirmations),
        tuple(user_calls) if any(user_calls) else (),
    )


def first_user_turn(case: Mapping[str, Any]) -> str | None:
    """The first user turn the agent answers, from the case's data alone: what the built
    task's ``agent.user_turns[0]`` is (a scripted interaction's first user turn after its
    history, else ``input``, JSON when it is not text), without building the task."""
    turns = _script(case, []).user_turns
    return turns[0] if turns else None


def _agent_view(
    case: Mapping[str, Any], script: _Script, cards: list[ToolCard], effective_at: str | None
) -> AgentView:
    """All the agent may receive of the case."""
    generation = _dict(case.get("generation_config"))
    system = generation.pop("system_prompt", None)
    params: dict[str, Any] = dict(generation)
    if effective_at is not None:
        params["now"] = effective_at
    context = _dict(case.get("context"))
    return AgentView(
        attempt_key=_digest(
            {"case": _str(case.get("case_id")), "version": _str(case.get("case_version"))}, 8
        ),
        system=system if isinstance(system, str) else None,
        history=script.history,
        user_turns=script.user_turns,
        context={k: v for k, v in context.items() if k != "fixtures"},
        tools=tuple(cards),
        params=params,
    )


def _task_meta(case: Mapping[str, Any]) -> dict[str, Any]:
    """What reports need of the case beyond its judge view (title, tags, roles...)."""
    meta = {k: case[k] for k in _META if k in case}
    metadata = _dict(case.get("metadata"))
    meta.update({k: metadata[k] for k in ("tags", "dataset_role", "owner") if k in metadata})
    meta["case_types"] = list(_strs(case.get("case_types")))
    if isinstance(case.get("prompt"), str):
        meta["prompt"] = case["prompt"]  # the runner applies it (evalcase.contract.prompt)
    return meta


def build_task(
    case: Mapping[str, Any],
    fixtures: Mapping[str, Mapping[str, Any]],
    resolve: Resolve,
    *,
    refs: Iterable[tuple[str, str, str]] = (),
    dataset_id: str = "",
    path: str = "",
    expansions: Expansions | None = None,
) -> Task | list[Problem]:
    """The Task of one case (see the module documentation). ``refs``: the case's
    references ``(field, kind, target)`` (``CaseFacts.refs``); each must resolve.
    ``expansions``: kept across the cases built from the same ``fixtures``
    (:func:`_with_definitions`)."""
    problems: list[Problem] = []
    used: dict[str, None] = {}
    # Every reference resolves (the same references lint checks).
    for field_name, kind, target in refs:
        hits = resolve(kind, target)
        if not hits:
            problems.append(Problem(field_name, f"{target!r} resolves to no fixture"))
        used.update(dict.fromkeys(hits))

    fixtures, definition_ids = _with_definitions(case, fixtures, problems, expansions)
    used.update(dict.fromkeys(definition_ids))
    environment = _dict(case.get("environment"))
    effective_at = _effective_at(case)
    merged, state_ids, conversation = _initial_state(case, fixtures, problems)
    cards, behaviours = _tools(case, fixtures)
    faults = _faults(environment, problems)
    perms, perm_problems = permissions(environment.get("permissions"))
    problems += perm_problems
    corpora, corpus_ids = _corpora(case, fixtures, resolve, effective_at)
    used.update(dict.fromkeys(corpus_ids))
    script = _script(case, conversation)
    simulator = user_simulator(case.get("user_simulator"))
    if isinstance(simulator, Problem):
        problems.append(simulator)
        simulator = None

    env = EnvSpec(
        initial_state=merged.document,
        tools=behaviours,
        faults=tuple(faults),
        permissions=tuple(perms),
        corpora=tuple(corpora),
        confirmations=script.confirmations,
        effective_at=effective_at,
        state_fixtures=state_ids,
        sandbox=environment.get("sandbox"),
        user_conditions=script.conditions if any(c is not None for c in script.conditions) else (),
        user_simulator=simulator,
        user_tools=_user_tools(simulator, fixtures),
        user_calls=script.user_calls,
    )
    judge_spec = judge_view(case, fixtures, corpora)
    if (
        judge_spec.final_state_check is not None
        and judge_spec.final_state_check.from_expected_calls
    ):
        # The grader replays the expected calls in this environment (evalcase.run.gold_replay).
        judge_spec = replace(judge_spec, replay_env=env)
    if problems:
        return problems
    fixture_versions = {
        fid: _str(fixtures[fid].get("fixture_version")) for fid in sorted(used) if fid in fixtures
    }
    return Task(
        case_id=_str(case.get("case_id")),
        case_version=_str(case.get("case_version")),
        dataset_id=dataset_id or _str(case.get("dataset_id")),
        agent=_agent_view(case, script, cards, effective_at),
        env=env,
        judge=judge_spec,
        meta=_task_meta(case),
        digest=_case_digest(case, {f: fixtures.get(f) for f in sorted(used)}),
        fixture_versions=fixture_versions,
        path=path,
    )
