"""A released case ID is reused for a different case.

Release tags record every case ID with its content digest. Results, reports and review
records refer to cases by ID, so once an ID was released, removing the case and later
adding a different case under the same ID would silently attach old history to new
content. A case added since the base revision (or since its dataset's latest release)
whose ID appears in any release tag must have the content of one of its released
versions; otherwise choose a new ID. A case in another dataset than the one(s) that
released its ID (for example a dataset that was never released) is checked on every
lint, no ``--base`` needed: copying a released case into a new dataset and changing it
under the same ID is the same reuse.

Passing: a new case under a new ID (refund_eligibility_002), or the released case
restored unchanged.

Failing::

    # refund_eligibility_001 was released in refund_regression_set@v1, removed in v2,
    # and is now added again with a different input
    case_id: refund_eligibility_001
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from evalcase.index.digest import case_digest, case_id_of, dataset_id_of
from evalcase.index.facts import CaseFacts
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity
from evalcase.versioning.history import names, position

if TYPE_CHECKING:
    from evalcase.versioning.history import History

CODE = "EC507"
NAME = "released-id-reused"
SEVERITY = Severity.ERROR
SCOPE = "history"

report = reporter(CODE, NAME, SEVERITY)


def _candidates(history: History) -> list[tuple[CaseFacts, str]]:
    """Cases added since the base or their dataset's last release, and cases whose ID a
    release of another dataset holds."""
    out = {case.path: (case, f"new since {since}") for case, since in history.added_cases()}
    if not history.releases.all:
        return list(out.values())
    dirs = {m.dataset_dir: dataset_id_of(m) for m in history.index.manifests}
    for case in history.index.cases:
        if case.path in out or case.case_id is None:
            continue
        released = history.releases.case_releases(case_id_of(case))
        if not released:
            continue
        dataset = dirs.get(case.dataset_dir, case.dataset_dir)
        owners = {r.dataset_id for r, _, _ in released}
        if dataset not in owners:
            out[case.path] = (case, f"in dataset {dataset}, which never released it,")
    return [out[p] for p in sorted(out)]


def check(history: History) -> Iterator[Finding]:
    for case, since in _candidates(history):
        if case.case_id is None:
            continue
        case_id = case_id_of(case)
        released = history.releases.case_releases(case_id)
        if not released:
            continue
        for release, _version, digest in released:
            governance = release.governance
            if governance is None:
                governance = history.governance
            if case_digest(case, governance) == digest:
                break
        else:
            tags = sorted({f"{r.tag} (case_version {v})" for r, v, _ in released})
            line, column = position(case.case_id)
            yield report(
                case.path,
                line,
                column,
                f"case ID {case_id} is {since} but was released before in "
                f"{names(tags, 4)} with different content; a released ID is never reused "
                "for a different case: restore the released content or choose a new ID",
            )
