"""A calendar date that does not exist (``2026-09-31``, ``2026-02-29``, ``2026-13-01``).

Dates decide what a case means: ``effective_at`` picks the policy in force, a passage's
``effective_date`` decides whether it may be cited, ``reviewed_at`` and
``retention_until`` date a review and a usage right. The schema checks the shape
``YYYY-MM-DD``; this rule checks that the day exists, for every value written as a date
or a date and time (``2026-07-08T10:00:00``) anywhere in a case, fixture or manifest.
A date that does not exist is compared as text by whatever reads it and silently sorts
somewhere plausible.

Passing::

    environment:
      effective_at: "2026-09-30"

Failing::

    environment:
      effective_at: "2026-09-31"
"""

import datetime as _dt
import re
from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.loader import Document
from evalcase.model import Finding, Severity
from evalcase.schemas import dotted

CODE = "EC016"
NAME = "invalid-date"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_DATE = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
)
_TIME = re.compile(r"[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?")


def problem(value: str) -> str | None:
    """Why ``value``, written as a date, is not a real one; None when it is (or is not
    written as a date at all)."""
    match = _DATE.match(value)
    if match is None:
        return None
    year, month, day = (int(g) for g in match.groups())
    try:
        _dt.date(year, month, day)
    except ValueError as exc:
        return str(exc)
    time = _TIME.search(value, 10)
    if time is not None:
        hour, minute, second = int(time.group(1)), int(time.group(2)), int(time.group(3) or 0)
        if hour > 23 or minute > 59 or second > 60:
            return "the time of day is out of range"
    return None


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not doc.ok:
        return
    for path, value in doc.strings():
        if not 10 <= len(value) <= 40 or value[4:5] != "-":
            continue
        why = problem(value)
        if why is None:
            continue
        line, col = doc.locate(path)
        yield report(
            doc.path,
            line,
            col,
            f"{dotted(path)} {value!r} is not a real date ({why}); write a date that exists",
        )
