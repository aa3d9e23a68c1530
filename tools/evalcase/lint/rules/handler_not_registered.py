"""A tool fixture's ``handler`` that is an import path, or names no registered handler.

A handler is Python code the runner calls for a tool whose behaviour declarations cannot
express. Fixtures are data, edited in pull requests and run in CI: a fixture that could
name ``os:system`` or any module of its own would run code. So ``handler`` names a
handler that trusted configuration registers: ``[run.handlers]`` in ``evalcase.toml``
(``NAME = "package.module:function"``) or the ``evalcase.handlers`` entry-point group of
an installed package. ``evalcase run`` refuses a dataset that uses any other (exit 2).

Passing::

    # evalcase.toml: [run.handlers] reserve_stock = "acme_eval.tools:reserve"
    data:
      name: reserve
      handler: reserve_stock

Failing::

    data:
      name: reserve
      handler: acme_eval.tools:reserve     # an import path in data
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, did_you_mean
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.trust import handler_problem, is_name, registered_handlers

CODE = "EC332"
NAME = "handler-not-registered"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.FIXTURE)
    if data is None or not isinstance(data.get("data"), dict):
        return
    handler = data["data"].get("handler")
    if not isinstance(handler, str):
        return
    run = ctx.config.raw.get("run")
    registered = registered_handlers(run if isinstance(run, dict) else {})
    problem = handler_problem(handler, registered)
    if problem is not None:
        hint = did_you_mean(handler, registered) if is_name(handler) else ""
        yield report(doc.path, *doc.locate(("data", "handler")), problem + hint)
