"""Content digests: what "changed" means for versioning.

- A case's content digest covers its execution and judging fields: every top-level field
  except the identity fields (case_id, case_version, dataset_id, dataset_version) and the
  governance fields (``[versioning] governance_fields``, by default title and metadata).
- A fixture's content digest covers every field except fixture_id, fixture_version and
  the fixture's own governance fields: description, source and desensitized (what the
  fixture is and where it came from, not what a run sees).
- A dataset's digest covers every case (its ID and content digest) and every fixture its
  cases reference (state, tools, conversations, rubrics, and corpora reached through
  ``corpus_version`` or ``knowledge_base``). Editing a fixture that two datasets share
  therefore changes both digests.
- It also covers the dataset's **grouping**: everything that decides which cases a suite
  or gate measures, and how (docs/versioning.md: regrouping the same cases is a new dataset
  version). Per case: its tags, roles, risk level and coverage cell (``grouping_digest``
  of the facts); from the manifest: ``suites``, ``gates`` and ``coverage``
  (``GROUPING_FIELDS``). The manifest's title, description and owner are not part of it,
  nor its ``agent``: which agent runs a dataset is a run setting (``evalcase run
  --agent`` overrides it), not what the dataset holds or measures.

Everything is computed from the per-field digests the facts already carry (cached per
file content), never by re-reading files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple, cast

from evalcase.contract.fields import IDENTITY_FIELDS
from evalcase.index.facts import (
    CaseFacts,
    FixtureFacts,
    Located,
    ManifestFacts,
    digest,
    digests_of,
    memo_digest,
)
from evalcase.index.repo import RepoIndex

FIXTURE_IDENTITY_FIELDS = frozenset({"fixture_id", "fixture_version"})
FIXTURE_GOVERNANCE_FIELDS = frozenset({"description", "source", "desensitized"})
MANIFEST_IDENTITY_FIELDS = frozenset({"dataset_id", "dataset_version"})
# Manifest fields that decide what a suite or gate measures, and how.
GROUPING_FIELDS = ("suites", "gates", "coverage")


def text(located: Located | None) -> str:
    """The string value of a located field, '' when absent or not a string."""
    if located is None or not isinstance(located[0], str):
        return ""
    return located[0]


def case_id_of(facts: CaseFacts) -> str:
    """A case's identity: its case_id, or its path when it has none."""
    return text(facts.case_id) or f"path:{facts.path}"


def fixture_id_of(facts: FixtureFacts) -> str:
    return text(facts.fixture_id) or f"path:{facts.path}"


def dataset_id_of(facts: ManifestFacts) -> str:
    return text(facts.dataset_id) or facts.dataset_dir


def case_content(facts: CaseFacts, governance: Collection[str]) -> dict[str, str]:
    """Field -> digest for the case's execution and judging fields."""
    return {
        k: v
        for k, v in facts.field_digests.items()
        if k not in IDENTITY_FIELDS and k not in governance
    }


def case_governance(facts: CaseFacts, governance: Collection[str]) -> dict[str, str]:
    """Field -> digest for the case's governance fields."""
    return {k: v for k, v in facts.field_digests.items() if k in governance}


def fixture_content(facts: FixtureFacts) -> dict[str, str]:
    return {
        k: v
        for k, v in facts.field_digests.items()
        if k not in FIXTURE_IDENTITY_FIELDS and k not in FIXTURE_GOVERNANCE_FIELDS
    }


def fixture_governance(facts: FixtureFacts) -> dict[str, str]:
    return {k: v for k, v in facts.field_digests.items() if k in FIXTURE_GOVERNANCE_FIELDS}


def manifest_content(facts: ManifestFacts) -> dict[str, str]:
    return {k: v for k, v in facts.field_digests.items() if k not in MANIFEST_IDENTITY_FIELDS}


def manifest_grouping(facts: ManifestFacts) -> dict[str, str]:
    """Grouping field -> digest of the manifest (only the fields it has)."""
    digests = facts.field_digests
    return {k: digests[k] for k in GROUPING_FIELDS if k in digests}


def grouping_map(manifest: ManifestFacts, cases: Iterable[tuple[str, str]]) -> dict[str, str]:
    """What a release freezes about grouping: ``manifest:<field>`` and ``case:<id>`` ->
    digest, for the manifest's grouping fields and each case's tags/roles/risk/coverage."""
    out = {f"manifest:{k}": v for k, v in manifest_grouping(manifest).items()}
    out.update((f"case:{case_id}", digest) for case_id, digest in cases)
    return out


def fields_digest(fields: Mapping[str, str]) -> str:
    """Hash of field -> digest pairs (length-prefixed names: unambiguous, and fast)."""
    blob = "".join([f"{len(k)}:{k}{fields[k]}" for k in sorted(fields)])  # a list: faster
    return hashlib.blake2b(blob.encode("utf-8"), digest_size=12).hexdigest()


def governance_key(governance: Collection[str]) -> str:
    return ",".join(sorted(governance))


def case_digest(facts: CaseFacts, governance: Collection[str]) -> str:
    if facts.content_digest and facts.content_governance == governance_key(governance):
        return facts.content_digest
    return fields_digest(case_content(facts, governance))


def fixture_digest(facts: FixtureFacts) -> str:
    return fields_digest(fixture_content(facts))


def changed_fields(old: Mapping[str, str], new: Mapping[str, str]) -> tuple[str, ...]:
    """Fields added, removed or changed between two field -> digest mappings."""
    return tuple(sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)))


def referenced_fixtures(index: RepoIndex, cases: Iterable[CaseFacts]) -> list[FixtureFacts]:
    """Every fixture the cases reference, each once, in path order (RepoIndex.resolve;
    a knowledge base brings every corpus of it: which one a run uses can depend on the
    case's effective date, so all of them are part of the dataset)."""
    return index.referenced_fixtures(cases)


class Entry(NamedTuple):
    """One case or fixture of a dataset: identity, version label, content digest, file.
    (A named tuple: a dataset of 100,000 cases builds that many on every comparison
    with its release.)"""

    id: str
    version: str
    digest: str
    path: str
    # Cases: the grouping digest (tags, roles, risk level, coverage); fixtures: "".
    grouping: str = ""


@dataclass(frozen=True)
class DatasetContent:
    """A dataset as versioning sees it."""

    dataset_id: str
    dataset_dir: str
    version: str
    manifest: ManifestFacts
    cases: tuple[Entry, ...]
    fixtures: tuple[Entry, ...]
    digest: str
    # False when a file of the dataset or any fixture could not be read: the digest is
    # then not comparable (the unreadable file is reported by its own rule).
    complete: bool = True

    def case_map(self) -> dict[str, tuple[str, str]]:
        return {e.id: (e.version, e.digest) for e in self.cases}

    def fixture_map(self) -> dict[str, tuple[str, str]]:
        return {e.id: (e.version, e.digest) for e in self.fixtures}

    def grouping_map(self) -> dict[str, str]:
        return grouping_map(self.manifest, ((e.id, e.grouping) for e in self.cases))


def dataset_digest(
    cases: Iterable[tuple[str, str]],
    fixtures: Iterable[tuple[str, str]],
    grouping: Mapping[str, str] | None = None,
) -> str:
    """Hash of sorted (case ID, content digest) and (fixture ID, content digest) pairs,
    and of the grouping map (see ``grouping_map``)."""
    value: dict[str, object] = {"cases": sorted(cases), "fixtures": sorted(fixtures)}
    if grouping:
        value["grouping"] = sorted(grouping.items())
    blob = json.dumps(value, separators=(",", ":")).encode("utf-8")
    return hashlib.blake2b(blob, digest_size=16).hexdigest()


def dataset_contents(
    index: RepoIndex,
    governance: Collection[str],
    broken: Collection[str] = (),
    only: Collection[str] | None = None,
) -> dict[str, DatasetContent]:
    """Every dataset with a manifest (or those named in ``only``), by dataset ID.
    ``broken``: paths of files that were read but yielded no facts (syntax errors...)."""
    manifests = dataset_manifests(index, only)
    dirs = {m.dataset_dir for m in manifests.values()}
    cases_by_dir: dict[str, list[CaseFacts]] = {}
    for case in index.cases:
        if case.dataset_dir in dirs:
            cases_by_dir.setdefault(case.dataset_dir, []).append(case)
    fixtures_broken = any(p.startswith("fixtures/") for p in broken)
    out: dict[str, DatasetContent] = {}
    for dataset_id, manifest in sorted(manifests.items()):
        cases = cases_by_dir.get(manifest.dataset_dir, [])
        prefix = f"datasets/{manifest.dataset_dir}/"
        out[dataset_id] = assemble(
            dataset_id,
            manifest,
            [case_entry(c, governance) for c in cases],
            referenced_fixtures(index, cases),
            complete=not fixtures_broken and not any(p.startswith(prefix) for p in broken),
        )
    return out


def dataset_manifests(index: RepoIndex, only: Collection[str] | None) -> dict[str, ManifestFacts]:
    """The manifest of every dataset (or of those in ``only``) by dataset ID; a second
    manifest with the same ID is ignored (the identity rules report it)."""
    manifests: dict[str, ManifestFacts] = {}
    for manifest in sorted(index.manifests, key=lambda m: m.path):
        dataset_id = dataset_id_of(manifest)
        if only is None or dataset_id in only:
            manifests.setdefault(dataset_id, manifest)
    return manifests


def case_entry(case: CaseFacts, governance: Collection[str]) -> Entry:
    return Entry(
        case_id_of(case),
        text(case.case_version),
        case_digest(case, governance),
        case.path,
        case.grouping_digest,
    )


_BY_ID_AND_PATH = itemgetter(0, 3)  # Entry.id, Entry.path


def assemble(
    dataset_id: str,
    manifest: ManifestFacts,
    cases: Iterable[Entry],
    fixtures: Iterable[FixtureFacts],
    *,
    complete: bool,
) -> DatasetContent:
    """A dataset's content from its manifest, its cases' entries (any order) and the
    fixtures they reference (evalcase.index.store builds the same from stored entries)."""
    case_entries = tuple(sorted(cases, key=_BY_ID_AND_PATH))
    fixture_entries = tuple(
        sorted(
            (
                Entry(fixture_id_of(f), text(f.fixture_version), fixture_digest(f), f.path)
                for f in fixtures
            ),
            key=_BY_ID_AND_PATH,
        )
    )
    return DatasetContent(
        dataset_id=dataset_id,
        dataset_dir=manifest.dataset_dir,
        version=text(manifest.dataset_version),
        manifest=manifest,
        cases=case_entries,
        fixtures=fixture_entries,
        digest=dataset_digest(
            ((e.id, e.digest) for e in case_entries),
            ((e.id, e.digest) for e in fixture_entries),
            grouping_map(manifest, ((e.id, e.grouping) for e in case_entries)),
        ),
        complete=complete,
    )


def reviewed_content_digest(
    data: Mapping[str, object],
    governance: Collection[str],
    digests: Mapping[str, str] | None = None,
) -> str:
    """What a review judges, from a case's parsed data: the digest of its execution and
    judging fields, the same fields (and the same value) as ``case_digest``. A review
    record stores it as ``content_digest`` (``evalcase review-case``); EC419 compares.
    ``digests``: the data's field digests when already at hand (facts.field_digests)."""
    if digests is None:
        digests = digests_of(data)
    return fields_digest(
        {k: d for k, d in digests.items() if k not in IDENTITY_FIELDS and k not in governance}
    )


class _Dropped(dict[int, int | None]):
    """str.translate's table for _squeezed: punctuation, separators and control or
    format characters (Unicode categories P*, Z*, C*) map to None, the rest to
    themselves. Filled as characters are met: a cold lint squeezes every case, and one
    C-level lookup per character is several times faster than asking unicodedata."""

    def __missing__(self, code: int) -> int | None:
        import unicodedata

        kept = None if unicodedata.category(chr(code))[0] in "PZC" else code
        if len(self) >= 1 << 16:
            self.clear()  # bounded: a hostile file may hold every character there is
        self[code] = kept
        return kept


_DROPPED = _Dropped()


# Squeezed short strings (keys, enum values, tool names recur in every case), bounded.
_SQUEEZED: dict[str, str] = {}


def _squeezed_text(text: str) -> str:
    found = _SQUEEZED.get(text)
    if found is None:
        if text.isascii():  # NFKC leaves ASCII as it is, and casefold is lower
            found = text.lower().translate(_DROPPED)
        else:
            import unicodedata

            found = unicodedata.normalize("NFKC", text).casefold().translate(_DROPPED)
        if len(text) <= 64:
            if len(_SQUEEZED) >= 100_000:
                _SQUEEZED.clear()
            _SQUEEZED[text] = found
    return found


def _squeezed(value: object) -> object:
    """``value`` with every string reduced to what a copy keeps when it re-punctuates."""
    # Exact types first (what YAML and JSON load): isinstance on every value of every
    # case was a third of the time.
    kind = type(value)
    if kind is str:
        return _squeezed_text(cast(str, value))
    if kind is dict:
        return {str(_squeezed(k)): _squeezed(v) for k, v in cast(dict[Any, Any], value).items()}
    if kind is list:
        return [_squeezed(v) for v in cast(list[Any], value)]
    if isinstance(value, str):
        return _squeezed_text(str(value))
    if isinstance(value, Mapping):
        return {str(_squeezed(k)): _squeezed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_squeezed(v) for v in value]
    return value


def copy_digest(data: Mapping[str, object], governance: Collection[str]) -> str:
    """The content digest of a case up to punctuation, spacing, letter case and Unicode
    width: what EC417 compares, so a copy with a changed comma is still a copy."""
    return fields_digest(
        {
            str(k): memo_digest(v, _COPY_DIGESTS, _squeezed_digest)
            for k, v in data.items()
            if k not in IDENTITY_FIELDS and k not in governance
        }
    )


def _squeezed_digest(value: object) -> str:
    return digest(_squeezed(value))


# Squeezed digests of field values by marshal bytes (evalcase.index.facts.memo_digest).
_COPY_DIGESTS: dict[bytes, str] = {}
