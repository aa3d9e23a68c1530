"""A fixture's content changed, but its fixture_version did not.

Compared with the base revision. Cases pin what they were written against (for example
``tool_schema: {refund_submit: v2}``) and runs record the fixture versions they used; a
state, tool definition, corpus or rubric that changes under the same version breaks both.
The content is every field except fixture_id, fixture_version, description, source and
desensitized. A fixture changes every dataset that references it: see EC505 for the
datasets' versions. `evalcase bump` writes the bump.

Passing::

    fixture_version: v2     # v1 at the base; data.responses changed

Failing::

    fixture_version: v1     # v1 at the base; data.responses changed
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity
from evalcase.versioning.history import names, position
from evalcase.versioning.tags import next_version

if TYPE_CHECKING:
    from evalcase.versioning.history import History

CODE = "EC504"
NAME = "fixture-version-not-bumped"
SEVERITY = Severity.ERROR
SCOPE = "history"

report = reporter(CODE, NAME, SEVERITY)


def check(history: History) -> Iterator[Finding]:
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
