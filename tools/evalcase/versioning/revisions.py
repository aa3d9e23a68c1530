"""Naming a dataset at a point in history, and reading it there without a checkout.

A spec is ``DATASET@REF`` or ``DATASET``:

- ``DATASET@v3``: the release tag of that version (``[versioning] tag_format``);
- ``DATASET@REV``: any git revision (commit, branch, ``HEAD~2``, a tag name);
- ``DATASET`` or ``DATASET@WORKTREE``: the working tree;
- a release tag's full name (``refund_regression_set@v1``) also works as is.

Files at a commit are read through one ``git cat-file --batch`` stream and analysed by
the given Analyzer (evalcase.index.analysis); lint's (evalcase.lint.linter.analyzer)
makes their facts come from (and go to) the same per-file cache as lint's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcase.config import Config
from evalcase.files import GitTree, Snapshot, WorkTree
from evalcase.index.analysis import Analyzer, FileResult, broken_paths, index_of
from evalcase.index.digest import DatasetContent, dataset_contents, dataset_id_of
from evalcase.index.facts import ManifestFacts
from evalcase.index.repo import RepoIndex
from evalcase.model import FatalError, FileKind
from evalcase.versioning.tags import Release, Releases, version_number

if TYPE_CHECKING:
    from evalcase import gitio

WORKTREE = "WORKTREE"


@dataclass(frozen=True)
class Revision:
    """Where to read a dataset: a release, a commit, or the working tree (commit None)."""

    spec: str
    dataset_id: str
    commit: str | None
    release: Release | None = None
    ref: str = ""

    @property
    def label(self) -> str:
        if self.release is not None:
            return self.release.tag
        if self.commit is None:
            return f"{self.dataset_id} (working tree)"
        return f"{self.dataset_id}@{self.ref} ({self.commit[:10]})"


@dataclass
class DatasetView:
    """One dataset as it is at a revision."""

    revision: Revision
    content: DatasetContent
    index: RepoIndex
    results: dict[str, FileResult]
    snapshot: Snapshot


def open_repo(config: Config) -> gitio.Repo:
    from evalcase import gitio
    from evalcase.versioning.history import is_git_repository

    if not is_git_repository(config.root):
        raise FatalError(f"{config.root} is not a git repository")
    return gitio.Repo(config.root)


def releases_of(config: Config, repo: gitio.Repo) -> Releases:
    return Releases.from_tags(repo.tags(), config)


def parse_spec(config: Config, repo: gitio.Repo | None, spec: str) -> Revision:
    """Resolve ``DATASET[@REF]`` (see the module documentation)."""
    spec = spec.strip()
    if not spec:
        raise FatalError("empty dataset name")
    releases = releases_of(config, repo) if repo is not None and repo.has_commits() else None
    if releases is not None:
        for release in releases.all:
            if release.tag == spec:
                return Revision(spec, release.dataset_id, release.commit, release, release.version)
    dataset_id, _, ref = spec.partition("@")
    if not ref or ref.upper() == WORKTREE:
        return Revision(spec, dataset_id, None)
    if repo is None:
        raise FatalError(f"'{spec}' names a revision, but {config.root} is not a git repository")
    if version_number(ref) is not None:
        found = releases.get(dataset_id, ref) if releases is not None else None
        if found is None:
            known = [r.tag for r in releases.of(dataset_id)] if releases is not None else []
            hint = f"its releases: {', '.join(known)}" if known else "it has no release tags"
            raise FatalError(f"no release tag for {dataset_id} {ref} ({hint})")
        return Revision(spec, dataset_id, found.commit, found, ref)
    return Revision(spec, dataset_id, repo.rev_parse(ref), None, ref)


def snapshot_of(config: Config, revision: Revision) -> Snapshot:
    if revision.commit is None:
        return WorkTree(config.root, config.max_file_bytes, config.max_state_fixture_bytes)
    return GitTree(config.root, revision.commit)


def read_dataset(
    config: Config,
    revision: Revision,
    *,
    analyzer: Analyzer | None = None,
    governance: tuple[str, ...] | None = None,
) -> DatasetView:
    """The dataset's manifest, cases and every fixture, analysed at the revision.

    ``governance``: fields left out of case digests (default: the configuration's; a
    release's own list when checking its recorded digest). ``analyzer``: how files are
    analysed (default: facts only, uncached).
    """
    snapshot = snapshot_of(config, revision)
    if analyzer is None:
        analyzer = Analyzer(config, snapshot, use_cache=False)
    files = snapshot.files()
    manifests = [f for f in files if f.kind is FileKind.MANIFEST]
    results = analyzer.analyze_files(manifests, snapshot=snapshot)
    dirs = set()
    for source in manifests:
        facts = results[source.path].facts
        if isinstance(facts, ManifestFacts) and dataset_id_of(facts) == revision.dataset_id:
            dirs.add(source.group)
    if not dirs:
        dirs = {revision.dataset_id}
    wanted = [
        f
        for f in files
        if f.kind is FileKind.FIXTURE or (f.kind is FileKind.CASE and f.group in dirs)
    ]
    results.update(analyzer.analyze_files(wanted, snapshot=snapshot))
    index = index_of(results)
    key = tuple(sorted(config.governance_fields if governance is None else governance))
    content = dataset_contents(index, key, broken_paths(results)).get(revision.dataset_id)
    if content is None:
        where = "the working tree" if revision.commit is None else revision.label
        raise FatalError(f"no dataset '{revision.dataset_id}' in {where}")
    return DatasetView(revision, content, index, results, snapshot)
