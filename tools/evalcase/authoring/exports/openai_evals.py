"""``openai-evals``: samples in the OpenAI evals registry JSONL shape, for ``Includes``.

Each line is ``{"input": [chat messages], "ideal": [strings]}`` as the registry's
``samples.jsonl`` files hold them (``evals/registry/data/<eval>/samples.jsonl``), to be
graded by the ``Includes`` eval class (``evals.elsuite.basic.includes:Includes``, its
default ``ignore_case: false``), which passes an answer holding any one of ``ideal``:

- ``input`` is the agent-visible conversation as ``evalcase run`` sends it: system
  prompt, history, the first user turn, with the case's prompt fixture rendered;
- ``ideal`` holds answers, never descriptions of behaviour: the one required point's
  alternatives when ``must_include`` requires exactly one (``Includes`` checks just what
  ``must_include`` checks: one of them, as written, anywhere in the answer), else the
  ``exact_match`` answers (``Includes`` finds them inside a longer answer, where evalcase
  wants equality: the summary lists ``exact_match`` as not carried).

A case with neither (judged by a model, by its tool calls or state, by regexes or
forbidden phrases only, or requiring several points, which ``ideal`` would read as any
one of them) has no answer ``Includes`` could compare as evalcase does: it is left out of
the file, and the summary lists it as ``the case (no answer Includes compares as evalcase
does)``. Use the ``inspect`` or ``promptfoo`` export for those.

The registry format has no room for labels, negative behaviour or environments: case IDs
and labels, references and expected behaviours (what a grader model reads), negative
behaviours, must-not-include phrases, more than one required point, exact answers as
such, regexes, schemas, rubrics, tool definitions, ``role: tool`` turns, simulated users
(a sample is one prompt) and every part of the simulated environment (state, tools,
faults, permissions, corpora, final-state checks, side-effect policies, trace rules) are
not carried; the summary line counts the cases concerned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import Ledger, Rendered, messages_written
from evalcase.authoring.exports.view import ExportCase
from evalcase.contract.prompt import Prompt

NAME = "openai-evals"
SUFFIX = ".jsonl"
LEFT_OUT = "the case (no answer Includes compares as evalcase does)"


def ideal(case: ExportCase) -> list[str]:
    """The answers ``Includes`` compares the case's answer with; empty: none."""
    if len(case.must_include) == 1:
        return list(case.must_include[0])
    if case.exact and not case.must_include:
        return list(case.exact)
    return []


def written(case: ExportCase, line: Mapping[str, Any]) -> set[str]:
    """The parts of ``case`` the sample holds, read back from it."""
    out = messages_written(case, line["input"])
    answers = line["ideal"]
    # exact_match is not carried: Includes (containment) does not mean equality, though
    # its answers are the ideal when nothing else is.
    if len(case.must_include) == 1 and answers == list(case.must_include[0]):
        out.add("must_include")
    return out


def render(
    cases: Sequence[ExportCase],
    records: Sequence[Mapping[str, Any]],
    prompts: Mapping[str, Prompt] | None = None,
) -> Rendered:
    ledger = Ledger()
    left_out = []
    lines = []
    for case in cases:
        answers = ideal(case)
        if not answers:
            left_out.append(case.case_id)
            continue
        line: dict[str, Any] = {"input": case.messages(), "ideal": answers}
        ledger.account(case, written(case, line))
        lines.append(json.dumps(line, ensure_ascii=False) + "\n")
    rendered = ledger.rendered("".join(lines), len(lines))
    if left_out:
        rendered = rendered.leaving_out(LEFT_OUT, tuple(left_out))
    return rendered
