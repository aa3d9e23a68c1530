"""Per-file analysis: a file's content -> its findings, facts and suppressions, cached by
content and run in worker processes when there are many files.

The analysis itself (YAML loading, schema validation, facts) belongs to the index; the
per-file checks run alongside it are given by the caller (lint passes its file rules,
``evalcase.lint.linter.file_checks``), so that a file is read and parsed once per content
whoever asks first, and the index never imports the linter.
"""

from __future__ import annotations

import gc
import importlib
import marshal
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from evalcase.config import Config
from evalcase.files import Snapshot, SourceFile, classify, looks_like
from evalcase.index.digest import case_digest, copy_digest, governance_key, text
from evalcase.index.facts import (
    CaseFacts,
    Facts,
    case_facts,
    field_digests,
    fixture_facts,
    from_raw,
    manifest_facts,
    to_raw,
)
from evalcase.index.refs import referenced_keys
from evalcase.index.repo import RepoIndex
from evalcase.index.store import CONTENT_KEY, StoredResult, ref_key
from evalcase.loader import Limits, capped, load
from evalcase.model import FileKind, Finding, Severity

# Below this many files to analyse, starting worker processes costs more than it saves.
_PARALLEL_THRESHOLD = 200
# Files read and analysed at a time (bounds the contents held in memory).
_CHUNK = 500
# Reported when a file is too large or too deep to analyse (documented by lint's rule
# modules EC005 file-too-large and EC006 resource-limit).
TOO_LARGE = ("EC005", "file-too-large", Severity.ERROR)
RESOURCE_LIMIT = ("EC006", "resource-limit", Severity.ERROR)


@dataclass(frozen=True)
class FileContext:
    source: SourceFile
    config: Config


@dataclass(frozen=True)
class Suppression:
    """An ``# evalcase: disable=...`` comment (found by evalcase.lint.suppressions)."""

    line: int  # where the comment is
    column: int
    target_line: int  # 0 for the whole file
    codes: tuple[str, ...]
    reason: str

    def to_raw(self) -> tuple[int, int, int, tuple[str, ...], str]:
        return (self.line, self.column, self.target_line, self.codes, self.reason)


class FileResult(NamedTuple):
    """Everything one file's content yields; cached by content.

    A named tuple: one is rebuilt from the cache for every file on every run.
    """

    findings: tuple[Finding, ...]
    facts: Facts | None
    suppressions: tuple[Suppression, ...]

    def to_raw(self) -> tuple[Any, ...]:
        return (
            tuple(f.to_raw() for f in self.findings),
            None if self.facts is None else to_raw(self.facts),
            tuple(s.to_raw() for s in self.suppressions),
        )

    @classmethod
    def from_raw(cls, raw: tuple[Any, ...]) -> FileResult:
        findings, facts, sups = raw
        return cls(
            tuple(map(Finding.from_raw, findings)) if findings else (),
            None if facts is None else from_raw(facts),
            tuple(Suppression(*s) for s in sups) if sups else (),
        )


@dataclass(frozen=True)
class Checks:
    """What runs with the analysis of each file, named so worker processes can import it:
    ``modules``: modules with ``check(doc, ctx) -> Iterable[Finding]``; ``scan``: a
    ``module:function`` returning a file's suppressions from its text (or "")."""

    modules: tuple[str, ...] = ()
    scan: str = ""
    key: str = ""

    def loaded(self) -> tuple[list[Any], Any]:
        return _load(self)


@lru_cache(maxsize=8)
def _load(checks: Checks) -> tuple[list[Any], Any]:
    # Once per process and set of checks: analyze() runs for every file.
    modules = [importlib.import_module(name) for name in checks.modules]
    scan = None
    if checks.scan:
        module, _, function = checks.scan.partition(":")
        scan = getattr(importlib.import_module(module), function)
    return modules, scan


def limits_of(config: Config, path: str = "") -> Limits:
    return Limits(config.file_limit(path), config.max_depth, config.node_limit(path))


def analyze(
    source: SourceFile,
    raw: bytes,
    config: Config,
    checks: Checks = Checks(),
    *,
    state_leaves: bool = True,
) -> FileResult:
    """Everything about one file that depends only on its path and content.
    ``state_leaves`` False: a state fixture's facts have no leaves (None: only lint's
    state rules read them, and a 3 MB database has 100,000 of them)."""
    from evalcase import schemas

    modules, scan = checks.loaded()
    doc = load(source.path, raw, limits_of(config, source.path))
    findings = list(doc.findings)
    facts: Facts | None = None
    kind = source.kind
    if doc.ok and kind is not FileKind.UNKNOWN:
        try:
            looks = looks_like(doc.data)
            if looks is None or looks is kind:
                findings += schemas.validate(doc, kind.value)
                if kind is FileKind.CASE:
                    facts = case_facts(doc, source.group)
                    # The digests its field_digest_text was made from (a cached_property:
                    # case_digest would decode that text again).
                    facts.__dict__["field_digests"] = field_digests(doc)
                    facts = _replaced(
                        facts,
                        content_governance=governance_key(config.governance_fields),
                        content_digest=case_digest(facts, config.governance_fields),
                        copy_digest=copy_digest(doc.data, config.governance_fields),
                    )
                elif kind is FileKind.FIXTURE:
                    facts = fixture_facts(doc, source.group, state_leaves=state_leaves)
                else:
                    facts = manifest_facts(doc, source.group)
            ctx = FileContext(source, config)
            for module in modules:
                findings.extend(capped(module.check(doc, ctx)))
        except RecursionError:
            # Only when [lint] max_depth is raised near Python's recursion limit: this
            # file is reported, the others are still checked.
            facts = None
            findings.append(_too_deep(source, config))
    sups = tuple(scan(doc.text)) if scan is not None else ()
    return FileResult(tuple(sorted(set(findings))), facts, sups)


def _replaced(facts: CaseFacts, **changes: str) -> CaseFacts:
    """dataclasses.replace for facts, without the frozen __init__ of thirty-odd fields
    (as from_raw: facts are plain frozen records, every field in __dict__)."""
    out: CaseFacts = object.__new__(CaseFacts)
    out.__dict__.update(facts.__dict__)
    out.__dict__.update(changes)
    out.__dict__.pop("field_digests", None)  # a cached_property: recomputed if asked for
    return out


Columns = tuple[str, str | None, str | None, list[str], tuple[str, str, str]]


def _columns(facts: Any) -> Columns:
    """(kind, case ID, fingerprint, reference keys, (case_version, content digest,
    grouping digest)): what the store indexes a file's result by for repository-wide
    lookups and dataset contents. Computed where the facts were made (a worker) so that
    the parent process does not decode them again."""
    kind, case_id, similarity, keys, entry = "", None, None, [], ("", "", "")
    if isinstance(facts, CaseFacts):
        kind = "case"
        if facts.case_id is not None and isinstance(facts.case_id[0], str):
            case_id = facts.case_id[0]
        if facts.similarity is not None:
            similarity = facts.similarity[0]
        keys = [ref_key(k, v) for k, v in referenced_keys(facts.refs)]
        if facts.copy_digest or facts.content_digest:
            # Copies (EC417, up to punctuation) are found by this key like a fixture's users.
            keys.append(ref_key(CONTENT_KEY, facts.copy_digest or facts.content_digest))
        entry = (text(facts.case_version), facts.content_digest, facts.grouping_digest)
    elif facts is not None:
        kind = to_raw(facts)[0]
    return kind, case_id, similarity, keys, entry


def _rows(chunk: list[SourceFile], done: list[tuple[bytes, Columns]]) -> Iterator[StoredResult]:
    """Store rows of analysed files, with the columns repository-wide lookups use."""
    for source, (raw, (kind, case_id, similarity, keys, entry)) in zip(chunk, done, strict=True):
        yield (source.path, source.blob, kind, case_id, similarity, keys, raw, entry)


def _pool(jobs: int) -> Any:
    try:
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(max_workers=jobs)
    except (OSError, RuntimeError, ImportError):
        return None  # no process pool on this platform or sandbox: do the work here


def _analyze_chunk(
    chunk: list[tuple[SourceFile, bytes]], config: Config, checks: Checks, state_leaves: bool = True
) -> list[tuple[bytes, Columns]]:
    """Each file's result as the store keeps it (marshal), with its lookup columns. The
    facts' short strings are interned first: marshal records that, and loading interns
    them again, so the field names, kinds, fixture IDs and statuses that recur in every
    case are held once when a whole repository's facts are in memory."""
    out = []
    for source, content in chunk:
        result = analyze(source, content, config, checks, state_leaves=state_leaves)
        findings, facts, sups = result.to_raw()
        data = marshal.dumps((findings, _interned(facts), sups))
        out.append((data, _columns(result.facts)))
    return out


def _interned(value: Any) -> Any:
    kind = type(value)
    if kind is tuple or kind is list:
        # Most items are strings or numbers: handled here, without a call each (a loop
        # with the types tested once each: a cold lint interns every case's facts).
        items: list[Any] = []
        append = items.append
        for v in value:
            item_kind = type(v)
            if item_kind is str:
                append(_intern(v) if len(v) <= _INTERN_MAX else v)
            elif item_kind is tuple or item_kind is list or item_kind is dict:
                append(_interned(v))
            else:
                append(v)
        return tuple(items) if kind is tuple else items
    if kind is str:
        return _intern(value) if len(value) <= _INTERN_MAX else value
    if kind is dict:
        return {_interned(k): _interned(v) for k, v in value.items()}
    return value


_intern = sys.intern
# Longer strings (texts, digests' JSON) are rarely repeated.
_INTERN_MAX = 64


class _Analyses:
    """This process's analyses by content, shared by every analyzer: a file one command
    analysed is not analysed again by the next one in the same process (lint then tag, a
    run's dataset load then its grading's, the base and the head revision of an unchanged
    file, a test suite's many copies of one repository), whether or not a store is used.

    Keyed by everything an analysis depends on: the configuration (but its folder), the
    schemas, the installed plugins, the checks, whether state leaves are made, and
    the file's path, kind, dataset and git blob id (its content). Values are the marshal
    bytes and columns a store keeps, so every caller decodes its own objects. Bounded:
    a result over ``ENTRY_MAX`` bytes is not kept, and the least recently used are
    dropped past ``TOTAL_MAX`` bytes. ``--no-cache`` analyses afresh and keeps nothing."""

    ENTRY_MAX = 256 * 1024
    TOTAL_MAX = 32 * 1024 * 1024

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[Any, ...], tuple[bytes, Columns]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> tuple[bytes, Columns] | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: tuple[Any, ...], value: tuple[bytes, Columns]) -> None:
        size = len(value[0])
        if size > self.ENTRY_MAX:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._size -= len(old[0])
            self._items[key] = value
            self._size += size
            while self._size > self.TOTAL_MAX:
                _key, dropped = self._items.popitem(last=False)
                self._size -= len(dropped[0])

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0


MEMO = _Analyses()


def _too_deep(source: SourceFile, config: Config) -> Finding:
    code, name, severity = RESOURCE_LIMIT
    return Finding(
        source.path,
        1,
        1,
        code,
        severity,
        f"nesting too deep to check with [lint] max_depth = {config.max_depth} (Python's "
        "recursion limit was reached); flatten the structure or lower max_depth",
        name,
    )


def _too_large_result(source: SourceFile, config: Config) -> FileResult:
    code, name, severity = TOO_LARGE
    finding = Finding(
        source.path,
        1,
        1,
        code,
        severity,
        f"file is {source.size:,} bytes, over the limit of {config.file_limit(source.path):,}; "
        "split it, move bulk data into a fixture, or raise [lint] max_file_bytes in "
        "evalcase.toml (max_state_fixture_bytes for a state fixture)",
        name,
    )
    return FileResult((finding,), None, ())


class Analyzer:
    """Analyses files of any snapshot through one per-file cache (keyed by path and blob
    id, under ``namespace``: results are reused only by the same code, config and checks).
    ``state_leaves`` False: state fixtures' facts without their leaves (a dataset's load
    for a run, which lints nothing); such an analyzer never uses the cache, whose results
    are lint's. ``memo`` False: nothing from this process's earlier analyses either
    (:class:`_Analyses`; lint's ``--no-cache``)."""

    def __init__(
        self,
        config: Config,
        snapshot: Snapshot,
        *,
        checks: Checks = Checks(),
        namespace: str = "",
        use_cache: bool = True,
        jobs: int | None = None,
        state_leaves: bool = True,
        memo: bool = True,
    ) -> None:
        self.config = config
        self.snapshot = snapshot
        self.checks = checks
        self.namespace = namespace
        self.state_leaves = state_leaves
        self.use_cache = use_cache and bool(namespace) and state_leaves
        self.jobs = config.jobs if jobs is None else jobs
        self._cache: Any = None
        self.analysed = 0
        self.memo = memo
        self._scope: tuple[Any, ...] | None = None

    def cache(self) -> Any:
        if self._cache is None and self.use_cache:
            from evalcase.index.store import Store

            self._cache = Store(self.config.root / self.config.cache_dir, self.namespace)
        return self._cache

    def analyze_files(
        self, sources: Sequence[SourceFile], snapshot: Snapshot | None = None
    ) -> dict[str, FileResult]:
        """Results for the given files, from the store where possible. ``snapshot``: read
        them from another view (a base commit, a release) than the analyzer's own."""
        store = self.cache()
        results: dict[str, FileResult] = {}
        pending: list[SourceFile] = []
        for source in sources:
            if source.symlink:
                results[source.path] = FileResult((), None, ())
            elif source.size > self.config.file_limit(source.path):
                results[source.path] = _too_large_result(source, self.config)
            else:
                pending.append(source)
        stored = store.get_results([(s.path, s.blob) for s in pending]) if store else {}
        missing: list[SourceFile] = []
        for source in pending:
            raw = stored.get((source.path, source.blob))
            if raw is not None:
                try:
                    results[source.path] = FileResult.from_raw(raw)
                    continue
                except (TypeError, ValueError, KeyError, IndexError):
                    pass  # a malformed entry is recomputed, never trusted
            missing.append(source)
        for source, data in self.compute(missing, snapshot or self.snapshot):
            results[source.path] = FileResult.from_raw(marshal.loads(data))
        if snapshot is None:
            self.analysed = len(missing)
        return results

    def _memo_key(self, source: SourceFile) -> tuple[Any, ...] | None:
        """The file's key in :data:`MEMO`; None when it is not to be kept (its blob is not
        a content id, or the analyzer has ``memo`` off)."""
        if not self.memo or len(source.blob) != 40:
            return None
        if self._scope is None:
            from evalcase.plugins import plugins_digest
            from evalcase.schemas import schemas_digest

            # The whole configuration but its folder, not only its lint digest: one
            # made in code (Config(root, max_depth=...)) has no raw sections to digest.
            settings = repr(replace(self.config, root=Path()))
            self._scope = (settings, schemas_digest(), plugins_digest(), self.checks,
                           self.state_leaves)  # fmt: skip
        return (self._scope, source.path, source.kind, source.group, source.blob)

    def compute(
        self, sources: Sequence[SourceFile], snapshot: Snapshot
    ) -> Iterator[tuple[SourceFile, bytes]]:
        """Analyse files (in worker processes when there are many), storing each result;
        contents are read a chunk at a time, so memory does not grow with the repository.
        A file this process analysed before with the same content and settings is not
        analysed again (:class:`_Analyses`), but still stored."""
        store = self.cache()
        keys = {source.path: self._memo_key(source) for source in sources}
        known: list[SourceFile] = []
        remembered: list[tuple[bytes, Columns]] = []
        todo: list[SourceFile] = []
        for source in sources:
            key = keys[source.path]
            hit = MEMO.get(key) if key is not None else None
            if hit is None:
                todo.append(source)
            else:
                known.append(source)
                remembered.append(hit)
        if known:
            if store is not None:
                store.put_results(_rows(known, remembered))
            yield from ((s, data) for s, (data, _columns) in zip(known, remembered, strict=True))
        sources = todo
        jobs = self.jobs or (os.cpu_count() or 1)
        parallel = jobs > 1 and len(sources) >= _PARALLEL_THRESHOLD
        size = min(_CHUNK, max(16, len(sources) // (jobs * 4))) if parallel else _CHUNK
        chunks = [list(sources[i : i + size]) for i in range(0, len(sources), size)]

        def work(chunk: list[SourceFile]) -> list[tuple[SourceFile, bytes]]:
            contents = snapshot.read(s.path for s in chunk)
            return [(s, contents.get(s.path, b"")) for s in chunk]

        def finish(
            chunk: list[SourceFile], done: list[tuple[bytes, Columns]]
        ) -> list[tuple[SourceFile, bytes]]:
            if store is not None:
                store.put_results(_rows(chunk, done))
            for source, value in zip(chunk, done, strict=True):
                key = keys[source.path]
                if key is not None:
                    MEMO.put(key, value)
            return [(source, data) for source, (data, _columns) in zip(chunk, done, strict=True)]

        pool = _pool(jobs) if parallel else None
        finished = 0
        if pool is not None:
            from collections import deque

            # Workers are forked from this process: objects it holds now (a large
            # repository's file list) are shared with them until something writes to
            # them, and a worker's garbage collector would, copying every page. Frozen
            # objects are left alone by the collector. A process that froze its own
            # objects before (a long-lived one) keeps them frozen.
            frozen_before = gc.get_freeze_count()
            gc.freeze()
            try:
                with pool:
                    queue: deque[tuple[list[SourceFile], Any]] = deque()
                    for chunk in chunks:
                        queue.append((chunk, pool.submit(
                            _analyze_chunk, work(chunk), self.config, self.checks,
                            self.state_leaves)))  # fmt: skip
                        # A few chunks in flight keep every core busy without holding
                        # every file's content at once.
                        while len(queue) > jobs * 2:
                            done, future = queue.popleft()
                            raws = future.result()
                            finished += 1
                            yield from finish(done, raws)
                    while queue:
                        done, future = queue.popleft()
                        raws = future.result()
                        finished += 1
                        yield from finish(done, raws)
            except (OSError, RuntimeError):
                pass  # no working process pool here (a sandbox): do the rest in this process
            finally:
                if not frozen_before:
                    gc.unfreeze()
        for chunk in chunks[finished:]:
            raws = _analyze_chunk(work(chunk), self.config, self.checks, self.state_leaves)
            yield from finish(chunk, raws)

    def save(self) -> None:
        cache = self.cache()
        if cache is not None:
            cache.save()

    def close(self) -> None:
        """Close the store, discarding what was not saved: a command ends its store
        explicitly, never through the garbage collector (a store left in a reference
        cycle kept its transaction, and SQLite's lock, until a collection)."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> Analyzer:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        """Save what the block wrote when it ended normally; close the store either way."""
        if kind is None and self._cache is not None:
            self._cache.save()
        self.close()


def index_of(results: dict[str, FileResult]) -> RepoIndex:
    """A RepoIndex of the facts of analysed files (in path order)."""
    index = RepoIndex()
    for path in sorted(results):
        facts = results[path].facts
        if facts is not None:
            index.add(facts)
        elif path.startswith("fixtures/"):
            index.add_broken(path)
    return index


def analyze_all(analyzer: Analyzer, snapshot: Snapshot) -> tuple[dict[str, FileResult], RepoIndex]:
    """Facts of every file of a snapshot, through the analyzer's cache."""
    results = analyzer.analyze_files(snapshot.files(), snapshot=snapshot)
    return results, index_of(results)


def broken_paths(results: dict[str, FileResult]) -> frozenset[str]:
    """Cases, manifests and fixtures that were read but yielded no facts."""
    return frozenset(
        path
        for path, result in results.items()
        if result.facts is None and classify(path)[0] is not FileKind.UNKNOWN
    )
