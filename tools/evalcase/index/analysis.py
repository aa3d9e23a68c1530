"""Per-file analysis: a file's content -> its findings, facts and suppressions, cached by
content and run in worker processes when there are many files.

The analysis itself (YAML loading, schema validation, facts) belongs to the index; the
per-file checks run alongside it are given by the caller (lint passes its file rules,
``evalcase.lint.linter.file_checks``), so that a file is read and parsed once per content
whoever asks first, and the index never imports the linter.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, NamedTuple

from evalcase.config import Config
from evalcase.files import Snapshot, SourceFile, classify, looks_like
from evalcase.index.facts import (
    Facts,
    case_facts,
    fixture_facts,
    from_raw,
    manifest_facts,
    to_raw,
)
from evalcase.index.repo import RepoIndex
from evalcase.loader import Limits, capped, load
from evalcase.model import FileKind, Finding, Severity

# Below this many files to analyse, starting worker processes costs more than it saves.
_PARALLEL_THRESHOLD = 200
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


def limits_of(config: Config) -> Limits:
    return Limits(config.max_file_bytes, config.max_depth, config.max_nodes)


def analyze(
    source: SourceFile, raw: bytes, config: Config, checks: Checks = Checks()
) -> FileResult:
    """Everything about one file that depends only on its path and content."""
    from evalcase import schemas

    modules, scan = checks.loaded()
    doc = load(source.path, raw, limits_of(config))
    findings = list(doc.findings)
    facts: Facts | None = None
    kind = source.kind
    if doc.ok and kind is not FileKind.UNKNOWN:
        try:
            looks = looks_like(doc.data)
            if looks is None or looks is kind:
                findings += schemas.validate(doc, kind.value)
                if kind is FileKind.CASE:
                    from evalcase.index.digest import case_digest, governance_key

                    facts = case_facts(doc, source.group)
                    facts = replace(
                        facts,
                        content_governance=governance_key(config.governance_fields),
                        content_digest=case_digest(facts, config.governance_fields),
                    )
                elif kind is FileKind.FIXTURE:
                    facts = fixture_facts(doc, source.group)
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


def _analyze_chunk(
    chunk: list[tuple[SourceFile, bytes]], config: Config, checks: Checks
) -> list[Any]:
    return [analyze(source, raw, config, checks).to_raw() for source, raw in chunk]


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
        f"file is {source.size:,} bytes, over the limit of {config.max_file_bytes:,}; split "
        "it, move bulk data into a fixture, or raise [lint] max_file_bytes in evalcase.toml",
        name,
    )
    return FileResult((finding,), None, ())


class Analyzer:
    """Analyses files of any snapshot through one per-file cache (keyed by path and blob
    id, under ``namespace``: results are reused only by the same code, config and checks)."""

    def __init__(
        self,
        config: Config,
        snapshot: Snapshot,
        *,
        checks: Checks = Checks(),
        namespace: str = "",
        use_cache: bool = True,
        jobs: int | None = None,
    ) -> None:
        self.config = config
        self.snapshot = snapshot
        self.checks = checks
        self.namespace = namespace
        self.use_cache = use_cache and bool(namespace)
        self.jobs = config.jobs if jobs is None else jobs
        self._cache: Any = None
        self.analysed = 0

    def cache(self) -> Any:
        if self._cache is None and self.use_cache:
            from evalcase.index.cache import Cache

            self._cache = Cache(self.config.root / self.config.cache_dir, self.namespace)
        return self._cache

    def analyze_files(
        self, sources: Sequence[SourceFile], snapshot: Snapshot | None = None
    ) -> dict[str, FileResult]:
        """Results for the given files, from the cache where possible. ``snapshot``: read
        them from another view (a base commit, a release) than the analyzer's own."""
        cache = self.cache()
        results: dict[str, FileResult] = {}
        missing: list[SourceFile] = []
        for source in sources:
            if source.symlink:
                results[source.path] = FileResult((), None, ())
                continue
            if source.size > self.config.max_file_bytes:
                results[source.path] = _too_large_result(source, self.config)
                continue
            raw = cache.get_file(self._key(source)) if cache is not None else None
            if raw is not None:
                try:
                    results[source.path] = FileResult.from_raw(raw)
                    continue
                except (TypeError, ValueError, KeyError, IndexError):
                    pass  # a malformed entry is recomputed, never trusted
            missing.append(source)
        if missing:
            contents = (snapshot or self.snapshot).read(s.path for s in missing)
            work = [(s, contents.get(s.path, b"")) for s in missing]
            for source, raw_result in zip(missing, self._run(work), strict=True):
                results[source.path] = FileResult.from_raw(raw_result)
                if cache is not None:
                    cache.put_file(self._key(source), raw_result)
        if snapshot is None:
            self.analysed = len(missing)
        return results

    def _key(self, source: SourceFile) -> str:
        return f"{source.path}\0{source.blob}"

    def _run(self, work: list[tuple[SourceFile, bytes]]) -> list[Any]:
        jobs = self.jobs or (os.cpu_count() or 1)
        if jobs <= 1 or len(work) < _PARALLEL_THRESHOLD:
            return _analyze_chunk(work, self.config, self.checks)
        from concurrent.futures import ProcessPoolExecutor

        size = max(16, len(work) // (jobs * 4))
        chunks = [work[i : i + size] for i in range(0, len(work), size)]
        out: list[Any] = []
        try:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                for part in pool.map(
                    _analyze_chunk,
                    chunks,
                    [self.config] * len(chunks),
                    [self.checks] * len(chunks),
                ):
                    out.extend(part)
        except (OSError, RuntimeError):
            # No process pool on this platform or sandbox: do the work here.
            return _analyze_chunk(work, self.config, self.checks)
        return out

    def save(self) -> None:
        cache = self.cache()
        if cache is not None:
            cache.save()


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
