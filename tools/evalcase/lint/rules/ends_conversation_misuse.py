"""``ends_conversation`` where it can never end the conversation.

A response with ``ends_conversation: true`` ends the conversation once its *result* has
been delivered (a transfer to a human). An error is not a delivered result: a response
that answers with ``error`` never ends the conversation, and neither does any response
of a tool whose ``handler`` answers every call instead of its responses. Either the flag
is dead or the author expected the conversation to end on that path and it goes on.

Passing::

    responses:
      - when: {summary: ""}
        error: {code: invalid, message: "say why"}
      - result: Transfer successful
        ends_conversation: true

Failing::

    responses:
      - error: {code: transferred, message: "Transferred"}
        ends_conversation: true       # an error never ends the conversation
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.tool_steps import responses, tool_document
from evalcase.loader import Document
from evalcase.model import Finding, Severity

CODE = "EC609"
NAME = "ends-conversation-misuse"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not tool_document(doc, ctx):
        return
    handler = doc.get(("data", "handler"))
    for at, response in responses(doc):
        if response.get("ends_conversation") is not True:
            continue
        line, col = doc.locate_key((*at, "ends_conversation"))
        if "error" in response:
            yield report(
                doc.path,
                line,
                col,
                "ends_conversation on a response that answers with an error: only a "
                "delivered result ends the conversation; give it a result instead of the "
                "error, or drop the flag",
            )
        elif isinstance(handler, str) and handler:
            yield report(
                doc.path,
                line,
                col,
                f"ends_conversation on a response of a tool whose handler {handler!r} "
                "answers every call: the responses are never used; drop the handler or "
                "the responses",
            )
