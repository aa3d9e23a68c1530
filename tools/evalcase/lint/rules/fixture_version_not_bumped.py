"""A fixture's content changed, but its fixture_version did not.

Compared with the base revision. Cases pin what they were written against (for example
``tool_schema: {refund_submit: v2}``) and runs record the fixture versions they used; a
state, tool definition, corpus or rubric that changes under the same version breaks both.
The content is every field except fixture_id, fixture_version, description, source and
desensitized. A fixture changes every dataset that references it: see EC505 for the
datasets' versions. `evalcase bump` writes the bump.

Release tags record every fixture a dataset release used, with its version and content
digest. A fixture whose ID and version appear in a release with other content is a
changed fixture under a reused version, whatever the base: for example a fixture deleted
after the release and later re-added under the same ID and version with new data. This
is checked on every lint in a git repository with tags, no ``--base`` needed.

Passing::

    fixture_version: v2     # v1 at the base; data.responses changed

Failing::

    fixture_version: v1     # v1 at the base; data.responses changed
    fixture_version: v1     # released as v1 in refund_regression_set@v1 with other data
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from evalcase.index.digest import fixture_digest, fixture_id_of, text
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity
from evalcase.versioning.history import names, position
from evalcase.versioning.tags import next_version, version_number

if TYPE_CHECKING:
    from evalcase.versioning.history import History

CODE = "EC504"
NAME = "fixture-version-not-bumped"
SEVERITY = Severity.ERROR
SCOPE = "history"

report = reporter(CODE, NAME, SEVERITY)


def check(history: History) -> Iterator[Finding]:
    reported: set[str] = set()
    for finding in _against_base(history):
        reported.add(finding.path)
        yield finding
    yield from _against_releases(history, reported)


def _against_releases(history: History, reported: set[str]) -> Iterator[Finding]:
    if not history.releases.all:
        return
    for fixture in history.index.fixtures:
        if fixture.path in reported or fixture.fixture_id is None:
            continue
        if history.index.focus is not None and fixture.path not in history.index.focus:
            continue
        released = history.releases.fixture_releases(fixture_id_of(fixture))
        if not released:
            continue
        version = text(fixture.fixture_version)
        digest = fixture_digest(fixture)
        clashes = sorted({r.tag for r, v, d in released if v == version and d != digest})
        if not clashes:
            continue
        later = [v for _, v, _ in released if (version_number(v) or 0) > 0]
        highest = max(later, key=lambda v: version_number(v) or 0, default=version)
        line, column = position(fixture.fixture_version)
        yield report(
            fixture.path,
            line,
            column,
            f"fixture {fixture_id_of(fixture)} {version} was released in {names(clashes, 4)} "
            "with other content; a released fixture version is frozen, so this is a changed "
            f"fixture under a reused version: bump fixture_version to "
            f"{next_version(highest)} (and the datasets that use it), or restore the "
            "released content",
        )


def _against_base(history: History) -> Iterator[Finding]:
    for pair in history.fixtures:
        fixture = pair.current
        if fixture is None or pair.base is None or not pair.content_changed:
            continue
        if pair.old_number is None or pair.old_number != pair.new_number:
            continue
        users = sorted(
            c.dataset_id
            for c in history.contents().values()
            if any(e.id == pair.id for e in c.fixtures)
        )
        used = f"; used by {names(users, 6)}" if users else ""
        line, column = position(fixture.fixture_version)
        yield report(
            fixture.path,
            line,
            column,
            f"fixture {pair.id} changed since {history.base_name} ({names(pair.fields, 6)}) "
            f"but fixture_version is still {pair.new_version}; bump it to "
            f"{next_version(pair.old_version)} (`evalcase bump` does it){used}",
        )
