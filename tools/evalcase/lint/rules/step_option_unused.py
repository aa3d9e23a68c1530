"""A state-change step carries an option its operation ignores.

Each operation reads only its own options: ``set`` and ``append`` a ``value`` or
``value_from``; ``increment`` a ``by`` or ``by_from`` (or a ``value_from``); ``delete``
and ``fail`` none; ``foreach`` its list, ``as`` and ``do``. Any other option is ignored,
and when two give the same thing (``value`` and ``value_from``, ``by`` and ``by_from``) the computed
one wins. Such a step does something other than what it reads as (``{delete: x,
value: 0}`` deletes; ``{set: x, by: 2}`` sets null).

Passing::

    state_change:
      - {increment: 'users.{args.user_id}.spent', by_from: total}

Failing::

    state_change:
      - {set: 'users.{args.user_id}.spent', by_from: total}   # set ignores by_from
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.tool_steps import responses, steps, tool_document
from evalcase.loader import Document
from evalcase.model import Finding, Severity

CODE = "EC610"
NAME = "step-option-unused"
SEVERITY = Severity.WARNING
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

# The options each operation reads (``when`` is every step's).
READS = {
    "set": {"value", "value_from"},
    "append": {"value", "value_from"},
    "increment": {"by", "by_from", "value_from"},
    "delete": set(),
    "foreach": {"as", "do"},
    "fail": set(),
}
OPTIONS = {"value", "value_from", "by", "by_from", "as", "do"}
PAIRS = (("value", "value_from"), ("by", "by_from"), ("by", "value_from"))


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not tool_document(doc, ctx):
        return
    for at, _response in responses(doc):
        for where, step, _enclosing in steps(doc, (*at, "state_change")):
            ops = [op for op in READS if op in step]
            if len(ops) != 1:
                continue  # no operation, or several: the schema rules say so
            op = ops[0]
            for option in sorted(OPTIONS & set(step) - READS[op]):
                line, col = doc.locate_key((*where, option))
                yield report(
                    doc.path,
                    line,
                    col,
                    f"{op} ignores {option!r}; {op} reads "
                    f"{', '.join(sorted(READS[op])) or 'no option'} (remove {option!r} or "
                    "change the operation)",
                )
            for plain, computed in PAIRS:
                if plain in step and computed in step and plain in READS[op]:
                    line, col = doc.locate_key((*where, plain))
                    yield report(
                        doc.path,
                        line,
                        col,
                        f"{plain!r} is ignored: {computed!r} gives the {op}'s value; keep one",
                    )
