"""Grade one attempt with every grader its case configures, and combine the verdicts.

In this order (docs/grading.md, "How an attempt's verdict is decided"):

1. the runner could not complete the attempt: ``error`` when the environment was at fault
   (an adapter or worker was lost), ``fail`` when the agent was (it exited, hung, lied
   about JSON, called an unknown tool);
2. any hard grader fails, or a person (``human``, whatever its ``hard``) says fail: ``fail``;
3. any grader, hard or soft, erred: ``error`` (a grader that cannot grade is never silent);
4. no hard grader and no ``evaluator_config.pass_threshold``: ``error`` (EC322 refuses
   such a case): soft graders alone never pass an attempt;
5. a hard grader is pending (without hard graders: any grader): ``pending``; a pending
   soft grader does not hold up what the hard graders decided;
6. a ``pass_threshold`` is set and the weighted score is below it: ``fail``;
7. otherwise ``pass``.

The score is the weighted mean of the decided (pass or fail) graders' scores. A case
configuring no grader gets an error, never a pass. A case's declared
``evaluator_config.rule_checks`` always run: a written graders list without ``trace_rule``
gets one added (hard, weight 0: evalcase.contract.graders). A spec whose graders still
leave them out (one not built from a case) gets a hard ``(rule_checks)`` result in
``error`` naming the checks, so the attempt is never passed on graders that left the
listed checks out (a hard grader's fail still decides, rule 2).

An attempt a reply of which was cut at the token limit (the record's ``truncated``, from
``finish_reason: length``) fails with the failure class ``truncated``, whatever the
graders said of the cut text: the line ``finish_reason`` in grades.jsonl says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalcase.contract.graders import added as added_graders
from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.failure import ENVIRONMENT_ERRORS, classify
from evalcase.grade.graders import GRADERS, LoadedGrader, load, observed
from evalcase.grade.model import VERDICTS, Evidence, Grade, GraderResult, Verdict, error, failed
from evalcase.grade.readers import JSONValue, parse
from evalcase.grade.spec import JudgeSpec, grader_configs, unrun_rule_checks
from evalcase.grade.trace_events import events

TRUNCATION = "finish_reason"  # the grades.jsonl line of a truncated attempt
UNRUN_RULE_CHECKS = "(rule_checks)"  # the grades.jsonl line of rule checks nothing ran


@dataclass(frozen=True)
class AttemptResult:
    case_id: str
    case_version: str
    attempt: int
    verdict: Verdict
    score: float
    failure_class: str | None
    results: tuple[GraderResult, ...]


def load_grader(name: str) -> LoadedGrader:
    """The grader called ``name``: built-in, else an installed plugin. KeyError if unknown."""
    if name in GRADERS:
        return load(name)
    from evalcase.plugins import GRADER_GROUP, attempt_adapter, load_plugin

    obj = load_plugin(GRADER_GROUP, name)
    grade = getattr(obj, "grade", obj)
    if not callable(grade):
        raise KeyError(f"plugin grader {name!r} has no grade()")
    found = getattr(obj, "needs", None)
    return LoadedGrader(
        name,
        str(getattr(obj, "VERSION", "plugin")),
        obj.__doc__ or "",
        attempt_adapter(obj, grade, Observed.to_mapping),
        plugin=True,
        **({"needs": found} if callable(found) else {}),
    )


def truncation(attempt: Observed) -> GraderResult | None:
    """A hard failure for an attempt whose reply the model cut at its token limit."""
    record = attempt.record
    if not record.truncated or record.errored:
        return None
    steps = [e.step for e in events(record.trace) if e.finish_reason == "length"]
    return GraderResult(
        TRUNCATION,
        "1",
        1.0,
        True,
        failed(
            "a reply was cut at the token limit (finish_reason: length): not a finished answer",
            *(Evidence(step=s) for s in steps if isinstance(s, int)),
            kind="truncated",
        ),
    )


def unrun(spec: JudgeSpec) -> GraderResult | None:
    """An error for the rule checks the case lists that no configured grader runs."""
    checks = unrun_rule_checks(spec)
    if not checks:
        return None
    return GraderResult(
        UNRUN_RULE_CHECKS,
        "0",
        0.0,
        True,
        error(
            f"evaluator_config.rule_checks lists {', '.join(checks)} but no trace_rule "
            "grader runs them: add {type: trace_rule} to evaluator_config.graders, "
            "or drop the list"
        ),
    )


def run_graders(
    spec: JudgeSpec, attempt: Observed | Mapping[str, Any], ctx: GradeContext
) -> list[GraderResult]:
    """Every grader the case configures on ``attempt`` (an :class:`Observed`; a record's
    mapping is read as :meth:`Observed.of` reads it)."""
    seen = observed(attempt)
    results = _configured(spec, seen, ctx)
    extra = [r for r in (unrun(spec), truncation(seen)) if r is not None]
    return [*results, *extra]


def _configured(spec: JudgeSpec, attempt: Observed, ctx: GradeContext) -> list[GraderResult]:
    configs = grader_configs(spec)
    if not configs:
        return [
            GraderResult(
                "(none)",
                "0",
                1.0,
                True,
                error("the case configures no grader: nothing decides this attempt"),
            )
        ]
    results = []
    for config in configs:
        try:
            grader = load_grader(config.type)
        except Exception as exc:  # an unknown or broken plugin is this grader's error
            results.append(
                GraderResult(
                    config.type,
                    "?",
                    config.counted_weight,
                    config.hard,
                    error(f"grader {config.type!r} unavailable: {exc}"),
                )
            )
            continue
        try:
            grade: Grade = grader.grade(spec, attempt, ctx)
        except Exception as exc:  # a crashing grader must not take the run with it
            grade = error(f"grader crashed: {type(exc).__name__}: {exc}")
        results.append(
            GraderResult(config.type, grader.version, config.counted_weight, config.hard, grade)
        )
    return results


def decides(result: GraderResult) -> bool:
    """Whether a grader's fail decides the attempt: a hard grader's, and always a person's
    (a human verdict of fail is never outweighed, whatever its ``hard``)."""
    return result.hard or result.grader == "human"


@dataclass(frozen=True)
class _Evaluator:
    pass_threshold: JSONValue = None  # a number, else no threshold


@dataclass(frozen=True)
class _Case:
    """What the engine reads of the case document itself (``JudgeSpec.raw``)."""

    evaluator_config: JSONValue = None


def _evaluator_config(spec: JudgeSpec) -> JSONValue:
    case = parse(_Case, spec.raw or {})
    return case.evaluator_config if isinstance(case, _Case) else None


def pass_threshold(spec: JudgeSpec) -> float | None:
    """``evaluator_config.pass_threshold``: the weighted score an attempt needs (0-1)."""
    evaluator = parse(_Evaluator, _evaluator_config(spec))
    value = evaluator.pass_threshold if isinstance(evaluator, _Evaluator) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


NO_HARD_GRADER = (
    "every grader is hard: false and evaluator_config sets no pass_threshold: nothing "
    "decides this attempt (EC322)"
)


def combine(
    attempt: Observed | Mapping[str, Any] | None,
    results: list[GraderResult],
    threshold: float | None = None,
) -> tuple[Verdict, float, str | None]:
    """The attempt's verdict (docs/grading.md, "How an attempt's verdict is decided");
    ``attempt`` None: from the graders' results alone."""
    decided = [r for r in results if r.grade.verdict in ("pass", "fail")]
    weights = sum(r.weight for r in decided)
    score = sum(r.weight * r.grade.score for r in decided) / weights if weights else 0.0
    verdict: Verdict
    record = None if attempt is None else observed(attempt).record
    status_error = record is not None and record.errored
    kind = record.error.kind if record is not None and record.error and status_error else ""
    hard = [r for r in results if r.hard]
    if status_error and kind in ENVIRONMENT_ERRORS:
        verdict = "error"
    elif status_error or any(decides(r) and r.grade.verdict == "fail" for r in results):
        verdict = "fail"
    elif any(r.grade.verdict == "error" for r in results):
        verdict = "error"  # a grader that could not grade is never silent, hard or not
    elif not hard and threshold is None:
        verdict = "error"
    elif any(r.grade.verdict == "pending" for r in (hard if hard else results)):
        # A pending soft grader (an optional judged signal) does not hold up a verdict the
        # hard graders decided; without hard graders the score itself is still unknown.
        verdict = "pending"
    elif threshold is not None and score + 1e-9 < threshold:
        verdict = "fail"
    else:
        verdict = "pass"
    if status_error:
        score = 0.0
    return verdict, round(score, 6), classify(record, results, verdict)


@dataclass(frozen=True)
class _Named:
    case_id: str | None = None
    case_version: str | None = None


def grade_attempt(
    spec: JudgeSpec, attempt: Observed | Mapping[str, Any], ctx: GradeContext
) -> AttemptResult:
    seen = observed(attempt)
    results = run_graders(spec, seen, ctx)
    threshold = pass_threshold(spec)
    # The trace_rule added beside a written list (contract.graders) does not make soft
    # written graders decide: EC322's case stays an error, as lint says.
    left_out = {UNRUN_RULE_CHECKS, *added_graders(_evaluator_config(spec))}
    configured = [r for r in results if r.grader not in left_out]
    if configured and not any(r.hard for r in configured) and threshold is None:
        results.append(GraderResult("(none)", "0", 0.0, True, error(NO_HARD_GRADER)))
    verdict, score, failure = combine(seen, results, threshold)
    record = seen.record
    named = parse(_Named, attempt) if isinstance(attempt, Mapping) else None
    if isinstance(named, _Named):  # a hand-made mapping may leave out what the spec has
        case_id = spec.case_id if named.case_id is None else named.case_id
        case_version = spec.case_version if named.case_version is None else named.case_version
    else:
        case_id, case_version = record.case_id, record.case_version
    return AttemptResult(
        case_id,
        case_version,
        record.attempt or 1,
        verdict,
        score,
        failure,
        tuple(results),
    )


def grade_lines(result: AttemptResult) -> list[dict[str, Any]]:
    """The grades.jsonl lines of one attempt (docs/grading.md)."""
    lines = []
    for r in result.results:
        g = r.grade
        line: dict[str, Any] = {
            "case_id": result.case_id,
            "case_version": result.case_version,
            "attempt": result.attempt,
            "grader": r.grader,
            "verdict": g.verdict,
            "score": round(g.score, 6),
            "weight": r.weight,
            "hard": r.hard,
            "reason": g.reason,
            "evidence": [e.to_dict() for e in g.evidence],
            "grader_version": r.version,
            "judge": g.judge.to_dict() if g.judge else None,
            "kind": g.kind,
        }
        if g.reviewer:
            line["reviewer"], line["reviewed_at"] = g.reviewer, g.reviewed_at
        if g.details:
            line["details"] = dict(g.details)
        lines.append(line)
    return lines


@dataclass(frozen=True)
class GradeLine:
    """What a verdict is recomputed from in a grades.jsonl line (``grade_lines`` writes them)."""

    grader: str = ""
    grader_version: str = ""
    weight: float = 0.0
    hard: bool = True
    verdict: str = "error"
    score: float = 0.0
    reason: str = ""


def _verdict(value: str) -> Verdict:
    return next((v for v in VERDICTS if v == value), "error")


def attempt_from_lines(
    lines: list[Mapping[str, Any]], threshold: float | None = None
) -> tuple[Verdict, float]:
    """Recompute an attempt's verdict and score from its grades.jsonl lines alone (and the
    case's pass_threshold): the same rules as ``combine``."""
    read = [parse(GradeLine, ln) for ln in lines]
    results = [
        GraderResult(
            ln.grader, ln.grader_version, ln.weight, ln.hard,
            Grade(_verdict(ln.verdict), ln.score, ln.reason),
        )
        if isinstance(ln, GradeLine)
        else GraderResult("(unreadable)", "", 0.0, True, error(f"a grade line: {ln}"))
        for ln in read
    ]  # fmt: skip
    verdict, score, _ = combine(None, results, threshold)
    return verdict, score
