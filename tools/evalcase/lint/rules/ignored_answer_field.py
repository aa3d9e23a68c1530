"""A tool response field that another field of the same response overrides.

A response answers with its ``error`` when it has one: its ``state_change`` is then never
applied and its ``result``/``result_from`` never delivered (a failed call changes
nothing). Without an error, ``result_from`` wins over ``result``; in an error,
``message_from`` wins over ``message``. The overridden field reads as behaviour that
never happens; an author who wanted the state to change and the agent to see an error
needs two responses, or a result that says what went wrong.

Passing::

    - when: 'args.user_id in users'
      result_from: 'users[args.user_id]'
    - error: {code: not_found, message_from: '"User " + args.user_id + " not found"'}

Failing::

    - error: {code: not_found, message: "User not found"}
      state_change:                          # never applied: the error answers
        - {append: audit.misses, value_from: args.user_id}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.tool_steps import responses, tool_document
from evalcase.loader import Document, Path
from evalcase.model import Finding, Severity

CODE = "EC612"
NAME = "ignored-answer-field"
SEVERITY = Severity.WARNING
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not tool_document(doc, ctx):
        return
    for at, response in responses(doc):
        overridden: list[tuple[Path, str]] = []
        if "error" in response:
            overridden += [
                ((*at, key), f"{key!r} is never used: the response answers with its error "
                 "(a failed call changes nothing and delivers no result)")
                for key in ("state_change", "result", "result_from") if key in response
            ]  # fmt: skip
            error = response["error"]
            if isinstance(error, dict) and "message" in error and "message_from" in error:
                overridden.append(
                    ((*at, "error", "message"), "'message' is never used: 'message_from' "
                     "gives the error's message; keep one")
                )  # fmt: skip
        elif "result" in response and "result_from" in response:
            overridden.append(
                ((*at, "result"), "'result' is never used: 'result_from' gives the result; "
                 "keep one")
            )  # fmt: skip
        for where, message in overridden:
            line, col = doc.locate_key(where)
            yield report(doc.path, line, col, message)
