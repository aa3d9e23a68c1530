"""A path-like value that points outside the repository.

Cases reference fixtures by ID, never by path. A value such as ``../../etc/passwd``,
``/etc/shadow`` or ``C:\\secrets.txt`` is either a mistake or an attempt to make a later
tool (runner, exporter) read a file outside the repository. evalcase never opens such a
path; it reports it.

Passing::

    initial_state:
      fixtures: [order_123]

Failing::

    initial_state:
      fixtures: [../../etc/passwd]
"""

import re
from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.loader import Document, iter_paths
from evalcase.model import Finding, Severity

CODE = "EC015"
NAME = "path-escape"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_PARENT = re.compile(r"(^|[\\/])\.\.([\\/]|$)")
_ABSOLUTE = re.compile(r"^(?:/|~[\\/]|[A-Za-z]:[\\/]|\\\\)[^\s]*$")


def escapes(value: str) -> bool:
    if "://" in value:
        return False
    if _PARENT.search(value):
        return True
    return bool(_ABSOLUTE.match(value)) and value.count("/") + value.count("\\") >= 2


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not doc.ok:
        return
    for path, value in iter_paths(doc.data):
        if isinstance(value, str) and len(value) < 4096 and escapes(value):
            line, col = doc.locate(path)
            yield report(
                doc.path,
                line,
                col,
                f"{value!r} points outside the repository; reference fixtures by ID "
                "(e.g. order_123), never by path",
            )
