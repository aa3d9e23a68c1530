"""Dotted paths into a state document: ``orders.ORDER_2001.status``.

- Segments are separated by dots; a segment that is a non-negative integer indexes a
  list (``orders.ORDER_2001.items.0.sku``) and is a key of a mapping otherwise.
- A segment may be a CEL expression in braces, evaluated when the path is used:
  ``refunds.{args.refund_id}.status`` (dots inside the braces belong to the expression).
- Operations (``set``, ``delete``, ``append``, ``increment``) change a document in place
  and return what they did; a path that cannot be followed is an error value, never an
  exception.
- ``own`` makes a path of a copy on write document the caller's own before a write: an
  attempt's state shares every container it has not written with the initial document
  of every attempt (evalcase.run.environment).

Examples (state ``{orders: {ORDER_2001: {status: processing, attempts: 0}}}``)::

    get(state, parse("orders.ORDER_2001.status"))          -> "processing"
    set_(state, parse("orders.ORDER_2001.status"), "done")   # status becomes "done"
    increment(state, parse("orders.ORDER_2001.attempts"), 1)
    append(state, parse("audit_log"), {...})                # creates the list if absent
    delete(state, parse("orders.ORDER_2001"))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Segment = str | int


@dataclass(frozen=True)
class Expr:
    """A ``{CEL}`` segment, resolved when the path is used."""

    source: str


RawSegment = str | Expr


@dataclass(frozen=True)
class PathError:
    path: str
    message: str


MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()


def parse(text: str) -> tuple[RawSegment, ...] | PathError:
    """Split a path into segments (``{...}`` segments stay expressions)."""
    if not isinstance(text, str) or not text.strip():
        return PathError(str(text), "empty path")
    segments: list[RawSegment] = []
    i, n = 0, len(text)
    while i <= n:
        if i < n and text[i] == "{":
            depth, j = 0, i
            while j < n:
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= n:
                return PathError(text, f"unclosed '{{' at column {i + 1}")
            source = text[i + 1 : j].strip()
            if not source:
                return PathError(text, f"empty '{{}}' at column {i + 1}")
            segments.append(Expr(source))
            i = j + 1
            if i < n and text[i] != ".":
                return PathError(text, f"expected '.' after '}}' at column {i + 1}")
            i += 1
            continue
        j = text.find(".", i)
        if j == -1:
            j = n
        part = text[i:j]
        if not part:
            return PathError(text, f"empty segment at column {i + 1}")
        segments.append(part)
        i = j + 1
    return tuple(segments)


def is_static(segments: Sequence[RawSegment]) -> bool:
    return not any(isinstance(s, Expr) for s in segments)


def resolve(
    segments: Sequence[RawSegment], evaluate: Callable[[str], Any] | None = None
) -> tuple[str, ...] | PathError:
    """The path with every ``{CEL}`` segment replaced by its value's text."""
    out: list[str] = []
    for segment in segments:
        if isinstance(segment, Expr):
            if evaluate is None:
                return PathError(
                    render(segments), "needs values to evaluate {" + segment.source + "}"
                )
            value = evaluate(segment.source)
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                return PathError(
                    render(segments),
                    f"{{{segment.source}}} is {value!r}, not a key (a string or an integer)",
                )
            out.append(str(value))
        else:
            out.append(segment)
    return tuple(out)


def render(segments: Sequence[RawSegment]) -> str:
    return ".".join(f"{{{s.source}}}" if isinstance(s, Expr) else s for s in segments)


def _step(node: Any, key: str) -> Any:
    if isinstance(node, dict):
        return node.get(key, MISSING)
    if isinstance(node, list) and key.isdigit():
        index = int(key)
        return node[index] if index < len(node) else MISSING
    return MISSING


def get(doc: Any, path: Sequence[str], default: Any = MISSING) -> Any:
    """The value at ``path``, or ``default`` (MISSING) when it is absent."""
    node = doc
    for key in path:
        node = _step(node, key)
        if node is MISSING:
            return default
    return node


def exists(doc: Any, path: Sequence[str]) -> bool:
    return get(doc, path) is not MISSING


def _parent(doc: Any, path: Sequence[str], create: bool) -> tuple[Any, str] | PathError:
    if not path:
        return PathError("", "empty path")
    node = doc
    for depth, key in enumerate(path[:-1]):
        nxt = _step(node, key)
        if nxt is MISSING:
            if create and isinstance(node, dict):
                nxt = {}
                node[key] = nxt
            else:
                where = ".".join(path[: depth + 1])
                return PathError(".".join(path), f"{where} does not exist")
        if not isinstance(nxt, (dict, list)):
            where = ".".join(path[: depth + 1])
            return PathError(
                ".".join(path), f"{where} is {type(nxt).__name__}, not a mapping or list"
            )
        node = nxt
    return node, path[-1]


@dataclass(frozen=True)
class Change:
    """What an operation did: the attempt record's ``changes`` entries."""

    op: str
    path: str
    before: Any
    after: Any


def set_(doc: Any, path: Sequence[str], value: Any) -> Change | PathError:
    """Set the value at ``path``, creating missing mappings on the way."""
    found = _parent(doc, path, create=True)
    if isinstance(found, PathError):
        return found
    node, key = found
    dotted = ".".join(path)
    if isinstance(node, list):
        if not key.isdigit() or int(key) >= len(node):
            return PathError(dotted, f"index {key} is outside the list")
        before = node[int(key)]
        node[int(key)] = value
    else:
        before = node.get(key, MISSING)
        node[key] = value
    return Change("set", dotted, None if before is MISSING else before, value)


def delete(doc: Any, path: Sequence[str]) -> Change | PathError:
    found = _parent(doc, path, create=False)
    dotted = ".".join(path)
    if isinstance(found, PathError):
        return found
    node, key = found
    if isinstance(node, list):
        if not key.isdigit() or int(key) >= len(node):
            return PathError(dotted, f"index {key} is outside the list")
        before = node.pop(int(key))
    else:
        if key not in node:
            return PathError(dotted, f"{dotted} does not exist")
        before = node.pop(key)
    return Change("delete", dotted, before, None)


def append(doc: Any, path: Sequence[str], value: Any) -> Change | PathError:
    """Append to the list at ``path`` (an absent list is created)."""
    current = get(doc, path)
    dotted = ".".join(path)
    if current is MISSING:
        made = set_(doc, path, [value])
        return made if isinstance(made, PathError) else Change("append", dotted, None, value)
    if not isinstance(current, list):
        return PathError(dotted, f"{dotted} is {type(current).__name__}, not a list")
    current.append(value)
    return Change("append", dotted, None, value)


def increment(doc: Any, path: Sequence[str], by: int | float = 1) -> Change | PathError:
    """Add ``by`` to the number at ``path`` (absent counts as 0)."""
    current = get(doc, path)
    dotted = ".".join(path)
    if current is MISSING:
        current = 0
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        return PathError(dotted, f"{dotted} is {type(current).__name__}, not a number")
    made = set_(doc, path, current + by)
    if isinstance(made, PathError):
        return made
    return Change("increment", dotted, current, current + by)


def shallow(value: Any) -> Any:
    """A container's shallow copy (a scalar as it is)."""
    if isinstance(value, dict):
        return dict(value)
    return list(value) if isinstance(value, list) else value


def own(doc: Any, path: Sequence[str], owned: dict[int, Any]) -> None:
    """Before a write at ``path``: every container on it (the written one included, which
    an append changes) that is not in ``owned`` (id -> the container, held so that its id
    is not reused) is replaced in its parent by a shallow copy that is, so the write never
    reaches a container shared with other documents. Steps as :func:`get` does (a key; a
    list's digit index); stops where the path does not go on."""
    node = doc
    for key in path:
        child = _step(node, key)
        if not isinstance(child, dict | list):
            return
        if id(child) not in owned:
            child = shallow(child)
            owned[id(child)] = child
            if isinstance(node, dict):
                node[key] = child
            else:
                node[int(key)] = child
        node = child
