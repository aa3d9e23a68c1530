"""Which files make up a repository, what each one is, and how to read them.

A snapshot is one consistent view of the repository's files: the working tree, the git
index (what pre-commit is about to commit), or a commit. Every file carries the git blob
id of its content, which is also the cache key, so the index and commit views never have
to read a file whose facts are already cached.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple, Protocol

from evalcase.model import FileKind

ROOTS = ("datasets", "fixtures")
_ROOT_PREFIXES = tuple(f"{root}/" for root in ROOTS)
YAML_SUFFIXES = (".yaml", ".yml")
FIXTURE_KINDS = ("state", "tool", "corpus", "rubric", "conversation", "prompt", "cel")


class SourceFile(NamedTuple):
    """One candidate file. A named tuple: a repository lists tens of thousands of them on
    every run, and tuples are several times cheaper to build than frozen dataclasses."""

    path: str  # repository-relative, '/'-separated
    kind: FileKind
    # datasets/<dataset_dir>/... for cases and manifests; fixtures/<group>/... for fixtures
    group: str = ""
    blob: str = ""
    symlink: bool = False
    size: int = 0

    @property
    def stem(self) -> str:
        name = self.path.rsplit("/", 1)[-1]
        return name.rsplit(".", 1)[0]


def _by_path(source: SourceFile) -> str:
    return source.path


def classify(path: str) -> tuple[FileKind, str]:
    """(kind, group) from a repository-relative path; UNKNOWN for a misplaced YAML file."""
    parts = path.split("/")
    if parts[0] == "datasets" and len(parts) == 3 and parts[2] == "dataset.yaml":
        return FileKind.MANIFEST, parts[1]
    if (
        parts[0] == "datasets"
        and len(parts) == 4
        and parts[2] == "cases"
        and parts[3].endswith(".yaml")
    ):
        return FileKind.CASE, parts[1]
    if parts[0] == "fixtures" and len(parts) == 3 and parts[2].endswith(".yaml"):
        return FileKind.FIXTURE, parts[1]
    return FileKind.UNKNOWN, parts[1] if len(parts) > 2 else ""


def looks_like(data: dict[str, object]) -> FileKind | None:
    """The kind a document's content says it is (by its identity fields), if any."""
    if "case_id" in data:
        return FileKind.CASE
    if "fixture_id" in data:
        return FileKind.FIXTURE
    if "dataset_id" in data and "dataset_version" in data and "expected_behavior" not in data:
        return FileKind.MANIFEST
    return None


def is_candidate(path: str) -> bool:
    """Files evalcase looks at: YAML under datasets/ or fixtures/, hidden files excepted."""
    # String tests, not a split: this runs for every file of the repository on every run.
    return path.endswith(YAML_SUFFIXES) and path.startswith(_ROOT_PREFIXES) and "/." not in path


def blob_id(data: bytes) -> str:
    """The git blob id of some content, so work-tree and index views share cache keys."""
    sha = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    sha.update(data)
    return sha.hexdigest()


class Snapshot(Protocol):
    """A consistent view of the repository's candidate files."""

    def files(self) -> list[SourceFile]: ...

    def read(self, paths: Iterable[str]) -> dict[str, bytes]: ...


def _is_state(path: str) -> bool:
    return path.startswith("fixtures/state/") and path.count("/") == 2


class WorkTree:
    """The files on disk. Symbolic links are listed but never followed or read."""

    def __init__(self, root: Path, max_bytes: int, state_max_bytes: int | None = None) -> None:
        self.root = root
        self.max_bytes = max_bytes
        # fixtures/state/ files may be larger ([lint] max_state_fixture_bytes)
        self.state_max_bytes = max(max_bytes, state_max_bytes or 0)
        self._content: dict[str, bytes] = {}
        self._files: list[SourceFile] | None = None

    def files(self) -> list[SourceFile]:
        if self._files is None:
            self._files = sorted(self._walk(), key=_by_path)
        return self._files

    def _walk(self) -> Iterable[SourceFile]:
        for top in ROOTS:
            base = self.root / top
            if base.is_symlink():
                yield SourceFile(top, FileKind.UNKNOWN, symlink=True)
                continue
            if not base.is_dir():
                continue
            for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
                rel_dir = Path(dirpath).relative_to(self.root).as_posix()
                for name in list(dirnames):
                    if name.startswith("."):
                        dirnames.remove(name)
                    elif (Path(dirpath) / name).is_symlink():
                        rel = f"{rel_dir}/{name}"
                        yield SourceFile(rel, classify(rel)[0], classify(rel)[1], symlink=True)
                for name in filenames:
                    rel = f"{rel_dir}/{name}"
                    full = Path(dirpath) / name
                    try:
                        info = full.lstat()
                    except OSError:
                        continue
                    if stat.S_ISLNK(info.st_mode):
                        if is_candidate(rel) or name.endswith(YAML_SUFFIXES):
                            kind, group = classify(rel)
                            yield SourceFile(rel, kind, group, symlink=True)
                        continue
                    if not stat.S_ISREG(info.st_mode) or not is_candidate(rel):
                        continue
                    kind, group = classify(rel)
                    limit = self.state_max_bytes if _is_state(rel) else self.max_bytes
                    if info.st_size > limit:
                        # Never read an oversized file: it is reported, not parsed.
                        blob = f"oversize:{info.st_size}:{info.st_mtime_ns}"
                        yield SourceFile(rel, kind, group, blob, size=info.st_size)
                        continue
                    try:
                        data = full.read_bytes()
                    except OSError:
                        continue
                    self._content[rel] = data
                    yield SourceFile(rel, kind, group, blob_id(data), size=len(data))

    def read(self, paths: Iterable[str]) -> dict[str, bytes]:
        self.files()
        return {p: self._content[p] for p in paths if p in self._content}


class GitTree:
    """The files of the git index (``rev=None``) or of a commit, read in one batch stream."""

    def __init__(self, root: Path, rev: str | None = None) -> None:
        from evalcase import gitio

        self.repo = gitio.Repo(root)
        self.rev = rev
        self._files: list[SourceFile] | None = None

    def files(self) -> list[SourceFile]:
        if self._files is None:
            entries = (
                self.repo.index_entries(ROOTS)
                if self.rev is None
                else self.repo.tree_entries(self.rev, ROOTS)
            )
            out = []
            for path, mode, blob, size in entries:
                symlink = mode == "120000"
                if not symlink and not is_candidate(path):
                    continue
                if symlink and not path.endswith(YAML_SUFFIXES) and not is_candidate(path):
                    # A linked directory or other link under the roots: still reported.
                    pass
                kind, group = classify(path)
                out.append(SourceFile(path, kind, group, blob, symlink=symlink, size=size))
            self._files = sorted(out, key=_by_path)
        return self._files

    def read(self, paths: Iterable[str]) -> dict[str, bytes]:
        by_path = {f.path: f.blob for f in self.files()}
        wanted = {p: by_path[p] for p in paths if p in by_path}
        blobs = self.repo.read_blobs(list(wanted.values()))
        return {p: blobs[b] for p, b in wanted.items() if b in blobs}
