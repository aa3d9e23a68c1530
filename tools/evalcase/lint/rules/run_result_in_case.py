"""A run result or a run-resolved version written into a case.

The case defines the task; the run records what it resolved and what came out. A case
that carries ``run_id``, ``model_version``, ``index_version``, ``output``, ``score`` or
``passed`` mixes one run into the definition: the next run with another model reads a
stale result as if it were part of the task, and two runs can no longer be compared.
Each finding says where the value belongs (run.json, attempts.jsonl, grades.jsonl).
Fields checked: at the top level and in ``metadata`` of a case, every name of
``evalcase.contract.run_fields.RUN_FIELDS``; at any depth (``environment``, ``context``,
``initial_state`` ...), the names that mean nothing but a run (``model_version``,
``prompt_version``, ``run_id``, ``actual_output``, ``judge_score``:
``NESTED_RUN_FIELDS``). Team-specific notes go under an ``x-`` prefix.

Passing::

    environment_requirements:
      corpus_version: refund_policy_2026_07     # what the case requires

Failing::

    model_version: gpt-4o-2024-08-06            # what one run used
    metadata:
      run_id: run_20260708_001
      score: 0.92
    environment:
      index_version: idx_20260708               # what one run resolved
"""

from collections.abc import Iterable
from typing import Any

from evalcase.contract.run_fields import NESTED_RUN_FIELDS, RUN_FIELD_PLACES, RUN_FIELDS
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC106"
NAME = "run-result-in-case"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def _nested(value: Any, path: tuple[Any, ...], depth: int = 0) -> list[tuple[Any, ...]]:
    """Paths of NESTED_RUN_FIELDS keys below the top level and metadata (x- notes skipped)."""
    found: list[tuple[Any, ...]] = []
    _walk(value, path, depth, found)
    return found


def _walk(value: Any, path: tuple[Any, ...], depth: int, found: list[tuple[Any, ...]]) -> None:
    # A cold lint walks every value of every case here: only containers are visited (a
    # scalar child costs a type test, not a call), in the order of the data.
    if depth > 64:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            if not isinstance(key, str) or key.startswith("x-"):
                continue
            if key in NESTED_RUN_FIELDS and path not in RUN_FIELD_PLACES:
                found.append((*path, key))
            if isinstance(inner, dict | list) and depth < 64:
                _walk(inner, (*path, key), depth + 1, found)
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            if isinstance(inner, dict | list) and depth < 64:
                _walk(inner, (*path, i), depth + 1, found)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    found: list[tuple[Any, ...]] = []
    for place in RUN_FIELD_PLACES:
        block = doc.get(place) if place else data
        if isinstance(block, dict):
            found += [(*place, key) for key in block if isinstance(key, str) and key in RUN_FIELDS]
    keys = doc.mapping_keys()
    if keys is None or not keys.isdisjoint(NESTED_RUN_FIELDS):  # none anywhere: no walk
        found += _nested(data, ())
    for path in sorted(found, key=lambda p: doc.locate_key(p)):
        where = RUN_FIELDS[path[-1]]
        line, col = doc.locate_key(path)
        field = ".".join(str(p) for p in path)
        yield report(
            doc.path,
            line,
            col,
            f"{field} is a result of a run, not part of the case: the case defines the "
            f"task, the run records what it resolved and produced; it belongs in {where}. "
            "Remove it from the case",
        )
