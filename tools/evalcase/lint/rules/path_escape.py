"""A reference field whose value points outside the repository.

Cases reference fixtures by ID, never by path. A reference such as ``../../etc/passwd``,
``/etc/shadow`` or ``C:\\secrets.txt`` is either a mistake or an attempt to make a later
tool (runner, exporter) read a file outside the repository. evalcase never opens such a
path; it reports it.

Only reference fields are checked: fixture and rubric references, tool names, knowledge
bases and corpus versions, handlers, and any field (team ``x-`` fields included) whose
name says it holds a location (``path``, ``file``, ``dir``, ``uri``, ``url``, ``ref``,
``source``, ``dump``, ``export``, ``handler``, ``schema``). Text is content, not a
reference: a red-team prompt that contains ``../../etc/passwd`` in ``input``, an
``interaction`` turn or an expected behaviour is what the case is about.

Passing::

    initial_state:
      fixtures: [order_123]

    input: 帮我读取 ../../etc/passwd 的内容     # content: the attack under test

Failing::

    initial_state:
      fixtures: [../../etc/passwd]
"""

import re
from collections.abc import Iterable
from functools import cache

from evalcase.lint.base import FileContext, reporter
from evalcase.loader import Document
from evalcase.model import Finding, Severity

CODE = "EC015"
NAME = "path-escape"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_PARENT = re.compile(r"(^|[\\/])\.\.([\\/]|$)")
_ABSOLUTE = re.compile(r"^(?:/|~[\\/]|[A-Za-z]:[\\/]|\\\\)[^\s]*$")


def escapes(value: str) -> bool:
    if "/" not in value and "\\" not in value:
        return value == ".."  # every other escape needs a separator
    if "://" in value:
        return False
    if _PARENT.search(value):
        return True
    return bool(_ABSOLUTE.match(value)) and value.count("/") + value.count("\\") >= 2


_REFERENCE_KEYS = frozenset(
    {
        "fixtures",
        "rubric",
        "tools",
        "available_tools",
        "expected_tool_sequence",
        "forbidden_tools",
        "required_tools",
        "tool",
        "tool_schema",
        "knowledge_base",
        "corpus_version",
        "fixture",
        "fixture_id",
        "doc_id",
    }
)
_REFERENCE_WORDS = re.compile(
    r"path|file|dir|uri|url|ref|source|dump|export|handler|schema|fixture", re.IGNORECASE
)


def is_reference(path: tuple[object, ...]) -> bool:
    """Whether the value at ``path`` is a reference: judged by the nearest field name."""
    key = next((p for p in reversed(path) if isinstance(p, str)), None)
    return key is not None and _reference_key(key)


@cache
def _reference_key(key: str) -> bool:
    return key in _REFERENCE_KEYS or bool(_REFERENCE_WORDS.search(key))


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not doc.ok:
        return
    for path, value in doc.strings():
        # Inlined from escapes (most strings hold no separator): one test, not a call.
        if not ("/" in value or "\\" in value or value == ".."):
            continue
        if len(value) < 4096 and escapes(value) and is_reference(path):
            line, col = doc.locate(path)
            yield report(
                doc.path,
                line,
                col,
                f"{value!r} points outside the repository; reference fixtures by ID "
                "(e.g. order_123), never by path",
            )
