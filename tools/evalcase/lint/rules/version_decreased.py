"""A case_version, fixture_version or dataset_version went down.

Compared with the base revision. Versions label released and recorded states; going
back re-uses a label that already names other content, so run results and release tags
could point at two different things. Versions compare by number: v10 is above v9.

Passing::

    case_version: v4        # v3 at the base

Failing::

    case_version: v2        # v3 at the base
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity
from evalcase.versioning.history import located_version, position, version_field

if TYPE_CHECKING:
    from evalcase.versioning.history import History

CODE = "EC502"
NAME = "version-decreased"
SEVERITY = Severity.ERROR
SCOPE = "history"

report = reporter(CODE, NAME, SEVERITY)


def check(history: History) -> Iterator[Finding]:
    for is_manifest, pair in history.versioned_pairs():
        current = pair.current
        assert current is not None and pair.old_number is not None
        assert pair.new_number is not None
        if pair.new_number >= pair.old_number:
            continue
        if is_manifest:
            target = history.dataset_target(pair.id) or pair.old_version
        else:
            target = pair.target_version() or pair.old_version
        line, column = position(located_version(current))
        yield report(
            current.path,
            line,
            column,
            f"{version_field(current)} went down from {pair.old_version} at "
            f"{history.base_name} to {pair.new_version}; versions never decrease: set "
            f"it to {target}",
        )
