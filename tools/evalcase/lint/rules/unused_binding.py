"""A ``let`` or ``foreach`` name that nothing reads.

A ``let`` entry is evaluated on every call its response answers; one no expression of the
response reads is left over from an edit, or the expression meant to use it repeats its
text instead (the contortion ``let`` exists to remove). A ``foreach`` whose ``do`` never
reads its element does the same thing once per element: a path without the element's
name writes one place over and over.

Passing::

    let: {total: 'args.price * 2'}
    state_change:
      - {increment: 'users.{args.user_id}.spent', by_from: total}

Failing::

    let: {total: 'args.price * 2'}
    state_change:
      - {increment: 'users.{args.user_id}.spent', by_from: 'args.price * 2'}
"""

from collections.abc import Iterable

from evalcase.contract import cel
from evalcase.index.expressions import tool_scoped
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.tool_steps import responses, steps, tool_document
from evalcase.loader import Document, Path
from evalcase.model import Finding, Severity

CODE = "EC611"
NAME = "unused-binding"
SEVERITY = Severity.WARNING
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not tool_document(doc, ctx):
        return
    # (where an expression is, the bound names it reads that are in its scope)
    reads = [(where, cel.analyze(text).roots & scope) for where, text, scope in tool_scoped(doc)]

    def read_under(prefix: Path, name: str) -> bool:
        return any(where[: len(prefix)] == prefix and name in roots for where, roots in reads)

    for at, response in responses(doc):
        lets = response.get("let")
        if isinstance(lets, dict):
            for name in lets:
                if not read_under(at, str(name)):
                    line, col = doc.locate_key((*at, "let", name))
                    yield report(
                        doc.path,
                        line,
                        col,
                        f"let {name!r} is never read by this response; use it where its "
                        "expression is repeated, or remove it",
                    )
        for where, step, _enclosing in steps(doc, (*at, "state_change")):
            if "foreach" not in step or not isinstance(step.get("do"), list):
                continue
            name = step.get("as", "item")
            if isinstance(name, str) and not read_under((*where, "do"), name):
                key = (*where, "as") if "as" in step else (*where, "foreach")
                line, col = doc.locate_key(key)
                yield report(
                    doc.path,
                    line,
                    col,
                    f"the steps of this foreach never read its element {name!r}: they do "
                    "the same thing once per element; read it in a path segment or value",
                )
