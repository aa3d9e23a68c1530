"""`evalcase export`: a dataset version as JSON Lines, read straight from git.

``evalcase export refund_regression_set@v1`` reads the tagged commit through one
``git cat-file --batch`` stream (no checkout, the working tree is untouched) and writes
one case a line with every fixture it references resolved (evalcase.index.resolve), so that a
run months later uses exactly what the release froze. Each line::

    {"dataset_id": ..., "dataset_version": "v1", "release": "refund_regression_set@v1",
     "commit": "<sha>", "case_id": ..., "case_version": ..., "case": {...},
     "fixtures": {"order_lookup": {...}, ...}, "unresolved": []}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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
            json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in self.records
        )


def export_dataset(config: Config, spec: str, analyzer: Analyzer | None = None) -> Export:
    """Read ``spec`` (``DATASET@vN``, ``DATASET@REV`` or ``DATASET``) and resolve every
    case; see evalcase.versioning.revisions for the spec."""
    from evalcase.index.analysis import limits_of
    from evalcase.index.resolve import FixtureCatalog, resolve_case
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
    limits = limits_of(config)

    def data_of(path: str) -> dict[str, Any]:
        doc = load(path, raw.get(path, b""), limits)
        if not isinstance(doc.data, dict):
            raise FatalError(f"{revision.label}: {path} cannot be read")
        return doc.data

    catalog = FixtureCatalog.of({e.id: data_of(e.path) for e in content.fixtures})
    records = []
    for entry in content.cases:
        resolved = resolve_case(data_of(entry.path), catalog)
        records.append(
            {
                "dataset_id": content.dataset_id,
                "dataset_version": content.version,
                "release": release.tag if release is not None else None,
                "commit": revision.commit,
                **resolved,
            }
        )
    matches = None
    if release is not None and release.digest is not None:
        matches = release.digest == content.digest
    return Export(revision, content.dataset_id, content.version, content.digest, matches, records)
