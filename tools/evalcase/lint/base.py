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
  A repo rule declares ``CASE_LOOKUPS``, which cases it reads: ``()`` when only
  ``index.checked_cases()`` (with every fixture and manifest); ``"case_id"``,
  ``"similarity"`` or ``"content"`` when also the cases sharing a checked case's ID,
  input fingerprint or execution-and-judging digest (duplicates); ``"dataset"`` when a
  checked manifest needs every case of its dataset (suites, gates, coverage). A commit
  hook then loads just those from the store's indexes (evalcase.lint.linter, partial
  runs). A rule without ``CASE_LOOKUPS`` gets every case
  on every run: correct, but the hook then costs what the repository holds.
- ``history``: ``check(history: History) -> Iterable[Finding]``, run in a git repository:
  ``History`` (evalcase.versioning.history) compares the facts with a base revision, when there
  is one, and with the release tags.

Rules of scope ``loader``, ``schema`` and ``meta`` are reported by the YAML loader, by
schema validation and by suppression handling; their modules only document them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from evalcase.index.analysis import FileContext
from evalcase.index.repo import RepoIndex
from evalcase.model import Finding, Severity

__all__ = ["SCOPES", "FileContext", "RepoIndex", "Report", "Rule", "reporter"]

SCOPES = ("loader", "source", "schema", "file", "repo", "history", "meta")
# What a repo rule's CASE_LOOKUPS may name (see above).
CASE_LOOKUP_KINDS = frozenset({"case_id", "similarity", "content", "dataset"})

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
