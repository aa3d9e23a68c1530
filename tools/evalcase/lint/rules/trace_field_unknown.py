"""A ``trace_requirement.required_fields`` value the runner never records.

``required_fields`` says which parts of the attempt's trace the case relies on. Every
name must be one the runner records (evalcase.contract.trace): ``user``, ``action``,
``tool_call``, ``observation``, ``error``, ``state_change``, ``retrieved_passages``,
``permission_denied``, ``fault``, ``audit``, ``initial_state``, ``final_state``,
``output``, ``messages``, ``usage``, ``latency``. Any other name (a typo, a field of
another tool) is a requirement nothing can meet; the finding names the nearest known one.

Passing::

    trace_requirement:
      required_fields: [action, tool_call, observation, final_state]

Failing::

    trace_requirement:
      required_fields: [action, tool_call, observaton]      # observation
"""

import difflib
from collections.abc import Iterable

from evalcase.contract.trace import TRACE_FIELDS
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC321"
NAME = "trace-field-unknown"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    trace = data.get("trace_requirement")
    fields = trace.get("required_fields") if isinstance(trace, dict) else None
    if not isinstance(fields, list):
        return
    for i, name in enumerate(fields):
        if not isinstance(name, str) or name in TRACE_FIELDS:
            continue
        near = difflib.get_close_matches(name, list(TRACE_FIELDS), n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        line, col = doc.locate(("trace_requirement", "required_fields", i))
        yield report(
            doc.path,
            line,
            col,
            f"trace_requirement.required_fields names {name!r}, which the runner never "
            f"records; {hint}known: {', '.join(TRACE_FIELDS)}",
        )
