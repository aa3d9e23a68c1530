"""A fixture that is not desensitized, outside the paths allowed to hold such data.

Fixtures are derived from production state, logs and documents; they are committed,
copied into pull requests and shown to graders, so personal and sensitive data must be
removed or replaced first (docs/untrusted-input.md), and each fixture says so with
``desensitized: true``. ``desensitized: false`` is an error unless the fixture's path
matches one of the globs in ``[lint] allow_not_desensitized`` in evalcase.toml (for
example public policy documents).

Passing::

    fixture_id: order_123
    desensitized: true

Failing::

    fixture_id: order_123
    desensitized: false
"""

import fnmatch
from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC407"
NAME = "not-desensitized"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.FIXTURE)
    # A missing or non-boolean value is the schema's to report.
    if data is None or data.get("desensitized") is not False:
        return
    path = ctx.source.path
    if any(fnmatch.fnmatch(path, glob) for glob in ctx.config.allow_not_desensitized):
        return
    line, col = doc.locate(("desensitized",))
    yield report(
        doc.path,
        line,
        col,
        "this fixture is not desensitized; remove or replace personal and sensitive data and "
        "set desensitized: true, or, if it holds none (e.g. a public document), allow its path "
        "under [lint] allow_not_desensitized in evalcase.toml",
    )
