"""The CEL expressions and state paths of a case or tool fixture, located in the file.

Facts carry what this module finds (cached with the file), so the contract rules (EC6xx)
never re-read a file and a warm lint never imports the CEL library: an expression is
analysed (evalcase.contract.cel.analyze) only when its file is analysed.

An expression entry is ``(context, text, line, column, error, references)``: the context
(``precondition``, ``permission``, ``fault``, ``assert``, ``trace``, ``tool``,
``user_turn``), the text,
where it starts in the file, ``(line, column, message)`` of a syntax error or None, and the
free names it reads ``((name, line, column), ...)``; every position is the file's own.
A state path entry is ``(context, dotted path, line, column)``: the ``{path: value}``
sugar of preconditions and permissions, ``final_state_check`` ``unchanged`` and ``absent``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from evalcase.loader import Document, Path

Expr = tuple[str, str, int, int, tuple[int, int, str] | None, tuple[tuple[str, int, int], ...]]
StatePath = tuple[str, str, int, int]
Leaf = tuple[str, str, int, int]  # dotted path, JSON of the value, line, column


# The lines of the last text looked in: a case's expressions and their references all
# look in the same file (splitting it for each was a few percent of analysing a case).
_last_lines: tuple[str, list[str]] = ("", [""])


def _lines_of(text: str) -> list[str]:
    global _last_lines
    if _last_lines[0] is not text:
        _last_lines = (text, text.split("\n"))
    return _last_lines[1]


def file_position(doc: Document, path: Path, text: str, line: int, column: int) -> tuple[int, int]:
    """Where (line, column) of the expression ``text`` found at ``path`` is in the file:
    each line of the expression is looked up in the file, in order, from where the
    scalar starts (plain, quoted and block scalars alike). Falls back to the scalar's
    start when the text is not found verbatim (a quoted scalar with escapes)."""
    start = doc.locate(path)
    file_lines = _lines_of(doc.text)
    expr_lines = text.split("\n")
    if not 1 <= line <= len(expr_lines):
        return start
    row, offset = start[0] - 1, start[1] - 1
    for k in range(line):
        piece = expr_lines[k]
        stripped = piece.strip()
        lead = len(piece) - len(piece.lstrip())
        at = -1
        while row < len(file_lines):
            at = file_lines[row].find(stripped, max(offset, 0)) if stripped else max(offset, 0)
            if at != -1:
                break
            row, offset = row + 1, 0
        if at == -1:
            return start
        if k == line - 1:
            return row + 1, at + 1 + max(column - 1 - lead, 0)
        row, offset = row + 1, 0
    return start


def _expression(doc: Document, context: str, path: Path, text: str) -> Expr:
    from evalcase.contract import cel

    analysis = cel.analyze(text)
    line, col = doc.locate(path)
    error = None
    if analysis.error is not None:
        err = analysis.error
        e_line, e_col = file_position(doc, path, text, err.line, err.column)
        error = (e_line, e_col, err.message)
    refs = tuple(
        (ref.name, *file_position(doc, path, text, ref.line, ref.column))
        for ref in analysis.references
    )
    return (context, text, line, col, error, refs)


def _list_at(doc: Document, path: Path) -> list[Any]:
    value = doc.get(path)
    return value if isinstance(value, list) else []


def _conditions(doc: Document, context: str, path: Path) -> Iterator[Expr | StatePath]:
    """A condition: CEL text, or a mapping of ``path: value`` equalities."""
    value = doc.get(path)
    if isinstance(value, str):
        yield _expression(doc, context, path, value)
    elif isinstance(value, dict):
        for key in value:
            line, col = doc.locate_key((*path, key))
            yield (context, str(key), line, col)


def _policies(doc: Document) -> list[Path]:
    value = doc.get(("side_effect_policy",))
    if isinstance(value, dict):
        return [("side_effect_policy",)]
    if isinstance(value, list):
        return [("side_effect_policy", i) for i in range(len(value))]
    return []


def _transition_paths(doc: Document, policy: Path) -> Iterator[Expr]:
    """The ``{CEL}`` segments of a policy's state-transition paths (the grader resolves
    them over the call's variables, as it evaluates the preconditions)."""
    for kind in ("allowed_state_transition", "forbidden_state_transition"):
        value = doc.get((*policy, kind))
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("path"), str):
                continue
            at = (*policy, kind, i, "path") if isinstance(value, list) else (*policy, kind, "path")
            for segment in _segments(item["path"]):
                yield _expression(doc, "precondition", at, segment)


def case_expressions(doc: Document) -> tuple[tuple[Expr, ...], tuple[StatePath, ...]]:
    exprs: list[Expr] = []
    paths: list[StatePath] = []

    def take(items: Iterator[Expr | StatePath]) -> None:
        for item in items:
            if len(item) == 6:
                exprs.append(item)
            else:
                paths.append(item)

    for policy in _policies(doc):
        for i in range(len(_list_at(doc, (*policy, "precondition")))):
            take(_conditions(doc, "precondition", (*policy, "precondition", i)))
        exprs.extend(_transition_paths(doc, policy))
    permissions = doc.get(("environment", "permissions"))
    if isinstance(permissions, dict):
        for name in permissions:
            take(_conditions(doc, "permission", ("environment", "permissions", name, "condition")))
    for i, fault in enumerate(_list_at(doc, ("environment", "faults"))):
        if (
            isinstance(fault, dict)
            and isinstance(fault.get("when"), str)
            and fault["when"] != "every"
        ):
            exprs.append(
                _expression(doc, "fault", ("environment", "faults", i, "when"), fault["when"])
            )
    check = doc.get(("final_state_check",))
    blocks: list[Path] = []
    if isinstance(check, dict):
        blocks.append(("final_state_check",))
        blocks += [
            ("final_state_check", "any_of", i)
            for i in range(len(_list_at(doc, ("final_state_check", "any_of"))))
        ]
    for block in blocks:
        asserts = doc.get((*block, "assert"))
        if isinstance(asserts, str):
            exprs.append(_expression(doc, "assert", (*block, "assert"), asserts))
        for i, text in enumerate(asserts if isinstance(asserts, list) else []):
            if isinstance(text, str):
                exprs.append(_expression(doc, "assert", (*block, "assert", i), text))
        for kind in ("unchanged", "absent"):
            for i, text in enumerate(_list_at(doc, (*block, kind))):
                if isinstance(text, str) and text != "*":
                    line, col = doc.locate((*block, kind, i))
                    paths.append((kind, text, line, col))
    for i, turn in enumerate(_list_at(doc, ("interaction",))):
        if isinstance(turn, dict) and isinstance(turn.get("when"), str):
            exprs.append(_expression(doc, "user_turn", ("interaction", i, "when"), turn["when"]))
    for i, text in enumerate(_list_at(doc, ("trace_requirement", "rules"))):
        if isinstance(text, str):
            exprs.append(_expression(doc, "trace", ("trace_requirement", "rules", i), text))
    return tuple(exprs), tuple(paths)


def _segments(text: str) -> Iterator[str]:
    """The ``{CEL}`` segments of a dotted path."""
    from evalcase.contract.paths import Expr as Segment
    from evalcase.contract.paths import parse

    parsed = parse(text)
    if isinstance(parsed, tuple):
        for segment in parsed:
            if isinstance(segment, Segment):
                yield segment.source


def tool_responses(doc: Document) -> list[Path]:
    """Where each response of a tool fixture is (the default last)."""
    responses: list[Path] = [
        ("data", "responses", i) for i in range(len(_list_at(doc, ("data", "responses"))))
    ]
    if isinstance(doc.get(("data", "default")), dict):
        responses.append(("data", "default"))
    return responses


# A CEL text of a tool fixture with the names bound where it is: (where, text, names in
# scope). ``where`` is the YAML path of the scalar.
Scoped = tuple[Path, str, frozenset[str]]


def _steps(doc: Document, at: Path, scope: frozenset[str]) -> Iterator[Scoped]:
    for i, op in enumerate(_list_at(doc, at)):
        if not isinstance(op, dict):
            continue
        step = (*at, i)
        for key in ("when", "value_from", "by_from", "foreach"):
            if isinstance(op.get(key), str):
                yield ((*step, key), op[key], scope)
        failure = op.get("fail")
        if isinstance(failure, dict) and isinstance(failure.get("message_from"), str):
            yield ((*step, "fail", "message_from"), failure["message_from"], scope)
        for name in ("set", "delete", "append", "increment"):
            if isinstance(op.get(name), str):
                for segment in _segments(op[name]):
                    yield ((*step, name), segment, scope)
        if "foreach" in op:
            name = op.get("as", "item")
            inner = scope | {name} if isinstance(name, str) else scope
            yield from _steps(doc, (*step, "do"), inner)


def tool_scoped(doc: Document) -> Iterator[Scoped]:
    """Every CEL text of a tool fixture's responses with the ``let`` and ``foreach`` names
    it may read: a response's ``when`` none; a ``let`` the earlier ones; its steps,
    ``result_from`` and ``error.message_from`` all of them; inside ``do`` also ``as``."""
    for response in tool_responses(doc):
        when = doc.get((*response, "when"))
        if isinstance(when, str):
            yield ((*response, "when"), when, frozenset())
        bound: frozenset[str] = frozenset()
        lets = doc.get((*response, "let"))
        if isinstance(lets, dict):
            for name, text in lets.items():
                if isinstance(text, str):
                    yield ((*response, "let", name), text, bound)
                bound = bound | {str(name)}
        source = doc.get((*response, "result_from"))
        if isinstance(source, str):
            yield ((*response, "result_from"), source, bound)
        message = doc.get((*response, "error", "message_from"))
        if isinstance(message, str):
            yield ((*response, "error", "message_from"), message, bound)
        yield from _steps(doc, (*response, "state_change"), bound)
        changes = doc.get((*response, "state_change"))
        if isinstance(changes, dict):
            for key in changes:
                for segment in _segments(str(key)):
                    yield ((*response, "state_change"), segment, bound)


def tool_bound_names(doc: Document) -> frozenset[str]:
    """Every name a ``let`` or a ``foreach`` (``as``, default ``item``) binds in the fixture."""
    names: set[str] = set()

    def walk(at: Path) -> None:
        for i, op in enumerate(_list_at(doc, at)):
            if isinstance(op, dict) and "foreach" in op:
                name = op.get("as", "item")
                if isinstance(name, str):
                    names.add(name)
                walk((*at, i, "do"))

    for response in tool_responses(doc):
        lets = doc.get((*response, "let"))
        if isinstance(lets, dict):
            names.update(str(k) for k in lets)
        walk((*response, "state_change"))
    return frozenset(names)


def tool_expressions(doc: Document) -> tuple[Expr, ...]:
    """CEL of a tool fixture: ``when`` strings, ``let`` values, ``result_from``,
    ``error.message_from``, ``value_from``, ``by_from``, ``foreach`` and the ``{CEL}``
    segments of state-change paths, of every response and the default (context
    ``tool``), and the preconditions and ``{CEL}`` transition-path segments of the tool's
    own ``side_effect_policy`` (context ``precondition``). The names a ``let`` or
    ``foreach`` binds are not free names of the expressions in their scope; a read of
    such a name outside its scope is kept as an entry of context ``tool_scope`` whose
    references are those reads (EC602)."""
    from evalcase.contract.cel import RESERVED

    exprs: list[Expr] = []
    bound = tool_bound_names(doc)
    for where, text, scope in tool_scoped(doc):
        context, _text, line, col, error, refs = _expression(doc, "tool", where, text)
        free = tuple(r for r in refs if r[0].split(".", 1)[0] not in bound)
        exprs.append((context, text, line, col, error, free))
        # out of its scope, a bound name that is also a variable (EC608) is that variable
        outside = tuple(r for r in refs if r[0].split(".", 1)[0] in bound - scope - RESERVED)
        if outside:
            exprs.append(("tool_scope", text, line, col, None, outside))
    # The tool's own side_effect_policy: graded for every case offering the tool.
    policy = ("data", "side_effect_policy")
    for i in range(len(_list_at(doc, (*policy, "precondition")))):
        for item in _conditions(doc, "precondition", (*policy, "precondition", i)):
            if len(item) == 6:
                exprs.append(item)
    exprs.extend(_transition_paths(doc, policy))
    return tuple(exprs)


# json.dumps(value, sort_keys=True, ensure_ascii=False, default=str), its encoder made once:
# json.dumps makes one per call with these options (83,715 leaves in tau2 airline's state).
_LEAF_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str).encode


def leaves(doc: Document, path: Path, prefix: tuple[str, ...] = ()) -> tuple[Leaf, ...]:
    """Every leaf of the mapping at ``path`` (dotted path, value as JSON, line, column).
    Non-empty mappings are walked; lists, scalars and empty mappings are leaves."""
    out: list[Leaf] = []
    dumps = _LEAF_JSON

    def walk(node: Any, at: Path, dotted: tuple[str, ...]) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, (*at, key), (*dotted, str(key)))
            return
        if not dotted:
            return
        line, col = doc.locate(at)
        text = dumps(node)
        out.append((".".join(dotted), text, line, col))

    walk(doc.get(path), path, prefix)
    return tuple(out)


StateRead = tuple[tuple[str, ...], tuple[tuple[int, int], ...]]


def tool_state_reads(doc: Document) -> tuple[StateRead, ...]:
    """The field chains a tool fixture's responses and its own side_effect_policy's
    preconditions read from free names that may be state keys (``accounts[args.id].owner``:
    parts, each part's file place), for EC328. Chains of ``args``, ``call``, ``state``, of
    a name a ``let`` or ``foreach`` binds, of a single name, and those a guard tests
    (``has(x.f)``) are left out."""
    from evalcase.contract.cel import RESERVED
    from evalcase.contract.selections import selections

    bound = tool_bound_names(doc) | RESERVED
    out: list[StateRead] = []
    policy = ("data", "side_effect_policy", "precondition")
    conditions = [
        ((*policy, i), text)
        for i, text in enumerate(_list_at(doc, policy))
        if isinstance(text, str)
    ]
    for where, text in [(w, t) for w, t, _scope in tool_scoped(doc)] + conditions:
        for chain in selections(text):
            if chain.guarded or len(chain.parts) < 2 or chain.parts[0] in bound:
                continue
            places = tuple(file_position(doc, where, text, ln, col) for ln, col in chain.places)
            out.append((chain.parts, places))
    return tuple(out)


def tool_state_writes(doc: Document) -> tuple[str, ...]:
    """The state paths a tool fixture's responses may write (``set``, ``append``,
    ``increment`` and the mapping form's keys), a ``{CEL}`` segment as ``*``: what a later
    call may find in the state beside its initial state (EC328). A tool with a
    ``handler`` writes ``*``, anything, unless it declares ``side_effect: false`` (which
    EC317 holds it to)."""
    from evalcase.contract.paths import Expr as Segment
    from evalcase.contract.paths import parse

    found: set[str] = set()

    def add(text: Any) -> None:
        parsed = parse(text) if isinstance(text, str) else None
        if isinstance(parsed, tuple):
            found.add(".".join("*" if isinstance(s, Segment) else str(s) for s in parsed))

    def steps(at: Path) -> None:
        for i, op in enumerate(_list_at(doc, at)):
            if isinstance(op, dict):
                for name in ("set", "append", "increment"):
                    add(op.get(name))
                steps((*at, i, "do"))

    if (
        isinstance(doc.get(("data", "handler")), str)
        and doc.get(("data", "side_effect")) is not False
    ):
        found.add("*")  # a handler may change any part of the state (unless declared not to)
    for response in tool_responses(doc):
        steps((*response, "state_change"))
        changes = doc.get((*response, "state_change"))
        if isinstance(changes, dict):
            for key in changes:
                add(str(key))
    return tuple(sorted(found))
