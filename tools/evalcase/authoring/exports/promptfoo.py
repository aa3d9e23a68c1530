r"""``promptfoo``: a promptfoo configuration without providers
(``promptfoo eval -c cases.yaml -r openai:gpt-4o-mini``).

``prompts`` holds one entry per way the cases are prompted, and each test names its own
(a test-level ``prompts`` filter), so a prompt applies only to the cases that run with it,
as in ``evalcase run``: ``case`` (a case as ``evalcase run`` sends it: its system prompt,
history and first user turn), one entry per prompt fixture some case names, labelled
``id@version`` (the case with that prompt rendered), and ``case (simulated user)`` (or
``id@version (simulated user)``) for the cases whose user is simulated. Nine cases are
nine tests, whatever the number of prompt fixtures. Each entry is a chat prompt: the JSON
message list of that case (the ``messages`` var), rendered by evalcase.

A case with a simulated user (``user_simulator:``) runs promptfoo's simulated-user
provider (``provider: {id: promptfoo:simulated-user, config: {instructions, maxTurns}}``
on its test): ``instructions`` are the case's persona and instructions as evalcase's own
simulator gets them (the ``<scenario>`` text of evalcase.run.user_prompt), ``maxTurns``
its ``max_turns`` less the scripted first user turn. promptfoo then converses with the
provider under test: its prompt is the case's system prompt (the ``agent_system`` var),
the history and a scripted first user turn are the conversation's start
(``initialMessages``), and promptfoo's conversation model plays the user (remote
generation: ``PROMPTFOO_REMOTE_GENERATION_URL``, or promptfoo's service). The text checks
read the agent's final answer, as evalcase's graders do (each has a ``transform``
picking the last assistant message of the conversation); the ``llm-rubric`` reads the
whole conversation. promptfoo renders the instructions and the starting messages as
templates: a case where one of them (or the system prompt) holds template syntax is
exported as a single prompt, and the summary lists its simulated user as not carried.

``tests`` holds each case as one promptfoo test case: ``description`` (the case ID),
``vars`` (the agent-visible part: ``input``, ``system``, ``history`` and ``context`` as
JSON text, ``tools``, the tool definitions in the OpenAI function-tool shape as JSON
text, for a provider config such as ``tools: '{{tools}}'``, and the messages above),
promptfoo reads var values and assertion values as Nunjucks templates: in JSON vars a
``{`` opening a tag is written ``\u007b``; ``input`` and ``system`` holding one are left
out (the messages carry them); a required or forbidden phrase holding one is a
``python`` assertion and the ``llm-rubric`` is wrapped in ``{% raw %}``;
``assert`` (the answer key) and ``metadata`` (case ID, versions, risk level, tags,
types, prompt). The agent part and the answer key stay apart: vars feed the prompt,
assertions only grade.

The answer key is the deterministic graders the case configures (what ``evalcase
grade`` runs, nothing more), check by check, as evalcase's graders read them:

- ``exact_match``: a ``javascript`` assertion comparing as the grader does (surrounding
  whitespace ignored, Python's whitespace set; ``ignore_case`` / ``ignore_whitespace``
  applied, ``casefold`` as a table: js_checks);
- ``must_include`` (the case's field, its constraints, or the grader's ``values``):
  ``contains`` per required point, ``contains-any`` for a point given as alternatives;
- ``must_not_include``: ``not-contains`` per phrase;
- ``regex``: one assertion per pattern (``re.search``), not promptfoo's own ``regex``,
  which runs JavaScript regular expressions (no ``(?i)``, ``\d`` / ``\w`` ASCII-only where
  Python's match full-width digits and Chinese text): a ``javascript`` assertion where
  js_checks rewrites the pattern with the same meaning, else a ``python`` one (promptfoo
  starts a Python process for each ``python`` assertion it checks);
- ``json_schema``: ``is-json`` with the schema;
- the reference, expected and negative behaviours, the rubric's dimensions and
  instructions and ``judge.instructions``: one ``llm-rubric``.

``python`` assertions need a Python 3 where promptfoo runs (``PROMPTFOO_PYTHON``); they
use the standard library only.

promptfoo tests replay prompts against providers: the simulated state, tool behaviour,
faults, permissions, corpora, final-state checks, side-effect policies, trace rules,
expected tool calls, scripted user turns after the first and ``role: tool`` turns are
not carried; the summary line counts the cases concerned. Validated against promptfoo's
own configuration schema and run with ``promptfoo eval`` in the tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import Ledger, Rendered, js_checks
from evalcase.authoring.exports.view import ExportCase
from evalcase.contract.prompt import Prompt
from evalcase.yamlwrite import round_trip_dump

NAME = "promptfoo"
SUFFIX = ".yaml"

SIMULATED_USER = "promptfoo:simulated-user"
# The agent's final answer in a simulated conversation (what evalcase's text graders
# read): the last assistant message of the conversation the provider returns.
FINAL_ANSWER = (
    "((context.metadata || {}).messages || [])"
    ".filter(m => m.role === 'assistant').map(m => m.content).pop() ?? ''"
)


def rubric_text(case: ExportCase) -> str | None:
    lines = []
    for reference in case.references:
        lines.append(f"The answer agrees with this reference: {reference}")
    lines += [f"The answer does this: {b}" for b in case.expected_behavior]
    lines += [f"The answer must not do this: {b}" for b in case.negative_behavior]
    if case.rubric:
        dimensions = case.rubric.get("dimensions")
        for dimension in dimensions if isinstance(dimensions, list) else ():
            name = dimension.get("name") if isinstance(dimension, dict) else dimension
            about = dimension.get("description") if isinstance(dimension, dict) else None
            lines.append(f"Score the dimension: {name}" + (f": {about}" if about else ""))
        if case.rubric.get("pass_threshold") is not None:
            lines.append(f"Pass threshold: {case.rubric['pass_threshold']}")
        instructions = case.rubric.get("judge_instructions")
        if isinstance(instructions, str):
            lines.append(instructions.strip())
    if case.judge_instructions:
        lines.append(case.judge_instructions)
    return "\n".join(lines) or None


def regex_code(pattern: str, wanted: bool) -> str:
    """A Python expression over ``output``: the regex grader's check of one pattern."""
    return f"(__import__('re').search({py(pattern)}, output) is {'not ' * wanted}None)"


def exact_assert(case: ExportCase) -> dict[str, Any]:
    """The exact_match check: a ``javascript`` assertion (js_checks restates it exactly)."""
    from evalcase.grade.graders.exact_match import normal

    ignore_case, ignore_space = case.exact_flags
    answers = sorted({normal(r, ignore_case, ignore_space) for r in case.exact})
    return {"type": "javascript", "value": js_checks.exact_code(answers, ignore_case, ignore_space)}


def regex_assert(pattern: str, wanted: bool) -> dict[str, Any]:
    """One pattern's check: ``javascript`` where the pattern means the same in both
    engines, else ``python`` (``re.search`` itself)."""
    code = js_checks.regex_code(pattern, wanted)
    if code is None:
        return {"type": "python", "value": regex_code(pattern, wanted)}
    return {"type": "javascript", "value": code}


# promptfoo renders var values and assertion values as Nunjucks templates (var values
# twice): text holding one of these openers would not reach it as written.
_OPENERS = re.compile(r"\{(?=[{%#])")
_CLOSERS = re.compile(r"(?<=[%#])\}")  # a stray one is a template syntax error


def templated(text: str) -> bool:
    return _OPENERS.search(text) is not None or _CLOSERS.search(text) is not None


def py(text: str) -> str:
    """A Python string literal of ``text`` without braces (written ``\\x7b`` and
    ``\\x7d``): promptfoo renders a ``python`` assertion's code as a template too."""
    return repr(text).replace("{", "\\x7b").replace("}", "\\x7d")


def py_list(texts: Sequence[str]) -> str:
    return "[" + ", ".join(py(t) for t in texts) + "]"


def required(group: Sequence[str]) -> dict[str, Any]:
    """The assert for one required point (its alternatives: any one)."""
    if any(templated(c) for c in group):  # Python reads it as written
        return {"type": "python", "value": f"any(c in output for c in {py_list(group)})"}
    if len(group) == 1:
        return {"type": "contains", "value": group[0]}
    return {"type": "contains-any", "value": list(group)}


def forbidden(phrase: str) -> dict[str, Any]:
    if templated(phrase):
        return {"type": "python", "value": f"({py(phrase)} not in output)"}
    return {"type": "not-contains", "value": phrase}


def text_asserts(case: ExportCase) -> list[dict[str, Any]]:
    """The deterministic checks, one promptfoo assert per point."""
    asserts: list[dict[str, Any]] = []
    if case.exact:
        asserts.append(exact_assert(case))
    asserts += [required(group) for group in case.must_include]
    asserts += [forbidden(t) for t in case.must_not_include]
    asserts += [regex_assert(p, True) for p in case.patterns]
    asserts += [regex_assert(p, False) for p in case.anti_patterns]
    if case.json_schema is not None:
        asserts.append({"type": "is-json", "value": dict(case.json_schema)})
    elif case.expects_json:
        asserts.append({"type": "is-json"})
    return asserts


def instructions(case: ExportCase) -> str | None:
    """The simulated user's instructions as evalcase's simulator reads them (persona, then
    the instructions), None when the case has no simulated user."""
    from evalcase.run.user_prompt import scenario

    return None if case.simulator is None else scenario(case.simulator.instructions)


def max_turns(case: ExportCase) -> int:
    """promptfoo's ``maxTurns``: simulated turns after the scripted first user turn
    (evalcase's ``max_turns`` counts both)."""
    assert case.simulator is not None
    return max(case.simulator.max_turns - (1 if case.user_turns else 0), 0)


def opening(case: ExportCase) -> list[dict[str, str]]:
    """The conversation's start: the history and a scripted first user turn."""
    return [m for m in case.messages() if m["role"] != "system"]


def simulated(case: ExportCase) -> bool:
    """Whether the case's test converses with promptfoo's simulated user: the case has one
    and promptfoo would read none of its texts as a template (it renders them)."""
    text = instructions(case)
    if text is None:
        return False
    texts = [text, case.system or "", *(m["content"] for m in opening(case))]
    return not any(templated(t) for t in texts)


def prompt_label(case: ExportCase) -> str:
    """The ``prompts`` entry the case's test runs with."""
    label = case.prompt or "case"
    return f"{label} (simulated user)" if simulated(case) else label


def written(case: ExportCase, test: Mapping[str, Any]) -> set[str]:
    """The parts of ``case`` the promptfoo test holds, read back from its vars and asserts."""
    out = set()
    variables = test["vars"]
    own = test.get("prompts") == [prompt_label(case)]
    provider = test.get("provider")
    config = provider.get("config") or {} if isinstance(provider, Mapping) else {}
    conversing = (
        isinstance(provider, Mapping)
        and provider.get("id") == SIMULATED_USER
        and config.get("instructions") == instructions(case)
        and config.get("maxTurns") == max_turns(case)
    )
    if conversing:  # the prompt is the system prompt; the conversation starts with the rest
        start = variables.get("initialMessages")
        has_start = start == _json(opening(case)) if opening(case) else start is None
        has_system = variables.get("agent_system") == case.system
        if own and has_start:
            out.add("simulated user")
        if case.system is not None and own and has_system:
            out.add("system prompt")
        if case.prompt is not None and own and has_start and has_system:
            out.add("prompt fixture")
        if case.history and has_start:
            out.add("conversation history")
    else:
        whole = own and variables.get("messages") == _json(case.messages())  # with the system
        if case.system is not None and (variables.get("system") == case.system or whole):
            out.add("system prompt")
        if case.prompt is not None and whole:
            out.add("prompt fixture")
        if variables.get("history"):
            out.add("conversation history")
    if variables.get("context"):
        out.add("context")
    if variables.get("tools"):
        out.add("tool definitions")
    if test.get("metadata", {}).get("case_id") == case.case_id:
        out.add("case IDs and labels")
    asserts = list(test.get("assert", ()))
    flat = [
        a for x in asserts for a in (x.get("assert", [x]) if x["type"] == "assert-set" else [x])
    ]
    # In a conversation a text check counts when it reads the final answer.
    text_checks = [a for a in flat if not conversing or a.get("transform") == FINAL_ANSWER]
    kinds = [(a["type"], json.dumps(a.get("value"), ensure_ascii=False)) for a in text_checks]

    def has(kind: str, value: Any) -> bool:
        return (kind, json.dumps(value, ensure_ascii=False)) in kinds

    def holds(expected: Mapping[str, Any]) -> bool:
        return has(str(expected["type"]), expected["value"])

    if case.exact and holds(exact_assert(case)):
        out.add("exact_match")

    if case.must_include and all(holds(required(g)) for g in case.must_include):
        out.add("must_include")
    if case.must_not_include and all(holds(forbidden(t)) for t in case.must_not_include):
        out.add("must_not_include")
    if (
        (case.patterns or case.anti_patterns)
        and all(holds(regex_assert(p, True)) for p in case.patterns)
        and all(holds(regex_assert(p, False)) for p in case.anti_patterns)
    ):
        out.add("regex")
    if case.json_schema is not None and has("is-json", dict(case.json_schema)):
        out.add("json_schema")
    rubric = next((str(a["value"]) for a in flat if a["type"] == "llm-rubric"), "")
    if rubric:
        if all(r in rubric for r in case.references):
            out.add("reference")
        if all(b in rubric for b in case.expected_behavior):
            out.add("expected behaviour")
        if all(b in rubric for b in case.negative_behavior):
            out.add("negative behaviour")
        if case.rubric is not None and all(
            f"Score the dimension: {d.get('name') if isinstance(d, dict) else d}" in rubric
            for d in case.rubric.get("dimensions") or ()
        ):
            out.add("rubric")
        if case.judge_instructions and case.judge_instructions in rubric:
            out.add("judge instructions")
    return out


def _json(value: Any) -> str:
    """JSON text for a var: a ``{`` that would open a Nunjucks tag or a ``}`` that would
    close one (only ever inside a string) is written ``\\u007b`` / ``\\u007d``, which the
    provider's JSON parser reads back as written."""
    text = _OPENERS.sub(r"\\u007b", json.dumps(value, ensure_ascii=False))
    return _CLOSERS.sub(r"\\u007d", text)


def test_case(case: ExportCase) -> dict[str, Any]:
    variables: dict[str, Any] = {"messages": _json(case.messages())}
    # Plain-text vars as written, unless promptfoo would read them as templates (the JSON
    # message list carries their text in any case).
    if not templated(case.input_text):
        variables["input"] = case.input_text
    if case.system and not templated(case.system):
        variables["system"] = case.system
    if case.history:
        variables["history"] = _json([{"role": r, "content": c} for r, c in case.history])
    if case.context:
        variables["context"] = _json(dict(case.context))
    if case.tools:
        variables["tools"] = _json(
            [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in case.tools
            ]
        )
    conversing = simulated(case)
    asserts = text_asserts(case)
    if conversing:  # the provider's output is the conversation: check the final answer
        asserts = [{**a, "transform": FINAL_ANSWER} for a in asserts]
    rubric = rubric_text(case)
    if rubric is not None:
        if templated(rubric) and "endraw" not in rubric:  # rendered once, as written
            rubric = "{% raw %}" + rubric + "{% endraw %}"
        asserts.append({"type": "llm-rubric", "value": rubric})
    test: dict[str, Any] = {"description": case.case_id, "vars": variables}
    test["prompts"] = [prompt_label(case)]  # its own prompt only, as evalcase runs it
    if conversing:
        if case.system:
            variables["agent_system"] = case.system
        if opening(case):
            variables["initialMessages"] = _json(opening(case))
        test["provider"] = {
            "id": SIMULATED_USER,
            "config": {"instructions": instructions(case), "maxTurns": max_turns(case)},
        }
    if asserts:
        test["assert"] = asserts
    labels = case.labels()
    if case.prompt is not None:
        labels["prompt"] = case.prompt
    test["metadata"] = {k: v for k, v in labels.items() if v not in (None, [], "")}
    return test


def prompt_entries(tests: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One entry per prompt a test names: ``case``, the prompt fixtures, then the
    simulated conversations (whose prompt is the agent's system prompt)."""
    labels = sorted(
        {str(t["prompts"][0]) for t in tests} or {"case"},
        key=lambda label: (label.endswith(" (simulated user)"), label != "case", label),
    )
    return [
        {
            "label": label,
            "raw": "{{ agent_system }}"
            if label.endswith(" (simulated user)")
            else "{{ messages }}",
        }
        for label in labels
    ]


def render(
    cases: Sequence[ExportCase],
    records: Sequence[Mapping[str, Any]],
    prompts: Mapping[str, Prompt] | None = None,
) -> Rendered:
    ledger = Ledger()
    tests = []
    for case in cases:
        test = test_case(case)
        ledger.account(case, written(case, test))
        tests.append(test)
    config = {
        "description": _description(cases),
        "prompts": prompt_entries(tests),
        "tests": tests,
    }
    return ledger.rendered(round_trip_dump(config), len(cases))


def _description(cases: Sequence[ExportCase]) -> str:
    names = sorted({f"{c.dataset_id} {c.dataset_version}".strip() for c in cases})
    return "evalcase export of " + (", ".join(names) or "no cases")
