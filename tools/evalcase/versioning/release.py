"""Releasing datasets: `evalcase tag` and `evalcase datasets`.

A dataset version is released by an annotated git tag (evalcase.versioning.tags). The tool
creates tags and never moves or deletes one; a released version is frozen (EC505).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalcase.config import Config
from evalcase.index.analysis import Analyzer, analyze_all, broken_paths
from evalcase.index.digest import DatasetContent
from evalcase.index.repo import RepoIndex
from evalcase.model import FatalError, Finding, Severity
from evalcase.versioning.revisions import open_repo
from evalcase.versioning.tags import Releases, format_message, version_number

CLEAN, CHANGED, UNTAGGED = "clean", "changed since tag", "untagged"


def tag_dataset(
    config: Config,
    dataset_id: str,
    lint: Callable[[], Sequence[Finding]],
    analyzer: Analyzer | None = None,
    *,
    override_audit: str | None = None,
    warn: Callable[[str], None] | None = None,
) -> str:
    """Release the manifest's current version of a dataset as an annotated tag on HEAD;
    returns the tag name. ``lint``: the findings of linting what is staged against HEAD
    (evalcase.actions passes lint's); ``analyzer``: how files are read (default: facts
    only, uncached).

    Refuses (FatalError) unless the working tree is clean, the repository lints clean
    (errors; warnings are allowed), the version has no tag yet and no counted case has
    an unresolved stored audit finding (evalcase.audit_facts.release; with ``[versioning]
    require_audit``, no counted case unaudited either). ``override_audit``: the reason
    a release goes out with audit problems anyway, recorded in the tag message.
    ``warn``: told of unaudited cases when they do not refuse the release.
    """
    from evalcase.files import GitTree
    from evalcase.index.digest import dataset_contents

    repo = open_repo(config)
    if not repo.has_commits():
        raise FatalError("nothing is committed yet: commit the dataset, then tag it")
    status = [line for line in repo.status_porcelain().splitlines() if line.strip()]
    if status:
        shown = "\n".join(f"  {line}" for line in status[:10])
        more = f"\n  ... and {len(status) - 10} more" if len(status) > 10 else ""
        raise FatalError(
            "the working tree is not clean; a release tags a commit, so commit or stash "
            f"these first:\n{shown}{more}"
        )
    head = repo.rev_parse("HEAD")
    errors = [f for f in lint() if f.severity is Severity.ERROR]
    if errors:
        shown = "\n".join(f"  {f.path}:{f.line}: {f.code} {f.message}" for f in errors[:5])
        raise FatalError(
            f"the repository does not lint clean ({len(errors)} error"
            f"{'s' * (len(errors) != 1)}); fix them (`evalcase lint`) before releasing:\n"
            f"{shown}"
        )
    snapshot = GitTree(config.root, head)
    if analyzer is None:
        analyzer = Analyzer(config, snapshot, use_cache=False)
    results, index = analyze_all(analyzer, snapshot)
    governance = tuple(sorted(config.governance_fields))
    contents = dataset_contents(index, governance, broken_paths(results))
    content = contents.get(dataset_id)
    if content is None:
        known = ", ".join(sorted(contents)) or "none"
        raise FatalError(f"no dataset '{dataset_id}' (datasets: {known})")
    if version_number(content.version) is None:
        raise FatalError(f"{content.manifest.path}: dataset_version is not a version label")
    name = config.tag_name(dataset_id, content.version)
    tags = repo.tags()
    releases = Releases.from_tags(tags, config)
    existing = releases.get(dataset_id, content.version)
    taken = [t.commit for t in tags if t.name == name]
    if existing is not None:
        taken.append(existing.commit)
    if taken:
        commit = taken[0]
        raise FatalError(
            f"{name} already exists (commit {commit[:10]}); a released version is never "
            "tagged again: bump dataset_version (`evalcase bump`), commit, then tag"
        )
    highest = releases.highest(dataset_id)
    if (version_number(highest) or 0) > (version_number(content.version) or 0):
        raise FatalError(
            f"{dataset_id} is already released at {highest}; dataset_version "
            f"{content.version} would go back: set it above {highest}"
        )
    message = format_message(content, governance, name)
    message += _audit_lines(config, index, governance, content, override_audit, warn)
    repo.create_annotated_tag(name, message, head)
    return name


def _audit_lines(
    config: Config,
    index: RepoIndex,
    governance: tuple[str, ...],
    content: DatasetContent,
    override: str | None,
    warn: Callable[[str], None] | None,
) -> str:
    """The tag message's audit lines (only for an override), after refusing a release
    with audit problems (FatalError) unless ``override`` gives a reason."""
    from evalcase.audit_facts import release as audit_release
    from evalcase.audit_facts import store as audit_store

    tracked = audit_store.tracked_facts(config.root)
    if tracked and warn is not None:
        warn(audit_store.tracked_warning(tracked))
    gate = audit_release.check(
        config.root, index, governance, content.dataset_dir, content.dataset_id
    )
    problems = gate.problems(config.require_audit)
    if override is not None and not override.strip():
        raise FatalError("--override-audit needs a reason, recorded in the tag message")
    if problems and override is None:
        shown = "\n".join(problems[:10])
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise FatalError(
            f"{content.dataset_id} {content.version} has audit problems (`evalcase audit "
            f"{content.dataset_id}` says why); fix the cases, declare a right behaviour "
            "(audit: {may_pass: [...]}), or release anyway with --override-audit "
            f'"REASON" (recorded in the tag):\n{shown}{more}'
        )
    if warn is not None and gate.unaudited and not config.require_audit:
        warn(
            f"{len(gate.unaudited)} counted case(s) of {content.dataset_id} have no audit "
            f"at their current content (`evalcase audit {content.dataset_id}`)"
        )
    if override is None:
        return ""
    return "\n".join(audit_release.override_lines(override, gate)) + "\n"


@dataclass(frozen=True)
class DatasetStatus:
    """One line of `evalcase datasets`."""

    dataset_id: str
    version: str
    latest_tag: str | None
    cases: int
    status: str
    digest: str
    path: str

    def to_dict(self) -> dict[str, object]:
        return {
            "dataset_id": self.dataset_id,
            "version": self.version,
            "latest_tag": self.latest_tag,
            "cases": self.cases,
            "status": self.status,
            "digest": self.digest,
            "manifest": self.path,
        }


def list_datasets(config: Config, analyzer: Analyzer | None = None) -> list[DatasetStatus]:
    """Every dataset of the working tree with its version, latest tag and status:
    ``clean`` (the manifest's version is tagged and unchanged), ``changed since tag``
    (tagged, and changed since: lint fails until it is bumped) or ``untagged``."""
    from evalcase.files import WorkTree
    from evalcase.index.digest import dataset_contents
    from evalcase.versioning.history import VersionHistory, is_git_repository

    snapshot = WorkTree(config.root, config.max_file_bytes, config.max_state_fixture_bytes)
    if analyzer is None:
        analyzer = Analyzer(config, snapshot, use_cache=False)
    results, index = analyze_all(analyzer, snapshot)
    governance = tuple(sorted(config.governance_fields))
    contents = dataset_contents(index, governance, broken_paths(results))
    history = None
    if is_git_repository(config.root):
        repo = open_repo(config)
        if repo.has_commits():
            history = VersionHistory(config, repo, None, None, False).build(
                analyzer, index, results
            )
    out = []
    for dataset_id, content in sorted(contents.items()):
        latest = None
        status = UNTAGGED
        if history is not None:
            newest = history.releases.latest(dataset_id)
            latest = newest.tag if newest is not None else None
            current = history.releases.get(dataset_id, content.version)
            if current is not None:
                delta = history.delta(dataset_id, current)
                status = CLEAN if delta is not None and not delta else CHANGED
        out.append(
            DatasetStatus(
                dataset_id,
                content.version,
                latest,
                len(content.cases),
                status,
                content.digest,
                content.manifest.path,
            )
        )
    return out
