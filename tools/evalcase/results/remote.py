"""Object storage for a team's runs: ``[results] remote = "s3://bucket/prefix"``.

A run folder (``outputs/<commit>/<run_id>/``) and its reports
(``reports/<commit>/<run_id>/``) are the facts; publishing copies them to any
S3-compatible service so that CI jobs, Ray workers and laptops share one history. The
remote is **append-only and content-addressed**: nothing is ever overwritten, so any
number of publishers may write at the same time.

```text
<prefix>/objects/<aa>/<sha256>                     every file, stored once by its content
<prefix>/runs/<run_id>/<manifest sha256>.json      one publication of a run: its summary and
                                                   the path -> digest of every file it had
```

Every object is written with a conditional put (``If-None-Match: *``): a second writer of
the same content finds it there and moves on; a publication of a resumed run (more
attempts) or a new grading is a new manifest beside the earlier ones, never a replacement.
Listing (``evalcase pull --list``) reads only the manifests, and ``history``, ``flaky``
and ``trend --from-remote`` only the index files (:mod:`evalcase.results.remote_index`);
``pull`` fetches the files a local copy lacks, checks each against its digest, and
refuses a path outside the run's two folders. What comes from the remote is data written
by others: it never names a path outside ``outputs/`` and ``reports/``, and a file that
does not match its digest is refused, not written.

Credentials and the endpoint come from the environment only (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP`` for a
plain-HTTP test server), read by the client (obstore); evalcase never writes them
anywhere. ``file:///path`` is accepted too (a shared folder, and the tests' second kind).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from evalcase.atomic import UnsafePath, base_for, make_folders, write_atomic
from evalcase.model import FatalError
from evalcase.results.remote_keys import UnreadableKey, run_keys, unreadable_key

if TYPE_CHECKING:
    from evalcase.config import Config

MANIFEST_VERSION = 1
# A run's manifest is small (its summary and file list); a bigger one is refused on read.
MAX_MANIFEST_BYTES = 8 * 1024 * 1024
# One file of a run folder; the runner's own bound on a record file is below this.
MAX_OBJECT_BYTES = 1024 * 1024 * 1024
FOLDERS = ("outputs", "reports")


@dataclass(frozen=True)
class RemoteFile:
    """One file of a publication: where it goes under the root, and its content digest."""

    path: str  # "outputs/<commit>/<run_id>/attempts.jsonl"
    sha256: str
    size: int


@dataclass(frozen=True)
class Manifest:
    """One publication of a run (``runs/<run_id>/<digest>.json``)."""

    run_id: str
    commit: str
    published_at: str
    publisher: str
    summary: Mapping[str, Any]
    files: tuple[RemoteFile, ...]
    key: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "manifest_version": MANIFEST_VERSION,
            "run_id": self.run_id,
            "commit": self.commit,
            "published_at": self.published_at,
            "publisher": self.publisher,
            "summary": dict(self.summary),
            "files": [{"path": f.path, "sha256": f.sha256, "size": f.size} for f in self.files],
        }


@dataclass(frozen=True)
class PublishResult:
    run_id: str
    manifest_key: str
    uploaded: int  # objects written by this call
    present: int  # objects another publication had already written
    new_manifest: bool  # False: the very same publication was already there
    files: int = 0  # files published: uploaded + present + duplicates
    duplicates: int = 0  # files with the same bytes as another file of this publication

    def describe(self) -> str:
        """What was sent, in words: files, objects uploaded, files stored once because
        another file of this run has the same bytes, objects an earlier push stored."""
        text = f"{self.files} file(s), {self.uploaded} object(s) uploaded"
        if self.duplicates:
            text += f" ({self.duplicates} file(s) the same as another of this run, stored once)"
        if self.present:
            text += f", {self.present} already stored by an earlier push"
        return text


@dataclass(frozen=True)
class PullResult:
    run_id: str
    written: tuple[str, ...]
    present: tuple[str, ...]
    refused: tuple[str, ...] = field(default_factory=tuple)  # "path: why"


def _import_obstore() -> Any:
    try:
        import obstore
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise FatalError(
            "a results remote needs the remote extra: pip install 'evalcase[remote]'"
        ) from exc
    return obstore


# The client's settings that ``AWS_*`` variables may set and evalcase passes on as they
# are: obstore reads none of them once evalcase hands it its own client options.
_CLIENT_ENV = (
    "allow_http", "allow_invalid_certificates", "proxy_url", "proxy_ca_certificate",
    "proxy_excludes", "user_agent",
)  # fmt: skip


@dataclass(frozen=True)
class RemoteSettings:
    """How long the client waits for an S3 service (``[results]``, seconds): a service
    that accepts connections and never answers ends a command with an error instead of
    holding it for the client's default three minutes of retries."""

    connect_timeout: float = 5.0  # establishing a connection
    request_timeout: float = 30.0  # one request, from connecting to the last byte
    max_retries: int = 2  # a failed or timed-out request is tried again this many times
    retry_timeout: float = 30.0  # no retry starts this long after the first try

    @classmethod
    def of(cls, section: Mapping[str, Any]) -> RemoteSettings:
        """The settings of a ``[results]`` table (checked by the configuration's schema)."""
        default = cls()
        return cls(
            connect_timeout=float(section.get("connect_timeout", default.connect_timeout)),
            request_timeout=float(section.get("request_timeout", default.request_timeout)),
            max_retries=int(section.get("max_retries", default.max_retries)),
            retry_timeout=float(section.get("retry_timeout", default.retry_timeout)),
        )

    def describe(self) -> str:
        return (
            f"[results] request_timeout = {self.request_timeout:g} s, connect_timeout = "
            f"{self.connect_timeout:g} s, max_retries = {self.max_retries}, retry_timeout = "
            f"{self.retry_timeout:g} s"
        )


class Remote:
    """An S3-compatible bucket (or a ``file://`` folder) holding published runs."""

    def __init__(self, url: str, settings: RemoteSettings | None = None) -> None:
        obstore = _import_obstore()
        from obstore.store import from_url

        if not url.startswith(("s3://", "file://")):
            raise FatalError(
                f"[results] remote = {url!r}: expected s3://bucket/prefix or file:///path"
            )
        self.settings = settings or RemoteSettings()
        options: dict[str, Any] = {}
        if url.startswith("file://"):
            folder = Path(url.removeprefix("file://"))
            folder.mkdir(parents=True, exist_ok=True)
        else:
            options = self._client_options()
        self.url = url
        self._obstore = obstore
        try:
            self._store = from_url(url, **options)
        except Exception as exc:  # obstore's configuration errors carry no stable type
            raise FatalError(f"[results] remote = {url!r}: {exc}") from exc

    def _client_options(self) -> dict[str, Any]:
        settings = self.settings
        client: dict[str, Any] = {
            key: os.environ[f"AWS_{key.upper()}"]
            for key in _CLIENT_ENV
            if os.environ.get(f"AWS_{key.upper()}")
        }
        client["connect_timeout"] = timedelta(seconds=settings.connect_timeout)
        client["timeout"] = timedelta(seconds=settings.request_timeout)
        retry = {
            "max_retries": settings.max_retries,
            "retry_timeout": timedelta(seconds=settings.retry_timeout),
        }
        return {"client_options": client, "retry_config": retry}

    def _error(self, what: str, exc: Exception) -> FatalError:
        """A failed request in words: a timeout names the endpoint and the settings."""
        text = str(exc)
        if "Timeout" in text or "TimedOut" in text or "timed out" in text.lower():
            endpoint = (
                os.environ.get("AWS_ENDPOINT_URL")
                or os.environ.get("AWS_ENDPOINT")
                or "the AWS S3 endpoint"
            )
            return FatalError(
                f"{self.url}: cannot {what}: {endpoint} did not answer in time "
                f"({self.settings.describe()}); a slow service needs larger values in "
                "evalcase.toml"
            )
        return FatalError(f"{self.url}: cannot {what}: {_short(exc)}")

    # The three operations everything else is built from ------------------------------
    def put_new(self, key: str, data: bytes) -> bool:
        """Write ``key`` unless it exists; True when this call wrote it."""
        try:
            self._obstore.put(self._store, key, data, mode="create")
        except Exception as exc:
            if _already_exists(exc):
                return False
            raise self._error(f"write {key}", exc) from exc
        return True

    def get(self, key: str, limit: int) -> bytes:
        try:
            result = self._obstore.get(self._store, key)
            size = int(result.meta["size"])
            if size > limit:
                raise FatalError(f"{self.url}: {key} is {size} bytes, over the {limit} limit")
            return bytes(result.bytes())
        except FatalError:
            raise
        except Exception as exc:
            raise self._error(f"read {key}", exc) from exc

    def list(self, prefix: str, offset: str | None = None) -> Iterator[str]:
        """Every key under ``prefix`` (after ``offset``), in order. A page of the listing
        that holds a key the client cannot read (a ``..`` or empty segment, a control
        character) fails whole: :class:`UnreadableKey` names that key."""
        try:
            for chunk in self._obstore.list(self._store, prefix=prefix, offset=offset):
                for meta in chunk:
                    yield str(meta["path"])
        except Exception as exc:
            raise self._listing_error(prefix, exc) from exc

    def list_level(self, prefix: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The keys directly under ``prefix`` and its sub-folders (``prefix/name``): one
        level, so a key the client cannot read fails only the listing of its own folder
        (:class:`UnreadableKey`)."""
        try:
            result = self._obstore.list_with_delimiter(self._store, prefix=prefix)
        except Exception as exc:
            raise self._listing_error(prefix, exc) from exc
        objects = tuple(str(meta["path"]) for meta in result["objects"])
        return objects, tuple(str(folder) for folder in result["common_prefixes"])

    def _listing_error(self, prefix: str, exc: Exception) -> Exception:
        key = unreadable_key(exc, self._key_prefix())
        if key is not None:
            return UnreadableKey(key)
        return self._error(f"list {prefix}", exc)

    def _key_prefix(self) -> str:
        """The part of every key the URL names (``s3://bucket/team/evals`` -> ``team/evals/``)."""
        if not self.url.startswith("s3://"):
            return ""
        _bucket, _, path = self.url.removeprefix("s3://").partition("/")
        path = path.strip("/")
        return f"{path}/" if path else ""


def _already_exists(exc: Exception) -> bool:
    return type(exc).__name__ == "AlreadyExistsError" or "already exists" in str(exc).lower()


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


def object_key(digest: str) -> str:
    return f"objects/{digest[:2]}/{digest}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Folders:
    """Where runs and reports live locally (``[run] outputs_dir``, ``[grade] reports_dir``);
    on the remote they are always ``outputs/`` and ``reports/``."""

    outputs: Path
    reports: Path
    root: Path | None = None  # the repository: what writes are checked from

    def local(self, path: str) -> Path:
        """The local file of a remote path (already checked by :func:`_inside_run`)."""
        head, _, rest = path.partition("/")
        return (self.outputs if head == "outputs" else self.reports) / rest

    def base(self, path: str) -> Path:
        """The folder a local file of ``path`` is checked from when written
        (evalcase.atomic.base_for): the repository root when the folder is inside it."""
        head, _, _ = path.partition("/")
        folder = self.outputs if head == "outputs" else self.reports
        return folder if self.root is None else base_for(self.root, folder)


def run_files(folders: Folders, commit: str, run_id: str) -> list[tuple[str, Path]]:
    """Every regular file of a run's two folders, as (remote path, file); lock and
    temporary files (dot files) and symbolic links left out. UnsafePath when the run's
    folder or its commit's is a link: a committed ``reports/<commit> -> ~/.aws`` would
    publish what it points at."""
    found: list[tuple[str, Path]] = []
    for name, folder in (("outputs", folders.outputs), ("reports", folders.reports)):
        base = folder / commit / run_id
        inside = folders.root is not None and folder.is_relative_to(folders.root)
        links = (folder, folder / commit, base) if inside else (folder / commit, base)
        for link in links:  # a committed link: never read through
            if link.is_symlink():
                raise UnsafePath(
                    base, link, f"is a symbolic link (to {link.readlink()})", "publishing"
                )
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            if any(part.startswith(".") for part in path.relative_to(base).parts):
                continue
            found.append((f"{name}/{commit}/{run_id}/{path.relative_to(base).as_posix()}", path))
    return found


def publish(
    remote: Remote,
    folders: Folders,
    commit: str,
    run_id: str,
    summary: Mapping[str, Any],
    *,
    publisher: str | None = None,
    now: datetime | None = None,
) -> PublishResult:
    """Copy a run's files and one manifest naming them; objects already there are kept."""
    files = run_files(folders, commit, run_id)
    if not any(path.startswith("outputs/") for path, _ in files):
        raise FatalError(f"run {run_id}: no {folders.outputs / commit / run_id} to publish")
    listed: list[RemoteFile] = []
    uploaded = present = duplicates = 0
    seen: set[str] = set()
    for path, file in files:
        data = file.read_bytes()
        digest = _sha256(data)
        if digest in seen:  # content-addressed: the same bytes are one object
            duplicates += 1
        elif remote.put_new(object_key(digest), data):
            uploaded += 1
        else:
            present += 1
        seen.add(digest)
        listed.append(RemoteFile(path, digest, len(data)))
    manifest = Manifest(
        run_id=run_id,
        commit=commit,
        published_at=(now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        publisher=publisher or os.environ.get("EVALCASE_PUBLISHER", ""),
        summary=summary,
        files=tuple(listed),
    )
    # The manifest's name is its content minus the time: publishing the same files twice
    # adds nothing, publishing more (a resumed run, a new grading) adds a manifest.
    identity = json.dumps(
        {**manifest.to_json(), "published_at": "", "publisher": ""}, sort_keys=True
    ).encode()
    key = f"runs/{run_id}/{_sha256(identity)}.json"
    body = json.dumps(manifest.to_json(), sort_keys=True, indent=1).encode()
    new = remote.put_new(key, body)
    return PublishResult(run_id, key, uploaded, present, new, len(files), duplicates)


def check_manifest(raw: Any, key: str) -> Manifest:
    if not isinstance(raw, dict) or raw.get("manifest_version") != MANIFEST_VERSION:
        raise ValueError("not a manifest of this version")
    run_id, commit = raw.get("run_id"), raw.get("commit")
    if not isinstance(run_id, str) or not isinstance(commit, str):
        raise ValueError("run_id and commit must be strings")
    for name in (run_id, commit):
        if not name or "/" in name or name in (".", "..") or name.startswith("."):
            raise ValueError(f"unsafe name {name!r}")
    if key.split("/")[1] != run_id:
        raise ValueError(f"listed under runs/{key.split('/')[1]}/ but names run {run_id}")
    files: list[RemoteFile] = []
    for item in raw.get("files") or []:
        path, digest, size = item.get("path"), item.get("sha256"), item.get("size")
        if not isinstance(path, str) or not _inside_run(path, commit, run_id):
            raise ValueError(f"file {path!r} is outside the run's folders")
        if not isinstance(digest, str) or len(digest) != 64 or not _is_hex(digest):
            raise ValueError(f"file {path!r}: bad digest")
        if not isinstance(size, int) or not 0 <= size <= MAX_OBJECT_BYTES:
            raise ValueError(f"file {path!r}: bad size")
        files.append(RemoteFile(path, digest, size))
    summary = _dict(raw.get("summary"))
    return Manifest(
        run_id=run_id,
        commit=commit,
        published_at=str(raw.get("published_at", "")),
        publisher=str(raw.get("publisher", "")),
        summary=summary,
        files=tuple(files),
        key=key,
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _inside_run(path: str, commit: str, run_id: str) -> bool:
    parts = PurePosixPath(path).parts
    return (
        len(parts) >= 4
        and parts[0] in FOLDERS
        and parts[1] == commit
        and parts[2] == run_id
        and all(p not in ("", ".", "..") and "\\" not in p for p in parts)
        and not path.startswith("/")
    )


@dataclass(frozen=True)
class Listing:
    manifests: tuple[Manifest, ...]
    damaged: tuple[str, ...]  # "key: why", skipped
    read: int = 0  # manifests fetched from the remote (the others came from the cache)
    # "'key' (why)": keys under runs/ that are no run's manifest (a '..' segment, another
    # name), left on the remote; nothing published is missing because of them
    skipped: tuple[str, ...] = ()

    def runs(self) -> dict[str, list[Manifest]]:
        by_run: dict[str, list[Manifest]] = {}
        for manifest in self.manifests:
            by_run.setdefault(manifest.run_id, []).append(manifest)
        for items in by_run.values():
            items.sort(key=publication_order)
        return by_run


def list_manifests(
    remote: Remote, run_ids: Iterable[str] | None = None, *, cache: Path | None = None
) -> Listing:
    """Every publication on the remote (or of the given runs), read from manifests only.

    ``cache``: a folder keeping each manifest read (evalcase.results.remote_index): a
    manifest's key names its content and the remote is append-only, so a key's content
    never changes and a cached manifest is not fetched again. The local name is a digest
    of the key: no part of a remote's listing ever becomes a path. A key under ``runs/``
    that is no manifest's (:func:`run_key_problem`, a ``..`` segment the client cannot
    even list among them) is skipped and said (``Listing.skipped``); every other run
    lists."""
    found = run_keys(remote, run_ids)
    manifests: list[Manifest] = []
    damaged: list[str] = list(found.incomplete)
    read = 0
    for key in found.keys:
        local = None
        if cache is not None:
            name = hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
            local = cache / f"{name}.json"
        try:
            if local is not None and local.is_file():
                body = local.read_bytes()
            else:
                body = remote.get(key, MAX_MANIFEST_BYTES)
                read += 1
            manifests.append(check_manifest(json.loads(body), key))
        except (ValueError, FatalError) as exc:
            damaged.append(f"{key}: {exc}")
            continue
        if local is not None and not local.is_file():
            write_atomic(local, body, parents=True)
    return Listing(tuple(manifests), tuple(damaged), read, found.skipped)


def publication_order(manifest: Manifest) -> tuple[str, int, int, str]:
    """Oldest first. Two publications of one run in the same instant (a run published,
    resumed and published again within a second, or by publishers with a coarse clock):
    the one with more files, then more bytes, is the later: a resumed run only appends and
    a new grading only adds files."""
    return (
        manifest.published_at,
        len(manifest.files),
        sum(f.size for f in manifest.files),
        manifest.key,
    )


def merged_files(manifests: Iterable[Manifest]) -> dict[str, RemoteFile]:
    """A path's newest publication wins: a resumed run only appends, a new grading adds
    files, so the newest is the most complete."""
    files: dict[str, RemoteFile] = {}
    for manifest in sorted(manifests, key=publication_order):
        for item in manifest.files:
            files[item.path] = item
    return files


def pull(remote: Remote, folders: Folders, manifests: Iterable[Manifest]) -> list[PullResult]:
    """Fetch what the local copy lacks, run by run. A local file that differs from the
    remote's is kept (the local folder is the facts) and reported as refused. Nothing is
    written through a link under outputs/ or reports/ (evalcase.atomic): a run whose
    folders hold one (``outputs/<commit> -> elsewhere``, committed) is refused from that
    file on, naming the link, and the other runs still pull."""
    by_run: dict[str, list[Manifest]] = {}
    for manifest in manifests:
        by_run.setdefault(manifest.run_id, []).append(manifest)
    results: list[PullResult] = []
    for run_id, items in sorted(by_run.items()):
        written: list[str] = []
        present: list[str] = []
        refused: list[str] = []
        for path, item in sorted(merged_files(items).items()):
            try:
                outcome = _pull_file(remote, folders, path, item)
            except UnsafePath as exc:
                refused.append(f"run {run_id}: {exc}; the run's other files not pulled")
                break
            if outcome == "written":
                written.append(path)
            elif outcome == "present":
                present.append(path)
            else:
                refused.append(f"{path}: {outcome}")
        results.append(PullResult(run_id, tuple(written), tuple(present), tuple(refused)))
    return results


def _pull_file(remote: Remote, folders: Folders, path: str, item: RemoteFile) -> str:
    """One published file made present locally: "written", "present", or why it was
    refused; UnsafePath when its local path goes through a link (nothing written)."""
    target, base = folders.local(path), folders.base(path)
    make_folders(target.parent, base=base)  # every folder on the way checked (no link)
    if target.is_symlink():
        raise UnsafePath(target, target, f"is a symbolic link (to {target.readlink()})")
    if target.is_file():
        if file_sha256(target) == item.sha256:
            return "present"
        if path.endswith(".jsonl") and _is_prefix_of(target, remote, item, base):
            return "written"  # a resumed run: the local file was an earlier, shorter copy
        return "the local file differs (kept)"
    if not fetch_to(remote, item, target, MAX_OBJECT_BYTES, base=base):
        return NOT_ITS_DIGEST
    return "written"


def _is_prefix_of(target: Path, remote: Remote, item: RemoteFile, base: Path) -> bool:
    local = target.read_bytes()
    if len(local) >= item.size:
        return False
    data = fetch_checked(remote, item, MAX_OBJECT_BYTES)
    if data is None or not data.startswith(local):
        return False
    write_atomic(target, data, base=base)
    return True


NOT_ITS_DIGEST = "content does not match its digest (not written)"


def fetch_checked(remote: Remote, item: RemoteFile, limit: int) -> bytes | None:
    """A published file's content, or None when it does not match its digest."""
    data = remote.get(object_key(item.sha256), limit)
    return data if _sha256(data) == item.sha256 else None


def fetch_to(
    remote: Remote, item: RemoteFile, target: Path, limit: int, *, base: Path | None = None
) -> bool:
    """Write a published file to ``target`` whole (folders made as needed); False, and
    nothing written, when its content does not match its digest. FatalError when it cannot
    be fetched (over ``limit`` bytes, the remote unreachable). ``base``: ``target`` is
    under a data folder, checked from ``base`` down (evalcase.atomic: no link followed;
    UnsafePath, nothing written, when one is on the way)."""
    data = fetch_checked(remote, item, limit)
    if data is None:
        return False
    write_atomic(target, data, parents=True, base=base)
    return True


def file_sha256(path: Path) -> str:
    """The SHA-256 of a local file, read a block at a time (an attempts file may be large)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def summarize(folders: Folders, commit: str, run_id: str) -> dict[str, Any]:
    """What ``pull --list`` lists without fetching a run: a few fields of run.json and
    the newest report's summary (absent while the run is ungraded)."""
    summary: dict[str, Any] = {}
    run_file = folders.outputs / commit / run_id / "run.json"
    try:
        run = json.loads(run_file.read_text("utf-8"))
    except (OSError, ValueError):
        run = {}
    if isinstance(run, dict):
        dataset, agent = _dict(run.get("dataset")), _dict(run.get("agent"))
        summary.update(
            dataset=dataset.get("id"),
            dataset_version=dataset.get("version"),
            dataset_digest=dataset.get("digest"),
            agent=agent.get("name") or agent.get("spec"),
            agent_version=agent.get("version"),
            status=run.get("status"),
            started_at=run.get("started_at"),
            ended_at=run.get("ended_at"),
            counts=run.get("counts"),
        )
    reports = sorted(
        (folders.reports / commit / run_id).rglob("report.json"),
        key=lambda p: p.stat().st_mtime,
    )
    if reports:
        try:
            report = json.loads(reports[-1].read_text("utf-8"))
        except (OSError, ValueError):
            report = {}
        if isinstance(report, dict) and isinstance(report.get("summary"), dict):
            keep = ("cases", "attempts", "pass@1", "pass@k", "pass^k", "passed", "failed")
            summary["report"] = {k: report["summary"].get(k) for k in keep}
            summary["report"]["pending"] = report["summary"].get("pending")
            summary["report"]["gates_passed"] = report["summary"].get("gates_passed")
    return {k: v for k, v in summary.items() if v is not None}


# --- what the commands (push, pull, run --publish) share ----------------------------------
def remote_of(config: Config, url: str | None) -> Remote:
    """The remote named by ``--remote`` or ``[results] remote``; a FatalError without one."""
    url = url or str((config.raw.get("results") or {}).get("remote") or "")
    if not url:
        raise FatalError(
            'no results remote: set [results] remote = "s3://bucket/prefix" in evalcase.toml '
            "(credentials and endpoint from AWS_* environment variables) or pass --remote"
        )
    return Remote(url, RemoteSettings.of(_dict(config.raw.get("results"))))


def folders_of(config: Config) -> Folders:
    from evalcase.results.refs import folders

    return Folders(*folders(config), root=config.root)


def local_runs(folders: Folders) -> dict[str, str]:
    """run_id -> commit of every local run."""
    return {
        path.parent.name: path.parent.parent.name
        for path in sorted(folders.outputs.glob("*/*/run.json"))
    }


def publish_runs(config: Config, remote: Remote, run_ids: list[str]) -> list[str]:
    """Publish runs by ID; the lines to print (one per run)."""
    folders = folders_of(config)
    known = local_runs(folders)
    lines = []
    for run_id in run_ids:
        if run_id not in known:
            raise FatalError(f"no run '{run_id}' under {folders.outputs} (see `evalcase runs`)")
        commit = known[run_id]
        result = publish(remote, folders, commit, run_id, summarize(folders, commit, run_id))
        state = "published" if result.new_manifest else "already published"
        lines.append(
            f"{state} {run_id}: {result.describe()} "
            f"-> {remote.url.rstrip('/')}/{result.manifest_key}"
        )
    return lines
