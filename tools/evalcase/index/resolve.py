"""Resolving a case's fixture references: everything a run of one case needs.

A case refers to fixtures by ID (state, tool definitions, conversations, rubrics) and to
corpora by ``environment_requirements.corpus_version`` or ``environment.knowledge_base``
(every corpus of the knowledge base: which one applies can depend on the case's
effective date). The reference fields are exactly the ones lint checks
(evalcase.index.facts.case_facts), so a case that lints clean resolves completely.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalcase.index import refs
from evalcase.index.facts import case_facts
from evalcase.loader import Document


@dataclass
class FixtureCatalog:
    """Fixture documents by ID, with the corpus lookups references need."""

    by_id: Mapping[str, dict[str, Any]]
    corpora_by_version: dict[str, list[str]] = field(default_factory=dict)
    knowledge_bases: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, fixtures_by_id: Mapping[str, dict[str, Any]]) -> FixtureCatalog:
        catalog = cls(fixtures_by_id)
        for fixture_id in sorted(fixtures_by_id):
            fixture = fixtures_by_id[fixture_id]
            if not isinstance(fixture, dict) or fixture.get("kind") != "corpus":
                continue
            data = fixture.get("data")
            if not isinstance(data, dict):
                continue
            version, base = data.get("corpus_version"), data.get("knowledge_base")
            if isinstance(version, str):
                catalog.corpora_by_version.setdefault(version, []).append(fixture_id)
            if isinstance(base, str):
                catalog.knowledge_bases.setdefault(base, []).append(fixture_id)
        return catalog

    def targets(self, kind: str, target: str) -> list[str]:
        """Fixture IDs one reference resolves to (evalcase.index.refs)."""
        tables = {
            refs.FIXTURE_ID: {fixture_id: [fixture_id] for fixture_id in self.by_id},
            refs.CORPUS_VERSION: self.corpora_by_version,
            refs.KNOWLEDGE_BASE: self.knowledge_bases,
        }
        return refs.lookup(tables, kind, target)


def referenced_ids(case: dict[str, Any], catalog: FixtureCatalog) -> tuple[list[str], list[str]]:
    """(fixture IDs the case references, references that resolve to nothing)."""
    facts = case_facts(Document("", "", data=case), "")
    found: dict[str, None] = {}
    unresolved: dict[str, None] = {}
    for field_name, kind, target, _line, _col in facts.refs:
        hits = catalog.targets(kind, target)
        for hit in hits:
            found[hit] = None
        if not hits:
            unresolved[f"{field_name}: {target}"] = None
    return sorted(found), list(unresolved)


def resolve_case(
    case: dict[str, Any], fixtures_by_id: Mapping[str, dict[str, Any]] | FixtureCatalog
) -> dict[str, Any]:
    """The case with every fixture it references::

    {"case_id": ..., "case_version": ..., "case": {...},
     "fixtures": {fixture_id: {...fixture document...}}, "unresolved": [...]}
    """
    catalog = (
        fixtures_by_id
        if isinstance(fixtures_by_id, FixtureCatalog)
        else FixtureCatalog.of(fixtures_by_id)
    )
    ids, unresolved = referenced_ids(case, catalog)
    return {
        "case_id": case.get("case_id"),
        "case_version": case.get("case_version"),
        "case": case,
        "fixtures": {fixture_id: catalog.by_id[fixture_id] for fixture_id in ids},
        "unresolved": unresolved,
    }
