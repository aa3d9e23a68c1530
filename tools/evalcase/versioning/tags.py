"""Dataset releases: version labels, and the annotated git tags that freeze a version.

A release is the annotated tag ``<dataset_id>@<dataset_version>`` (``[versioning]
tag_format``). Its message is readable by people and parsed by evalcase::

    refund_regression_set v1: 32 cases, 41 fixtures

    Released by evalcase 0.1.0. Read it back with `evalcase export refund_regression_set@v1`.

    dataset: refund_regression_set
    version: v1
    digest: 5f0c...                  (the dataset digest, see evalcase.index.digest)
    governance: metadata,title       (case fields left out of content digests)
    case refund_eligibility_001 v3 9a41...     (case ID, case_version, content digest)
    fixture order_lookup v1 77d2...            (fixture ID, fixture_version, digest)
    group case:refund_eligibility_001 3be0...  (tags, roles, risk level, coverage of a case)
    group manifest:suites 81c9...              (suites, gates, coverage, agent)

Every tag is read with one ``git for-each-ref`` call (evalcase.gitio.Repo.tags).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalcase import __version__
from evalcase.config import Config
from evalcase.gitio import Repo, Tag
from evalcase.index.digest import DatasetContent

_VERSION = re.compile(r"v([1-9][0-9]{0,8})")


def version_number(label: object) -> int | None:
    """3 for 'v3'; None for anything that is not a version label. v10 > v9."""
    if not isinstance(label, str):
        return None
    match = _VERSION.fullmatch(label)
    return int(match.group(1)) if match else None


def version_label(number: int) -> str:
    return f"v{number}"


def next_version(*labels: object) -> str:
    """The label after the greatest of ``labels`` (v1 when none is a version)."""
    numbers = [n for n in (version_number(x) for x in labels) if n is not None]
    return version_label(max(numbers, default=0) + 1)


CaseMap = dict[str, tuple[str, str]]  # id -> (version label, content digest)


@dataclass(frozen=True)
class Release:
    """One release tag. The lists are None when the message is not evalcase's."""

    tag: str
    dataset_id: str
    version: str
    commit: str
    digest: str | None = None
    governance: tuple[str, ...] | None = None
    cases: CaseMap | None = field(default=None, compare=False)
    fixtures: CaseMap | None = field(default=None, compare=False)
    # What the release froze about grouping (see evalcase.index.digest.grouping_map);
    # None for tags written before evalcase recorded it.
    grouping: dict[str, str] | None = field(default=None, compare=False)

    @property
    def number(self) -> int:
        return version_number(self.version) or 0

    @property
    def parsed(self) -> bool:
        return self.digest is not None and self.cases is not None and self.fixtures is not None


def format_message(content: DatasetContent, governance: Sequence[str], tag: str) -> str:
    """The annotated tag message recording a release."""
    lines = [
        f"{content.dataset_id} {content.version}: {len(content.cases)} case"
        f"{'s' * (len(content.cases) != 1)}, {len(content.fixtures)} fixture"
        f"{'s' * (len(content.fixtures) != 1)}",
        "",
        f"Released by evalcase {__version__}. Read it back with `evalcase export {tag}`.",
        "",
        f"dataset: {content.dataset_id}",
        f"version: {content.version}",
        f"digest: {content.digest}",
        f"governance: {','.join(sorted(governance))}",
    ]
    lines += [f"case {e.id} {e.version or '-'} {e.digest}" for e in content.cases]
    lines += [f"fixture {e.id} {e.version or '-'} {e.digest}" for e in content.fixtures]
    lines += [f"group {key} {value}" for key, value in sorted(content.grouping_map().items())]
    return "\n".join(lines) + "\n"


def parse_message(
    message: str,
) -> tuple[str | None, tuple[str, ...] | None, CaseMap | None, CaseMap | None]:
    """(digest, governance fields, cases, fixtures) from a tag message; Nones when the
    message was not written by evalcase."""
    digest: str | None = None
    governance: tuple[str, ...] | None = None
    cases: CaseMap = {}
    fixtures: CaseMap = {}
    for line in message.splitlines():
        if line.startswith("digest: "):
            digest = line[len("digest: ") :].strip() or None
        elif line.startswith("governance:"):
            value = line[len("governance:") :].strip()
            governance = tuple(v for v in value.split(",") if v)
        elif line.startswith(("case ", "fixture ")):
            kind, rest = line.split(" ", 1)
            parts = rest.rsplit(" ", 2)
            if len(parts) != 3:
                continue
            item_id, version, item_digest = parts
            target = cases if kind == "case" else fixtures
            target[item_id] = ("" if version == "-" else version, item_digest)
    if digest is None:
        return None, None, None, None
    return digest, governance, cases, fixtures


def parse_grouping(message: str) -> dict[str, str] | None:
    """The ``group`` lines of a tag message; None when it has none (a tag written before
    evalcase recorded grouping, or not by evalcase)."""
    found: dict[str, str] = {}
    for line in message.splitlines():
        if line.startswith("group "):
            parts = line.split(" ")
            if len(parts) == 3:
                found[parts[1]] = parts[2]
    return found or None


def tag_pattern(config: Config) -> re.Pattern[str]:
    """A regular expression matching release tag names of ``config.tag_format``."""
    out = []
    for piece in re.split(r"(\{dataset_id\}|\{dataset_version\})", config.tag_format):
        if piece == "{dataset_id}":
            out.append(r"(?P<dataset_id>[^\s]+?)")
        elif piece == "{dataset_version}":
            out.append(r"(?P<dataset_version>v[1-9][0-9]{0,8})")
        else:
            out.append(re.escape(piece))
    return re.compile("".join(out))


class ParsedTags(Protocol):
    """Where parsed tag messages are kept between runs (the lint store): a release of
    100,000 cases has a 13 MB message, longer to parse than the commit hook may take."""

    def get_parsed_tag(self, key: str) -> Any: ...

    def put_parsed_tag(self, key: str, value: Any) -> None: ...


# (digest, governance fields, cases, fixtures, grouping) of one tag message.
_Parsed = tuple[
    str | None, tuple[str, ...] | None, CaseMap | None, CaseMap | None, dict[str, str] | None
]


def _parse(message: str) -> _Parsed:
    digest, governance, cases, fixtures = parse_message(message)
    grouping = parse_grouping(message) if digest is not None else None
    return digest, governance, cases, fixtures, grouping


def _kept(kept: ParsedTags, key: str) -> _Parsed | None:
    found = kept.get_parsed_tag(key)
    if not isinstance(found, tuple) or len(found) != 5:
        return None
    digest, governance, cases, fixtures, grouping = found
    return digest, tuple(governance) if governance is not None else None, cases, fixtures, \
        grouping  # fmt: skip


class Releases:
    """Every release tag of the repository, with the lookups versioning needs."""

    def __init__(self, releases: Iterable[Release], tags_key: str = "") -> None:
        self.all = sorted(releases, key=lambda r: (r.dataset_id, r.number, r.tag))
        self.key = tags_key
        self._by_dataset: dict[str, list[Release]] = {}
        for release in self.all:
            self._by_dataset.setdefault(release.dataset_id, []).append(release)
        self._case_index: dict[str, list[tuple[Release, str, str]]] | None = None
        self._fixture_index: dict[str, list[tuple[Release, str, str]]] | None = None

    @classmethod
    def from_tags(cls, tags: Sequence[Tag], config: Config) -> Releases:
        """The release tags among ``tags`` (with their messages)."""
        pattern = tag_pattern(config)
        h = hashlib.blake2b(digest_size=16)
        found = []
        for tag in sorted(tags, key=lambda t: t.name):
            h.update(f"{tag.name}\0{tag.commit}\0{tag.message}\0\0".encode())
            if match := pattern.fullmatch(tag.name):
                found.append((tag, match, _parse(tag.message)))
        return cls._of(found, h.hexdigest())

    @classmethod
    def from_repo(cls, repo: Repo, config: Config, kept: ParsedTags) -> Releases:
        """The release tags of ``repo``, with messages parsed in earlier runs taken from
        ``kept`` by tag object: a message is read and parsed once."""
        pattern = tag_pattern(config)
        h = hashlib.blake2b(digest_size=16)
        found: list[tuple[Tag, re.Match[str], _Parsed | None]] = []
        for tag in sorted(repo.tags(messages=False), key=lambda t: t.name):
            h.update(f"{tag.name}\0{tag.commit}\0{tag.object}\0\0".encode())
            if match := pattern.fullmatch(tag.name):
                found.append((tag, match, _kept(kept, f"tag:{tag.object}")))
        if any(parsed is None for _tag, _match, parsed in found):
            messages = {t.name: t.message for t in repo.tags()}
            for i, (tag, match, parsed) in enumerate(found):
                if parsed is None:
                    parsed = _parse(messages.get(tag.name, ""))
                    kept.put_parsed_tag(f"tag:{tag.object}", parsed)
                    found[i] = (tag, match, parsed)
        return cls._of(found, "objects:" + h.hexdigest())

    @classmethod
    def _of(cls, found: Sequence[tuple[Tag, re.Match[str], _Parsed | None]], key: str) -> Releases:
        releases = []
        for tag, match, parsed in found:
            if parsed is None:
                continue
            digest, governance, cases, fixtures, grouping = parsed
            releases.append(
                Release(
                    tag=tag.name,
                    dataset_id=match.group("dataset_id"),
                    version=match.group("dataset_version"),
                    commit=tag.commit,
                    digest=digest,
                    governance=governance,
                    cases=cases,
                    fixtures=fixtures,
                    grouping=grouping,
                )
            )
        return cls(releases, key)

    def of(self, dataset_id: str) -> list[Release]:
        """Releases of one dataset, oldest version first."""
        return self._by_dataset.get(dataset_id, [])

    def get(self, dataset_id: str, version: str) -> Release | None:
        number = version_number(version)
        return next((r for r in self.of(dataset_id) if r.number == number), None)

    def latest(self, dataset_id: str, up_to: str | None = None) -> Release | None:
        """The newest release, or the newest at or below version ``up_to``."""
        limit = version_number(up_to) if up_to is not None else None
        candidates = [r for r in self.of(dataset_id) if limit is None or r.number <= limit]
        return candidates[-1] if candidates else None

    def reference(self, dataset_id: str, version: str) -> Release | None:
        """The newest release at or below ``version`` (None when ``version`` is not a
        version label): what "changed since the last release" is measured against."""
        if version_number(version) is None:
            return None
        return self.latest(dataset_id, up_to=version)

    def highest(self, dataset_id: str) -> str | None:
        found = self.of(dataset_id)
        return found[-1].version if found else None

    def case_releases(self, case_id: str) -> list[tuple[Release, str, str]]:
        """(release, case_version, content digest) for every release listing the case."""
        if self._case_index is None:
            index: dict[str, list[tuple[Release, str, str]]] = {}
            for release in self.all:
                for cid, (version, digest) in (release.cases or {}).items():
                    index.setdefault(cid, []).append((release, version, digest))
            self._case_index = index
        return self._case_index.get(case_id, [])

    def fixture_releases(self, fixture_id: str) -> list[tuple[Release, str, str]]:
        """(release, fixture_version, content digest) for every release listing the
        fixture."""
        if self._fixture_index is None:
            index: dict[str, list[tuple[Release, str, str]]] = {}
            for release in self.all:
                for fid, (version, digest) in (release.fixtures or {}).items():
                    index.setdefault(fid, []).append((release, version, digest))
            self._fixture_index = index
        return self._fixture_index.get(fixture_id, [])
