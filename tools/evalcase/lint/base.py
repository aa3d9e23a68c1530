"""What a rule module looks like and what it is given.

A rule is a module with ``CODE``, ``NAME``, ``SEVERITY``, ``SCOPE`` and a docstring that is
its user documentation (what it checks, why, a passing and a failing example). Rules
with a check function declare it by scope:

- ``source``: ``check_source(source: SourceFile, config: Config)``, run on where a file
  is before it is read (links, misplaced files).
- ``file``: ``check(doc: Document, ctx: FileContext) -> Iterable[Finding]``, run once per
  file content (its results are cached with the file).
- ``repo``: ``check(index: RepoIndex, config: Config) -> Iterable[Finding]``, run over the
  facts of every file after all files are analysed.
- ``history``: ``check(history: History) -> Iterable[Finding]``, run in a git repository:
  ``History`` (evalcase.versioning) compares the facts with a base revision, when there
  is one, and with the release tags.

Rules of scope ``loader``, ``schema`` and ``meta`` are reported by the YAML loader, by
schema validation and by suppression handling; their modules only document them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

from evalcase.config import Config
from evalcase.facts import CaseFacts, FixtureFacts, ManifestFacts
from evalcase.files import SourceFile
from evalcase.model import Finding, Severity

SCOPES = ("loader", "source", "schema", "file", "repo", "history", "meta")

Report = Callable[..., Finding]


def reporter(module_code: str, name: str, severity: Severity) -> Report:
    """A finding factory bound to one rule: ``report(path, line, column, message)``."""

    def report(
        path: str,
        line: int,
        column: int,
        message: str,
        related: tuple[tuple[str, int, int], ...] = (),
    ) -> Finding:
        return Finding(
            path, max(line, 1), max(column, 1), module_code, severity, message, name, related
        )

    return report


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    scope: str
    doc: str
    module: ModuleType

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0] if self.doc.strip() else self.name

    @classmethod
    def from_module(cls, module: ModuleType) -> Rule:
        scope = module.SCOPE
        if scope not in SCOPES:
            raise ValueError(f"{module.__name__}: unknown scope {scope}")
        return cls(module.CODE, module.NAME, module.SEVERITY, scope, module.__doc__ or "", module)


@dataclass(frozen=True)
class FileContext:
    source: SourceFile
    config: Config


@dataclass
class RepoIndex:
    """Facts of every file in the repository, with lookups the repo rules share."""

    cases: list[CaseFacts] = field(default_factory=list)
    fixtures: list[FixtureFacts] = field(default_factory=list)
    manifests: list[ManifestFacts] = field(default_factory=list)
    fixtures_by_id: dict[str, list[FixtureFacts]] = field(default_factory=dict)
    corpora_by_version: dict[str, list[FixtureFacts]] = field(default_factory=dict)
    knowledge_bases: dict[str, list[FixtureFacts]] = field(default_factory=dict)
    manifests_by_dir: dict[str, ManifestFacts] = field(default_factory=dict)
    # Paths whose findings will be reported (pre-commit passes a few); None for all.
    focus: frozenset[str] | None = None
    _checked: list[CaseFacts] | None = field(default=None, repr=False)

    def checked_cases(self) -> list[CaseFacts]:
        """The cases a per-case repo rule must check: those whose findings are reported.

        Rules that compare cases with each other (duplicates) still read ``cases``.
        """
        if self.focus is None:
            return self.cases
        if self._checked is not None:
            return self._checked
        focus = self.focus
        # A fixture in focus is checked through the cases that use it (a tool's broken
        # parameter schema is found while checking expected_args).
        targets: set[str] = set()
        for fixture in self.fixtures:
            if fixture.path in focus:
                targets.update(
                    str(v)
                    for v in (
                        fixture.fixture_id[0] if fixture.fixture_id else None,
                        fixture.corpus_version,
                        fixture.knowledge_base,
                    )
                    if v is not None
                )
        self._checked = [
            case
            for case in self.cases
            if case.path in focus or (targets and any(ref[2] in targets for ref in case.refs))
        ]
        return self._checked

    def add(self, facts: CaseFacts | FixtureFacts | ManifestFacts) -> None:
        if isinstance(facts, CaseFacts):
            self.cases.append(facts)
        elif isinstance(facts, FixtureFacts):
            self.fixtures.append(facts)
            if facts.fixture_id is not None:
                self.fixtures_by_id.setdefault(str(facts.fixture_id[0]), []).append(facts)
            if facts.corpus_version is not None:
                self.corpora_by_version.setdefault(facts.corpus_version, []).append(facts)
            if facts.knowledge_base is not None:
                self.knowledge_bases.setdefault(facts.knowledge_base, []).append(facts)
        else:
            self.manifests.append(facts)
            self.manifests_by_dir[facts.dataset_dir] = facts

    def fixture(self, fixture_id: str) -> FixtureFacts | None:
        found = self.fixtures_by_id.get(fixture_id)
        return found[0] if found else None

    def fixture_kind(self, fixture_id: str) -> str | None:
        found = self.fixture(fixture_id)
        if found is None or found.kind is None:
            return None
        return str(found.kind[0])
