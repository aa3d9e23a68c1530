"""The field selections of a CEL expression: ``accounts[args.account_id].owner`` is the
chain ``accounts``, an index, ``owner``, rooted at the variable ``accounts``.

:func:`selections` parses the expression (cel-cpp's parser, macros expanded; no checker)
and reads the parsed tree from its serialized form (``cel.expr.ParsedExpr``, decoded
here from the protobuf wire format: the binding exposes no tree). Each chain of field
selections and indexes that starts at a free name is one :class:`Selection`, with the
place of each of its parts; a chain a guard tests (``has(x.f)``, ``"f" in x``) and every
chain that extends it is ``guarded``: the field may be absent, the expression says so.
Names a comprehension binds (``all(a, a.owner ...)``) are not free inside it.

Lint (EC328) checks the chains rooted at state keys against the states a tool can meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

INDEX = "[]"  # a part of a chain that is an index (its key is not known statically)

_Message = dict[int, list[bytes | int]]


@dataclass(frozen=True)
class Selection:
    """``parts``: the root name, then each field name or :data:`INDEX`; ``places``: the
    1-based (line, column) of each part in the expression (a field's name, an index's
    bracket)."""

    parts: tuple[str, ...]
    places: tuple[tuple[int, int], ...]
    guarded: bool = False


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _message(data: bytes) -> _Message:
    """Field number -> its values (bytes for length-delimited fields, else ints)."""
    out: _Message = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: bytes | int
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire == 1:
            value, at = int.from_bytes(data[at : at + 8], "little"), at + 8
        elif wire == 5:
            value, at = int.from_bytes(data[at : at + 4], "little"), at + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _bytes(msg: _Message, number: int) -> bytes | None:
    found = msg.get(number)
    return found[0] if found and isinstance(found[0], bytes) else None


def _int(msg: _Message, number: int) -> int:
    found = msg.get(number)
    return found[0] if found and isinstance(found[0], int) else 0


def _text(msg: _Message, number: int) -> str:
    raw = _bytes(msg, number)
    return raw.decode("utf-8", "replace") if raw is not None else ""


# cel.expr.Expr: id 2; const_expr 3, ident_expr 4, select_expr 5, call_expr 6,
# list_expr 7, struct_expr 8, comprehension_expr 9.
_IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 4, 5, 6, 7, 8, 9


@dataclass(frozen=True)
class _Chain:
    parts: tuple[str, ...]
    ids: tuple[int, ...]
    indexes: tuple[_Message, ...] = ()  # the index expressions along it


def _chain(expr: _Message, bound: frozenset[str]) -> _Chain | None:
    """The selection chain ``expr`` is, when it is one rooted at a free name."""
    ident = _bytes(expr, _IDENT)
    if ident is not None:
        name = _text(_message(ident), 1)
        return None if name in bound else _Chain((name,), (_int(expr, 2),))
    select = _bytes(expr, _SELECT)
    if select is not None:
        sel = _message(select)
        operand = _bytes(sel, 1)
        if _int(sel, 3) or operand is None:  # has(): a test, not a read
            return None
        inner = _chain(_message(operand), bound)
        if inner is None:
            return None
        return _Chain((*inner.parts, _text(sel, 2)), (*inner.ids, _int(expr, 2)), inner.indexes)
    call = _bytes(expr, _CALL)
    if call is not None:
        c = _message(call)
        args = [_message(a) for a in c.get(3, []) if isinstance(a, bytes)]
        if _text(c, 2) == "_[_]" and len(args) == 2 and _bytes(c, 1) is None:
            inner = _chain(args[0], bound)
            if inner is None:
                return None
            return _Chain(
                (*inner.parts, INDEX), (*inner.ids, _int(expr, 2)), (*inner.indexes, args[1])
            )
    return None


class _Walk:
    def __init__(self) -> None:
        self.found: list[tuple[_Chain, bool]] = []  # (chain, is a guard)

    def read(self, chain: _Chain, bound: frozenset[str]) -> None:
        self.found.append((chain, False))
        for index in chain.indexes:
            self.expression(index, bound)

    def expression(self, expr: _Message, bound: frozenset[str]) -> None:
        chain = _chain(expr, bound)
        if chain is not None:
            self.read(chain, bound)
            return
        select = _bytes(expr, _SELECT)
        if select is not None:
            sel = _message(select)
            operand = _bytes(sel, 1)
            if operand is None:
                return
            inner = _chain(_message(operand), bound) if _int(sel, 3) else None
            if inner is None:
                self.expression(_message(operand), bound)
                return
            # has(x.f): x.f may be absent, x is read
            tested = _Chain((*inner.parts, _text(sel, 2)), (*inner.ids, _int(expr, 2)))
            self.found.append((tested, True))
            self.read(inner, bound)
            return
        call = _bytes(expr, _CALL)
        if call is not None:
            c = _message(call)
            args = [_message(a) for a in c.get(3, []) if isinstance(a, bytes)]
            target = _bytes(c, 1)
            if _text(c, 2) == "@in" and len(args) == 2:
                key = _bytes(args[0], 3)  # a constant string: "f" in x tests x.f
                text = _bytes(_message(key), 6) if key is not None else None
                inner = _chain(args[1], bound)
                if text is not None and inner is not None:
                    field = text.decode("utf-8", "replace")
                    self.found.append((_Chain((*inner.parts, field), inner.ids), True))
            for arg in ([_message(target)] if target is not None else []) + args:
                self.expression(arg, bound)
            return
        raw = _bytes(expr, _LIST)
        if raw is not None:  # CreateList: elements 1
            for element in _message(raw).get(1, []):
                if isinstance(element, bytes):
                    self.expression(_message(element), bound)
            return
        raw = _bytes(expr, _STRUCT)
        if raw is not None:  # CreateStruct: entries 2, each with map_key 3 and value 4
            for entry in _message(raw).get(2, []):
                if isinstance(entry, bytes):
                    fields = _message(entry)
                    for number in (3, 4):
                        if (item := _bytes(fields, number)) is not None:
                            self.expression(_message(item), bound)
            return
        raw = _bytes(expr, _COMPREHENSION)
        if raw is not None:
            comp = _message(raw)
            names = frozenset(_text(comp, n) for n in (1, 3, 8)) - {""}
            for number in (2, 4, 5, 6, 7):
                if (sub := _bytes(comp, number)) is not None:
                    self.expression(_message(sub), bound if number in (2, 4) else bound | names)


def _place(source: str, offset: int) -> tuple[int, int]:
    before = source[:offset]
    line = before.count("\n") + 1
    return line, offset - (before.rfind("\n") + 1) + 1


@lru_cache(maxsize=8192)
def selections(source: str) -> tuple[Selection, ...]:
    """The chains of the expression (module doc); () when it does not parse."""
    from evalcase.contract.cel import parsed_tree

    serialized = parsed_tree(source)
    if serialized is None:
        return ()
    try:
        wrapper = _message(serialized)
        parsed = _message(_bytes(wrapper, 2) or b"")
        expr = _bytes(parsed, 2)
        info = _message(_bytes(parsed, 3) or b"")
    except (ValueError, IndexError):
        return ()
    if expr is None:
        return ()
    positions: dict[int, int] = {}
    for entry in info.get(4, []):
        if isinstance(entry, bytes):
            pair = _message(entry)
            positions[_int(pair, 1)] = _int(pair, 2)
    walk = _Walk()
    try:
        walk.expression(_message(expr), frozenset())
    except (ValueError, IndexError, RecursionError):
        return ()
    guards = [chain.parts for chain, guard in walk.found if guard]
    out: dict[tuple[str, ...], Selection] = {}
    for chain, guard in walk.found:
        if guard or chain.parts in out:
            continue
        places = tuple(_place(source, _position(positions, source, i)) for i in chain.ids)
        guarded = any(chain.parts[: len(g)] == g for g in guards)
        out[chain.parts] = Selection(chain.parts, places, guarded)
    return tuple(out.values())


def _position(positions: dict[int, int], source: str, node: int) -> int:
    """Where a part starts: a field's name just after its dot (cel-cpp places a selection
    at the dot), else the node's own offset."""
    at = positions.get(node, 0)
    if 0 <= at < len(source) and source[at] == ".":
        return at + 1
    return at
