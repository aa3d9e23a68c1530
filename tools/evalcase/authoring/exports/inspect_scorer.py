"""The Inspect AI scorer and task for ``evalcase export --format inspect``.

Inspect reads a list ``target`` as alternatives (any one is right), and its built-in
scorers (``includes()``, ``match()``, ``model_graded_qa()``) cannot say "all of these,
none of those". So the export's ``target`` is the case's answer key as one JSON text
(``{"evalcase_answer_key": 1, "text": ..., "graders": ..., "rubric": ...}``), and this
module grades it the way ``evalcase grade`` does:

- the deterministic text graders the case uses (``exact_match``, ``must_include``: every
  point required, ``must_not_include``: none allowed, ``regex``, ``json_schema``) run
  evalcase's own grader code on the answer; any failure is ``I``;
- when the case has a rubric, an ``llm_rubric`` grader or no deterministic check, a grader
  model reads the expected behaviours (all required), the negative behaviours (none
  allowed), the reference, the rubric's dimensions and the judge instructions, and answers
  ``GRADE: C`` or ``GRADE: I``; an answer without a grade is ``I``, never ``C``.

Use it with the exported file (evalcase and inspect-ai installed)::

    evalcase export refund_regression_set@v1 --format inspect -o cases.jsonl
    # the module prints the task Inspect loads (FILE@TASK)
    inspect eval "$(python -m evalcase.authoring.exports.inspect_scorer)" \\
        -T dataset=cases.jsonl -T grader_model=openai/gpt-4o-mini --model openai/gpt-4o

Inspect runs a task file's tasks from the file's own folder, so a relative ``dataset``
would be looked up beside this module. ``python -m`` therefore writes a two-line task
file for the directory it is run in (under ``$XDG_CACHE_HOME/evalcase/inspect/``, named
by a digest of that directory) whose ``evalcase_export`` task reads a relative
``dataset`` from there, and prints ``that-file@evalcase_export``.

or in Python: ``Task(dataset=json_dataset("cases.jsonl"), solver=..., scorer=evalcase_scorer())``.
Do not use Inspect's built-in scorers on this target: they would compare answers with
the JSON text.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.model import Model, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate

GRADE = re.compile(r"GRADE:\s*([CI])\b")


def answer_key(target: Target) -> dict[str, Any]:
    """The evalcase answer key of a sample's target; ValueError when it is not one."""
    try:
        key = json.loads(target.text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            "the target is not an evalcase answer key (export --format inspect)"
        ) from exc
    if not isinstance(key, dict) or key.get("evalcase_answer_key") != 1:
        raise ValueError("the target is not an evalcase answer key (export --format inspect)")
    return key


def text_verdicts(key: Mapping[str, Any], answer: str) -> list[tuple[str, bool, str]]:
    """(grader, passed, reason) for every deterministic grader of the key, by evalcase's
    own graders. A grader that cannot grade (an error) counts as not passed."""
    from evalcase.grade.graders import load
    from evalcase.grade.spec import judge_spec_from_case

    # The key's text fields and graders, read as the case document they came from.
    text = key.get("text")
    graders = list(key.get("graders", ()))
    written = [{"type": g["type"], **(g.get("options") or {})} for g in graders]  # as cases write
    spec = judge_spec_from_case(
        {**(text if isinstance(text, Mapping) else {}), "evaluator_config": {"graders": written}}
    )
    out = []
    for config in graders:
        grade = load(str(config["type"])).grade(spec, {"output": answer})
        out.append((str(config["type"]), grade.verdict == "pass", str(grade.reason)))
    return out


def needs_model(key: Mapping[str, Any]) -> bool:
    return bool(key.get("model_graded"))


def _bullets(values: Any) -> str:
    items = values if isinstance(values, list) else [values] if values else []
    return "\n".join(f"- {v}" for v in items) or "- (none)"


def grader_prompt(key: Mapping[str, Any], question: str, answer: str) -> str:
    """What the grader model reads: each part of the answer key as what it is."""
    text = key.get("text") or {}
    parts = [
        "You grade an assistant's answer against an evaluation case's answer key.",
        f"[CONVERSATION]\n{question}",
        f"[ANSWER]\n{answer}",
        f"[THE ANSWER MUST DO ALL OF THESE]\n{_bullets(text.get('expected_behavior'))}",
        f"[THE ANSWER MUST DO NONE OF THESE]\n{_bullets(text.get('negative_behavior'))}",
    ]
    if text.get("reference") is not None:
        parts.append(f"[REFERENCE ANSWER]\n{_bullets(text['reference'])}")
    rubric = key.get("rubric")
    if isinstance(rubric, Mapping):
        lines = []
        for dim in rubric.get("dimensions") or ():
            if isinstance(dim, Mapping):
                lines.append(f"- {dim.get('name')}: {dim.get('description', '')}")
            else:
                lines.append(f"- {dim}")
        if rubric.get("pass_threshold") is not None:
            lines.append(f"pass threshold: {rubric['pass_threshold']}")
        if isinstance(rubric.get("judge_instructions"), str):
            lines.append(rubric["judge_instructions"].strip())
        parts.append("[RUBRIC]\n" + "\n".join(lines))
    if isinstance(key.get("judge_instructions"), str):
        parts.append(f"[JUDGE INSTRUCTIONS]\n{key['judge_instructions']}")
    parts.append(
        "Reply with a short reason, then one last line: GRADE: C when the answer does all "
        "that is required, none of what is forbidden and meets the rubric; else GRADE: I."
    )
    return "\n\n".join(parts)


@scorer(metrics=[accuracy()])
def evalcase_scorer(grader_model: str | Model | None = None) -> Scorer:
    """Grade an answer against the evalcase answer key in the sample's target."""

    async def score(state: TaskState, target: Target) -> Score:
        key = answer_key(target)
        answer = state.output.completion
        verdicts = text_verdicts(key, answer)
        failed = [f"{name}: {reason}" for name, ok, reason in verdicts if not ok]
        explanation = "; ".join(failed) or "; ".join(r for _, _, r in verdicts)
        metadata: dict[str, Any] = {"graders": {n: ok for n, ok, _ in verdicts}}
        if not failed and needs_model(key):
            model = (
                get_model(grader_model) if grader_model is not None else get_model(role="grader")
            )
            question = "\n".join(
                f"{m.role}: {m.text}" for m in state.messages if m.role != "assistant"
            )
            result = await model.generate(grader_prompt(key, question, answer))
            found = GRADE.findall(result.completion)
            metadata["model_grade"] = found[-1] if found else None
            if not found:
                failed.append("the grader model gave no GRADE")
            elif found[-1] != "C":
                failed.append("the grader model: GRADE: I")
            explanation = result.completion
        return Score(
            value=INCORRECT if failed else CORRECT,
            answer=answer,
            explanation=explanation if not failed else "; ".join(failed),
            metadata=metadata,
        )

    return score


def cases_in(base: str, dataset: str, grader_model: str | None = None) -> Task:
    """The exported cases, answered by the evaluated model and graded by evalcase_scorer;
    a relative ``dataset`` is read from ``base``."""
    path = Path(dataset).expanduser()
    return Task(
        dataset=json_dataset(str(path if path.is_absolute() else Path(base) / path)),
        solver=generate(),
        scorer=evalcase_scorer(grader_model),
    )


@task
def evalcase_cases(dataset: str = "cases.jsonl", grader_model: str | None = None) -> Task:
    """The exported cases (a relative ``dataset``: from the current directory)."""
    return cases_in(str(Path.cwd()), dataset, grader_model)


TASK_FILE = """\
# Written by `python -m evalcase.authoring.exports.inspect_scorer` for `inspect eval`.
from inspect_ai import task

from evalcase.authoring.exports.inspect_scorer import cases_in

BASE = {base!r}  # where it was run: a relative dataset path is read from here


@task
def evalcase_export(dataset: str = "cases.jsonl", grader_model: str | None = None):
    return cases_in(BASE, dataset, grader_model)
"""


def task_file(base: Path, cache: Path) -> Path:
    """The task file for ``inspect eval`` run from ``base`` (written once, atomically)."""
    import hashlib

    from evalcase.atomic import write_atomic

    text = TASK_FILE.format(base=str(base))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    path = cache / f"task_{digest}.py"
    if not path.is_file():
        write_atomic(path, text, parents=True)
    return path


def _cache() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "evalcase" / "inspect"


if __name__ == "__main__":
    # The task spec for `inspect eval` (see the docstring): printing is this entry
    # point's whole job.
    print(f"{task_file(Path.cwd(), _cache())}@evalcase_export")
