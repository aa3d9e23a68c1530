"""RepoIndex: the facts of every file of a snapshot, with the lookups references need."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evalcase.index import refs
from evalcase.index.facts import CaseFacts, FixtureFacts, ManifestFacts
from evalcase.index.refs import FIXTURE_ID


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
    # Fixtures in focus whose cases need no check through them: nothing a check reads
    # changed in them (see evalcase.index.reach).
    quiet: frozenset[str] = frozenset()
    # Fixture files that could not be read (syntax errors...): their file names (the IDs
    # they would hold) and kind folders. A reference to one is not reported again: the
    # broken file has its own finding, not every case that uses it.
    broken_fixtures: set[str] = field(default_factory=set)
    broken_fixture_kinds: set[str] = field(default_factory=set)
    _checked: list[CaseFacts] | None = field(default=None, repr=False)
    # What several repo rules derive from the same facts (e.g. a case's state), computed
    # once per run: name -> key -> value.
    derived: dict[str, dict[Any, Any]] = field(default_factory=dict, repr=False)

    def add_broken(self, path: str) -> None:
        """Record a fixture file that yielded no facts (see ``broken_fixtures``)."""
        parts = path.split("/")
        if len(parts) >= 3 and parts[0] == "fixtures":
            self.broken_fixture_kinds.add(parts[1])
            self.broken_fixtures.add(parts[-1].rsplit(".", 1)[0])

    def unresolvable(self, ref_kind: str, target: str) -> bool:
        """Whether a dangling reference may point at a fixture that could not be read."""
        if ref_kind in (refs.CORPUS_VERSION, refs.KNOWLEDGE_BASE):
            return "corpus" in self.broken_fixture_kinds or target in self.broken_fixtures
        return target in self.broken_fixtures

    def tables(self) -> dict[str, dict[str, list[FixtureFacts]]]:
        """Key kind -> value -> fixtures, for :func:`evalcase.index.refs.lookup`."""
        return {
            refs.FIXTURE_ID: self.fixtures_by_id,
            refs.CORPUS_VERSION: self.corpora_by_version,
            refs.KNOWLEDGE_BASE: self.knowledge_bases,
        }

    def resolve(self, ref_kind: str, target: str) -> list[FixtureFacts]:
        """The fixtures one reference resolves to (the one resolver, evalcase.index.refs)."""
        return refs.lookup(self.tables(), ref_kind, target)

    def referenced_fixtures(self, cases: Iterable[CaseFacts]) -> list[FixtureFacts]:
        """Every fixture the cases reference, each once, in path order. Dangling
        references are skipped (the reference rules report them)."""
        return self.fixtures_reached(
            (kind, target) for case in cases for _field, kind, target, _line, _col in case.refs
        )

    def fixtures_reached(self, refs: Iterable[tuple[str, str]]) -> list[FixtureFacts]:
        """Every fixture the (reference or key kind, target) pairs resolve to, each once,
        in path order, with the ``cel`` fixtures a reached tool ``uses`` (its shared CEL
        definitions are part of what the tool does)."""
        found: dict[str, FixtureFacts] = {}
        for kind, target in refs:
            for fixture in self.resolve(kind, target):
                found[fixture.path] = fixture
        for tool in list(found.values()):
            for used, _line, _col in tool.uses:
                for fixture in self.resolve(FIXTURE_ID, str(used)):
                    found[fixture.path] = fixture
        return [found[p] for p in sorted(found)]

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
        targets: set[tuple[str, str]] = set()
        for fixture in self.fixtures:
            if fixture.path in focus and fixture.path not in self.quiet:
                targets.update(provided(fixture))
        self._checked = [
            case
            for case in self.cases
            if case.path in focus
            or (targets and any(key in targets for key in refs.referenced_keys(case.refs)))
        ]
        return self._checked

    def add(self, facts: CaseFacts | FixtureFacts | ManifestFacts) -> None:
        if isinstance(facts, CaseFacts):
            self.cases.append(facts)
        elif isinstance(facts, FixtureFacts):
            self.fixtures.append(facts)
            tables = self.tables()
            for kind, value in provided(facts):
                tables[kind].setdefault(value, []).append(facts)
            stem = facts.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            if facts.fixture_id is None or facts.fixture_id[0] != stem:
                # A fixture whose ID is missing or differs from its file name is reported
                # there (EC101, EC204); a case that uses the file name is not reported too.
                self.broken_fixtures.add(stem)
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


def provided(fixture: FixtureFacts) -> list[tuple[str, str]]:
    """The reference keys a fixture can be reached by."""
    return refs.provided_keys(
        str(fixture.fixture_id[0]) if fixture.fixture_id is not None else None,
        fixture.corpus_version,
        fixture.knowledge_base,
    )
