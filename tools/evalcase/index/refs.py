"""The one resolver of a case's references to fixtures.

A case refers to fixtures by ID (state, tools, conversations, rubrics: ``context``,
``state``, ``initial_state``, ``available_tools``, ``environment.tools``, ``rubric``...)
and to corpora by ``environment_requirements.corpus_version`` or
``environment.knowledge_base`` (every corpus of the knowledge base: which one applies can
depend on the case's effective date). Which fields are references is decided by
:func:`evalcase.index.facts.case_facts`; how a reference finds its fixtures is decided
here, once, for the dataset digest, the linter's reference rules and the task builder.

Every fixture *provides* keys ``(kind, value)``: its ID under any reference kind, its
``corpus_version`` under :data:`CORPUS_VERSION` and its ``knowledge_base`` under
:data:`KNOWLEDGE_BASE`. A reference ``(kind, target)`` resolves to the fixtures that
provide ``(key_kind(kind), target)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from evalcase.index.facts import CORPUS_VERSION, KNOWLEDGE_BASE

# A reference that is neither a corpus version nor a knowledge base names a fixture ID.
FIXTURE_ID = "fixture_id"

T = TypeVar("T")

__all__ = [
    "CORPUS_VERSION",
    "FIXTURE_ID",
    "KNOWLEDGE_BASE",
    "key_kind",
    "lookup",
    "provided_keys",
    "referenced_keys",
]


def key_kind(ref_kind: str) -> str:
    """The kind of key a reference of ``ref_kind`` looks up."""
    return ref_kind if ref_kind in (CORPUS_VERSION, KNOWLEDGE_BASE) else FIXTURE_ID


def provided_keys(
    fixture_id: str | None, corpus_version: str | None, knowledge_base: str | None
) -> list[tuple[str, str]]:
    """The keys a fixture with these identities can be reached by."""
    keys: list[tuple[str, str]] = []
    if fixture_id is not None:
        keys.append((FIXTURE_ID, fixture_id))
    if corpus_version is not None:
        keys.append((CORPUS_VERSION, corpus_version))
    if knowledge_base is not None:
        keys.append((KNOWLEDGE_BASE, knowledge_base))
    return keys


def lookup(tables: Mapping[str, Mapping[str, list[T]]], ref_kind: str, target: str) -> list[T]:
    """Fixtures a reference resolves to; ``tables`` maps a key kind to value -> fixtures."""
    return list(tables.get(key_kind(ref_kind), {}).get(target, []))


def referenced_keys(refs: Iterable[tuple[str, str, str, int, int]]) -> list[tuple[str, str]]:
    """The keys a case's references (``CaseFacts.refs``) look up, in order."""
    return [(key_kind(kind), target) for _field, kind, target, _line, _col in refs]
