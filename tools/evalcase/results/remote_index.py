"""Questions across runs over the team's remote, without downloading every attempt.

``evalcase history CASE --from-remote`` (and ``flaky``, ``trend``; ``--remote URL`` names
another remote) answer from what the team published (:mod:`evalcase.results.remote`),
not from local runs. They need only each run's **index files**, the small ones the
results store reads for these questions::

    outputs/<commit>/<run_id>/run.json                          the run: dataset, agent,
                                                                 configuration, case digests
    reports/<commit>/<run_id>/gradings/<id>/grading.json        a grading: graders' digest,
    reports/<commit>/<run_id>/gradings/<id>/report.json         judges; its verdicts

Attempt records (``attempts.jsonl``: transcripts, tool calls, traces), the rendered
reports and everything else stay on the remote: ``evalcase pull RUN`` fetches a whole run
when its transcripts are wanted, and ``evalcase view --from-remote`` (:class:`Mirror`)
fetches a run's attempt records into the mirror when one of its transcripts is opened.

The index is a local mirror under ``<[lint] cache_dir>/remote/<digest of the URL>/``
(derived, like the store; delete it at any time)::

    manifests/<digest of the key>.json    every publication's manifest, fetched once: a
                                          manifest's key names its content and the remote
                                          is append-only, so a key's content never changes
    outputs/ reports/                     the index files, each checked against its digest
    fetched.json                          path -> digest of what is there
    results.duckdb                        the results store over that mirror

Each question lists the remote's manifests (one listing; new manifests only are read),
fetches the index files that are new or changed (a resumed run's run.json, a new
grading), drops runs no longer published, and brings the mirror's store up to date. What
comes from the remote is data written by others: paths are checked as ``pull`` checks
them (inside the run's two folders), every file against its digest and the size its
manifest declares, and a damaged manifest or file is left out and reported, never
written.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from evalcase.atomic import UnsafePath, write_atomic
from evalcase.model import FatalError
from evalcase.report.gradings import GRADING_FILE, GRADINGS_DIR
from evalcase.results.remote import (
    MAX_OBJECT_BYTES,
    NOT_ITS_DIGEST,
    Remote,
    RemoteFile,
    fetch_to,
    file_sha256,
    list_manifests,
    merged_files,
)

if TYPE_CHECKING:
    from evalcase.config import Config
    from evalcase.results.store import Store

MIRROR_DIR = "remote"
FETCHED_FILE = "fetched.json"


@dataclass(frozen=True)
class MirrorStats:
    """What bringing a remote's index up to date did."""

    url: str
    runs: int  # runs published on the remote
    manifests_read: int  # manifests fetched by this call (the others were cached)
    files_fetched: int  # index files fetched by this call
    bytes_fetched: int
    files_skipped: int  # attempt records and other files left on the remote
    bytes_skipped: int  # their published size: what a pull of every run would fetch
    runs_dropped: int  # runs the mirror held that the remote no longer lists
    problems: tuple[str, ...] = ()  # "key or path: why", left out

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "runs": self.runs,
            "manifests_read": self.manifests_read,
            "files_fetched": self.files_fetched,
            "bytes_fetched": self.bytes_fetched,
            "files_left_on_remote": self.files_skipped,
            "bytes_left_on_remote": self.bytes_skipped,
            "runs_dropped": self.runs_dropped,
            "problems": list(self.problems),
        }


def mirror_root(config: Config, url: str) -> Path:
    """Where a remote's index is kept: one folder per URL under the cache."""
    cache = Path(config.cache_dir)
    base = cache if cache.is_absolute() else config.root / cache
    return base / MIRROR_DIR / hashlib.blake2b(url.encode(), digest_size=8).hexdigest()


def is_index_file(path: str) -> bool:
    """Whether a published path is one of the index files (see the module's docstring).
    A report at the top of a run's reports folder is the default copy of a grading, or
    the only report of a run graded before gradings were versioned."""
    parts = PurePosixPath(path).parts
    if parts[0] == "outputs":
        return len(parts) == 4 and parts[3] == "run.json"
    if len(parts) == 4:
        return parts[3] == "report.json"
    return (
        len(parts) == 6 and parts[3] == GRADINGS_DIR and parts[5] in ("report.json", GRADING_FILE)
    )


def _wanted(files: dict[str, RemoteFile]) -> tuple[list[RemoteFile], list[RemoteFile]]:
    """A run's index files to mirror, and the files left on the remote. The default copy
    is left out when the run has versioned gradings (the store reads those)."""
    versioned = any(PurePosixPath(p).parts[3:4] == (GRADINGS_DIR,) for p in files)
    wanted, skipped = [], []
    for path, item in sorted(files.items()):
        parts = PurePosixPath(path).parts
        top_report = parts[0] == "reports" and len(parts) == 4
        if is_index_file(path) and not (top_report and versioned):
            wanted.append(item)
        else:
            skipped.append(item)
    return wanted, skipped


def sync(remote: Remote, where: Path) -> MirrorStats:
    """Bring the mirror at ``where`` up to date with the remote's index files."""
    return _sync(remote, where)[0]


def _sync(remote: Remote, where: Path) -> tuple[MirrorStats, dict[str, RemoteFile]]:
    """:func:`sync`, and every file the remote publishes (its newest publication) by path."""
    listing = list_manifests(remote, cache=where / "manifests")
    by_run = listing.runs()
    problems = [f"key {key}: no run's key" for key in listing.skipped] + list(listing.damaged)
    fetched = _load_fetched(where)
    keep: dict[str, str] = {}
    published: dict[str, RemoteFile] = {}
    files = size = skipped = skipped_size = 0
    for _run_id, items in sorted(by_run.items()):
        merged = merged_files(items)
        published.update(merged)
        wanted, left = _wanted(merged)
        skipped += len(left)
        skipped_size += sum(item.size for item in left)
        for item in wanted:
            target = where / item.path
            if fetched.get(item.path) == item.sha256 and target.is_file():
                keep[item.path] = item.sha256
                continue
            try:
                if not fetch_to(remote, item, target, item.size, base=where):
                    problems.append(f"{item.path}: {NOT_ITS_DIGEST}")
                    continue
            except (FatalError, UnsafePath) as exc:
                problems.append(f"{item.path}: {exc}")
                continue
            keep[item.path] = item.sha256
            files += 1
            size += item.size  # what its digest matched
    dropped = _drop_unlisted(where, set(by_run))
    write_atomic(where / FETCHED_FILE, json.dumps(keep, sort_keys=True), parents=True)
    stats = MirrorStats(
        remote.url, len(by_run), listing.read, files, size, skipped, skipped_size, dropped,
        tuple(problems),
    )  # fmt: skip
    return stats, published


def _load_fetched(where: Path) -> dict[str, str]:
    try:
        data = json.loads((where / FETCHED_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}


def _drop_unlisted(where: Path, run_ids: set[str]) -> int:
    """Remove mirrored runs the remote no longer lists (a bucket's lifecycle rule)."""
    dropped: set[str] = set()
    for folder in ("outputs", "reports"):
        for commit in _dirs(where / folder):
            for run in _dirs(commit):
                if run.name not in run_ids:
                    shutil.rmtree(run, ignore_errors=True)
                    dropped.add(run.name)
    return len(dropped)


def _dirs(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []


class Mirror:
    """A remote's index mirror (see the module's docstring), which also fetches any other
    file of a published run when first asked for: ``evalcase view --from-remote`` shows a
    transcript by fetching its run's ``attempts.jsonl`` (and its grading's
    ``grades.jsonl``), one run at a time, only when its page is opened."""

    def __init__(self, config: Config, remote: Remote) -> None:
        self.remote = remote
        self.root = mirror_root(config, remote.url)
        self.outputs, self.reports = self.root / "outputs", self.root / "reports"
        self._published: dict[str, RemoteFile] = {}
        self._present: dict[str, str] = {}  # path -> digest of what is there, checked
        self._lock = threading.Lock()

    def sync(self) -> MirrorStats:
        """Bring the index up to date (:func:`sync`); learn what the remote publishes."""
        stats, published = _sync(self.remote, self.root)
        with self._lock:
            self._published = published
        return stats

    def open_store(self, *, update: bool = True) -> AbstractContextManager[Store]:
        """The results store over the mirror (brought up to date with it: ``update``)."""
        from evalcase.results.store import open_store_at

        return open_store_at(
            self.root / "results.duckdb", self.root, self.outputs, self.reports, update=update
        )

    def fetch(self, path: Path) -> None:
        """Make ``path`` (a file of a published run, inside the mirror) present as the
        remote publishes it: fetched once per content, checked against its digest and
        size; nothing for a path the remote does not publish. FatalError when it cannot
        be fetched or does not match its digest (then nothing is written)."""
        try:
            published = path.relative_to(self.root).as_posix()
        except ValueError:
            return
        with self._lock:
            item = self._published.get(published)
            if item is None or (self._present.get(published) == item.sha256 and path.is_file()):
                return
            if path.is_file() and file_sha256(path) == item.sha256:
                self._present[published] = item.sha256
                return
            if not fetch_to(self.remote, item, path, MAX_OBJECT_BYTES, base=self.root):
                raise FatalError(f"{self.remote.url}: {published}: {NOT_ITS_DIGEST}")
            self._present[published] = item.sha256


@contextmanager
def open_remote_store(config: Config, remote: Remote) -> Iterator[tuple[Store, MirrorStats]]:
    """The results store over the remote's index, brought up to date first."""
    mirror = Mirror(config, remote)
    stats = mirror.sync()
    with mirror.open_store() as store:
        yield store, stats
