"""What a staged fixture reaches: the fixtures through which no case needs checking again.

The commit hook checks the cases a staged fixture reaches (the index's reverse
references, evalcase.lint.linter). A fixture whose change no check of a case reads (a
new description or source, every line in place) reaches none: its cases are checked as
any case the commit did not touch, that is not at all, and the hook does not load them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import Any

from evalcase.index import refs
from evalcase.index.digest import FIXTURE_GOVERNANCE_FIELDS
from evalcase.index.facts import CaseFacts, FixtureFacts, ManifestFacts
from evalcase.index.repo import provided

Facts = CaseFacts | FixtureFacts | ManifestFacts


def quiet_fixtures(
    focused: Iterable[FixtureFacts], touched: Iterable[tuple[Facts | None, Facts | None]]
) -> frozenset[str]:
    """The focused fixtures through which no case needs checking again: the commit
    changed nothing a check of the cases that use them reads.

    ``touched``: (before, after) facts of each file the commit changed, by path (None:
    absent on that side, or unreadable). A focused fixture is quiet when it is unchanged
    or changed only in what :func:`same_for_cases` allows, when no other changed file
    provides or references any of its reference keys (a rename, a second definition under
    its ID, a changed case that uses it), and when its tool parameters are a valid JSON
    Schema without ``$ref`` (EC304 reports an unusable one on the fixture only while
    checking a case that calls it). The commit hook then reports on those cases what it
    reports on any case the commit did not touch: nothing (full lint still does)."""
    pairs = list(touched)
    hot: set[tuple[str, str]] = set()
    inert: set[str] = set()
    for before, after in pairs:
        if (
            isinstance(before, FixtureFacts)
            and isinstance(after, FixtureFacts)
            and same_for_cases(before, after)
        ):
            inert.add(after.path)
            continue
        for facts in (before, after):
            if isinstance(facts, FixtureFacts):
                hot.update(provided(facts))
            elif isinstance(facts, CaseFacts):
                hot.update(refs.referenced_keys(facts.refs))
    touched_paths = {f.path for pair in pairs for f in pair if f is not None}
    out = set()
    for fixture in focused:
        if fixture.path in touched_paths and fixture.path not in inert:
            continue
        if not fixture.parameters_valid or _mentions_ref(fixture.parameters):
            continue
        if hot.isdisjoint(provided(fixture)):
            out.add(fixture.path)
    return frozenset(out)


def same_for_cases(before: FixtureFacts, after: FixtureFacts) -> bool:
    """Whether two versions of a fixture file differ only in its description or source
    (the governance fields no check of a case reads), every position left in place."""
    if before.path != after.path:
        return False
    for f in fields(FixtureFacts):
        if f.name != "field_digest_text" and getattr(before, f.name) != getattr(after, f.name):
            return False
    if before.field_digest_text == after.field_digest_text:
        return True
    old, new = before.field_digests, after.field_digests
    return all(
        old.get(k) == new.get(k) for k in old.keys() | new.keys()
        if k not in FIXTURE_GOVERNANCE_FIELDS
    )  # fmt: skip


def _mentions_ref(value: Any) -> bool:
    if isinstance(value, dict):
        return any(k in ("$ref", "$dynamicRef") or _mentions_ref(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_mentions_ref(v) for v in value)
    return False
