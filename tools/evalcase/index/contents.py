"""Dataset contents from the lint store, for a run that loaded only what changed.

Versioning compares each dataset's content (evalcase.index.digest: every case's ID,
case_version, content and grouping digests, and the fixtures its cases reference) with
its releases. In a repository with release tags that would make every commit hook load
every case. The store keeps those few values per file (the ``entries`` table, written
by the workers with the facts), so :class:`StoredContents` builds the same contents from
the store's tree plus the changed files' facts: one narrow scan, no result decoded.

Only contents under the configuration's governance fields can be built this way (the
stored digests leave exactly those out); anything else raises StoreError, and the run is
done again without the store.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from evalcase.files import classify
from evalcase.index.digest import (
    DatasetContent,
    Entry,
    assemble,
    case_entry,
    dataset_id_of,
    dataset_manifests,
    governance_key,
)
from evalcase.index.facts import CaseFacts
from evalcase.index.refs import referenced_keys
from evalcase.index.repo import RepoIndex
from evalcase.index.store import StoreError, split_ref_key
from evalcase.model import FileKind

if TYPE_CHECKING:
    from evalcase.files import SourceFile
    from evalcase.index.analysis import FileResult
    from evalcase.index.store import Store


class StoredContents:
    """Dataset contents of a run: the store's tree, with ``changed`` paths replaced by
    the facts in ``results`` (None: deleted). ``results`` must hold every fixture and
    manifest (a partial run loads them all)."""

    def __init__(
        self,
        store: Store,
        changed: Mapping[str, SourceFile | None],
        results: Mapping[str, FileResult],
        governance: Collection[str],
    ) -> None:
        self.store = store
        self.changed = changed
        self.results = results
        # The configuration's governance fields: the only ones the stored digests answer.
        self.governance_fields = tuple(sorted(governance))
        self._governance_key = governance_key(governance)
        self.index = RepoIndex()
        for result in results.values():
            if result.facts is not None and not isinstance(result.facts, CaseFacts):
                self.index.add(result.facts)
        self._rows: dict[str, tuple[list[Entry], set[bytes]]] | None = None
        self._broken_dirs: set[str] = set()
        self._contents: dict[str, DatasetContent] | None = None

    def _scan(self) -> dict[str, tuple[list[Entry], set[bytes]]]:
        """The tree's cases by dataset folder, with their reference keys as stored (one
        scan of the narrow entries; the per-row work is kept to the minimum, it runs
        100,000 times in a large repository)."""
        if self._rows is not None:
            return self._rows
        rows: dict[str, tuple[list[Entry], set[bytes]]] = {}
        changed = self.changed
        make = Entry._make
        for batch in self.store.tree_dataset_entries():
            for path, kind, case_id, version, digest, grouping, keys in batch:
                if path in changed:
                    continue
                if kind == "case":
                    folder = path.split("/", 2)[1]
                    found = rows.get(folder)
                    if found is None:
                        found = rows[folder] = ([], set())
                    found[0].append(make((case_id or f"path:{path}", version, digest, path,
                                          grouping)))  # fmt: skip
                    if keys is not None:
                        found[1].add(keys)
                elif kind is None:
                    raise StoreError(f"no stored entry for {path}")
                elif not kind and classify(path)[0] is not FileKind.UNKNOWN:
                    self._broken_dirs.add(path.split("/", 2)[1])  # read, but no facts
        for path, source in changed.items():
            if source is None or not path.startswith("datasets/"):
                continue
            result = self.results.get(path)
            broken = result is not None and result.facts is None
            if broken and classify(path)[0] is not FileKind.UNKNOWN:
                self._broken_dirs.add(path.split("/", 2)[1])
        self._rows = rows
        return rows

    def __call__(
        self, governance: Collection[str], only: Collection[str] | None = None
    ) -> dict[str, DatasetContent]:
        """As evalcase.index.digest.dataset_contents of the whole run."""
        if governance_key(governance) != self._governance_key:
            raise StoreError("stored digests are for the configured governance fields only")
        if self._contents is not None:
            return {k: v for k, v in self._contents.items() if only is None or k in only}
        rows = self._scan()
        changed_cases: dict[str, list[CaseFacts]] = {}
        for path, source in self.changed.items():
            result = self.results.get(path)
            if source is not None and result is not None and isinstance(result.facts, CaseFacts):
                changed_cases.setdefault(result.facts.dataset_dir, []).append(result.facts)
        fixtures_broken = any(
            p.startswith("fixtures/") and r.facts is None and classify(p)[0] is FileKind.FIXTURE
            for p, r in self.results.items()
        )
        out: dict[str, DatasetContent] = {}
        for dataset_id, manifest in sorted(dataset_manifests(self.index, only).items()):
            folder = manifest.dataset_dir
            stored, stored_keys = rows.get(folder, ([], set()))
            fresh = changed_cases.get(folder, [])
            entries = [*stored, *(case_entry(c, self.governance_fields) for c in fresh)]
            refs = {
                split_ref_key(key) for raw in stored_keys for key in self.store.reference_keys(raw)
            }
            for case in fresh:
                refs.update(referenced_keys(case.refs))
            broken = folder in self._broken_dirs
            out[dataset_id] = assemble(
                dataset_id,
                manifest,
                entries,
                self.index.fixtures_reached(refs),
                complete=not fixtures_broken and not broken,
            )
        if only is None:
            self._contents = out
        return out

    def tree_cases(self) -> dict[str, list[Entry]]:
        """The tree's unchanged cases by dataset folder (the changed ones are in the
        results)."""
        return {folder: entries for folder, (entries, _keys) in self._scan().items()}

    def dataset_ids(self) -> dict[str, str]:
        """Dataset folder -> dataset ID, from the manifests."""
        return {m.dataset_dir: dataset_id_of(m) for m in self.index.manifests}
