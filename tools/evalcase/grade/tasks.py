"""What grading needs of a dataset at a revision: the manifest (suites, gates) and, per
case, its ``JudgeSpec`` and reporting metadata. Read from git (no checkout) or the work tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalcase.config import Config
from evalcase.grade.aggregate import CaseMeta, case_meta_from_case
from evalcase.grade.spec import JudgeSpec, judge_spec_from_case
from evalcase.model import FatalError


@dataclass(frozen=True)
class GradingCase:
    spec: JudgeSpec
    meta: CaseMeta


@dataclass(frozen=True)
class GradingDataset:
    dataset_id: str
    version: str
    digest: str
    manifest: Mapping[str, Any]
    cases: Mapping[str, GradingCase] = field(default_factory=dict)


def grading_case(case: Mapping[str, Any], fixtures: Mapping[str, Any], digest: str) -> GradingCase:
    rubric = None
    name = case.get("rubric") or (case.get("evaluator_config") or {}).get("judge", {}).get("rubric")
    if isinstance(name, str) and isinstance(fixtures.get(name), Mapping):
        rubric = fixtures[name]
    return GradingCase(judge_spec_from_case(case, rubric), case_meta_from_case(case, digest))


def load_dataset(config: Config, dataset_id: str, commit: str | None) -> GradingDataset:
    """The dataset as it was at ``commit`` (the work tree when None)."""
    from evalcase.index.analysis import limits_of
    from evalcase.index.resolve import FixtureCatalog, resolve_case
    from evalcase.loader import load
    from evalcase.versioning.revisions import Revision, read_dataset

    revision = Revision(f"{dataset_id}@{commit or 'WORKTREE'}", dataset_id, commit)
    view = read_dataset(config, revision)
    content = view.content
    manifest_paths = [str(content.manifest.path)]
    paths = [e.path for e in content.cases] + [e.path for e in content.fixtures] + manifest_paths
    raw = view.snapshot.read(paths)
    limits = limits_of(config)

    def data_of(path: str) -> dict[str, Any]:
        doc = load(path, raw.get(path, b""), limits)
        if not isinstance(doc.data, dict):
            raise FatalError(f"{revision.label}: {path} cannot be read; run `evalcase lint`")
        return doc.data

    manifest_path = next((p for p in manifest_paths if raw.get(p)), None)
    manifest = data_of(manifest_path) if manifest_path else {}
    catalog = FixtureCatalog.of({e.id: data_of(e.path) for e in content.fixtures})
    cases = {}
    for entry in content.cases:
        resolved = resolve_case(data_of(entry.path), catalog)
        case = resolved["case"]
        cases[entry.id] = grading_case(case, resolved.get("fixtures") or {}, entry.digest)
    return GradingDataset(content.dataset_id, content.version, content.digest, manifest, cases)
