"""Every grader of the case is ``hard: false`` and no ``pass_threshold`` says when it passes.

A soft grader (``hard: false``) only moves the attempt's score; a hard one decides. A case
whose graders are all soft would pass whatever they find (``tool_calls`` failing, the
judge scoring 0), so it must say what score is enough: ``evaluator_config.pass_threshold``
(0-1, on the weighted score of the graders). Without one the grader engine grades every
attempt ``error`` (never ``pass``), and this rule reports it before any run.

Passing::

    evaluator_config:
      pass_threshold: 0.8
      graders: [{type: tool_calls, hard: false}, {type: llm_rubric, hard: false}]

Failing::

    evaluator_config:
      graders: [{type: tool_calls, hard: false}, {type: llm_rubric, hard: false}]
"""

from collections.abc import Iterable
from typing import Any

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC322"
NAME = "no-hard-grader"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def _hard(grader: dict[str, Any]) -> bool:
    """As grading reads it (evalcase.grade.spec.grader_configs): ``hard``, else
    ``options.hard``, else true."""
    if "hard" in grader:
        return bool(grader["hard"])
    options = grader.get("options")
    return bool(options.get("hard", True)) if isinstance(options, dict) else True


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    config = data.get("evaluator_config")
    graders: Any = config.get("graders") if isinstance(config, dict) else None
    if not isinstance(config, dict) or not isinstance(graders, list):
        return
    typed = [g for g in graders if isinstance(g, dict) and isinstance(g.get("type"), str)]
    if not typed or any(_hard(g) for g in typed):
        return
    threshold = config.get("pass_threshold")
    if isinstance(threshold, int | float) and not isinstance(threshold, bool):
        return
    line, col = doc.locate_key(("evaluator_config", "graders"))
    yield report(
        doc.path,
        line,
        col,
        f"all {len(typed)} grader(s) are hard: false and evaluator_config has no "
        "pass_threshold: soft graders alone decide nothing, so every attempt would be an "
        "error; make the graders that decide hard, or set pass_threshold (0-1) on the "
        "weighted score",
    )
