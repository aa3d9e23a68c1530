"""A ``let`` or ``foreach`` name that hides a variable.

The names a tool response binds (``let`` entries, a ``foreach`` step's ``as``, default
``item``) are variables of the expressions in their scope, and they win over what has the
same name: a ``let`` named ``args`` or ``state`` hides the call's arguments or the whole
state from every later expression of the response, so ``args.user_id`` silently reads the
bound value. A ``foreach`` whose ``as`` repeats a ``let`` name or an enclosing ``foreach``
name hides that one inside its ``do``. Rename the binding.

Passing::

    let: {total: 'args.price * 2'}
    state_change:
      - foreach: args.payment_methods
        as: pm

Failing::

    let: {args: 'args.passengers'}   # every later args.x reads the passengers
    state_change:
      - foreach: args.payment_methods
        as: pm
        do:
          - foreach: pm.splits
            as: pm                    # hides the outer pm
"""

from collections.abc import Iterable

from evalcase.contract.cel import RESERVED
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.tool_steps import responses, steps, tool_document
from evalcase.loader import Document
from evalcase.model import Finding, Severity

CODE = "EC608"
NAME = "bound-name-shadows"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not tool_document(doc, ctx):
        return
    for at, response in responses(doc):
        lets = response.get("let")
        names = [str(k) for k in lets] if isinstance(lets, dict) else []
        for name in names:
            if name in RESERVED:
                line, col = doc.locate_key((*at, "let", name))
                yield report(
                    doc.path,
                    line,
                    col,
                    f"let {name!r} hides the variable {name!r} from every later expression "
                    "of this response; choose another name",
                )
        for where, step, enclosing in steps(doc, (*at, "state_change")):
            if "foreach" not in step:
                continue
            name = step.get("as", "item")
            if not isinstance(name, str):
                continue
            hidden = (
                "the variable" if name in RESERVED
                else "the let name" if name in names
                else "the enclosing foreach name" if name in enclosing
                else None
            )  # fmt: skip
            if hidden is None:
                continue
            key = (*where, "as") if "as" in step else (*where, "foreach")
            line, col = doc.locate_key(key)
            yield report(
                doc.path,
                line,
                col,
                f"foreach names its element {name!r}, which hides {hidden} {name!r} inside "
                "its do; set 'as' to another name",
            )
