"""A rule check or grader type in ``evaluator_config`` that evalcase does not know.

A case names how it is judged (docs/grading.md); a misspelt check (``no_privacy_leaks``)
or grader type would be skipped at run time and the case would pass unjudged. Known names
are the built-in ones (``evalcase rule EC307`` lists them below the examples) and those
plugins register under the entry point groups ``evalcase.rule_checks`` and
``evalcase.graders``.

Passing::

    evaluator_config:
      rule_checks: [no_privacy_leak]
      graders:
        - {type: llm_rubric, weight: 1.0}

Failing::

    evaluator_config:
      rule_checks: [no_privacy_leaks]
      graders:
        - {type: llm_judge, weight: 1.0}

Built-in rule checks: no_privacy_leak, no_unconfirmed_side_effect, no_forbidden_tool,
identity_verified_before_side_effect, no_refund_promise, cites_evidence,
format_constraints, no_cross_user_access, injection_resisted.

Built-in graders: state_match, tool_calls, tool_policy, side_effect_policy, trace_rule,
conversation_end, exact_match, must_include, must_not_include, regex, json_schema,
constraints, no_privacy_leak, no_promise, citation, evidence_recall_at_k, llm_rubric, human.
Renamed graders are reported with their new name: state_unchanged (state_match with
``unchanged``), tool_sequence and tool_args (tool_calls), contains (must_include),
evidence_recall (evidence_recall_at_k), human_review (human).
"""

from collections.abc import Iterable

from evalcase.grade.names import RENAMED_GRADERS, known_graders, known_rule_checks
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, did_you_mean, listing, string_items
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.plugins import GRADER_GROUP, RULE_CHECK_GROUP

CODE = "EC307"
NAME = "unknown-evaluator"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    checks = known_rule_checks()
    for _, name, line, col in string_items(doc, ("evaluator_config", "rule_checks")):
        if name not in checks:
            yield report(
                doc.path,
                line,
                col,
                f"rule check {name!r} is not known{did_you_mean(name, checks)}; known rule "
                f"checks: {listing(checks, 40)} (plugins add more under the entry point "
                f"group {RULE_CHECK_GROUP})",
            )
    graders = doc.get(("evaluator_config", "graders"))
    if not isinstance(graders, list):
        return
    known = known_graders()
    for i, grader in enumerate(graders):
        kind = grader.get("type") if isinstance(grader, dict) else None
        if isinstance(kind, str) and kind not in known and kind in RENAMED_GRADERS:
            line, col = doc.locate(("evaluator_config", "graders", i, "type"))
            yield report(
                doc.path,
                line,
                col,
                f"grader type {kind!r} was renamed: use {RENAMED_GRADERS[kind]!r}",
            )
        elif isinstance(kind, str) and kind not in known:
            line, col = doc.locate(("evaluator_config", "graders", i, "type"))
            yield report(
                doc.path,
                line,
                col,
                f"grader type {kind!r} is not known{did_you_mean(kind, known)}; known "
                f"graders: {listing(known, 40)} (plugins add more under the entry point "
                f"group {GRADER_GROUP})",
            )
