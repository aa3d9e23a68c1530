"""An observation case that is also golden, regression, risk or red_team.

An observation case has an expectation that is not settled yet, or no stable way to
observe it (docs/authoring.md, step 2). It may be run to explore, but it must not count in pass
rates until it is settled; the golden, regression, risk and red_team views feed release
gates, so a case cannot be in both. Settle the expectation and drop observation, or keep
it out of the counted views. A suite that a gate uses and that names an observation
case by ID or tag is EC416.

Passing::

    metadata:
      dataset_role: observation

Failing::

    metadata:
      dataset_role: [observation, regression]
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, roles
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC404"
NAME = "observation-counted"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

COUNTED = ("golden", "regression", "risk", "red_team")


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    found = roles(doc)
    if not any(role == "observation" for role, _, _ in found):
        return
    counted = [(role, ln, c) for role, ln, c in found if role in COUNTED]
    if not counted:
        return
    names = ", ".join(role for role, _, _ in counted)
    _, line, col = counted[0]
    yield report(
        doc.path,
        line,
        col,
        f"an observation case cannot also be {names}: its expectation is not settled, so it "
        "must not count in pass rates; settle it and drop observation, or remove "
        f"{names}",
    )
