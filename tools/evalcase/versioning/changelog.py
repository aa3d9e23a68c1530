"""`evalcase diff`: the changelog of a dataset between two revisions.

``evalcase diff refund_regression_set@v1 refund_regression_set@v2`` lists the cases
added, removed and modified (old -> new case_version and which top-level fields changed,
flagged when only governance fields did) and the referenced fixtures added, removed or
changed. Either side may be a release, any commit, or the working tree (see
evalcase.versioning.revisions); the second side may leave out the dataset (``@HEAD``). Renders as
text, as Markdown for a pull-request comment, or as JSON for tools.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from evalcase.config import Config
from evalcase.index.analysis import Analyzer
from evalcase.index.digest import FIXTURE_IDENTITY_FIELDS, text
from evalcase.index.facts import CaseFacts, FixtureFacts
from evalcase.versioning.revisions import DatasetView

_CASE_IGNORED = frozenset({"case_id", "case_version", "dataset_id", "dataset_version"})


@dataclass(frozen=True)
class Side:
    label: str
    commit: str | None
    version: str
    cases: int
    digest: str


@dataclass(frozen=True)
class ItemChange:
    """A case or fixture added, removed or modified."""

    id: str
    old_version: str | None
    new_version: str | None
    fields: tuple[str, ...] = ()
    # False when only governance fields changed (title, metadata; a fixture's
    # description, source, desensitized): no new version was needed.
    content_changed: bool = True


@dataclass
class Changelog:
    dataset_id: str
    old: Side
    new: Side
    added: list[ItemChange] = field(default_factory=list)
    removed: list[ItemChange] = field(default_factory=list)
    modified: list[ItemChange] = field(default_factory=list)
    fixtures_added: list[ItemChange] = field(default_factory=list)
    fixtures_removed: list[ItemChange] = field(default_factory=list)
    fixtures_modified: list[ItemChange] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any(
            (
                self.added,
                self.removed,
                self.modified,
                self.fixtures_added,
                self.fixtures_removed,
                self.fixtures_modified,
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def diff(config: Config, spec_a: str, spec_b: str, analyzer: Analyzer | None = None) -> Changelog:
    """The changelog of a dataset from ``spec_a`` to ``spec_b``."""
    from evalcase.versioning.history import is_git_repository
    from evalcase.versioning.revisions import open_repo, parse_spec, read_dataset

    repo = open_repo(config) if is_git_repository(config.root) else None
    old_rev = parse_spec(config, repo, spec_a)
    if spec_b.startswith("@"):
        spec_b = old_rev.dataset_id + spec_b
    new_rev = parse_spec(config, repo, spec_b)
    old = read_dataset(config, old_rev, analyzer=analyzer)
    new = read_dataset(config, new_rev, analyzer=analyzer)
    return compare(old, new, tuple(sorted(config.governance_fields)))


def _side(view: DatasetView) -> Side:
    content = view.content
    return Side(
        view.revision.label,
        view.revision.commit,
        content.version,
        len(content.cases),
        content.digest,
    )


def _facts(view: DatasetView, cases: bool) -> dict[str, CaseFacts | FixtureFacts]:
    entries = view.content.cases if cases else view.content.fixtures
    out: dict[str, CaseFacts | FixtureFacts] = {}
    for entry in entries:
        facts = view.results[entry.path].facts
        if isinstance(facts, CaseFacts | FixtureFacts):
            out.setdefault(entry.id, facts)
    return out


def _version(facts: CaseFacts | FixtureFacts) -> str:
    return text(facts.case_version if isinstance(facts, CaseFacts) else facts.fixture_version)


def _changes(
    old: dict[str, CaseFacts | FixtureFacts],
    new: dict[str, CaseFacts | FixtureFacts],
    ignored: frozenset[str],
    governance: frozenset[str],
) -> tuple[list[ItemChange], list[ItemChange], list[ItemChange]]:
    added = [ItemChange(i, None, _version(new[i])) for i in sorted(new.keys() - old.keys())]
    removed = [ItemChange(i, _version(old[i]), None) for i in sorted(old.keys() - new.keys())]
    modified = []
    for item_id in sorted(old.keys() & new.keys()):
        a, b = old[item_id].field_digests, new[item_id].field_digests
        fields = tuple(sorted(k for k in (a.keys() | b.keys()) - ignored if a.get(k) != b.get(k)))
        old_version, new_version = _version(old[item_id]), _version(new[item_id])
        if fields or old_version != new_version:
            content = any(f not in governance for f in fields)
            modified.append(ItemChange(item_id, old_version, new_version, fields, content))
    return added, removed, modified


def compare(old: DatasetView, new: DatasetView, governance: tuple[str, ...]) -> Changelog:
    from evalcase.index.digest import FIXTURE_GOVERNANCE_FIELDS

    log = Changelog(old.content.dataset_id, _side(old), _side(new))
    log.added, log.removed, log.modified = _changes(
        _facts(old, True), _facts(new, True), _CASE_IGNORED, frozenset(governance)
    )
    log.fixtures_added, log.fixtures_removed, log.fixtures_modified = _changes(
        _facts(old, False), _facts(new, False), FIXTURE_IDENTITY_FIELDS, FIXTURE_GOVERNANCE_FIELDS
    )
    return log


# --- rendering -------------------------------------------------------------------------
def _versions(change: ItemChange) -> str:
    if change.old_version is None:
        return change.new_version or "-"
    if change.new_version is None:
        return change.old_version or "-"
    if change.old_version == change.new_version:
        return change.new_version or "-"
    return f"{change.old_version or '-'} -> {change.new_version or '-'}"


def _fields(change: ItemChange) -> str:
    shown = ", ".join(change.fields) if change.fields else "version only"
    return shown if change.content_changed or not change.fields else f"{shown} (governance only)"


def render_text(log: Changelog) -> str:
    out = [
        f"{log.dataset_id}: {log.old.label} -> {log.new.label}",
        f"  dataset_version {log.old.version} -> {log.new.version}, cases {log.old.cases} -> "
        f"{log.new.cases}, digest {log.old.digest[:12]} -> {log.new.digest[:12]}",
    ]
    if log.empty:
        out.append("No changes.")
        return "\n".join(out) + "\n"
    sections = (
        ("Cases added", "+", log.added),
        ("Cases removed", "-", log.removed),
        ("Cases modified", "~", log.modified),
        ("Fixtures added", "+", log.fixtures_added),
        ("Fixtures removed", "-", log.fixtures_removed),
        ("Fixtures modified", "~", log.fixtures_modified),
    )
    for title, mark, items in sections:
        if not items:
            continue
        out.append(f"{title} ({len(items)}):")
        for change in items:
            line = f"  {mark} {change.id} {_versions(change)}"
            if mark == "~":
                line += f": {_fields(change)}"
            out.append(line)
    return "\n".join(out) + "\n"


def render_markdown(log: Changelog) -> str:
    out = [
        f"### Dataset `{log.dataset_id}`: `{log.old.label}` → `{log.new.label}`",
        "",
        "| | old | new |",
        "|---|---|---|",
        f"| dataset_version | {log.old.version} | {log.new.version} |",
        f"| cases | {log.old.cases} | {log.new.cases} |",
        f"| digest | `{log.old.digest[:12]}` | `{log.new.digest[:12]}` |",
        "",
    ]
    if log.empty:
        out.append("No changes.")
        return "\n".join(out) + "\n"
    out.append(
        f"**{len(log.added)} added, {len(log.removed)} removed, {len(log.modified)} modified "
        f"case(s); {len(log.fixtures_added) + len(log.fixtures_removed)} fixture(s) added or "
        f"removed, {len(log.fixtures_modified)} modified**"
    )
    for title, what, items in (
        ("Cases added", "case", log.added),
        ("Cases removed", "case", log.removed),
        ("Cases modified", "case", log.modified),
        ("Fixtures added", "fixture", log.fixtures_added),
        ("Fixtures removed", "fixture", log.fixtures_removed),
        ("Fixtures modified", "fixture", log.fixtures_modified),
    ):
        if not items:
            continue
        modified = title.endswith("modified")
        out += ["", f"#### {title}", ""]
        out.append(f"| {what} | version |" + (" fields changed |" if modified else ""))
        out.append("|---|---|" + ("---|" if modified else ""))
        for change in items:
            versions = _versions(change).replace("->", "→")
            row = f"| `{change.id}` | {versions} |"
            if modified:
                row += f" {_fields(change)} |"
            out.append(row)
    return "\n".join(out) + "\n"


def render_json(log: Changelog) -> str:
    return json.dumps(log.to_dict(), ensure_ascii=False, indent=2) + "\n"
