"""A version was bumped although nothing it versions changed.

Compared with the base revision. A case_version marks a change of the case's execution
or judging fields, a fixture_version a change of the fixture's content, a dataset_version
a change of the dataset's cases, referenced fixtures or manifest. A bump without such a
change (for example after editing only the title or metadata, which are governance
fields) makes results look incomparable when they are not. A warning: remove the bump
unless it is deliberate.

Passing (the title changed, the version stays)::

    case_version: v3        # v3 at the base
    title: 签收超过 7 天但用户声称质量问题（改写）

Failing::

    case_version: v4        # v3 at the base, and only the title changed
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity
from evalcase.versioning.history import located_version, names, position, version_field

if TYPE_CHECKING:
    from evalcase.versioning.history import History

CODE = "EC503"
NAME = "bump-without-change"
SEVERITY = Severity.WARNING
SCOPE = "history"

report = reporter(CODE, NAME, SEVERITY)


def _dataset_unchanged(history: History, dataset_id: str, base_version: str) -> bool:
    """Nothing in the dataset changed since its base version was released (or, when the
    base version was never released, since the base)."""
    release = history.releases.get(dataset_id, base_version)
    if release is not None:
        delta = history.delta(dataset_id, release)
        return delta is not None and not delta
    now = history.content(dataset_id)
    then = history.base_contents.get(dataset_id)
    if now is None or then is None or not (now.complete and then.complete):
        return False
    return now.digest == then.digest


def check(history: History) -> Iterator[Finding]:
    for is_manifest, pair in history.versioned_pairs():
        current = pair.current
        assert current is not None and pair.old_number is not None
        assert pair.new_number is not None
        if pair.new_number <= pair.old_number or pair.content_changed:
            continue
        if is_manifest:
            if not _dataset_unchanged(history, pair.id, pair.old_version):
                continue
            what = "no case, referenced fixture or manifest field changed"
        elif pair.other_fields:
            what = f"only governance fields changed ({names(pair.other_fields, 6)})"
        else:
            what = "its content did not change"
        line, column = position(located_version(current))
        yield report(
            current.path,
            line,
            column,
            f"{version_field(current)} bumped from {pair.old_version} at "
            f"{history.base_name} to {pair.new_version} but {what}; keep "
            f"{pair.old_version} unless the bump is deliberate",
        )
