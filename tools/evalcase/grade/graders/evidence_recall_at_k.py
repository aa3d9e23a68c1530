"""Retrieval found the gold evidence within the first k passages.

Configuration: the case's ``gold_evidence`` (``{doc_id, passage_id, required}``); k from
grader options ``{type: evidence_recall_at_k, k: 5, threshold: 1.0}`` or from an
``evaluation_metrics`` entry ``evidence_recall_at_5`` (default 5). Recall counts the
required gold passages (all gold passages when none is marked required) found among the
first k retrieved. Passing: gold ``p12`` retrieved second, k = 5. Failing: ``p12`` never
retrieved (score 0.0, the reason lists what is missing). No gold evidence is an error; so
are a threshold that is not a number (and lint's EC320) and an attempt without retrieval
records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.model import Evidence, Grade, error, failed, passed
from evalcase.grade.readers import JSONValue, ReadError, parse
from evalcase.grade.spec import JudgeSpec, as_list, options_of

NAME = "evidence_recall_at_k"
VERSION = "1"


@dataclass(frozen=True)
class RecallOptions:
    k: JSONValue = None  # an integer, else from evaluation_metrics, else 5
    threshold: float = 1.0


@dataclass(frozen=True)
class _Rag:
    evaluation_metrics: JSONValue = None  # a metric name or a list of them


def options(spec: JudgeSpec) -> RecallOptions | ReadError:
    return parse(RecallOptions, options_of(spec, NAME))


def k_for(spec: JudgeSpec) -> int:
    read = options(spec)
    if isinstance(read, RecallOptions) and isinstance(read.k, int):
        return int(read.k)
    rag = parse(_Rag, spec.rag)
    for metric in as_list(rag.evaluation_metrics if isinstance(rag, _Rag) else None):
        m = re.fullmatch(r"evidence_recall_at_([0-9]+)", str(metric))
        if m:
            return int(m.group(1))
    return 5


def needs(spec: JudgeSpec) -> str | None:
    if isinstance(read := options(spec), ReadError):
        return f"grader options: {read}"
    if not spec.gold_evidence:
        return "the case has no gold_evidence: no passage to look for"
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    gold = spec.gold_evidence
    if not attempt.retrieval_recorded:
        return error("the attempt has no retrieval records")
    wanted = [g for g in gold if g.required] or list(gold)
    k = k_for(spec)
    top = attempt.retrievals()[:k]
    keys = {(r.doc_id, r.passage_id) for r in top}
    missing = [g for g in wanted if (g.doc_id, g.passage_id) not in keys]
    recall = 1 - len(missing) / len(wanted)
    read = options(spec)
    threshold = read.threshold if isinstance(read, RecallOptions) else 1.0
    if recall + 1e-9 < threshold:
        names = ", ".join(g.name for g in missing)
        return failed(
            f"recall@{k} = {recall:.2f} < {threshold:.2f}; missing {names}",
            Evidence(None, "retrieved"),
            score=recall,
        )
    return passed(f"recall@{k} = {recall:.2f}", score=recall)
