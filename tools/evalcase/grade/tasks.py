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
from evalcase.grade.readers import ReadError, parse

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


@dataclass(frozen=True)
class Labels:
    """What reports slice a case by (``metadata.tags``, ``metadata.dataset_role``)."""

    tags: tuple[str, ...] = ()
    dataset_role: tuple[str, ...] = ()


@dataclass(frozen=True)
class Described:
    title: str = ""
    risk_level: str = ""
    case_types: tuple[str, ...] = ()
    ability_tags: tuple[str, ...] = ()
    scenario: str = ""


@dataclass(frozen=True)
class TaskMeta(Described, Labels):
    """``Task.meta`` (evalcase.contract.build: the labels lifted out of ``metadata``)."""


@dataclass(frozen=True)
class CaseDocument(Described):
    """The reporting fields of a case document whose task could not be built."""

    case_id: str = ""
    case_version: str = ""
    metadata: Labels = Labels()


def case_meta(task: Task) -> CaseMeta:
    read = parse(TaskMeta, task.meta)
    meta = TaskMeta() if isinstance(read, ReadError) else read  # built: already checked
    tools = [card.name for card in task.agent.tools]
    return CaseMeta(
        case_id=task.case_id,
        case_version=task.case_version,
        title=meta.title,
        risk_level=meta.risk_level or task.judge.risk_level,
        case_types=meta.case_types,
        ability_tags=meta.ability_tags,
        scenario=meta.scenario,
        tools=tuple(dict.fromkeys(tools)),
        dataset_roles=meta.dataset_role,
        tags=meta.tags,
        digest=task.digest,
    )


def raw_case_meta(path: str, data: Mapping[str, Any]) -> CaseMeta:
    """Reporting metadata from a case document whose task could not be built (a field of
    the wrong kind, which the build has already reported, leaves the file's name only)."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    doc = parse(CaseDocument, data)
    if isinstance(doc, ReadError):
        return CaseMeta(stem, "?")
    return CaseMeta(
        case_id=doc.case_id or stem,
        case_version=doc.case_version or "?",
        title=doc.title,
        risk_level=doc.risk_level,
        case_types=doc.case_types,
        ability_tags=doc.ability_tags,
        scenario=doc.scenario,
        dataset_roles=doc.metadata.dataset_role,
        tags=doc.metadata.tags,
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
