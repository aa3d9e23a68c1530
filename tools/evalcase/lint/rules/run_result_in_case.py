"""A run result or a run-resolved version written into a case.

The case defines the task; the run records what it resolved and what came out (seed 000
12.5 and 12.10). A case that carries ``run_id``, ``model_version``, ``index_version``,
``output``, ``score`` or ``passed`` mixes one run into the definition: the next run with
another model reads a stale result as if it were part of the task, and two runs can no
longer be compared. Each finding says where the value belongs (run.json, attempts.jsonl,
grades.jsonl). Fields checked: the top level and ``metadata`` of a case; the list is
``evalcase.contract.run_fields.RUN_FIELDS``. Team-specific notes go under an ``x-`` prefix.

Passing::

    environment_requirements:
      corpus_version: refund_policy_2026_07     # what the case requires

Failing::

    model_version: gpt-4o-2024-08-06            # what one run used
    metadata:
      run_id: run_20260708_001
      score: 0.92
"""

from collections.abc import Iterable

from evalcase.contract.run_fields import RUN_FIELD_PLACES, RUN_FIELDS
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC106"
NAME = "run-result-in-case"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    for place in RUN_FIELD_PLACES:
        block = doc.get(place) if place else data
        if not isinstance(block, dict):
            continue
        for key in block:
            where = RUN_FIELDS.get(key) if isinstance(key, str) else None
            if where is None:
                continue
            line, col = doc.locate_key((*place, key))
            field = ".".join((*place, key))
            yield report(
                doc.path,
                line,
                col,
                f"{field} is a result of a run, not part of the case: the case defines the "
                f"task, the run records what it resolved and produced; it belongs in {where}. "
                "Remove it from the case",
            )
