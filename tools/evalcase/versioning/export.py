"""`evalcase export`: a dataset version as JSON Lines, read straight from git.

``evalcase export refund_regression_set@v1`` reads the tagged commit through one
``git cat-file --batch`` stream (no checkout, the working tree is untouched) and writes
one case a line, built into its task (evalcase.contract.build, every fixture it references
resolved), so that a run months later uses exactly what the release froze. What an agent
may read and the answer key are separate, named parts of each line::

    {"dataset_id": ..., "dataset_version": "v1", "release": "refund_regression_set@v1",
     "commit": "<sha>", "case_id": ..., "case_version": ..., "digest": ...,
     "agent_view": {...AgentView: input turns, history, tool cards, params...},
     "environment": {...EnvSpec: initial state, tool behaviour, faults, permissions...},
     "answer_key": {...JudgeSpec: expected calls, final-state check, graders, rubric...},
     "meta": {...}, "fixture_versions": {"order_lookup": "v2", ...}, "problems": []}

A case that cannot be built has ``null`` parts and its ``problems`` listed. A case whose
conversation has ``role: tool`` turns (lint refuses them: EC350) has ``"tool_turns": N``:
no agent view holds them, and the formats' summaries say so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from evalcase.config import Config
from evalcase.index.analysis import Analyzer
from evalcase.model import FatalError
from evalcase.versioning.revisions import Revision


@dataclass
class Export:
    revision: Revision
    dataset_id: str
    version: str
    digest: str
    # Whether the content read back has the digest the release tag recorded (None when
    # not reading a release).
    digest_matches: bool | None
    records: list[dict[str, Any]] = field(default_factory=list)

    def jsonl(self) -> str:
        return "".join(
            json.dumps(r, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
            for r in self.records
        )


def tool_turns(case: Mapping[str, Any], fixtures: Mapping[str, Mapping[str, Any]]) -> int:
    """How many ``role: tool`` turns the case's conversation has (its ``interaction`` and
    the conversation fixtures its context names): no AgentView holds them."""
    turns = list(case.get("interaction") or ()) if isinstance(case.get("interaction"), list) else []
    context = case.get("context")
    refs = context.get("fixtures") if isinstance(context, Mapping) else None
    for ref in refs if isinstance(refs, list) else ():
        fixture = fixtures.get(str(ref)) or {}
        data = fixture.get("data")
        if fixture.get("kind") == "conversation" and isinstance(data, Mapping):
            turns += list(data.get("turns") or ()) if isinstance(data.get("turns"), list) else []
    return sum(1 for t in turns if isinstance(t, Mapping) and t.get("role") == "tool")


def export_dataset(config: Config, spec: str, analyzer: Analyzer | None = None) -> Export:
    """Read ``spec`` (``DATASET@vN``, ``DATASET@REV`` or ``DATASET``) and resolve every
    case; see evalcase.versioning.revisions for the spec."""
    from evalcase.contract.build import build_task
    from evalcase.contract.task import Task
    from evalcase.index.analysis import limits_of
    from evalcase.index.resolve import FixtureCatalog
    from evalcase.loader import load
    from evalcase.versioning.history import is_git_repository
    from evalcase.versioning.revisions import open_repo, parse_spec, read_dataset

    repo = open_repo(config) if is_git_repository(config.root) else None
    revision = parse_spec(config, repo, spec)
    release = revision.release
    governance = release.governance if release is not None else None
    view = read_dataset(config, revision, analyzer=analyzer, governance=governance)
    content = view.content
    if not content.complete:
        raise FatalError(
            f"{revision.label}: some files of the dataset or its fixtures cannot be read; "
            "run `evalcase lint` on that revision"
        )
    paths = [e.path for e in content.cases] + [e.path for e in content.fixtures]
    raw = view.snapshot.read(paths)

    def data_of(path: str) -> dict[str, Any]:
        doc = load(path, raw.get(path, b""), limits_of(config, path))
        if not isinstance(doc.data, dict):
            raise FatalError(f"{revision.label}: {path} cannot be read")
        return doc.data

    fixtures = {e.id: data_of(e.path) for e in content.fixtures}
    catalog = FixtureCatalog.of(fixtures)
    facts_by_path = {c.path: c for c in view.index.cases}
    records = []
    for entry in content.cases:
        case = data_of(entry.path)
        facts = facts_by_path.get(entry.path)
        refs = [(f, k, t) for f, k, t, _l, _c in facts.refs] if facts is not None else []
        built = build_task(
            case,
            fixtures,
            catalog.targets,
            refs=refs,
            dataset_id=content.dataset_id,
            path=entry.path,
        )
        record: dict[str, Any] = {
            "dataset_id": content.dataset_id,
            "dataset_version": release.version if release is not None else content.version,
            "release": release.tag if release is not None else None,
            "commit": revision.commit,
            "case_id": case.get("case_id"),
            "case_version": case.get("case_version"),
        }
        if isinstance(built, Task):
            dropped = tool_turns(case, fixtures)
            record.update(
                {
                    "digest": built.digest,
                    "agent_view": asdict(built.agent),
                    "environment": asdict(built.env),
                    # replay_env is the environment again (for from_expected_calls): it
                    # is in "environment" already.
                    "answer_key": {
                        k: v for k, v in asdict(built.judge).items() if k != "replay_env"
                    },
                    "meta": dict(built.meta),
                    "fixture_versions": dict(built.fixture_versions),
                    "problems": [],
                }
            )
            if dropped:  # lint refuses them (EC350); an export still says they are gone
                record["tool_turns"] = dropped
        else:
            record.update(
                {
                    "digest": None,
                    "agent_view": None,
                    "environment": None,
                    "answer_key": None,
                    "meta": None,
                    "fixture_versions": {},
                    "problems": [f"{p.field}: {p.message}" for p in built],
                }
            )
        records.append(record)
    matches = None
    if release is not None and release.digest is not None:
        matches = release.digest == content.digest
    return Export(revision, content.dataset_id, content.version, content.digest, matches, records)
