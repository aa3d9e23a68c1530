"""What the tool-language rules (EC608-EC612) read of a tool fixture: its responses and
their state-change steps, each with its YAML path (shared so that the rules agree on
where a step is and what encloses it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from evalcase.index.expressions import tool_responses
from evalcase.lint.base import FileContext
from evalcase.lint.semantic import data_of
from evalcase.loader import Document, Path
from evalcase.model import FileKind

# A step: (its YAML path, the step mapping, the foreach names enclosing it).
Step = tuple[Path, dict[str, Any], tuple[str, ...]]


def tool_document(doc: Document, ctx: FileContext) -> bool:
    """Whether ``doc`` is a tool fixture with a ``data`` mapping."""
    data = data_of(doc, ctx, FileKind.FIXTURE)
    return data is not None and data.get("kind") == "tool" and isinstance(data.get("data"), dict)


def responses(doc: Document) -> Iterator[tuple[Path, dict[str, Any]]]:
    for at in tool_responses(doc):
        value = doc.get(at)
        if isinstance(value, dict):
            yield at, value


def steps(doc: Document, at: Path, enclosing: tuple[str, ...] = ()) -> Iterator[Step]:
    """Every step of the ``state_change`` list at ``at``, ``do`` lists included."""
    value = doc.get(at)
    if not isinstance(value, list):
        return
    for i, step in enumerate(value):
        if not isinstance(step, dict):
            continue
        where = (*at, i)
        yield where, step, enclosing
        if "foreach" in step:
            name = step.get("as", "item")
            inner = (*enclosing, name) if isinstance(name, str) else enclosing
            yield from steps(doc, (*where, "do"), inner)
