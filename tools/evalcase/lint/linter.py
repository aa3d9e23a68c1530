"""Lint orchestration: files -> per-file analysis (evalcase.index.analysis: cached,
parallel, with lint's file rules) -> repo rules -> history rules -> suppressions ->
selection. Never prints, never exits."""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import itertools
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evalcase import __version__
from evalcase.config import Config
from evalcase.files import Snapshot, SourceFile, classify
from evalcase.index.analysis import (
    Analyzer,
    Checks,
    FileResult,
    Suppression,
    limits_of,
)
from evalcase.index.analysis import analyze as _analyze
from evalcase.index.reach import quiet_fixtures
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import Rule
from evalcase.lint.rules import RULES
from evalcase.loader import MAX_FINDINGS_PER_RULE, not_shown
from evalcase.model import FileKind, Finding, Severity

if TYPE_CHECKING:
    from evalcase.gitio import Change
    from evalcase.index.contents import StoredContents
    from evalcase.index.tree_state import TreeState
    from evalcase.versioning.history import History
    from evalcase.versioning.tags import ParsedTags, Releases

__all__ = ["FileResult", "LintResult", "Linter", "analyze", "analyzer", "limits_of"]

_UNUSED = "EC900"
_INVALID = "EC901"


class HistoryCheck(Protocol):
    """Compares the repository with git history (a base revision, release tags); the
    history rules (scope ``history``) then read the :class:`History` it builds."""

    # The commit compared with (None: none, only the release tags).
    base: str | None

    def key(self) -> str:
        """Identifies everything the history findings depend on besides the files; ""
        disables the whole-run cache."""
        ...

    def releases(self) -> Releases:
        """The release tags (a partial run needs none to compare with)."""
        ...

    def keep_tags_in(self, kept: ParsedTags) -> None:
        """Where parsed release messages are kept between runs (the store)."""
        ...

    def known_changes(self, commit: str, staged: bool, changes: list[Change]) -> None:
        """What differs between ``commit`` and the index (staged) or work tree, already
        asked of git: reused when the base is that commit."""
        ...

    def build(
        self,
        analyzer: Analyzer,
        index: RepoIndex,
        results: dict[str, FileResult],
        contents: StoredContents | None = None,
    ) -> History:
        """The comparison; ``analyzer.analyze_files(sources, snapshot=...)`` reads other
        revisions (the base, a release) through the same per-file cache. ``contents``:
        the run's dataset contents when ``index`` holds only part of the cases."""
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


def file_checks() -> Checks:
    """Lint's per-file rules and suppression scanning, run with each file's analysis."""
    modules = tuple(r.module.__name__ for r in RULES.values() if r.scope == "file")
    return Checks(modules, "evalcase.lint.suppressions:scan", ",".join(modules))


def _source_rules() -> list[Rule]:
    return [r for r in RULES.values() if r.scope == "source"]


def analyze(source: SourceFile, raw: bytes, config: Config) -> FileResult:
    """Everything lint learns about one file from its path and content."""
    return _analyze(source, raw, config, file_checks())


def namespace(config: Config) -> str:
    """The per-file cache namespace of lint's analysis (code, schemas, config, plugins)."""
    from evalcase.plugins import plugins_digest
    from evalcase.schemas import schemas_digest

    return f"{__version__}:{schemas_digest()}:{config.digest}:{plugins_digest()}:{_layout_digest()}"


def analyzer(
    config: Config, snapshot: Snapshot, *, use_cache: bool = True, jobs: int | None = None
) -> Analyzer:
    """The analyzer lint uses: versioning commands read revisions through it so that they
    share lint's per-file cache. ``use_cache`` False (``--no-cache``): neither the store
    nor this process's earlier analyses (evalcase.index.analysis.MEMO) are used."""
    return Analyzer(
        config,
        snapshot,
        checks=file_checks(),
        namespace=namespace(config),
        use_cache=use_cache,
        jobs=jobs,
        memo=use_cache,
    )


class Linter:
    def __init__(
        self,
        config: Config,
        snapshot: Snapshot,
        *,
        use_cache: bool = True,
        jobs: int | None = None,
        history: HistoryCheck | None = None,
        git_state: bool = False,
        staged: bool = False,
    ) -> None:
        """``git_state``: in a git repository, list the files as the store's commit tree
        plus what differs from it (evalcase.index.tree_state) instead of reading ``snapshot``
        whole; ``staged``: the differences are those of the git index (else the work
        tree's). ``snapshot`` is still what is linted when the store cannot be used."""
        self.config = config
        self._state: TreeState | None = None
        self._state_tried = False
        self.git_state = git_state
        self.staged = staged
        self.snapshot = snapshot
        self.use_cache = use_cache
        self.history = history
        self.analyzer = analyzer(config, snapshot, use_cache=use_cache, jobs=jobs)
        self.jobs = self.analyzer.jobs

    @property
    def namespace(self) -> str:
        return self.analyzer.namespace

    @property
    def analysed(self) -> int:
        return self.analyzer.analysed

    def cache(self) -> object:
        return self.analyzer.cache()

    def close(self) -> None:
        """Close the store (what a run saved is saved; the rest is discarded)."""
        self.analyzer.close()

    def analyze_files(
        self, sources: Sequence[SourceFile], snapshot: Snapshot | None = None
    ) -> dict[str, FileResult]:
        """Results for the given files through the per-file cache (see Analyzer)."""
        return self.analyzer.analyze_files(sources, snapshot)

    def _prepared(self) -> TreeState | None:
        """The run's TreeState, prepared once; None when the store cannot be used."""
        if not self.git_state:
            return None
        if self._state is None and not self._state_tried:
            from evalcase.index.store import StoreError
            from evalcase.index.tree_state import prepare

            self._state_tried = True
            try:
                self._state = prepare(self.config, self.analyzer, staged=self.staged)
            except StoreError:
                self._state = None
        return self._state

    def is_empty(self) -> bool:
        """Whether the run has no file to check (counted in the store, not listed)."""
        from evalcase.index.store import StoreError

        state = self._prepared()
        if state is not None:
            try:
                return state.count() == 0
            except StoreError:
                self._state = None  # lint without the store
        return not self.snapshot.files()

    def select(self, wanted: set[str]) -> set[str]:
        """The run's files at or under the ``wanted`` repository-relative paths. Named
        files are looked up one by one in the store's tree (a hook names a few of them);
        a folder needs the listing."""
        from evalcase.index.store import StoreError

        state = self._prepared()
        if state is not None:
            try:
                if all(_is_file_path(w) for w in wanted):
                    return {s.path for s in state.sources(wanted)}
                return filter_to((s.path for s in state.files()), wanted)
            except StoreError:
                self._state = None  # lint without the store
        return filter_to((s.path for s in self.snapshot.files()), wanted)

    def run(
        self, only: Iterable[str] | None = None, *, focus: Iterable[str] | None = None
    ) -> LintResult:
        """Lint every file. ``only``: keep findings on these paths. ``focus``: per-case
        repo rules need only check these paths (the caller reports nothing else)."""
        only_set = None if only is None else set(only)
        focus_set = only_set if focus is None else set(focus)
        if self.git_state:
            from evalcase.index.store import StoreError

            try:
                state = self._prepared()
                if state is not None:
                    return self._run_state(state, only_set, focus_set)
            except StoreError:
                pass
            if self.analyzer.use_cache:
                # The store failed part-way: lint again without it.
                self.analyzer.close()
                self.analyzer = analyzer(self.config, self.snapshot, use_cache=False,
                                         jobs=self.jobs)  # fmt: skip
        return self._run_snapshot(only_set, focus_set)

    def _run_snapshot(self, only_set: set[str] | None, focus_set: set[str] | None) -> LintResult:
        sources = self.snapshot.files()
        cache = self.analyzer.cache()
        run_key = self._run_key(_sources_key(sources), focus_set)
        if cache is not None and run_key is not None:
            hit = _stored_run(cache, run_key, only_set, len(sources))
            if hit is not None:
                return hit
        self.analyzer.analysed = 0
        results = self.analyze_files(sources)
        return self._check(sources, results, only_set, focus_set, run_key, len(sources))

    def _run_state(
        self, state: TreeState, only_set: set[str] | None, focus_set: set[str] | None
    ) -> LintResult:
        """Lint the store's tree plus the changed files (evalcase.index.tree_state)."""
        store = state.store
        count = state.count()
        if self.history is not None:
            self.history.keep_tags_in(store)
        run_key = self._run_key(state.key(), focus_set)
        if run_key is not None:
            hit = _stored_run(store, run_key, only_set, count)
            if hit is not None:
                store.save()  # keep the tree synced to HEAD
                return hit
        if self.history is not None:
            self.history.known_changes(state.commit, state.staged, state.head_changes)
        self.analyzer.analysed = 0
        self.analyzer.snapshot = state
        contents = None
        if focus_set is not None and self._partial_ok(state):
            sources, results, contents = self._partial(state, focus_set)
        else:
            sources = state.files()
            results = self._load_all(state, sources)
        return self._check(
            sources,
            results,
            only_set,
            focus_set,
            run_key,
            count,
            extra=state.results_of,
            contents=contents,
        )

    def _load_all(self, state: TreeState, sources: list[SourceFile]) -> dict[str, FileResult]:
        """Every file's result: the tree's streamed from the store (decoded one at a
        time, never all as rows), the changed files' through the analyzer."""
        results: dict[str, FileResult] = {}
        wanted = {s.path for s in sources if s.path not in state.changed}
        for path, _blob, raw in state.store.tree_results():
            if path in wanted:
                results[path] = FileResult.from_raw(raw)
        rest = [s for s in sources if s.path not in results]
        results.update(self.analyze_files(rest))
        return results

    def _partial_ok(self, state: TreeState) -> bool:
        """Whether findings on the focus can come from the changed and focused files plus
        what the repo rules look up: every repo rule says which other cases it reads;
        only cases changed, or (staged) fixtures that the tree holds too (a manifest
        changes what the base's datasets hold; a fixture added or deleted what the
        cases' references resolve to); and every release tag is evalcase's, recorded
        with the configured governance fields, so that datasets' contents can be
        compared with it from the store's entries (evalcase.index.contents)."""
        for rule in RULES.values():
            if rule.scope == "repo" and getattr(rule.module, "CASE_LOOKUPS", None) is None:
                return False
        others = [path for path in state.changed if not is_case(path)]
        if others and not (
            state.staged
            and all(
                state.changed[p] is not None and classify(p)[0] is FileKind.FIXTURE for p in others
            )
            and len(state.store.tree_paths_in(others)) == len(others)
        ):
            return False
        if self.history is None:
            return True
        governance = tuple(sorted(self.config.governance_fields))
        return all(
            r.parsed and r.governance in (None, governance) for r in self.history.releases().all
        )

    def _partial(
        self, state: TreeState, focus: set[str]
    ) -> tuple[list[SourceFile], dict[str, FileResult], StoredContents | None]:
        """The changed and focused files, every fixture and manifest, and the cases the
        repo rules look up for them, from the store's indexes; with release tags, the
        dataset contents from the store's entries and the cases the history rules read
        (evalcase.index.contents)."""
        from evalcase.index.facts import CaseFacts, FixtureFacts, ManifestFacts
        from evalcase.index.repo import provided
        from evalcase.index.store import CONTENT_KEY, ref_key

        wanted = {s.path: s for s in state.changed_sources()}
        wanted.update((s.path, s) for s in state.sources(focus))
        sources = sorted(wanted.values())
        results = self.analyze_files(sources)
        old = {p: FileResult.from_raw(r) for p, _b, r in state.store.tree_results_in(
            "path", state.changed)}  # fmt: skip
        lookups = {c for r in RULES.values() if r.scope == "repo"
                   for c in getattr(r.module, "CASE_LOOKUPS", ())}  # fmt: skip
        # Focused fixtures whose users _check will not check again: not loaded.
        quiet = self._quiet_partial(state, focus, results, old)
        ids: set[str] = set()
        fingerprints: set[str] = set()
        keys: set[str] = set()
        datasets: set[str] = set()

        def look_up(facts: CaseFacts) -> None:
            if facts.case_id is not None and isinstance(facts.case_id[0], str):
                ids.add(facts.case_id[0])
            if facts.similarity is not None and "similarity" in lookups:
                fingerprints.add(facts.similarity[0])
            if (facts.copy_digest or facts.content_digest) and "content" in lookups:
                keys.add(ref_key(CONTENT_KEY, facts.copy_digest or facts.content_digest))

        users: set[str] = set()
        for result in (*results.values(), *old.values()):
            facts = result.facts
            if isinstance(facts, CaseFacts):
                look_up(facts)
            elif isinstance(facts, FixtureFacts) and facts.path not in quiet:
                users.update(ref_key(k, v) for k, v in provided(facts))
            elif isinstance(facts, ManifestFacts) and "dataset" in lookups:
                # A checked manifest's suites, gates and coverage read its dataset's cases;
                # a suite may name a case of another dataset (said so in EC310's message).
                datasets.add(facts.dataset_dir)
                ids.update(str(v[0]) for s in facts.suites for v in s[3].get("case_ids", ()))
        store = state.store
        if users:
            # The cases a changed fixture reaches are checked as if changed: with the
            # cases that share their ID, fingerprint or content (lookups as above).
            for path, _blob, raw in store.tree_users(users):
                if path not in state.changed and path not in results:
                    results[path] = result = FileResult.from_raw(raw)
                    if isinstance(result.facts, CaseFacts):
                        look_up(result.facts)
        # Paths first: the cases that share an ID, fingerprint or content with a loaded
        # one are mostly those already loaded (each shares its own).
        more = (
            store.tree_result_paths("case_id", ids)
            | store.tree_result_paths("similarity", fingerprints)
            | store.tree_user_paths(keys)
        )
        more.difference_update(results, state.changed)
        # Rows decoded one at a time, each kept as its facts only.
        rows = itertools.chain(
            store.tree_results("WHERE r.kind != 'case'"),
            store.tree_results_in("path", more),
            *(
                # Every path under datasets/<id>/ ("0" sorts right after "/").
                store.tree_results(
                    "WHERE t.path >= ? AND t.path < ?",
                    (f"datasets/{dataset}/", f"datasets/{dataset}0"),
                )
                for dataset in sorted(datasets)
            ),
        )
        for path, _blob, raw in rows:
            if path not in state.changed and path not in results:
                results[path] = FileResult.from_raw(raw)
        if self.history is None or not self.history.releases().all:
            return sources, results, None
        from evalcase.index.contents import StoredContents
        from evalcase.versioning.history import cases_history_reads

        contents = StoredContents(store, state.changed, results, self.config.governance_fields)
        more = cases_history_reads(contents, self.history.releases())
        for path, _blob, raw in store.tree_results_in("path", more - set(results)):
            if path not in state.changed:
                results[path] = FileResult.from_raw(raw)
        return sources, results, contents

    def _quiet_partial(
        self,
        state: TreeState,
        focus: set[str],
        results: dict[str, FileResult],
        old: dict[str, FileResult],
    ) -> frozenset[str]:
        """What _check will find quiet (evalcase.index.reach.quiet_fixtures), told before
        loading: from the store's tree, which is the base when the hook compares with
        HEAD; nothing otherwise (the users are loaded)."""
        from evalcase.index.facts import FixtureFacts

        history = self.history
        if not state.staged or history is None or history.base != state.commit:
            return frozenset()
        focused = [
            r.facts for p, r in results.items() if p in focus and isinstance(r.facts, FixtureFacts)
        ]
        if not focused:
            return frozenset()
        touched = [
            (
                old[p].facts if p in old else None,
                results[p].facts if source is not None and p in results else None,
            )
            for p, source in state.changed.items()
        ]
        return quiet_fixtures(focused, touched)

    def _check(
        self,
        sources: Sequence[SourceFile],
        results: dict[str, FileResult],
        only_set: set[str] | None,
        focus_set: set[str] | None,
        run_key: str | None,
        count: int,
        extra: Callable[[Iterable[str]], dict[str, FileResult]] | None = None,
        contents: StoredContents | None = None,
    ) -> LintResult:
        cache = self.analyzer.cache()
        index = RepoIndex(focus=None if focus_set is None else frozenset(focus_set))
        findings: list[Finding] = []
        source_rules = _source_rules()
        for source in sources:
            for rule in source_rules:
                findings.extend(rule.module.check_source(source, self.config))
        for path in sorted(results):
            result = results[path]
            if focus_set is None or path in focus_set:
                findings.extend(result.findings)
            if result.facts is not None:
                index.add(result.facts)
            elif classify(path)[0] is FileKind.FIXTURE:
                index.add_broken(path)
        history = None
        if self.history is not None:
            history = self.history.build(self.analyzer, index, results, contents)
            if self.staged and focus_set is not None and history.base is not None:
                focused = [f for f in index.fixtures if f.path in focus_set]
                if focused:
                    index.quiet = quiet_fixtures(focused, history.touched_files())
        repo_findings: list[Finding] = []
        for rule in RULES.values():
            if rule.scope == "repo":
                repo_findings.extend(capped_per_file(rule.module.check(index, self.config)))
        if focus_set is not None:
            # A focused run reports, besides the focus, the cases a focused fixture
            # reaches (the index's reverse references): what a staged fixture change
            # breaks in cases the commit did not touch. Repo findings on other cases
            # (a rule that compares every case) are not this run's to report.
            reached = {c.path for c in index.checked_cases()}
            repo_findings = [
                f for f in repo_findings
                if f.path in focus_set or f.path in reached or not is_case(f.path)
            ]  # fmt: skip
        findings.extend(repo_findings)
        if history is not None:
            for rule in RULES.values():
                if rule.scope == "history":
                    findings.extend(capped_per_file(rule.module.check(history)))
        if extra is not None:
            # Suppressions of files the partial run did not load, for findings on them.
            unseen = {f.path for f in findings} - set(results)
            if unseen:
                results = {**results, **extra(unseen)}
        findings = self._finish(findings, results)
        if cache is not None:
            if run_key is not None:
                cache.put_run(run_key, [f.to_raw() for f in findings])
            cache.save()
        return LintResult(
            _only(findings, only_set),
            count,
            self.analysed,
            results=results,
            index=index,
        )

    def _run_key(self, files_key: str, only: set[str] | None) -> str | None:
        h = hashlib.blake2b(digest_size=20)
        h.update(self.namespace.encode())
        # A run that reports on some files checks only those in per-case repo rules, so
        # its findings stand for that selection only.
        h.update(repr(sorted(only) if only is not None else None).encode())
        # Some repo findings depend on the date (EC405: a retention period that has ended).
        h.update(_today().encode())
        # EC420 reads the audit store: an audit since the last run changes its findings.
        from evalcase.audit_facts.store import stamp

        h.update(stamp(self.config.root).encode())
        if self.history is not None:
            key = self.history.key()
            if not key:
                return None
            h.update(key.encode())
        h.update(files_key.encode())
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

    from evalcase.index.facts import CaseFacts, FixtureFacts, ManifestFacts

    parts = [",".join(sorted(RULES))]
    parts += [",".join(f.name for f in fields(c)) for c in (CaseFacts, FixtureFacts, ManifestFacts)]
    parts.append(_code_digest())
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


@functools.cache
def _code_digest() -> str:
    """evalcase's own code: a changed rule or loader in a checkout without a version bump
    must not reuse results. Sizes and times of the package's files cost one stat each
    (about 350), once per process: the code a process runs is the code it started with,
    and a caller that lints many times in one process (the test suite, a library user)
    paid the walk on every lint."""
    package = Path(__file__).resolve().parents[1]
    parts = [f"{rel}:{size}:{mtime}" for rel, size, mtime in _python_files(package)]
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


def _python_files(package: Path) -> list[tuple[str, int, int]]:
    """(path relative to ``package``, size, mtime_ns) of every *.py file below it, in the
    order of sorted(package.rglob("*.py")). A scandir walk that skips __pycache__: the
    commit hook pays for this on every commit, and rglob took over ten times longer."""
    found: list[tuple[tuple[str, ...], int, int]] = []
    pending: list[tuple[str, tuple[str, ...]]] = [(str(package), ())]
    while pending:
        folder, rel = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append((entry.path, (*rel, entry.name)))
                elif entry.name.endswith(".py"):
                    info = entry.stat()
                    found.append(((*rel, entry.name), info.st_size, info.st_mtime_ns))
    found.sort()
    return [("/".join(parts), size, mtime) for parts, size, mtime in found]


def _today() -> str:
    from evalcase.lint.rules.usage_rights import today

    return today()


def _sources_key(sources: Sequence[SourceFile]) -> str:
    h = hashlib.blake2b(digest_size=20)
    for source in sources:
        h.update(f"{source.path}\0{source.blob}\0{int(source.symlink)}\n".encode())
    return h.hexdigest()


def _stored_run(cache: Any, run_key: str, only: set[str] | None, count: int) -> LintResult | None:
    stored = cache.get_run(run_key)
    if stored is None:
        return None
    try:
        cached = [Finding.from_raw(f) for f in stored]
    except (TypeError, ValueError):
        return None
    return LintResult(_only(cached, only), count, 0, cache_hit=True)


def _is_file_path(path: str) -> bool:
    """A path naming a YAML file (not a folder: those hold no dots in evalcase's layout
    only by convention, so a folder named like a file falls back to the listing)."""
    from evalcase.files import is_candidate

    return is_candidate(path)


def is_case(path: str) -> bool:
    """Whether ``path`` is a case file (by where it is)."""
    from evalcase.files import classify
    from evalcase.model import FileKind

    return classify(path)[0] is FileKind.CASE


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


def filter_to(paths: Iterable[str], wanted: set[str]) -> set[str]:
    """The ``paths`` at or under one of the ``wanted`` paths ("" is the whole repository)."""
    selected = set()
    for path in paths:
        if any(_under(path, w) for w in wanted):
            selected.add(path)
    return selected


def _under(path: str, wanted: str) -> bool:
    return not wanted or path == wanted or path.startswith(wanted.rstrip("/") + "/")


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


def capped_per_file(findings: Iterable[Finding]) -> list[Finding]:
    """One rule's findings, at most MAX_FINDINGS_PER_RULE per file, as the loader and file
    rules keep them: the last one kept says how many more were left out."""
    out: list[Finding] = []
    kept: dict[str, int] = {}  # path -> index of its last kept finding in out
    counts: dict[str, int] = {}
    for finding in findings:
        count = counts[finding.path] = counts.get(finding.path, 0) + 1
        if count <= MAX_FINDINGS_PER_RULE:
            kept[finding.path] = len(out)
            out.append(finding)
    for path, count in counts.items():
        if count > MAX_FINDINGS_PER_RULE:
            at = kept[path]
            out[at] = not_shown(out[at], count - MAX_FINDINGS_PER_RULE)
    return out
