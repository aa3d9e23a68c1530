"""Cited passages exist, were retrieved and are in force.

The answer cites as ``doc_id#passage_id`` (bare, or in brackets), or ``[p12]`` / ``【p12】``
when the passage id is unambiguous. Every citation must name a passage the agent actually retrieved
in this attempt (the runner's ``retrieved`` records) that is effective on the case's
``effective_at`` (when the retrieval record carries ``effective_from`` / ``effective_to``;
the case's date only, never one the attempt record names);
when the case has ``citation_requirement``, every ``gold_evidence`` entry marked
``required: true`` must be cited. Passing: retrieved ``refund_policy_audio_003#p12``, answer
"…不适用七天无理由 [refund_policy_audio_003#p12]". Failing: the answer cites ``p99``, which was
never retrieved, or cites a passage of the 2025 policy. A case with neither gold evidence nor
a citation requirement is an error; so is an attempt with no answer.
"""

from __future__ import annotations

import re

from evalcase.contract.attempt import Retrieval
from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.model import Evidence, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec

NAME = "citation"
VERSION = "2"  # 2: the reference time is the case's only (issue 43)
BARE = re.compile(
    r"(?<![A-Za-z0-9_.\-])([A-Za-z][A-Za-z0-9_.\-]*)#([A-Za-z]?[0-9]+)(?![A-Za-z0-9_])"
)
CITE = re.compile(
    r"[\[【]\s*(?:([A-Za-z0-9_.\-]+)\s*[#:/]\s*)?([A-Za-z]?[0-9]+|[A-Za-z0-9_]+)\s*[\]】]"
)


def cited(answer: str) -> list[tuple[str | None, str]]:
    found = [(m.group(1), m.group(2)) for m in CITE.finditer(answer)]
    found += [(m.group(1), m.group(2)) for m in BARE.finditer(answer)]
    return list(dict.fromkeys(found))


def _in_force(record: Retrieval, when: str | None) -> bool:
    if not when:
        return True
    start, end = record.effective_from, record.effective_to
    return (not start or str(start) <= when) and (not end or when < str(end))


def needs(spec: JudgeSpec) -> str | None:
    if not spec.gold_evidence and not spec.rag.get("citation_requirement"):
        return "the case has no gold_evidence or citation_requirement: nothing to check"
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    rag = spec.rag
    gold = spec.gold_evidence
    requirement = rag.get("citation_requirement")
    answer = attempt.output
    if answer is None:
        return error("the attempt has no output to check")
    retrieved = attempt.retrievals()
    # The reference time is the case's ``effective_at`` (the one the runner retrieved at),
    # never a field of the attempt record: a committed output must not move the verdict.
    environment = spec.raw.get("environment") or {}
    when = rag.get("effective_at") or environment.get("effective_at")
    citations = cited(answer)
    for doc_id, passage_id in citations:
        hits = [
            r
            for r in retrieved
            if r.passage_id == passage_id and (doc_id is None or r.doc_id == doc_id)
        ]
        name = f"{doc_id}#{passage_id}" if doc_id else passage_id
        if not hits:
            return failed(
                f"cites {name}, which was not retrieved in this attempt",
                Evidence(None, "output"),
                kind="agent_capability",
            )
        if not any(_in_force(h, str(when) if when else None) for h in hits):
            return failed(
                f"cites {name}, which is not in force on {when}",
                Evidence(hits[0].step, "retrieved"),
            )
    if requirement:
        for g in gold:
            if not g.required:
                continue
            if not any(p == g.passage_id and (d is None or d == g.doc_id) for d, p in citations):
                return failed(
                    f"required evidence {g.name} is not cited",
                    Evidence(None, "output"),
                )
    if not citations:
        return failed("the answer cites nothing", Evidence(None, "output"))
    return passed(f"{len(citations)} citation(s), all retrieved and in force")
