"""Lint orchestration: files -> per-file analysis (cached, parallel) -> repo rules ->
history rules -> suppressions -> selection. Never prints, never exits."""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from evalcase import __version__
from evalcase.config import Config
from evalcase.facts import (
    Facts,
    case_facts,
    fixture_facts,
    from_raw,
    manifest_facts,
    to_raw,
)
from evalcase.files import Snapshot, SourceFile
from evalcase.lint.base import FileContext, RepoIndex, Rule
from evalcase.lint.rules import RULES
from evalcase.lint.rules import file_too_large as _too_large
from evalcase.lint.rules import resource_limit as _resource_limit
from evalcase.lint.suppressions import Suppression, scan
from evalcase.loader import Limits, capped, load
from evalcase.model import FileKind, Finding, Severity

_UNUSED = "EC900"
_INVALID = "EC901"
# Below this many files to analyse, starting worker processes costs more than it saves.
_PARALLEL_THRESHOLD = 200


class FileResult(NamedTuple):
    """Everything lint learns from one file's content; cached by content.

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


class HistoryCheck(Protocol):
    """Rules that compare the repository with git history (a base revision, release tags)."""

    def key(self) -> str:
        """Identifies everything the history findings depend on besides the files; ""
        disables the whole-run cache."""
        ...

    def findings(
        self, linter: Linter, index: RepoIndex, results: dict[str, FileResult]
    ) -> list[Finding]:
        """History findings; ``linter.analyze_files(sources, snapshot=...)`` reads other
        revisions (the base, a release) through the same per-file cache."""
        ...


@dataclass
class LintResult:
    findings: list[Finding]
    files_checked: int
    files_analysed: int = 0
    cache_hit: bool = False
    results: dict[str, FileResult] = field(default_factory=dict)
    index: RepoIndex | None = None

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)


def limits_of(config: Config) -> Limits:
    return Limits(config.max_file_bytes, config.max_depth, config.max_nodes)


def _file_rules() -> list[Rule]:
    return [r for r in RULES.values() if r.scope == "file"]


def _source_rules() -> list[Rule]:
    return [r for r in RULES.values() if r.scope == "source"]


def analyze(source: SourceFile, raw: bytes, config: Config) -> FileResult:
    """Everything about one file that depends only on its path and content."""
    from evalcase import schemas
    from evalcase.lint.rules import wrong_kind

    doc = load(source.path, raw, limits_of(config))
    findings = list(doc.findings)
    facts: Facts | None = None
    kind = source.kind
    if doc.ok and kind is not FileKind.UNKNOWN:
        try:
            looks = wrong_kind.looks_like(doc.data)
            if looks is None or looks is kind:
                findings += schemas.validate(doc, kind.value)
                if kind is FileKind.CASE:
                    from dataclasses import replace

                    from evalcase.digest import case_digest, governance_key

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
            for rule in _file_rules():
                findings.extend(capped(rule.module.check(doc, ctx)))
        except RecursionError:
            # Only when [lint] max_depth is raised near Python's recursion limit: this
            # file is reported, the others are still checked.
            facts = None
            findings.append(_too_deep(source, config))
    return FileResult(tuple(sorted(set(findings))), facts, tuple(scan(doc.text)))


def _analyze_chunk(chunk: list[tuple[SourceFile, bytes]], config: Config) -> list[Any]:
    return [analyze(source, raw, config).to_raw() for source, raw in chunk]


def _too_deep(source: SourceFile, config: Config) -> Finding:
    return Finding(
        source.path,
        1,
        1,
        _resource_limit.CODE,
        _resource_limit.SEVERITY,
        f"nesting too deep to check with [lint] max_depth = {config.max_depth} (Python's "
        "recursion limit was reached); flatten the structure or lower max_depth",
        _resource_limit.NAME,
    )


def _too_large_result(source: SourceFile, config: Config) -> FileResult:
    finding = Finding(
        source.path,
        1,
        1,
        _too_large.CODE,
        _too_large.SEVERITY,
        f"file is {source.size:,} bytes, over the limit of {config.max_file_bytes:,}; split "
        "it, move bulk data into a fixture, or raise [lint] max_file_bytes in evalcase.toml",
        _too_large.NAME,
    )
    return FileResult((finding,), None, ())


class Linter:
    def __init__(
        self,
        config: Config,
        snapshot: Snapshot,
        *,
        use_cache: bool = True,
        jobs: int | None = None,
        history: HistoryCheck | None = None,
    ) -> None:
        self.config = config
        self.snapshot = snapshot
        self.use_cache = use_cache
        self.jobs = config.jobs if jobs is None else jobs
        self.history = history
        self._cache: Any = None
        self.analysed = 0

    @property
    def namespace(self) -> str:
        from evalcase.judging import plugins_digest
        from evalcase.schemas import schemas_digest

        return (
            f"{__version__}:{schemas_digest()}:{self.config.digest}:{plugins_digest()}"
            f":{_layout_digest()}"
        )

    def cache(self) -> Any:
        if self._cache is None and self.use_cache:
            from evalcase.lint.cache import Cache

            self._cache = Cache(self.config.root / self.config.cache_dir, self.namespace)
        return self._cache

    def analyze_files(
        self, sources: Sequence[SourceFile], snapshot: Snapshot | None = None
    ) -> dict[str, FileResult]:
        """Results for the given files, from the cache where possible. ``snapshot``: read
        them from another view (a base commit, a release) than the one being linted."""
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
            return _analyze_chunk(work, self.config)
        from concurrent.futures import ProcessPoolExecutor

        size = max(16, len(work) // (jobs * 4))
        chunks = [work[i : i + size] for i in range(0, len(work), size)]
        out: list[Any] = []
        try:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                for part in pool.map(_analyze_chunk, chunks, [self.config] * len(chunks)):
                    out.extend(part)
        except (OSError, RuntimeError):
            # No process pool on this platform or sandbox: do the work here.
            return _analyze_chunk(work, self.config)
        return out

    def run(
        self, only: Iterable[str] | None = None, *, focus: Iterable[str] | None = None
    ) -> LintResult:
        """Lint every file. ``only``: keep findings on these paths. ``focus``: per-case
        repo rules need only check these paths (the caller reports nothing else)."""
        sources = self.snapshot.files()
        only_set = None if only is None else set(only)
        focus_set = only_set if focus is None else set(focus)
        cache = self.cache()
        run_key = self._run_key(sources, focus_set)
        if cache is not None and run_key is not None:
            stored = cache.get_run(run_key)
            if stored is not None:
                try:
                    cached = [Finding.from_raw(f) for f in stored]
                    return LintResult(_only(cached, only_set), len(sources), 0, cache_hit=True)
                except (TypeError, ValueError):
                    pass
        self.analysed = 0
        results = self.analyze_files(sources)
        index = RepoIndex(focus=None if focus_set is None else frozenset(focus_set))
        findings: list[Finding] = []
        source_rules = _source_rules()
        for source in sources:
            for rule in source_rules:
                findings.extend(rule.module.check_source(source, self.config))
            result = results[source.path]
            findings.extend(result.findings)
            if result.facts is not None:
                index.add(result.facts)
        for rule in RULES.values():
            if rule.scope == "repo":
                findings.extend(rule.module.check(index, self.config))
        if self.history is not None:
            findings.extend(self.history.findings(self, index, results))
        findings = self._finish(findings, results)
        if cache is not None:
            if run_key is not None:
                cache.put_run(run_key, [f.to_raw() for f in findings])
            cache.save()
        return LintResult(
            _only(findings, only_set),
            len(sources),
            self.analysed,
            results=results,
            index=index,
        )

    def _run_key(self, sources: Sequence[SourceFile], only: set[str] | None) -> str | None:
        h = hashlib.blake2b(digest_size=20)
        h.update(self.namespace.encode())
        # A run that reports on some files checks only those in per-case repo rules, so
        # its findings stand for that selection only.
        h.update(repr(sorted(only) if only is not None else None).encode())
        # Some repo findings depend on the date (EC405: a retention period that has ended).
        h.update(_today().encode())
        if self.history is not None:
            key = self.history.key()
            if not key:
                return None
            h.update(key.encode())
        for source in sources:
            h.update(f"{source.path}\0{source.blob}\0{int(source.symlink)}\n".encode())
        return h.hexdigest()

    def _finish(self, findings: list[Finding], results: dict[str, FileResult]) -> list[Finding]:
        """Apply suppressions, then selection, severities and per-path ignores."""
        findings = sorted(set(findings))
        by_path: dict[str, list[Finding]] = defaultdict(list)
        for finding in findings:
            by_path[finding.path].append(finding)
        out: list[Finding] = []
        for path in sorted(set(by_path) | {p for p, r in results.items() if r.suppressions}):
            file_findings = by_path.get(path, [])
            result = results.get(path)
            sups = result.suppressions if result is not None else ()
            out.extend(self._suppress(path, file_findings, sups))
        return _placeholders_win(sorted(f2 for f in out if (f2 := self._select(f)) is not None))

    def _suppress(
        self, path: str, findings: list[Finding], sups: Sequence[Suppression]
    ) -> list[Finding]:
        if not sups:
            return findings
        valid: list[Suppression] = []
        extra: list[Finding] = []
        invalid_rule = RULES[_INVALID]
        for sup in sups:
            unknown = [c for c in sup.codes if c not in RULES]
            problem = None
            if not sup.codes:
                problem = "names no rule code (e.g. disable=EC201)"
            elif unknown:
                problem = f"names unknown rule code(s) {', '.join(unknown)} (see `evalcase rules`)"
            elif not sup.reason.strip():
                problem = "gives no reason; write why after the codes"
            if problem is not None:
                extra.append(
                    Finding(
                        path,
                        sup.line,
                        sup.column,
                        _INVALID,
                        invalid_rule.severity,
                        f"suppression {problem}; it suppresses nothing",
                        invalid_rule.name,
                    )
                )
            else:
                valid.append(sup)
        used: set[Suppression] = set()
        kept = []
        for finding in findings:
            if finding.code in (_UNUSED, _INVALID):
                kept.append(finding)
                continue
            hit = next(
                (
                    s
                    for s in valid
                    if finding.code in s.codes and s.target_line in (0, finding.line)
                ),
                None,
            )
            if hit is None:
                kept.append(finding)
            else:
                used.add(hit)
        unused_rule = RULES[_UNUSED]
        for sup in valid:
            if sup in used:
                continue
            active = [c for c in sup.codes if self._selected(c, path)]
            if not active:
                continue
            where = "this file" if sup.target_line == 0 else f"line {sup.target_line}"
            extra.append(
                Finding(
                    path,
                    sup.line,
                    sup.column,
                    _UNUSED,
                    unused_rule.severity,
                    f"suppression of {', '.join(sup.codes)} matches no finding on {where}; "
                    "remove it",
                    unused_rule.name,
                )
            )
        return kept + extra

    def _selected(self, code: str, path: str) -> bool:
        config = self.config
        if config.select and not any(code.startswith(p) for p in config.select):
            return False
        if any(code.startswith(p) for p in config.ignore):
            return False
        for pattern, codes in config.per_path_ignores.items():
            if fnmatch.fnmatch(path, pattern) and any(code.startswith(p) for p in codes):
                return False
        return True

    def _select(self, finding: Finding) -> Finding | None:
        if not self._selected(finding.code, finding.path):
            return None
        severity = self.config.severity.get(finding.code)
        if severity is not None and severity is not finding.severity:
            from dataclasses import replace

            return replace(finding, severity=severity)
        return finding


def _layout_digest() -> str:
    """Changes when the rule set or the shape of cached facts changes, so that results
    cached by a build with other rules or facts are never reused."""
    from dataclasses import fields

    from evalcase.facts import CaseFacts, FixtureFacts, ManifestFacts

    parts = [",".join(sorted(RULES))]
    parts += [",".join(f.name for f in fields(c)) for c in (CaseFacts, FixtureFacts, ManifestFacts)]
    # evalcase's own code: a changed rule or loader in a checkout without a version bump
    # must not reuse results. Sizes and times of the package's files cost one stat each.
    package = Path(__file__).resolve().parents[1]
    for source in sorted(package.rglob("*.py")):
        info = source.stat()
        parts.append(f"{source.relative_to(package)}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


def _today() -> str:
    from evalcase.lint.rules.usage_rights import today

    return today()


def _only(findings: list[Finding], only: set[str] | None) -> list[Finding]:
    if only is None:
        return findings
    return [f for f in findings if f.path in only]


def resolve_paths(root: Path, paths: Iterable[str], cwd: Path) -> set[str]:
    """Command-line paths (files or folders, relative to cwd) as repository-relative paths
    of candidate files; a folder stands for everything under it."""
    out: set[str] = set()
    for raw in paths:
        full = (cwd / raw).absolute()
        try:
            rel = full.relative_to(root.absolute()).as_posix()
        except ValueError:
            try:
                rel = full.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                continue
        out.add("" if rel == "." else rel)
    return out


def filter_to(sources: Sequence[SourceFile], wanted: set[str]) -> set[str]:
    selected = set()
    for source in sources:
        for w in wanted:
            if not w or source.path == w or source.path.startswith(w.rstrip("/") + "/"):
                selected.add(source.path)
                break
    return selected


_PLACEHOLDER = "EC451"


def _placeholders_win(findings: list[Finding]) -> list[Finding]:
    """Drop other findings about a value EC451 reports as an unfilled placeholder.

    ``TODO: ...`` in a rubric field is also an unknown fixture, in risk_level also not an
    allowed value: true, but the one thing to do is fill the placeholder, and a new case
    would otherwise open with three findings per field.
    """
    spots = {(f.path, f.line, f.column) for f in findings if f.code == _PLACEHOLDER}
    if not spots:
        return findings
    return [
        f for f in findings if f.code == _PLACEHOLDER or (f.path, f.line, f.column) not in spots
    ]
