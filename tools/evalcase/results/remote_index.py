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
when its transcripts are wanted.

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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from evalcase.atomic import write_atomic
from evalcase.model import FatalError
from evalcase.report.gradings import GRADING_FILE, GRADINGS_DIR
from evalcase.results.remote import (
    NOT_ITS_DIGEST,
    Remote,
    RemoteFile,
    fetch_checked,
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
    listing = list_manifests(remote, cache=where / "manifests")
    by_run = listing.runs()
    problems = list(listing.damaged)
    fetched = _load_fetched(where)
    keep: dict[str, str] = {}
    files = size = skipped = skipped_size = 0
    for _run_id, items in sorted(by_run.items()):
        wanted, left = _wanted(merged_files(items))
        skipped += len(left)
        skipped_size += sum(item.size for item in left)
        for item in wanted:
            target = where / item.path
            if fetched.get(item.path) == item.sha256 and target.is_file():
                keep[item.path] = item.sha256
                continue
            try:
                data = fetch_checked(remote, item, item.size)
            except FatalError as exc:
                problems.append(f"{item.path}: {exc}")
                continue
            if data is None:
                problems.append(f"{item.path}: {NOT_ITS_DIGEST}")
                continue
            write_atomic(target, data, parents=True)
            keep[item.path] = item.sha256
            files += 1
            size += len(data)
    dropped = _drop_unlisted(where, set(by_run))
    write_atomic(where / FETCHED_FILE, json.dumps(keep, sort_keys=True), parents=True)
    return MirrorStats(
        remote.url, len(by_run), listing.read, files, size, skipped, skipped_size, dropped,
        tuple(problems),
    )  # fmt: skip


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


@contextmanager
def open_remote_store(config: Config, remote: Remote) -> Iterator[tuple[Store, MirrorStats]]:
    """The results store over the remote's index, brought up to date first."""
    from evalcase.results.store import open_store_at

    where = mirror_root(config, remote.url)
    stats = sync(remote, where)
    with open_store_at(
        where / "results.duckdb", where, where / "outputs", where / "reports"
    ) as store:
        yield store, stats
