"""A grader the case configures would return ``error`` for lack of configuration.

Every grader declares what it needs of the case, as one predicate over the case's judge
view (``needs`` in its module, see ``evalcase graders``): ``regex`` needs patterns,
``must_include`` / ``must_not_include`` phrases, ``llm_rubric`` a rubric, ``trace_rule``
rules or rule checks, ``json_schema`` a valid schema, ``exact_match`` a reference,
``evidence_recall_at_k`` gold evidence, ``citation`` gold evidence or a citation
requirement, ``tool_calls`` expected calls, ``state_match`` a final-state check that names
something, ``side_effect_policy`` a policy, ``tool_policy`` forbidden or required tools,
``constraints`` a checkable constraint, ``no_promise`` phrases, patterns or a known preset.
Graders a case implies (``rule_checks`` a ``trace_rule``, beside a written ``graders``
list too; ``judge`` an ``llm_rubric`` when it writes none) are asked too, and reported at
the key that implies them. The grader returns that predicate's reason as its ``error``,
and this rule reports the same reason at the grader's own line, so a case lint accepts never ends in
``grader_error`` for want of configuration. Grader options count: only what the grader
reads is checked (an option it ignores does not make it gradable).

Passing::

    regex: {must_not_match: ["保证.{0,6}到账"]}
    evaluator_config:
      graders: [{type: regex}]

Failing::

    evaluator_config:
      graders: [{type: regex}]          # no patterns anywhere: every attempt is an error
"""

from collections.abc import Iterable
from typing import Any

from evalcase.contract import graders as graders_of
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, judge_view_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC320"
NAME = "grader-cannot-grade"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    config = data.get("evaluator_config")
    written: Any = config.get("graders") if isinstance(config, dict) else None
    written = written if isinstance(written, list) else []
    # The graders rule_checks and judge imply (contract.graders: all of them without a
    # written list, a trace_rule beside one), each reported at the key that implies it.
    implied = graders_of.implied(config)
    graders = [*written, *({"type": kind} for _, kind in implied)]
    if not graders:
        return
    # Imported here: only cases with graders pay for the grader modules.
    from evalcase.contract import build
    from evalcase.grade.graders import GRADERS, RENAMED, needs

    spec = judge_view_of(doc, data)
    if spec is None:
        return
    seen: set[str] = set()
    for i, grader in enumerate(graders):
        kind = grader.get("type") if isinstance(grader, dict) else None
        if not isinstance(kind, str):
            continue
        name = RENAMED.get(kind, kind)
        if name not in GRADERS or name in seen:
            continue
        seen.add(name)
        try:
            problem = needs(name, spec)
        except Exception as exc:  # a grader's predicate must not stop lint
            problem = f"its configuration cannot be read ({type(exc).__name__}: {exc})"
        if problem is None:
            continue
        if name == "side_effect_policy" and build.offered_tools(data):
            # The policy may be the offered tool's own (its fixture's side_effect_policy),
            # which one file cannot see; EC305 requires one for every side-effect tool.
            continue
        if i >= len(written):
            key = implied[i - len(written)][0]
            line, col = doc.locate_key(("evaluator_config", key))
            yield report(
                doc.path,
                line,
                col,
                f"evaluator_config.{key} implies a {kind!r} grader, which cannot grade this "
                f"case: {problem}; every attempt would end in grader_error: configure it, "
                "or write evaluator_config.graders",
            )
            continue
        line, col = doc.locate(("evaluator_config", "graders", i, "type"))
        yield report(
            doc.path,
            line,
            col,
            f"grader {kind!r} cannot grade this case: {problem}; every attempt would end "
            "in grader_error: configure it, or remove the grader",
        )
