"""Gold evidence missing from the required corpus version, or not yet in force on its date.

A RAG case holds for one corpus version (``environment_requirements.corpus_version``) and
is set on one date (``environment_requirements.effective_at``, else
``environment.effective_at``). Each ``gold_evidence`` item must name a document and a
passage of that corpus version, and the passage (or, without its own date, its document)
must be in force on that date: evidence that takes effect later cannot support the
answer, and evidence from another corpus version is not what the retriever will see.

Passing::

    environment_requirements: {corpus_version: refund_policy_2026_07, effective_at: "2026-07-08"}
    gold_evidence:
      - {doc_id: refund_policy_audio_003, passage_id: p12}

Failing::

    environment_requirements: {corpus_version: refund_policy_2026_07, effective_at: "2026-07-08"}
    gold_evidence:
      - {doc_id: refund_policy_audio_003, passage_id: p99}    # no such passage
      - {doc_id: refund_policy_audio_003, passage_id: p13}    # in force from 2026-09-01
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.facts import CORPUS_VERSION
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import did_you_mean, listing
from evalcase.model import Finding, Severity
from evalcase.naming import iso_date

CODE = "EC306"
NAME = "gold-evidence"
SEVERITY = Severity.ERROR
SCOPE = "repo"

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for case in index.checked_cases():
        if not case.gold_evidence:
            continue
        version = next((r[2] for r in case.refs if r[1] == CORPUS_VERSION), None)
        corpora = index.corpora_by_version.get(version) if version else None
        if not corpora:
            continue  # no requirement (schema) or no such corpus (EC301)
        corpus = corpora[0]
        effective_at = iso_date(case.effective_at)
        for i, (doc_id, passage_id, line, col) in enumerate(case.gold_evidence):
            at = case.evidence_at[i] if i < len(case.evidence_at) else (line, col, line, col)
            if not doc_id or not passage_id:
                continue  # a missing key is the schema's
            passages = corpus.passages.get(doc_id)
            if passages is None:
                elsewhere = sorted(
                    v for v, fs in index.corpora_by_version.items() if doc_id in fs[0].passages
                )
                hint = f"; it is in {', '.join(elsewhere)}" if elsewhere else ""
                yield report(
                    case.path,
                    at[0],
                    at[1],
                    f"document {doc_id!r} is not in corpus version {version!r} "
                    f"({corpus.path}){did_you_mean(doc_id, corpus.passages)}{hint}; its "
                    f"documents: {listing(corpus.passages)}",
                )
                continue
            if passage_id not in passages:
                yield report(
                    case.path,
                    at[2],
                    at[3],
                    f"passage {passage_id!r} is not in document {doc_id!r} of corpus version "
                    f"{version!r}{did_you_mean(passage_id, passages)}; its passages: "
                    f"{listing(passages)}",
                )
                continue
            starts = iso_date(passages[passage_id])
            if effective_at is not None and starts is not None and starts > effective_at:
                yield report(
                    case.path,
                    at[2],
                    at[3],
                    f"passage {doc_id}/{passage_id} takes effect on {starts}, after the "
                    f"case's effective_at {effective_at}; evidence not yet in force cannot "
                    "support the answer: cite a passage in force on that date, or move "
                    "effective_at",
                )
