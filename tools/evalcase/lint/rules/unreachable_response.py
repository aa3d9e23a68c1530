"""A tool response that can never answer: it comes after a catch-all, or repeats an
earlier response's ``when``.

A tool's ``responses`` are tried in order and the first whose ``when`` matches answers. A
response without ``when`` (or with an empty one) matches every call, so everything after
it, and the tool's ``default``, is dead configuration that looks like behaviour.

Passing::

    responses:
      - when: {order_id: ORDER_2001}
        result: {status: processing}
      - error: not_found

Failing::

    responses:
      - error: not_found
      - when: {order_id: ORDER_2001}   # never reached
        result: {status: processing}
"""

import json
from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC605"
NAME = "unreachable-response"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.FIXTURE)
    if data is None or data.get("kind") != "tool" or not isinstance(data.get("data"), dict):
        return
    responses = data["data"].get("responses")
    if not isinstance(responses, list):
        return
    catch_all: int | None = None
    seen: dict[str, int] = {}
    for i, response in enumerate(responses):
        if not isinstance(response, dict):
            continue
        line, col = doc.locate(("data", "responses", i))
        when = response.get("when")
        if catch_all is not None:
            yield report(
                doc.path,
                line,
                col,
                f"response {i + 1} is never used: response {catch_all + 1} has no 'when' and "
                "answers every call; move the catch-all last (or make it the 'default')",
            )
            continue
        key = json.dumps(when, sort_keys=True, ensure_ascii=False, default=str)
        if key in seen:
            yield report(
                doc.path,
                line,
                col,
                f"response {i + 1} is never used: response {seen[key] + 1} has the same "
                "'when' and answers first; merge them or change one condition",
            )
            continue
        seen[key] = i
        if when is None or when == {}:
            catch_all = i
    if catch_all is not None and isinstance(data["data"].get("default"), dict):
        line, col = doc.locate_key(("data", "default"))
        yield report(
            doc.path,
            line,
            col,
            f"the default is never used: response {catch_all + 1} answers every call; "
            "remove one of them",
        )
