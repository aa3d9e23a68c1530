"""What grading needs of a dataset at a revision: the manifest (suites, gates) and, per
case, its ``JudgeSpec`` and reporting metadata, from the contract's ``load_dataset`` (git
revision without a checkout, or the work tree)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcase.config import Config
from evalcase.contract.task import JudgeSpec, Task
from evalcase.grade.aggregate import CaseMeta
from evalcase.grade.spec import as_list

if TYPE_CHECKING:
    from evalcase.index.repo import RepoIndex


@dataclass(frozen=True)
class GradingCase:
    spec: JudgeSpec
    meta: CaseMeta
    # The case's initial state at the dataset's revision: graders read this one, never the
    # record's (evalcase.contract.records.with_initial_state).
    initial_state: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class GradingDataset:
    dataset_id: str
    version: str
    digest: str
    manifest: Mapping[str, Any]
    cases: Mapping[str, GradingCase] = field(default_factory=dict)
    # case file -> why its task could not be built (attempts of it grade as errors)
    problems: Mapping[str, str] = field(default_factory=dict)
    # case file -> what reports and gates need of a case that could not be built
    unbuilt: Mapping[str, CaseMeta] = field(default_factory=dict)
    # case ID -> (its file, the digest a run records of it); and the facts the dataset
    # was read from: a report looks each case's audit up by its content
    # (evalcase.audit_facts.store.key_for), as lint and tag do
    case_digests: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    index: RepoIndex | None = None


def case_meta(task: Task) -> CaseMeta:
    meta = task.meta
    tools = [card.name for card in task.agent.tools]
    return CaseMeta(
        case_id=task.case_id,
        case_version=task.case_version,
        title=str(meta.get("title", "")),
        risk_level=str(meta.get("risk_level") or task.judge.risk_level),
        case_types=tuple(str(t) for t in as_list(meta.get("case_types"))),
        ability_tags=tuple(str(t) for t in as_list(meta.get("ability_tags"))),
        scenario=str(meta.get("scenario", "")),
        tools=tuple(dict.fromkeys(tools)),
        dataset_roles=tuple(str(r) for r in as_list(meta.get("dataset_role"))),
        tags=tuple(str(t) for t in as_list(meta.get("tags"))),
        digest=task.digest,
    )


def raw_case_meta(path: str, data: Mapping[str, Any]) -> CaseMeta:
    """Reporting metadata from a case document whose task could not be built."""
    raw = data.get("metadata")
    metadata: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return CaseMeta(
        case_id=str(data.get("case_id") or stem),
        case_version=str(data.get("case_version") or "?"),
        title=str(data.get("title", "")),
        risk_level=str(data.get("risk_level", "")),
        case_types=tuple(str(t) for t in as_list(data.get("case_types"))),
        ability_tags=tuple(str(t) for t in as_list(data.get("ability_tags"))),
        scenario=str(data.get("scenario", "")),
        dataset_roles=tuple(str(r) for r in as_list(metadata.get("dataset_role"))),
        tags=tuple(str(t) for t in as_list(metadata.get("tags"))),
    )


def load_dataset(config: Config, dataset_id: str, commit: str | None) -> GradingDataset:
    """The dataset as it was at ``commit`` (the work tree when None)."""
    from evalcase.index.dataset import load_dataset as load

    dataset = load(config.root, dataset_id, revision=commit, config=config)
    problems = {
        path: "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in found)
        for path, found in dataset.problems.items()
    }
    cases = {
        t.case_id: GradingCase(t.judge, case_meta(t), t.env.initial_state) for t in dataset.tasks
    }
    unbuilt = {path: raw_case_meta(path, data) for path, data in dataset.unbuilt.items()}
    return GradingDataset(dataset.dataset_id, dataset.version, dataset.digest,
                          dataset.manifest, cases, problems, unbuilt,
                          {t.case_id: (t.path, t.digest) for t in dataset.tasks},
                          dataset.index)  # fmt: skip
