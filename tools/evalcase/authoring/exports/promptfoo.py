r"""``promptfoo``: a promptfoo configuration without providers
(``promptfoo eval -c cases.yaml -r openai:gpt-4o-mini``).

``prompts`` holds one entry per way evalcase can prompt a case: ``case`` (each case as
``evalcase run`` sends it: its system prompt, history and first user turn, with its own
prompt fixture rendered) and one entry per prompt fixture of the revision, labelled
``id@version`` (the case run with that prompt, as ``evalcase run --prompt id`` does), so
promptfoo's prompt × case grid is evalcase's. Each entry is a chat prompt: the JSON
message list of that case, in a var (``messages``, ``messages__<prompt_id>``) the entry
names, rendered by evalcase (a case a prompt fixture cannot be rendered for lacks that
var, and the summary lists it).

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

- ``exact_match``: a ``python`` assertion comparing as the grader does (surrounding
  whitespace ignored; ``ignore_case`` / ``ignore_whitespace`` applied);
- ``must_include`` (the case's field, its constraints, or the grader's ``values``):
  ``contains`` per required point, ``contains-any`` for a point given as alternatives;
- ``must_not_include``: ``not-contains`` per phrase;
- ``regex``: a ``python`` assertion per pattern (``re.search``), because promptfoo's own
  ``regex`` runs JavaScript regular expressions: no ``(?i)``, and ``\d`` / ``\w`` are
  ASCII-only where Python's match full-width digits and Chinese text;
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

from evalcase.authoring.exports import Ledger, Rendered
from evalcase.authoring.exports.view import ExportCase, with_prompt
from evalcase.contract.prompt import Prompt
from evalcase.loader import round_trip_dump

NAME = "promptfoo"
SUFFIX = ".yaml"


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


def exact_code(case: ExportCase) -> str:
    """A Python expression over ``output``: the exact_match grader's comparison."""
    from evalcase.grade.graders.exact_match import _normal

    ignore_case, ignore_space = case.exact_flags
    answers = sorted({_normal(r, ignore_case, ignore_space) for r in case.exact})
    code = "output.strip()"
    if ignore_space:
        code = f"__import__('re').sub(r'\\s+', '', {code})"
    if ignore_case:
        code = f"{code}.casefold()"
    return f"{code} in {py_list(answers)}"


def regex_code(pattern: str, wanted: bool) -> str:
    """A Python expression over ``output``: the regex grader's check of one pattern."""
    return f"(__import__('re').search({py(pattern)}, output) is {'not ' * wanted}None)"


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
        asserts.append({"type": "python", "value": exact_code(case)})
    asserts += [required(group) for group in case.must_include]
    asserts += [forbidden(t) for t in case.must_not_include]
    asserts += [{"type": "python", "value": regex_code(p, True)} for p in case.patterns]
    asserts += [{"type": "python", "value": regex_code(p, False)} for p in case.anti_patterns]
    if case.json_schema is not None:
        asserts.append({"type": "is-json", "value": dict(case.json_schema)})
    elif case.expects_json:
        asserts.append({"type": "is-json"})
    return asserts


def written(case: ExportCase, test: Mapping[str, Any]) -> set[str]:
    """The parts of ``case`` the promptfoo test holds, read back from its vars and asserts."""
    out = set()
    variables = test["vars"]
    whole = variables.get("messages") == _json(case.messages())  # system prompt included
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
    kinds = [(a["type"], json.dumps(a.get("value"), ensure_ascii=False)) for a in flat]

    def has(kind: str, value: Any) -> bool:
        return (kind, json.dumps(value, ensure_ascii=False)) in kinds

    if case.exact and has("python", exact_code(case)):
        out.add("exact_match")

    def holds(expected: Mapping[str, Any]) -> bool:
        return has(str(expected["type"]), expected["value"])

    if case.must_include and all(holds(required(g)) for g in case.must_include):
        out.add("must_include")
    if case.must_not_include and all(holds(forbidden(t)) for t in case.must_not_include):
        out.add("must_not_include")
    if (
        (case.patterns or case.anti_patterns)
        and all(has("python", regex_code(p, True)) for p in case.patterns)
        and all(has("python", regex_code(p, False)) for p in case.anti_patterns)
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


def var_of(prompt_id: str) -> str:
    """The var holding a case's messages rendered with prompt fixture ``prompt_id``."""
    return "messages__" + "".join(c if c.isalnum() or c == "_" else "_" for c in prompt_id)


def test_case(case: ExportCase, prompts: Mapping[str, Prompt]) -> dict[str, Any]:
    variables: dict[str, Any] = {"messages": _json(case.messages())}
    # Plain-text vars as written, unless promptfoo would read them as templates (the JSON
    # message list carries their text in any case).
    if not templated(case.input_text):
        variables["input"] = case.input_text
    for prompt_id, prompt in prompts.items():
        messages = with_prompt(case, prompt)
        if messages is not None:
            variables[var_of(prompt_id)] = _json(messages)
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
    asserts = text_asserts(case)
    rubric = rubric_text(case)
    if rubric is not None:
        if templated(rubric) and "endraw" not in rubric:  # rendered once, as written
            rubric = "{% raw %}" + rubric + "{% endraw %}"
        asserts.append({"type": "llm-rubric", "value": rubric})
    test: dict[str, Any] = {"description": case.case_id, "vars": variables}
    if asserts:
        test["assert"] = asserts
    labels = case.labels()
    if case.prompt is not None:
        labels["prompt"] = case.prompt
    test["metadata"] = {k: v for k, v in labels.items() if v not in (None, [], "")}
    return test


def prompt_entries(prompts: Mapping[str, Prompt]) -> list[dict[str, str]]:
    """``case`` (each case's own view), then one entry per prompt fixture."""
    entries = [{"label": "case", "raw": "{{ messages }}"}]
    for prompt_id, prompt in sorted(prompts.items()):
        entries.append({"label": prompt.label, "raw": "{{ " + var_of(prompt_id) + " }}"})
    return entries


def render(
    cases: Sequence[ExportCase],
    records: Sequence[Mapping[str, Any]],
    prompts: Mapping[str, Prompt] | None = None,
) -> Rendered:
    ledger = Ledger()
    prompts = dict(prompts or {})
    tests = []
    unrendered: dict[str, list[str]] = {}
    for case in cases:
        test = test_case(case, prompts)
        ledger.account(case, written(case, test))
        tests.append(test)
        for prompt_id, prompt in prompts.items():
            if var_of(prompt_id) not in test["vars"]:
                unrendered.setdefault(prompt.label, []).append(case.case_id)
    config = {
        "description": _description(cases),
        "prompts": prompt_entries(prompts),
        "tests": tests,
    }
    rendered = ledger.rendered(round_trip_dump(config), len(cases))
    for label, ids in sorted(unrendered.items()):
        # promptfoo would run these cells with an empty prompt; evalcase refuses them
        rendered = rendered.leaving_out(f"prompt {label} (cannot be rendered)", tuple(ids))
    return rendered


def _description(cases: Sequence[ExportCase]) -> str:
    names = sorted({f"{c.dataset_id} {c.dataset_version}".strip() for c in cases})
    return "evalcase export of " + (", ".join(names) or "no cases")
