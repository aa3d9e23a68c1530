"""A case's execution or judging fields changed, but its case_version did not.

Compared with the base revision (``evalcase lint --base REF``; under pre-commit the
staged content against HEAD). Results are recorded against a case ID and its
case_version, so two different contracts under one version make old scores impossible
to interpret (docs/versioning.md: expected behaviour changed -> new case_version). Which
fields count is the contract split (evalcase.contract.fields): every field except the identity
fields and ``[versioning] governance_fields`` (default: title, metadata), whose changes
need no bump. A renamed file is the same case when its case_id is the same.
`evalcase bump` writes the bump.

Passing (input changed, version bumped)::

    case_version: v4        # was v3 at the base
    input: "耳机签收十天了，有质量问题，能退吗？"

Failing::

    case_version: v3        # v3 at the base too
    input: "耳机签收十天了，有质量问题，能退吗？"   # changed
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

CODE = "EC501"
NAME = "case-version-not-bumped"
SEVERITY = Severity.ERROR
SCOPE = "history"

report = reporter(CODE, NAME, SEVERITY)


def check(history: History) -> Iterator[Finding]:
    for pair in history.cases:
        case = pair.current
        if case is None or pair.base is None or not pair.content_changed:
            continue
        if pair.old_number is None or pair.old_number != pair.new_number:
            continue
        line, column = position(case.case_version)
        yield report(
            case.path,
            line,
            column,
            f"case {pair.id} changed since {history.base_name} ({names(pair.fields, 6)}) "
            f"but case_version is still {pair.new_version}; bump it to "
            f"{next_version(pair.old_version)} (`evalcase bump` does it)",
        )
