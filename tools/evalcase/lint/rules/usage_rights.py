"""A case whose data may not be used for evaluation (rights not approved, retention over).

Cases are often rewritten from production logs and user feedback; what the data may be
used for is recorded in ``metadata.usage_rights_status`` (docs/fields.md, docs/untrusted-input.md).
Only ``approved_for_evaluation`` allows a case in an evaluation run; ``restricted``,
``pending_review``, ``expired`` and ``revoked`` do not. In the detailed form, the status
must be ``approved_for_evaluation``, ``allowed_uses`` (when given) must include
``evaluation``, and ``retention_until`` (when given) must not be in the past: after that
date the data must be deleted, not evaluated.

The retention check depends on today's date (UTC), so the same files can start failing
on a later day: that is the point (expired data must go). Per-file results stay cached;
the whole-run cache is keyed by the date.

Passing::

    metadata:
      usage_rights_status:
        status: approved_for_evaluation
        allowed_uses: [evaluation]
        retention_until: "2099-12-31"

Failing::

    metadata:
      usage_rights_status:
        status: approved_for_evaluation
        allowed_uses: [training]
        retention_until: "2020-12-31"
"""

import datetime as dt
from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity
from evalcase.naming import iso_date

CODE = "EC405"
NAME = "usage-rights"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)

ALLOWED = "approved_for_evaluation"


def today() -> str:
    """Today's date (UTC), YYYY-MM-DD."""
    return dt.datetime.now(dt.UTC).date().isoformat()


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    now = today()
    for case in index.checked_cases():
        if case.usage_status is not None:
            status, line, col = case.usage_status
            if status != ALLOWED:
                yield report(
                    case.path,
                    line,
                    col,
                    f"usage rights status is {status!r}; only {ALLOWED} data may be used in "
                    "evaluation: get the usage approved, or remove the case",
                )
        if case.allowed_uses is not None:
            uses, line, col = case.allowed_uses
            if "evaluation" not in uses:
                shown = ", ".join(uses) or "nothing"
                yield report(
                    case.path,
                    line,
                    col,
                    f"allowed_uses ({shown}) does not include evaluation; this data may not "
                    "be used in an evaluation run",
                )
        if case.retention_until is not None:
            value, line, col = case.retention_until
            until = iso_date(value)
            if until is not None and until < now:
                yield report(
                    case.path,
                    line,
                    col,
                    f"the retention period ended on {until} (today is {now}): the data must be "
                    "deleted, not evaluated; delete the case, or record renewed usage rights",
                )
