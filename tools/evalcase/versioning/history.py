"""Git-native versioning: compare the repository with a base revision and release tags.

Two references, each optional:

- a **base revision** (``lint --base REF``; under ``--staged`` PRE_COMMIT_FROM_REF or
  HEAD). A branch name stands for its merge base with HEAD, which is what a pull request
  is compared with. Changed paths and their old and new blob ids come from one
  ``git diff --raw -z`` (plus untracked files when linting the working tree); the base
  side of each changed file is analysed by the same Analyzer, through the same per-file
  cache (keyed by path and blob id), from the base commit read in one cat-file stream.
  Files that did not change are the same at the base, so the base's full picture is
  the current facts with the changed files swapped for their base versions.
- the **release tags** (``<dataset_id>@<dataset_version>``, see evalcase.versioning.tags), all
  read with one for-each-ref. They apply to every lint run in a git repository.

Cases are identified across renames by case_id, fixtures by fixture_id, datasets by
dataset_id. The history rules (EC5xx, ``SCOPE = "history"``) read a :class:`History`;
``evalcase bump`` plans its edits from the same object (evalcase.versioning.bump).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from evalcase.config import Config
from evalcase.files import ROOTS, SourceFile, classify, is_candidate
from evalcase.index.analysis import broken_paths
from evalcase.index.digest import (
    GROUPING_FIELDS,
    DatasetContent,
    case_content,
    case_governance,
    case_id_of,
    changed_fields,
    dataset_contents,
    dataset_id_of,
    fixture_content,
    fixture_governance,
    fixture_id_of,
    manifest_content,
    text,
)
from evalcase.index.facts import CaseFacts, FixtureFacts, Located, ManifestFacts
from evalcase.index.repo import RepoIndex
from evalcase.model import FatalError
from evalcase.versioning.tags import (
    ParsedTags,
    Release,
    Releases,
    next_version,
    version_number,
)

if TYPE_CHECKING:
    from evalcase import gitio
    from evalcase.index.analysis import Analyzer, FileResult
    from evalcase.index.contents import StoredContents

F = TypeVar("F", CaseFacts, FixtureFacts, ManifestFacts)


def is_git_repository(root: Path) -> bool:
    """Whether the case repository at ``root`` is in a git work tree (at its top, or in a
    subfolder of it such as an application's ``evals/``)."""
    from evalcase import gitio

    return gitio.Repo.is_repo(root)


def resolve_base(repo: gitio.Repo, ref: str) -> str:
    """The commit to compare with: a branch (local or remote-tracking) means its merge
    base with HEAD, as CI compares a pull request; anything else is taken as given."""
    if ref != "HEAD" and repo.has_commits():
        full = repo.symbolic_full_name(ref)
        if full.startswith(("refs/heads/", "refs/remotes/")):
            return repo.merge_base(ref, "HEAD")
    return repo.rev_parse(ref)


def history_for(config: Config, *, base: str | None, staged: bool) -> VersionHistory | None:
    """The history checks for one lint run in a git repository (None outside one)."""
    from evalcase import gitio

    if not is_git_repository(config.root):
        return None
    repo = gitio.Repo(config.root)
    if not repo.has_commits():
        if base and not staged:
            raise FatalError(f"unknown revision '{base}': nothing is committed yet")
        return None  # the first commit: no base to compare with, no tags yet
    base_sha = resolve_base(repo, base) if base else None
    return VersionHistory(config, repo, base_sha, base, staged)


def located_version(facts: CaseFacts | FixtureFacts | ManifestFacts) -> Located | None:
    if isinstance(facts, CaseFacts):
        return facts.case_version
    if isinstance(facts, FixtureFacts):
        return facts.fixture_version
    return facts.dataset_version


def position(located: Located | None) -> tuple[int, int]:
    """(line, column) of a located value; the top of the file when it is absent."""
    return (located[1], located[2]) if located is not None else (1, 1)


def version_field(facts: CaseFacts | FixtureFacts | ManifestFacts) -> str:
    if isinstance(facts, CaseFacts):
        return "case_version"
    if isinstance(facts, FixtureFacts):
        return "fixture_version"
    return "dataset_version"


@dataclass(frozen=True)
class Pair(Generic[F]):
    """One case, fixture or manifest at the base and now (None: absent on that side)."""

    id: str
    base: F | None
    current: F | None
    content_changed: bool = False
    fields: tuple[str, ...] = ()  # content fields that changed
    other_fields: tuple[str, ...] = ()  # governance fields that changed

    @property
    def old_version(self) -> str:
        return text(located_version(self.base)) if self.base is not None else ""

    @property
    def new_version(self) -> str:
        return text(located_version(self.current)) if self.current is not None else ""

    @property
    def old_number(self) -> int | None:
        return version_number(self.old_version)

    @property
    def new_number(self) -> int | None:
        return version_number(self.new_version)

    def target_version(self) -> str | None:
        """The version this needs (for `evalcase bump`), or None when it is fine: above
        the base's when the content changed, never below the base's."""
        old, new = self.old_number, self.new_number
        if old is None or new is None:
            return None
        if self.content_changed and new <= old:
            return next_version(self.old_version)
        if not self.content_changed and new < old:
            return self.old_version
        return None


@dataclass(frozen=True)
class Delta:
    """What differs between a dataset now and one of its releases."""

    cases_added: tuple[str, ...] = ()
    cases_removed: tuple[str, ...] = ()
    cases_modified: tuple[str, ...] = ()
    fixtures_added: tuple[str, ...] = ()
    fixtures_removed: tuple[str, ...] = ()
    fixtures_modified: tuple[str, ...] = ()
    # Cases whose tags, roles, risk level or coverage cell changed (present on both sides),
    # and the manifest's grouping fields (suites, gates, coverage, agent) that changed:
    # what a suite or gate of the release measures is no longer the same.
    cases_regrouped: tuple[str, ...] = ()
    manifest_regrouped: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return any(
            (
                self.cases_added,
                self.cases_removed,
                self.cases_modified,
                self.fixtures_added,
                self.fixtures_removed,
                self.fixtures_modified,
                self.cases_regrouped,
                self.manifest_regrouped,
            )
        )

    def describe(self, limit: int = 8) -> str:
        parts = []
        for label, items in (
            ("cases modified", self.cases_modified),
            ("cases added", self.cases_added),
            ("cases removed", self.cases_removed),
            ("fixtures modified", self.fixtures_modified),
            ("fixtures added", self.fixtures_added),
            ("fixtures removed", self.fixtures_removed),
            ("cases regrouped (tags, roles, risk level or coverage)", self.cases_regrouped),
            ("manifest grouping changed", self.manifest_regrouped),
        ):
            if items:
                parts.append(f"{label}: {names(items, limit)}")
        return "; ".join(parts)


def names(items: Iterable[str], limit: int = 8) -> str:
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def compare_grouping(
    old: dict[str, str] | None, new: dict[str, str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(regrouped case IDs, changed manifest grouping fields) between two grouping maps;
    nothing when the release did not record grouping. Added and removed cases are
    reported as such, not as regrouped."""
    if old is None:
        return (), ()
    cases = tuple(
        sorted(
            k.split(":", 1)[1]
            for k in old.keys() & new.keys()
            if k.startswith("case:") and old[k] != new[k]
        )
    )
    manifest = tuple(
        sorted(
            k.split(":", 1)[1]
            for k in old.keys() | new.keys()
            # Only today's grouping fields: a release recorded before ``agent`` left them
            # still lists it, and a changed agent is no regrouping.
            if k.startswith("manifest:")
            and k.split(":", 1)[1] in GROUPING_FIELDS
            and old.get(k) != new.get(k)
        )
    )
    return cases, manifest


def compare_maps(
    old: dict[str, tuple[str, str]], new: dict[str, tuple[str, str]]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(added, removed, modified) IDs between two id -> (version, digest) maps."""
    added = tuple(sorted(new.keys() - old.keys()))
    removed = tuple(sorted(old.keys() - new.keys()))
    modified = tuple(sorted(k for k in old.keys() & new.keys() if old[k][1] != new[k][1]))
    return added, removed, modified


class History:
    """Everything the history rules and `evalcase bump` compare: the current facts, the
    base's (when there is a base), and the release tags."""

    def __init__(
        self,
        config: Config,
        index: RepoIndex,
        releases: Releases,
        *,
        broken: frozenset[str] = frozenset(),
        base: str | None = None,
        base_label: str | None = None,
        base_index: RepoIndex | None = None,
        base_broken: frozenset[str] = frozenset(),
        touched_new: frozenset[str] = frozenset(),
        touched_old: frozenset[str] = frozenset(),
        contents_at: Callable[[str], dict[str, DatasetContent]] | None = None,
        stored: StoredContents | None = None,
    ) -> None:
        """``stored``: the current datasets' contents when ``index`` holds only some of
        the cases (a partial run of lint, see evalcase.index.contents); such a run
        changes only cases, so the base's contents are never asked for."""
        self.config = config
        self.index = index
        self.releases = releases
        self.broken = broken
        self.base = base
        self.base_label = base_label or base
        self.base_index = base_index
        self.base_broken = base_broken
        self._touched_new = touched_new
        self._touched_old = touched_old
        self._contents_at = contents_at
        self._stored = stored
        self._contents: dict[tuple[str, ...], dict[str, DatasetContent]] = {}
        self._content: dict[tuple[str, ...], DatasetContent | None] = {}
        self._release_maps: dict[
            str,
            tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]], dict[str, str]] | None,
        ] = {}

    @property
    def governance(self) -> tuple[str, ...]:
        return tuple(sorted(self.config.governance_fields))

    @property
    def base_name(self) -> str:
        label = self.base_label or ""
        short = (self.base or "")[:10]
        return label if label and short.startswith(label) else f"{label} ({short})"

    # --- the repository now ------------------------------------------------------------
    @cached_property
    def manifests_by_id(self) -> dict[str, ManifestFacts]:
        """Current manifests by dataset ID (the first by path when two share an ID)."""
        return _first_by_id(self.index.manifests)

    def version_of(self, dataset_id: str) -> str:
        manifest = self.manifests_by_id.get(dataset_id)
        return text(manifest.dataset_version) if manifest is not None else ""

    def contents(self, governance: tuple[str, ...] | None = None) -> dict[str, DatasetContent]:
        """Every current dataset by ID, with digests computed leaving out ``governance``
        (default: the configuration's governance fields)."""
        key = self.governance if governance is None else tuple(sorted(governance))
        if key not in self._contents:
            if self._stored is not None:
                self._contents[key] = self._stored(key)
            else:
                self._contents[key] = dataset_contents(self.index, key, self.broken)
        return self._contents[key]

    def content(
        self, dataset_id: str, governance: tuple[str, ...] | None = None
    ) -> DatasetContent | None:
        """One current dataset (computed alone unless every dataset already is)."""
        key = self.governance if governance is None else tuple(sorted(governance))
        if key in self._contents:
            return self._contents[key].get(dataset_id)
        one = (dataset_id, *key)
        if one not in self._content:
            if self._stored is not None:
                found = self._stored(key, {dataset_id})
            else:
                found = dataset_contents(self.index, key, self.broken, only={dataset_id})
            self._content[one] = found.get(dataset_id)
        return self._content[one]

    def released_datasets(self) -> list[str]:
        """IDs of current datasets that have at least one release tag."""
        return sorted(d for d in self.manifests_by_id if self.releases.of(d))

    # --- the base ----------------------------------------------------------------------
    @cached_property
    def base_contents(self) -> dict[str, DatasetContent]:
        if self.base_index is None:
            return {}
        if self._stored is not None:
            # A partial run's base index holds only some cases: lint again without the
            # store (evalcase.lint.linter answers StoreError so). Its runs change only
            # cases, which never ask for this.
            from evalcase.index.store import StoreError

            raise StoreError("the base's dataset contents need every case")
        return dataset_contents(self.base_index, self.governance, self.base_broken)

    def _pairs(self, current: Sequence[F], previous: Sequence[F]) -> list[Pair[F]]:
        if self.base_index is None:
            return []
        ids = {_id(f) for f in current if f.path in self._touched_new}
        ids |= {_id(f) for f in previous if f.path in self._touched_old}
        now, then = _first_by_id(current, ids), _first_by_id(previous, ids)
        out = []
        for item_id in sorted(ids):
            old, new = then.get(item_id), now.get(item_id)
            if old is not None or new is not None:
                out.append(self._pair(item_id, old, new))
        return out

    def _pair(self, item_id: str, old: F | None, new: F | None) -> Pair[F]:
        if old is None or new is None:
            return Pair(item_id, old, new, content_changed=True)
        (old_content, old_other), (new_content, new_other) = (
            _split(old, self.governance),
            _split(new, self.governance),
        )
        changed = changed_fields(old_content, new_content)
        other = changed_fields(old_other, new_other)
        return Pair(item_id, old, new, bool(changed), changed, other)

    @cached_property
    def cases(self) -> list[Pair[CaseFacts]]:
        """Cases added, removed or changed since the base (empty without a base)."""
        previous = self.base_index.cases if self.base_index is not None else []
        return self._pairs(self.index.cases, previous)

    @cached_property
    def fixtures(self) -> list[Pair[FixtureFacts]]:
        """Fixtures added, removed or changed since the base (empty without a base)."""
        previous = self.base_index.fixtures if self.base_index is not None else []
        return self._pairs(self.index.fixtures, previous)

    @cached_property
    def manifests(self) -> list[Pair[ManifestFacts]]:
        """Manifests added, removed or changed since the base (empty without a base)."""
        previous = self.base_index.manifests if self.base_index is not None else []
        return self._pairs(self.index.manifests, previous)

    def touched_files(
        self,
    ) -> list[tuple[CaseFacts | FixtureFacts | ManifestFacts | None,
                    CaseFacts | FixtureFacts | ManifestFacts | None]]:  # fmt: skip
        """(at the base, now) facts of every file changed since the base, by path (None:
        absent on that side, or unreadable); nothing without a base."""
        if self.base_index is None:
            return []

        def by_path(
            index: RepoIndex, paths: frozenset[str]
        ) -> dict[str, CaseFacts | FixtureFacts | ManifestFacts]:
            if not paths:
                return {}
            found: list[CaseFacts | FixtureFacts | ManifestFacts] = [
                *index.cases, *index.fixtures, *index.manifests
            ]  # fmt: skip
            return {f.path: f for f in found if f.path in paths}

        old = by_path(self.base_index, self._touched_old)
        new = by_path(self.index, self._touched_new)
        return [(old.get(p), new.get(p)) for p in sorted(self._touched_old | self._touched_new)]

    # --- releases ----------------------------------------------------------------------
    def versioned_pairs(self) -> Iterator[tuple[bool, Pair[Any]]]:
        """(is a manifest, pair) for every case, fixture and manifest present on both sides
        with a readable version: what the version-direction rules (EC502, EC503) compare."""
        groups: list[tuple[bool, list[Pair[Any]]]] = [
            (False, list(self.cases)),
            (False, list(self.fixtures)),
            (True, list(self.manifests)),
        ]
        for is_manifest, pairs in groups:
            for pair in pairs:
                if pair.current is None or pair.old_number is None or pair.new_number is None:
                    continue
                yield is_manifest, pair

    def release_maps(
        self, release: Release
    ) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]] | None:
        """(cases, fixtures) of a release: from its message, or, for a tag evalcase did
        not write, computed from the tagged commit."""
        if release.cases is not None and release.fixtures is not None:
            return release.cases, release.fixtures
        maps = self._computed(release)
        return None if maps is None else (maps[0], maps[1])

    def release_grouping(self, release: Release) -> dict[str, str] | None:
        """What a release froze about grouping: from its message, computed from the
        tagged commit for a tag evalcase did not write, None for an evalcase tag written
        before grouping was recorded (its grouping cannot be compared)."""
        if release.cases is not None:
            return release.grouping
        maps = self._computed(release)
        return None if maps is None else maps[2]

    def _computed(
        self, release: Release
    ) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]], dict[str, str]] | None:
        if release.tag not in self._release_maps:
            found = None
            if self._contents_at is not None:
                content = self._contents_at(release.commit).get(release.dataset_id)
                if content is not None and content.complete:
                    found = (content.case_map(), content.fixture_map(), content.grouping_map())
            self._release_maps[release.tag] = found
        return self._release_maps[release.tag]

    def delta(self, dataset_id: str, release: Release) -> Delta | None:
        """What changed in a dataset since a release; None when it cannot be told (the
        dataset has an unreadable file, or the release cannot be read)."""
        content = self.content(dataset_id, release.governance)
        if content is None or not content.complete:
            return None
        if release.digest is not None and release.digest == content.digest:
            return Delta()
        maps = self.release_maps(release)
        if maps is None:
            return None
        cases = compare_maps(maps[0], content.case_map())
        fixtures = compare_maps(maps[1], content.fixture_map())
        grouping = compare_grouping(self.release_grouping(release), content.grouping_map())
        return Delta(*cases, *fixtures, *grouping)

    def frozen_change(self, dataset_id: str) -> tuple[Release, Delta] | None:
        """The release of the dataset's current version and what changed since, when
        the dataset changed after being released at its current version."""
        version = self.version_of(dataset_id)
        release = self.releases.get(dataset_id, version) if version_number(version) else None
        if release is None:
            return None
        delta = self.delta(dataset_id, release)
        return (release, delta) if delta else None

    def dataset_target(self, dataset_id: str) -> str | None:
        """The dataset_version the manifest needs (for `evalcase bump`): never below the
        base's, and past every release when it changed since its release."""
        target = self.version_of(dataset_id)
        if version_number(target) is None:
            return None
        for pair in self.manifests:
            old, new = pair.old_number, pair.new_number
            if pair.id == dataset_id and old is not None and new is not None and new < old:
                target = pair.old_version
        release = self.releases.get(dataset_id, target)
        if release is not None:
            delta = self.delta(dataset_id, release)
            if delta:
                target = next_version(target, self.releases.highest(dataset_id))
        return target

    def reference_release(self, dataset_id: str, version: str) -> Release | None:
        """The newest release at or below ``version``: what "changed since the last
        release" is measured against."""
        return self.releases.reference(dataset_id, version)

    def changed_since_release(
        self, dataset_id: str, version: str
    ) -> tuple[Release, set[str], set[str]] | None:
        """(reference release, IDs of cases added since, IDs of cases modified since)."""
        release = self.reference_release(dataset_id, version)
        if release is None:
            return None
        delta = self.delta(dataset_id, release)
        if delta is None:
            return None
        return release, set(delta.cases_added), set(delta.cases_modified)

    def cases_needing(self, dataset_id: str, version: str) -> list[CaseFacts]:
        """Cases that, with the manifest at ``version``, must carry dataset_version
        ``version``: those added or changed since the base or since the last release."""
        manifest = self.manifests_by_id.get(dataset_id)
        if manifest is None:
            return []
        wanted: set[str] = set()
        for pair in self.cases:
            current = pair.current
            if current is None or not pair.content_changed:
                continue
            if current.dataset_dir == manifest.dataset_dir:
                wanted.add(pair.id)
        if self.releases.of(dataset_id):
            since = self.changed_since_release(dataset_id, version)
            if since is not None:
                wanted |= since[1] | since[2]
        if not wanted:
            return []
        return sorted(
            (
                case
                for case in self.index.cases
                if case.dataset_dir == manifest.dataset_dir and case_id_of(case) in wanted
            ),
            key=lambda c: c.path,
        )

    def added_cases(self) -> list[tuple[CaseFacts, str]]:
        """(case, what it is new relative to) for cases added since the base or since
        their dataset's last release."""
        out: dict[str, tuple[CaseFacts, str]] = {}
        for pair in self.cases:
            if pair.base is None and pair.current is not None:
                out[pair.current.path] = (pair.current, self.base_name)
        for dataset_id in self.released_datasets():
            since = self.changed_since_release(dataset_id, self.version_of(dataset_id))
            manifest = self.manifests_by_id[dataset_id]
            if since is None or not since[1]:
                continue
            for case in self.index.cases:
                if case.dataset_dir != manifest.dataset_dir or case.path in out:
                    continue
                if case_id_of(case) in since[1]:
                    out[case.path] = (case, since[0].tag)
        return [out[p] for p in sorted(out)]


def cases_history_reads(contents: StoredContents, releases: Releases) -> set[str]:
    """For a partial run of lint (evalcase.index.contents): the unchanged cases whose
    facts the history rules read, which it must load too. Those added or modified since
    their dataset's reference release (they must carry the current dataset_version; a new
    one must not reuse a released ID), and those holding an ID another dataset released.
    None of them is reported unless already wrong at HEAD, but a full run reports them,
    so a partial one must too."""
    wanted: set[str] = set()
    for dataset_id, content in contents(contents.governance_fields).items():
        release = releases.reference(dataset_id, content.version)
        if release is None or release.cases is None:
            continue
        added, _removed, modified = compare_maps(release.cases, content.case_map())
        ids = {*added, *modified}
        wanted.update(e.path for e in content.cases if e.id in ids)
    if not releases.all:
        return wanted
    names = contents.dataset_ids()
    for folder, entries in contents.tree_cases().items():
        dataset = names.get(folder, folder)
        present = {e.id for e in entries}
        held: set[str] = set()
        for release in releases.all:
            if release.dataset_id != dataset and release.cases:
                held |= present & release.cases.keys()
        if held:
            wanted.update(e.path for e in entries if e.id in held)
    return wanted


def _id(facts: CaseFacts | FixtureFacts | ManifestFacts) -> str:
    if isinstance(facts, CaseFacts):
        return case_id_of(facts)
    if isinstance(facts, FixtureFacts):
        return fixture_id_of(facts)
    return dataset_id_of(facts)


def _first_by_id(items: Iterable[F], ids: set[str] | None = None) -> dict[str, F]:
    """Facts by ID (the first by path when two share an ID), optionally only ``ids``."""
    found = [(_id(f), f) for f in items]
    if ids is not None:
        found = [(i, f) for i, f in found if i in ids]
    out: dict[str, F] = {}
    for item_id, facts in sorted(found, key=lambda x: x[1].path):
        out.setdefault(item_id, facts)
    return out


def _split(
    facts: CaseFacts | FixtureFacts | ManifestFacts, governance: tuple[str, ...]
) -> tuple[dict[str, str], dict[str, str]]:
    """(content fields, governance fields) of anything versioned."""
    if isinstance(facts, CaseFacts):
        return case_content(facts, governance), case_governance(facts, governance)
    if isinstance(facts, FixtureFacts):
        return fixture_content(facts), fixture_governance(facts)
    return manifest_content(facts), {}


@dataclass
class VersionHistory:
    """The HistoryCheck lint runs in a git repository (see evalcase.lint.linter); the
    history rules read the :class:`History` it builds."""

    config: Config
    repo: gitio.Repo
    base: str | None
    base_label: str | None
    staged: bool
    _releases: Releases | None = field(default=None, repr=False)
    _known: tuple[str, bool, list[gitio.Change]] | None = field(default=None, repr=False)
    _kept: ParsedTags | None = field(default=None, repr=False)

    def keep_tags_in(self, kept: ParsedTags) -> None:
        """Read parsed release messages from (and write them to) ``kept``, the lint
        store, instead of parsing every message on every run."""
        self._kept = kept

    def known_changes(self, commit: str, staged: bool, changes: list[gitio.Change]) -> None:
        """Changes from ``commit`` the caller already asked git for (lint's run state):
        when that commit is the base, the comparison reuses them instead of diffing again.
        (Without rename detection: a rename is a deletion and an addition, which names the
        same old and new files.)"""
        self._known = (commit, staged, changes)

    def releases(self) -> Releases:
        if self._releases is None:
            if self._kept is not None:
                self._releases = Releases.from_repo(self.repo, self.config, self._kept)
            else:
                self._releases = Releases.from_tags(self.repo.tags(), self.config)
        return self._releases

    def key(self) -> str:
        return f"history-1\0{self.base or '-'}\0{int(self.staged)}\0{self.releases().key}"

    def build(
        self,
        analyzer: Analyzer,
        index: RepoIndex,
        results: dict[str, FileResult],
        contents: StoredContents | None = None,
    ) -> History:
        """Compare the facts of one lint run with the base and the releases;
        ``contents``: the datasets' contents when ``index`` holds only some cases."""
        from evalcase.files import GitTree

        broken = broken_paths(results)

        def contents_at(commit: str) -> dict[str, DatasetContent]:
            snapshot = GitTree(self.config.root, commit)
            at = analyzer.analyze_files(snapshot.files(), snapshot=snapshot)
            at_index = RepoIndex()
            for result in at.values():
                if result.facts is not None:
                    at_index.add(result.facts)
            governance = tuple(sorted(self.config.governance_fields))
            return dataset_contents(at_index, governance, broken_paths(at))

        if self.base is None:
            return History(
                self.config,
                index,
                self.releases(),
                broken=broken,
                contents_at=contents_at,
                stored=contents,
            )
        if self._known is not None and self._known[:2] == (self.base, self.staged):
            changes = self._known[2]
        else:
            changes = self.repo.diff_raw(self.base, cached=self.staged, paths=ROOTS)
        new_paths: set[str] = set()
        old_sources: list[SourceFile] = []
        for change in changes:
            if change.status != "D" and is_candidate(change.path):
                new_paths.add(change.path)
            if change.status != "A" and is_candidate(change.old_path):
                kind, group = classify(change.old_path)
                old_sources.append(
                    SourceFile(
                        change.old_path,
                        kind,
                        group,
                        change.old_blob,
                        symlink=change.old_mode == "120000",
                    )
                )
        if not self.staged:
            new_paths.update(p for p in self.repo.untracked(ROOTS) if p in results)
        base_results: dict[str, FileResult] = {}
        if old_sources:
            base_results = analyzer.analyze_files(
                old_sources, snapshot=GitTree(self.config.root, self.base)
            )
        base_index = RepoIndex()
        for path in sorted(results):
            facts = results[path].facts
            if path not in new_paths and facts is not None:
                base_index.add(facts)
        for path in sorted(base_results):
            facts = base_results[path].facts
            if facts is not None:
                base_index.add(facts)
        base_broken = frozenset(p for p in broken if p not in new_paths)
        base_broken |= broken_paths(base_results)
        return History(
            self.config,
            index,
            self.releases(),
            broken=broken,
            base=self.base,
            base_label=self.base_label,
            base_index=base_index,
            base_broken=base_broken,
            touched_new=frozenset(new_paths),
            touched_old=frozenset(base_results),
            contents_at=contents_at,
            stored=contents,
        )
