"""What an export reads of a case: the agent-visible part, the answer key, and labels.

Built from the case's :class:`~evalcase.contract.task.Task` (``from_task``): the
agent part comes from its AgentView only, the answer key from its JudgeSpec only, labels
from its meta. The agent part is the view ``evalcase run`` gives the agent: a case that
names a prompt fixture (``prompt:``) has it applied (its system prompt, messages and user
template rendered; ``prompt`` is its ``id@version``); a prompt fixture applies to the
cases that name it, never to the others. An export writes the agent part
where the target tool feeds the model, the answer key where it grades, and never mixes
the two where the format allows keeping them apart.

The deterministic text checks (``exact_match``, ``must_include``, ``must_not_include``,
``regex``, ``json_schema``) are the graders the case configures, read with the graders'
own readers (grader options first, then the case's fields), so an export checks what
``evalcase grade`` checks and nothing more: a phrase in ``constraints.must_not_include``
that no configured grader reads is never a check; a ``must_include`` item that is a list
is "any one of these", every item is required; a list ``reference`` is alternatives. A
soft grader (``hard: false``) fails nothing alone, so it is no check either.

``present`` names every part a case has (its agent view and its judge view, field by
field); each format says which of them it wrote, and the export summary lists the rest
as not carried.

A case with a simulated user (``user_simulator:``) has the part ``simulated user``: a
format that cannot play one lists it as not carried, naming the case. A case whose user
acts on the state (``user_simulator.tools``, scripted turns that call them) has the
environment part ``user tools``: only jsonl carries it (in the case's environment), every
other format lists it as not carried.

``environment`` names what a case needs from a simulated environment (state, tool
behaviour, faults, permissions, retrieval corpora, final-state checks): formats that
only replay prompts cannot carry it, and their summary says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evalcase.contract.prompt import Prompt
from evalcase.contract.task import AgentView, Task, ToolCard, UserSimulatorSpec

# The graders whose verdict a script computes from the answer text alone.
TEXT_GRADERS = ("exact_match", "must_include", "must_not_include", "regex", "json_schema")

RISK_WORDS = {"P0": "critical", "P1": "high", "P2": "medium", "P3": "low"}


@dataclass(frozen=True)
class ExportCase:
    case_id: str
    case_version: str
    dataset_id: str
    # the version exported (the release's, else the manifest's); the case's own
    # ``dataset_version`` field, the version in which it last changed, is ``changed_in``
    dataset_version: str
    # the agent-visible part
    system: str | None
    history: tuple[tuple[str, str], ...]
    user_turns: tuple[str, ...]
    context: Mapping[str, Any]
    tools: tuple[ToolCard, ...]
    # the answer key
    expected_behavior: tuple[str, ...]
    negative_behavior: tuple[str, ...]
    reference: str | None
    must_include: tuple[tuple[str, ...], ...]  # every group required; a group's any one
    must_not_include: tuple[str, ...]
    expects_json: bool
    expected_tools: tuple[str, ...]
    forbidden_tools: tuple[str, ...]
    rubric: Mapping[str, Any] | None
    rubric_id: str | None
    # labels
    risk_level: str | None
    case_types: tuple[str, ...]
    tags: tuple[str, ...]
    roles: tuple[str, ...]
    scenario: str | None
    source: str | None
    environment: tuple[str, ...]
    fixtures: tuple[str, ...] = ()  # fixture IDs the case resolved (its context references)
    references: tuple[str, ...] = ()  # the reference as its alternatives (a list: any one)
    exact: tuple[str, ...] = ()  # exact_match's accepted answers, when it grades the case
    exact_flags: tuple[bool, bool] = (False, False)  # ignore_case, ignore_whitespace
    patterns: tuple[str, ...] = ()  # regex: must match
    anti_patterns: tuple[str, ...] = ()  # regex: must not match
    json_schema: Mapping[str, Any] | None = None
    text_graders: tuple[str, ...] = ()  # the deterministic graders that judge the case
    other_graders: tuple[str, ...] = ()  # configured graders that need more than the text
    judge_instructions: str | None = None  # evaluator_config.judge.instructions
    portable_key: Mapping[str, Any] = field(default_factory=dict)
    present: tuple[str, ...] = ()  # every part the case has (see ``parts``)
    prompt: str | None = None  # "id@version" of the prompt fixture applied to the view
    prompt_error: str | None = None  # why the case's prompt fixture could not be applied
    tool_turns: int = 0  # role: tool turns of its conversation (no agent view has them)
    view: AgentView | None = None  # the case's own agent view, no prompt fixture applied
    changed_in: str = ""  # the case's own dataset_version: the version it last changed in
    simulator: UserSimulatorSpec | None = None  # its simulated user (user_simulator:)

    @property
    def input_text(self) -> str:
        return self.user_turns[0] if self.user_turns else ""

    def messages(self) -> list[dict[str, str]]:
        """System prompt, history and the first user turn, as chat messages."""
        history = tuple((role, content) for role, content in self.history)
        return chat(self.system, history, self.user_turns)

    def labels(self) -> dict[str, Any]:
        """Governance and reporting labels: never part of the answer key."""
        return {
            "case_id": self.case_id,
            "case_version": self.case_version,
            "dataset_id": self.dataset_id,
            "dataset_version": self.dataset_version,
            "case_dataset_version": self.changed_in,
            "case_types": list(self.case_types),
            "risk_level": self.risk_level,
            "tags": list(self.tags),
            "dataset_role": list(self.roles),
            "scenario": self.scenario,
        }


def chat(
    system: str | None, history: Sequence[tuple[str, str]], user_turns: Sequence[str]
) -> list[dict[str, str]]:
    """System prompt, history and the first user turn, as chat messages."""
    out = [{"role": "system", "content": system}] if system else []
    out += [{"role": role, "content": content} for role, content in history]
    if user_turns:
        out.append({"role": "user", "content": user_turns[0]})
    return out


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping, else an empty one."""
    return value if isinstance(value, dict) else {}


def _texts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list):
        return tuple(str(v) for v in value if isinstance(v, str | int | float) and str(v).strip())
    return ()


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _strings(value: Any) -> tuple[str, ...]:
    return _texts(list(value) if isinstance(value, tuple) else value)


def _groups(items: list[Any]) -> tuple[tuple[str, ...], ...]:
    from evalcase.grade.spec import as_list

    out = []
    for item in items:
        choices = tuple(str(c) for c in as_list(item) if str(c).strip())
        if choices:
            out.append(choices)
    return tuple(out)


def unportable(task: Task) -> str | None:
    """Why no other tool would grade ``task`` as evalcase does, or None. ``must_include``
    with ``scope: assistant_messages``, ``ignore_case`` or ``ignore_punctuation`` looks at
    text or compares in ways promptfoo's ``contains``, Inspect's scorer and OpenAI evals'
    ``Includes`` do not (they read the final answer, as written): such a case is refused,
    never exported with a check that means something else."""
    from evalcase.grade.spec import options_of

    options = options_of(task.judge, "must_include")
    used = [
        f"{k}: {options[k]}" if k == "scope" else k
        for k in ("scope", "ignore_case", "ignore_punctuation")
        if options.get(k) not in (None, False, "final_answer")
    ]
    if not used:
        return None
    return (
        f"must_include uses {', '.join(used)}, which this format cannot grade as evalcase "
        "does (it reads the final answer as written); grade this case with evalcase, or "
        "drop the option to export it"
    )


def text_checks(task: Task) -> dict[str, Any]:
    """The deterministic text checks evalcase grades the case with, read by the graders'
    own readers: a grader configured on the case, or a case field that grader reads."""
    from evalcase.grade.graders._util import text_values
    from evalcase.grade.graders.regex import patterns
    from evalcase.grade.spec import grader_configs, options_of

    judge = task.judge
    # A soft grader (hard: false) decides nothing alone: no peer check may fail a case on
    # it, so it is not one (the summary lists it as a grader not carried).
    configured = {c.type for c in grader_configs(judge) if c.hard}
    text = mapping(dict(judge.text))
    out: dict[str, Any] = {}
    if "exact_match" in configured:
        opts = options_of(judge, "exact_match")
        refs = text_values(judge, opts, "expected", "reference", "expected_output")
        out["exact_match"] = (
            tuple(r for r in refs if isinstance(r, str)),
            (bool(opts.get("ignore_case")), bool(opts.get("ignore_whitespace"))),
        )
    # Only the graders the case configures: a phrase in ``constraints`` or a case field
    # that no configured grader reads is never checked by evalcase, so no export checks it.
    for name in ("must_include", "must_not_include"):
        if name in configured:
            values = text_values(judge, options_of(judge, name), "values", name)
            if values:
                out[name] = _groups(values)
    if "regex" in configured:
        must, must_not = patterns(judge)
        if must or must_not:
            out["regex"] = (tuple(must), tuple(must_not))
    if "json_schema" in configured:
        schema = (
            options_of(judge, "json_schema").get("schema")
            or text.get("json_schema")
            or text.get("output_schema")
        )
        if isinstance(schema, Mapping):
            out["json_schema"] = dict(schema)
    return out


def portable_key(task: Task, graders: tuple[str, ...]) -> dict[str, Any]:
    """The answer key as plain data a grader outside evalcase reads: the judge's text
    fields, the deterministic graders (with their options) and the rubric."""
    judge = task.judge
    from evalcase.grade.spec import grader_configs

    options = {c.type: dict(c.options) for c in grader_configs(judge)}
    key: dict[str, Any] = {
        "evalcase_answer_key": 1,
        "text": dict(judge.text),
        "graders": [{"type": g, "options": options.get(g, {})} for g in graders],
    }
    configured = set(options)
    key["model_graded"] = judge.rubric is not None or "llm_rubric" in configured or not graders
    if judge.rubric is not None:
        key["rubric"] = dict(judge.rubric.data)
    if isinstance(judge.judge.get("instructions"), str):
        key["judge_instructions"] = judge.judge["instructions"]
    return key


# The parts of a case an export may carry, in the order summaries list them.
PARTS = (
    "prompt fixture",
    "system prompt",
    "conversation history",
    "scripted user turns after the first",
    "simulated user",
    "context",
    "tool definitions",
    "reference",
    "expected behaviour",
    "negative behaviour",
    "must_include",
    "must_not_include",
    "regex",
    "exact_match",
    "json_schema",
    "rubric",
    "judge instructions",
    "expected and forbidden tool calls",
    "case IDs and labels",
    "tool turns in the conversation",
)


def parts(case: ExportCase) -> tuple[str, ...]:
    """The parts ``case`` has, from its agent view and judge view (plus its environment)."""
    has = {
        "prompt fixture": case.prompt is not None or case.prompt_error is not None,
        "system prompt": case.system is not None,
        "conversation history": bool(case.history),
        "scripted user turns after the first": len(case.user_turns) > 1,
        "simulated user": case.simulator is not None,
        "context": bool(case.context),
        "tool definitions": bool(case.tools),
        "reference": case.reference is not None,
        "expected behaviour": bool(case.expected_behavior),
        "negative behaviour": bool(case.negative_behavior),
        "must_include": bool(case.must_include),
        "must_not_include": bool(case.must_not_include),
        "regex": bool(case.patterns or case.anti_patterns),
        "exact_match": bool(case.exact),
        "json_schema": case.json_schema is not None,
        "rubric": case.rubric is not None,
        "judge instructions": case.judge_instructions is not None,
        "expected and forbidden tool calls": bool(case.expected_tools or case.forbidden_tools),
        "case IDs and labels": True,
        "tool turns in the conversation": case.tool_turns > 0,
    }
    graders = tuple(f"{g} grader" for g in case.other_graders)
    return tuple(p for p in PARTS if has[p]) + graders + case.environment


def own_prompt(task: Task, prompts: Mapping[str, Prompt]) -> Prompt | None:
    """The prompt fixture the case names (``prompt:``), None when it names none."""
    name = task.meta.get("prompt")
    return prompts.get(name) if isinstance(name, str) else None


def prompt_problem(task: Task, prompts: Mapping[str, Prompt]) -> str | None:
    """Why the case's own prompt cannot be applied (as ``evalcase run`` would refuse it)."""
    from evalcase.contract.prompt import PromptError, apply

    name = task.meta.get("prompt")
    if not isinstance(name, str):
        return None
    if name not in prompts:
        return f"prompt {name!r} does not exist (lint: EC340)"
    try:
        apply(prompts[name], task.agent)
    except PromptError as exc:
        return f"its prompt cannot be rendered (lint: EC341): {exc}"
    return None


def from_task(
    task: Task,
    prompts: Mapping[str, Prompt] | None = None,
    tool_turns: int = 0,
    dataset_version: str | None = None,
) -> ExportCase:
    """The export view of a built task: AgentView, JudgeSpec and meta kept apart. The
    agent part is the view ``evalcase run`` gives the agent: with the case's own prompt
    fixture applied (its rendered system prompt, messages and user template).
    ``dataset_version``: the version exported (evalcase.versioning.export's record: the
    release tag's, else the manifest's); without it, the case's own field stands in."""
    agent, env, judge, meta = task.agent, task.env, task.judge, task.meta
    prompt = own_prompt(task, prompts or {})
    prompt_error = prompt_problem(task, prompts or {})
    if prompt is not None and prompt_error is None:
        from evalcase.contract.prompt import apply

        agent = apply(prompt, agent)
    else:
        prompt = None
    text = mapping(dict(judge.text))
    expected: list[str] = []
    if judge.expected_calls is not None and judge.expected_calls.any_of:
        expected = [c.tool for c in judge.expected_calls.any_of[0].calls]
    expected += [t for t in judge.required_tools if t not in expected]
    environment = []
    for present, what in (
        (bool(env.initial_state), "state"),
        (bool(env.tools), "tool behaviour"),
        (bool(env.user_tools or env.user_calls), "user tools"),
        (bool(env.faults), "tool faults"),
        (bool(env.permissions), "permissions"),
        (bool(env.corpora), "retrieval corpus"),
        (judge.final_state_check is not None, "final-state checks"),
        (bool(judge.side_effect_policies), "side-effect policies"),
        (bool(judge.trace_rules), "trace rules"),
    ):
        if present:
            environment.append(what)
    reference = text.get("reference")
    from evalcase.grade.spec import grader_configs

    grader_types = {c.type for c in grader_configs(judge)}
    rubric = judge.rubric
    checks = text_checks(task)
    exact, flags = checks.get("exact_match", ((), (False, False)))
    must, must_not = checks.get("regex", ((), ()))
    graders = tuple(g for g in TEXT_GRADERS if g in checks)
    # Configured graders beyond the text: they judge calls, state, traces, citations
    # (and a text grader configured with nothing to check, which evalcase reports as an error).
    others = tuple(sorted(grader_types - set(graders) - {"llm_rubric"}))
    instructions = judge.judge.get("instructions")
    case = ExportCase(
        case_id=task.case_id,
        case_version=task.case_version,
        dataset_id=task.dataset_id,
        dataset_version=(
            dataset_version if dataset_version is not None else str(meta.get("dataset_version", ""))
        ),
        changed_in=str(meta.get("dataset_version", "")),
        system=agent.system,
        history=tuple((t.role, t.content) for t in agent.history),
        user_turns=agent.user_turns,
        context=dict(agent.context),
        tools=agent.tools,
        expected_behavior=_strings(text.get("expected_behavior")),
        negative_behavior=_strings(text.get("negative_behavior")),
        reference=_as_text(reference) if reference is not None else None,
        must_include=checks.get("must_include", ()),
        must_not_include=tuple(c for g in checks.get("must_not_include", ()) for c in g),
        expects_json="json_schema" in checks,
        expected_tools=tuple(expected),
        forbidden_tools=judge.forbidden_tools,
        rubric=dict(rubric.data) if rubric is not None else None,
        rubric_id=rubric.id if rubric is not None else None,
        risk_level=judge.risk_level or None,
        case_types=judge.case_types,
        tags=_strings(meta.get("tags")),
        roles=_strings(meta.get("dataset_role")),
        scenario=meta.get("scenario") if isinstance(meta.get("scenario"), str) else None,
        source=meta.get("source") if isinstance(meta.get("source"), str) else None,
        environment=tuple(environment),
        fixtures=tuple(sorted(task.fixture_versions)),
        references=(
            tuple(_as_text(r) for r in reference)
            if isinstance(reference, list)
            else ((_as_text(reference),) if reference is not None else ())
        ),
        exact=tuple(exact),
        exact_flags=flags,
        patterns=tuple(must),
        anti_patterns=tuple(must_not),
        json_schema=checks.get("json_schema"),
        text_graders=graders,
        other_graders=others,
        judge_instructions=instructions if isinstance(instructions, str) else None,
        portable_key=portable_key(task, graders),
        prompt=prompt.label if prompt is not None else None,
        prompt_error=prompt_error,
        tool_turns=tool_turns,
        view=task.agent,
        simulator=env.user_simulator,
    )
    return replace(case, present=parts(case))
