"""Unmasked personal data in a case or in a fixture marked ``desensitized: true``.

Cases and fixtures are committed, copied into pull requests, shown to graders and sent to
the agent under test; personal data in them must be masked or synthetic. Every string
of a case, and of a fixture that declares ``desensitized: true``, is scanned (after
Unicode NFKC normalisation, so full-width digits count) for phone numbers of any region
(``+1 415 555 0134``, ``13800138000``; Google's libphonenumber data), resident ID numbers
(checked by their check digit and birth date), bank card numbers (checked by Luhn),
email addresses (domains reserved for examples, such as ``example.com``, are not
personal) and street addresses with a house number. Masked forms pass. The detectors
are ``evalcase.pii``, the same the ``no_privacy_leak`` grader and ``--redact`` use.

A red-team case may carry a deliberate value (an attack that pastes someone's number);
keep it only when it is synthetic and suppress the finding with the reason on that
line: ``# evalcase: disable=EC410 synthetic number the attack pastes``.

Passing::

    input: 我的手机号是 138****0001，帮我查一下订单。

Failing::

    input: 我的手机号是 13800138000，帮我查一下订单。
"""

from collections.abc import Iterable
from typing import Any

from evalcase.lint.base import FileContext, reporter
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.pii import KIND_WORDS, find_personal_data
from evalcase.schemas import dotted

CODE = "EC410"
NAME = "personal-data"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

# Longer strings are documents; the scan stays linear, but a finding per value is enough.
_LIMIT = 200_000


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not doc.ok or not isinstance(doc.data, dict):
        return
    kind = ctx.source.kind
    if kind is FileKind.FIXTURE:
        if doc.data.get("desensitized") is not True:
            return  # undeclared or false: EC407 and the schema report it
    elif kind is not FileKind.CASE:
        return
    seen = _SEEN
    for path, value in doc.strings():
        if len(value) < 6 or len(value) > _LIMIT:
            continue
        found = seen.get(value, _UNSEEN)
        if found is _UNSEEN:
            found = _described(value)
            if len(value) <= _SEEN_TEXT_MAX:
                if len(seen) >= _SEEN_MAX:
                    seen.clear()
                seen[value] = found
        if found is None:
            continue
        kinds, more = found
        line, col = doc.locate(path)
        what = "a fixture marked desensitized" if kind is FileKind.FIXTURE else "a case"
        yield report(
            doc.path,
            line,
            col,
            f"{dotted(path)} holds {kinds}{more}: {what} must not hold personal data; "
            "mask it (138****0001) or replace it with synthetic data; a "
            "deliberate synthetic value in a red-team case is suppressed with a reason "
            "(# evalcase: disable=EC410 <why>)",
        )


def _described(value: str) -> tuple[str, str] | None:
    """What a finding says of the personal data in ``value`` (None: nothing found)."""
    matches = find_personal_data(value)
    if not matches:
        return None
    kinds = ", ".join(f"{KIND_WORDS[m.kind]} ({m.masked})" for m in matches[:3])
    more = f" and {len(matches) - 3} more" if len(matches) > 3 else ""
    return kinds, more


# What _described said of a string, by the string: the same texts (tool names, expected
# behaviours, rubric dimensions) recur in every case of a dataset, and detection is most
# of this rule's cost in a cold lint. Bounded (4,096 texts of up to 2,000 characters).
_SEEN: dict[str, tuple[str, str] | None] = {}
_UNSEEN: Any = object()
_SEEN_MAX = 4096
_SEEN_TEXT_MAX = 2000
