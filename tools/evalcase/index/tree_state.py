"""A run's files as the store's commit tree plus what differs from it.

Listing and hashing every file of a large repository costs more than linting the one
that changed. In a git repository with commits, the store (evalcase.index.store) keeps
the candidate files of one commit (HEAD when it was last synced) with every file's
result. A run then asks git two questions, each one call whatever the repository's size:

- ``git diff-tree OLD HEAD``: how HEAD differs from the stored commit (after a commit, a
  pull, a checkout), applied to the stored tree; files without a stored result (a commit
  made with ``--no-verify``) are analysed now;
- ``git diff-index [--cached] HEAD``: how the index (``--staged``) or the work tree
  differs from HEAD, plus untracked files for the work tree.

Everything else is what was already computed for HEAD, looked up by path and blob id.
"""

from __future__ import annotations

import hashlib
import marshal
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from evalcase.files import ROOTS, YAML_SUFFIXES, SourceFile, blob_id, classify, is_candidate

if TYPE_CHECKING:
    from evalcase import gitio
    from evalcase.config import Config
    from evalcase.index.analysis import Analyzer, FileResult
    from evalcase.index.store import Store

SYMLINK_MODE = "120000"


def listed(path: str, mode: str) -> bool:
    """Whether a git entry is a file evalcase looks at (as evalcase.files.GitTree)."""
    return mode == SYMLINK_MODE or is_candidate(path)


def _source(path: str, blob: str, mode: str, size: int = 0) -> SourceFile:
    kind, group = classify(path)
    return SourceFile(path, kind, group, blob, symlink=mode == SYMLINK_MODE, size=size)


class TreeState:
    """The files of one run: ``commit``'s tree in the store, with ``changed`` paths
    replaced (None: deleted). Also a Snapshot (evalcase.files) for reading contents."""

    def __init__(
        self,
        config: Config,
        repo: gitio.Repo,
        store: Store,
        commit: str,
        changed: dict[str, SourceFile | None],
        contents: dict[str, bytes],
        head_changes: list[gitio.Change],
        staged: bool,
    ) -> None:
        self.config = config
        self.repo = repo
        self.store = store
        self.commit = commit
        self.changed = changed
        self._contents = contents
        self.head_changes = head_changes
        self.staged = staged
        self._files: list[SourceFile] | None = None
        self._blobs: dict[str, str] | None = None

    # --- what the run holds ------------------------------------------------------------
    def key(self) -> str:
        """Identifies every file of the run (path, blob id, link) in a few bytes."""
        h = hashlib.blake2b(digest_size=20)
        h.update(f"tree\0{self.commit}\n".encode())
        for path in sorted(self.changed):
            source = self.changed[path]
            if source is None:
                h.update(f"-{path}\n".encode())
            else:
                h.update(f"+{path}\0{source.blob}\0{int(source.symlink)}\n".encode())
        return h.hexdigest()

    def count(self) -> int:
        tree = set(self.store.tree_paths_in(self.changed))
        added = sum(1 for p, s in self.changed.items() if s is not None and p not in tree)
        deleted = sum(1 for p, s in self.changed.items() if s is None and p in tree)
        return self.store.tree_count() + added - deleted

    def sources(self, paths: Iterable[str]) -> list[SourceFile]:
        """The run's files among ``paths`` (missing ones left out), in path order."""
        wanted = set(paths)
        out = [s for p, s in self.changed.items() if p in wanted and s is not None]
        rest = [p for p in wanted if p not in self.changed]
        for path, blob, mode in self.store.tree_entries_in(rest):
            out.append(_source(path, blob, mode))
        return sorted(out)

    def results_of(self, paths: Iterable[str]) -> dict[str, FileResult]:
        """Stored results of tree files (those the changes did not replace)."""
        from evalcase.index.analysis import FileResult

        rows = self.store.tree_results_in("path", [p for p in paths if p not in self.changed])
        return {path: FileResult.from_raw(raw) for path, _blob, raw in rows}

    def changed_sources(self) -> list[SourceFile]:
        return sorted(s for s in self.changed.values() if s is not None)

    # --- Snapshot ------------------------------------------------------------------------
    def files(self) -> list[SourceFile]:
        if self._files is None:
            out = [
                _source(path, blob, mode)
                for path, blob, mode in self.store.tree_entries()
                if path not in self.changed
            ]
            out += [s for s in self.changed.values() if s is not None]
            self._files = sorted(out)
        return self._files

    def read(self, paths: Iterable[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        blobs: dict[str, str] = {}
        for path in paths:
            if path in self._contents:
                out[path] = self._contents[path]
                continue
            source = self.changed.get(path)
            if source is not None:
                blobs[path] = source.blob
            elif path not in self.changed:
                if self._blobs is None:
                    self._blobs = {p: b for p, b, _m in self.store.tree_entries()}
                blob = self._blobs.get(path)
                if blob is not None:
                    blobs[path] = blob
        if blobs:
            data = self.repo.read_blobs(blobs.values())
            out.update({p: data[b] for p, b in blobs.items() if b in data})
        return out


def prepare(config: Config, analyzer: Analyzer, *, staged: bool) -> TreeState | None:
    """The state of this run, with the store's tree synced to HEAD; None when there is no
    store to use (no cache, not git, nothing committed) or it failed (lint without it)."""
    from evalcase import gitio
    from evalcase.index.store import StoreError

    store = analyzer.cache()
    if store is None or not gitio.Repo.is_repo(config.root):
        return None
    repo = gitio.Repo(config.root)
    if not repo.has_commits():
        return None
    try:
        head = repo.rev_parse("HEAD")
        _sync(repo, store, analyzer, head)
        head_changes = repo.diff_index(head, cached=staged, paths=ROOTS)
        changed, contents = _changes(config, repo, head_changes, staged)
    except StoreError:
        return None
    return TreeState(config, repo, store, head, changed, contents, head_changes, staged)


def _sync(repo: gitio.Repo, store: Store, analyzer: Analyzer, head: str) -> None:
    old = store.tree_commit()
    if old != head:
        if old and repo.is_commit(old):
            changes = []
            for change in repo.diff_tree(old, head, ROOTS):
                if listed(change.path, change.old_mode) or listed(change.path, change.new_mode):
                    keep = change.status != "D" and listed(change.path, change.new_mode)
                    blob = change.new_blob if keep else None
                    changes.append((change.path, blob, change.new_mode))
            store.set_tree(head, None, changes)
            missing = store.tree_missing([path for path, blob, _mode in changes if blob])
        else:
            entries = [
                (path, blob, mode)
                for path, mode, blob, _size in repo.tree_entries(head, ROOTS)
                if listed(path, mode)
            ]
            store.set_tree(head, entries)
            missing = store.tree_missing()
    else:
        missing = []
    if missing:
        sources = [_source(path, blob, mode) for path, blob, mode in missing]
        links = [s for s in sources if s.symlink]
        if links:
            empty = marshal.dumps(((), None, ()))
            store.put_results(
                (s.path, s.blob, "", None, None, (), empty, ("", "", "")) for s in links
            )
        files = [s for s in sources if not s.symlink]
        for _result in analyzer.compute(files, _Blobs(repo, files)):
            pass  # stored as computed


class _Blobs:
    """A Snapshot of given files read by blob id (no listing of the commit)."""

    def __init__(self, repo: gitio.Repo, sources: list[SourceFile]) -> None:
        self.repo = repo
        self.sources = sources
        self.blobs = {s.path: s.blob for s in sources}

    def files(self) -> list[SourceFile]:
        return self.sources

    def read(self, paths: Iterable[str]) -> dict[str, bytes]:
        wanted = {p: self.blobs[p] for p in paths if p in self.blobs}
        data = self.repo.read_blobs(wanted.values())
        return {p: data[b] for p, b in wanted.items() if b in data}


def _changes(
    config: Config, repo: gitio.Repo, head_changes: list[gitio.Change], staged: bool
) -> tuple[dict[str, SourceFile | None], dict[str, bytes]]:
    """Changed paths -> their file now (None: deleted), and contents read from disk."""
    from evalcase.gitio import NULL_BLOB

    changed: dict[str, SourceFile | None] = {}
    contents: dict[str, bytes] = {}
    for change in head_changes:
        if not (listed(change.path, change.old_mode) or listed(change.path, change.new_mode)):
            continue
        if change.status == "D" or not listed(change.path, change.new_mode):
            changed[change.path] = None
        elif staged or change.new_blob != NULL_BLOB:
            changed[change.path] = _source(change.path, change.new_blob, change.new_mode)
        else:
            changed[change.path] = _disk(config, change.path, contents)
    if not staged:
        for path in repo.untracked(ROOTS):
            source = _disk(config, path, contents)
            if source is not None:
                changed[path] = source
    return changed, contents


def _disk(config: Config, path: str, contents: dict[str, bytes]) -> SourceFile | None:
    """A work-tree file as evalcase.files.WorkTree lists it (None: not listed)."""
    full = Path(config.root) / path
    try:
        info = full.lstat()
    except OSError:
        return None
    kind, group = classify(path)
    if stat.S_ISLNK(info.st_mode):
        if is_candidate(path) or path.endswith(YAML_SUFFIXES):
            return SourceFile(path, kind, group, symlink=True)
        return None
    if not stat.S_ISREG(info.st_mode) or not is_candidate(path):
        return None
    if info.st_size > config.file_limit(path):
        return SourceFile(
            path, kind, group, f"oversize:{info.st_size}:{info.st_mtime_ns}", size=info.st_size
        )
    try:
        data = full.read_bytes()
    except OSError:
        return None
    contents[path] = data
    return SourceFile(path, kind, group, blob_id(data), size=len(data))
