"""Shared CEL definitions: named expressions written once, in a ``cel`` fixture, and
called by name from the tool fixtures that name it in ``data.uses`` (docs/contract.md,
"Shared CEL definitions").

A definition is ``{params: [a, b], expr: "..."}``. A call ``name(x, y)`` in a tool's
expression is expanded when the case is built, as a macro, into plain CEL::

    cel.bind(ec_args_, [x, y], cel.bind(a, ec_args_[0], cel.bind(b, ec_args_[1], (expr))))

The arguments are evaluated once, in the caller's scope (``cel.bind`` evaluates its
initializer outside the name it binds), and the parameters shadow nothing the caller
reads. A definition's expression may call other definitions of the same fixtures;
expansion is recursive and a cycle is an error. The expanded text is ordinary CEL: the
runner evaluates it with the same bounds (:mod:`evalcase.run.expr`) as an inlined
expression, and a tool that calls a definition behaves as the same tool with the
expression written in place.

Errors come back as values (:class:`DefinitionError`), never raised.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

KIND = "cel"
# The name the arguments are bound to; a definition may not use it.
ARGS = "ec_args_"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_OPEN = "([{"
_CLOSE = {")": "(", "]": "[", "}": "{"}
MAX_DEPTH = 16


@dataclass(frozen=True)
class Definition:
    name: str
    params: tuple[str, ...]
    expr: str
    fixture_id: str


@dataclass(frozen=True)
class DefinitionError:
    """What is wrong, and where (``fixture_id`` and the definition or expression)."""

    message: str


def definitions_of(
    fixture_id: str, fixture: Mapping[str, Any]
) -> dict[str, Definition] | DefinitionError:
    """The definitions of one ``cel`` fixture."""
    data = fixture.get("data")
    raw = data.get("definitions") if isinstance(data, Mapping) else None
    if not isinstance(raw, Mapping):
        return DefinitionError(
            f"{fixture_id}: data.definitions is a mapping of name: {{params, expr}}"
        )
    out: dict[str, Definition] = {}
    for name, body in raw.items():
        if not isinstance(name, str) or not _NAME.match(name):
            return DefinitionError(
                f"{fixture_id}: definition name {name!r} is not lower_snake_case"
            )
        if not isinstance(body, Mapping) or not isinstance(body.get("expr"), str):
            return DefinitionError(f"{fixture_id}: definition {name!r} needs an expr (CEL text)")
        params = body.get("params", [])
        if not isinstance(params, list) or not all(
            isinstance(p, str) and _IDENT.fullmatch(p) for p in params
        ):
            return DefinitionError(f"{fixture_id}: definition {name!r}: params is a list of names")
        problem = param_problem(tuple(params))
        if problem is not None:
            return DefinitionError(f"{fixture_id}: definition {name!r}: {problem}")
        out[name] = Definition(name, tuple(params), body["expr"], fixture_id)
    return out


# CEL's reserved words and literals: never a parameter name.
_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)


def param_problem(params: tuple[str, ...]) -> str | None:
    """Why these parameter names cannot be bound, or None."""
    if len(set(params)) != len(params):
        return "parameters must be distinct"
    bad = [p for p in params if p == ARGS or p in _RESERVED or not _IDENT.fullmatch(p)]
    if bad:
        return f"{bad[0]!r} cannot be a parameter name (a CEL reserved word, or {ARGS!r})"
    return None


def uses_of(fixture: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``cel`` fixture IDs a tool fixture names in ``data.uses``."""
    data = fixture.get("data")
    uses = data.get("uses") if isinstance(data, Mapping) else None
    return tuple(u for u in uses if isinstance(u, str)) if isinstance(uses, list) else ()


def collect(
    uses: tuple[str, ...], fixtures: Mapping[str, Mapping[str, Any]]
) -> dict[str, Definition] | DefinitionError:
    """Every definition of the named ``cel`` fixtures; a name defined twice is an error."""
    out: dict[str, Definition] = {}
    for fixture_id in uses:
        fixture = fixtures.get(fixture_id)
        if fixture is None or fixture.get("kind") != KIND:
            return DefinitionError(f"uses: {fixture_id!r} is not a cel fixture (fixtures/cel/)")
        found = definitions_of(fixture_id, fixture)
        if isinstance(found, DefinitionError):
            return found
        for name, definition in found.items():
            if name in out:
                return DefinitionError(
                    f"definition {name!r} is in both {out[name].fixture_id} and {fixture_id}"
                )
            out[name] = definition
    return out


def _skip_string(text: str, i: int) -> int:
    """The index after the string literal starting at ``i`` (a quote, maybe after r/b)."""
    j = i
    raw = False
    while j < len(text) and text[j] in "rRbB":
        raw = raw or text[j] in "rR"
        j += 1
    quote = text[j]
    if text.startswith(quote * 3, j):
        end = text.find(quote * 3, j + 3)
        return len(text) if end == -1 else end + 3
    j += 1
    while j < len(text) and text[j] != quote:
        j += 2 if text[j] == "\\" and not raw else 1
    return j + 1


def _tokens(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every identifier outside string literals."""
    i = 0
    while i < len(text):
        c = text[i]
        m = _IDENT.match(text, i) if c.isalpha() or c == "_" else None
        if m is not None:
            end = m.end()
            if (
                end < len(text)
                and text[end] in "'\""
                and m.group()
                in ("r", "R", "b", "B", "rb", "br", "RB", "BR", "Rb", "bR", "rB", "Br")
            ):
                i = _skip_string(text, i)
                continue
            yield i, end
            i = end
        elif c in "'\"":
            i = _skip_string(text, i)
        elif c.isdigit():
            while i < len(text) and (text[i].isalnum() or text[i] == "."):
                i += 1
        else:
            i += 1


def _arguments(text: str, start: int) -> tuple[list[str], int] | None:
    """The top-level arguments of the call whose ``(`` is at ``start``, and the index
    after its ``)``; None when the parentheses do not close."""
    depth: list[str] = []
    args: list[str] = []
    piece = start + 1
    i = start
    while i < len(text):
        c = text[i]
        if c in "'\"":
            i = _skip_string(text, i)
            continue
        if c in _OPEN:
            depth.append(c)
        elif c in _CLOSE:
            if not depth or depth[-1] != _CLOSE[c]:
                return None
            depth.pop()
            if not depth:
                args.append(text[piece:i])
                return ([] if len(args) == 1 and not args[0].strip() else args), i + 1
        elif c == "," and len(depth) == 1:
            args.append(text[piece:i])
            piece = i + 1
        i += 1
    return None


def calls(text: str, names: frozenset[str] | Mapping[str, Any]) -> list[tuple[str, int]]:
    """(name, argument count) of every call of one of ``names`` in ``text`` (a global
    call: ``x.name(...)`` is a method, not a definition)."""
    out: list[tuple[str, int]] = []
    for start, end in _tokens(text):
        name = text[start:end]
        if name not in names or _member(text, start):
            continue
        after = _next(text, end)
        if after < len(text) and text[after] == "(":
            found = _arguments(text, after)
            if found is not None:
                out.append((name, len(found[0])))
    return out


def _member(text: str, start: int) -> bool:
    j = start - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    return j >= 0 and text[j] == "."


def _next(text: str, end: int) -> int:
    while end < len(text) and text[end].isspace():
        end += 1
    return end


def expand(
    text: str, definitions: Mapping[str, Definition], _stack: tuple[str, ...] = ()
) -> str | DefinitionError:
    """``text`` with every call of a definition replaced by its expansion."""
    if not definitions:
        return text
    out: list[str] = []
    last = 0
    skip_to = 0
    for start, end in _tokens(text):
        if start < skip_to:
            continue
        name = text[start:end]
        definition = definitions.get(name)
        if definition is None or _member(text, start):
            continue
        after = _next(text, end)
        if after >= len(text) or text[after] != "(":
            continue
        found = _arguments(text, after)
        if found is None:
            continue  # the parser reports the unbalanced text
        args, stop = found
        if name in _stack:
            return DefinitionError(f"definition cycle: {' -> '.join((*_stack, name))}")
        if len(_stack) >= MAX_DEPTH:
            return DefinitionError(
                f"definitions nest deeper than {MAX_DEPTH}: {' -> '.join(_stack)}"
            )
        if len(args) != len(definition.params):
            return DefinitionError(
                f"{name}() takes {len(definition.params)} argument(s) "
                f"({', '.join(definition.params) or 'none'}), called with {len(args)}"
            )
        expanded_args: list[str] = []
        for arg in args:
            inner = expand(arg, definitions, _stack)
            if isinstance(inner, DefinitionError):
                return inner
            expanded_args.append(inner.strip())
        body = expand(definition.expr, definitions, (*_stack, name))
        if isinstance(body, DefinitionError):
            return body
        out.append(text[last:start])
        out.append(_bind(definition.params, expanded_args, body.strip()))
        last = skip_to = stop
    out.append(text[last:])
    return "".join(out)


def _bind(params: tuple[str, ...], args: list[str], body: str) -> str:
    if not params:
        return f"({body})"
    if len(params) == 1:
        return f"cel.bind({params[0]}, {args[0]}, ({body}))"
    inner = f"({body})"
    for i in reversed(range(len(params))):
        inner = f"cel.bind({params[i]}, {ARGS}[{i}], {inner})"
    return f"cel.bind({ARGS}, [{', '.join(args)}], {inner})"


# --- a tool fixture's expressions ------------------------------------------------------


def _expand_path(path: str, definitions: Mapping[str, Definition]) -> str | DefinitionError:
    """A dotted state path with its ``{CEL}`` segments expanded."""
    from evalcase.contract.paths import Expr as Segment
    from evalcase.contract.paths import parse

    parsed = parse(path)
    if not isinstance(parsed, tuple):
        return path
    out = path
    for segment in parsed:
        if isinstance(segment, Segment) and calls(segment.source, definitions):
            expanded = expand(segment.source, definitions)
            if isinstance(expanded, DefinitionError):
                return expanded
            out = out.replace("{" + segment.source + "}", "{" + expanded + "}", 1)
    return out


_STEP_EXPRS = ("when", "value_from", "by_from", "foreach")
_PATH_KEYS = ("set", "delete", "append", "increment")


class _Expander:
    """Expands the CEL of responses and steps, keeping the first error."""

    def __init__(self, definitions: Mapping[str, Definition]) -> None:
        self.definitions = definitions
        self.errors: list[str] = []

    def text(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value  # a {path: value} condition or literal data: no CEL
        made = expand(value, self.definitions)
        if isinstance(made, DefinitionError):
            self.errors.append(made.message)
            return value
        return made

    def path(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        made = _expand_path(value, self.definitions)
        if isinstance(made, DefinitionError):
            self.errors.append(made.message)
            return value
        return made

    def message_from(self, value: Any) -> Any:
        if isinstance(value, Mapping) and "message_from" in value:
            return {**value, "message_from": self.text(value["message_from"])}
        return value

    def steps(self, value: Any) -> Any:
        if isinstance(value, Mapping):  # sugar: {path: literal value}
            return {self.path(str(k)): v for k, v in value.items()}
        if not isinstance(value, list):
            return value
        out: list[Any] = []
        for step in value:
            if not isinstance(step, Mapping):
                out.append(step)
                continue
            made = dict(step)
            for key in _STEP_EXPRS:
                if key in made:
                    made[key] = self.text(made[key])
            for key in _PATH_KEYS:
                if key in made:
                    made[key] = self.path(made[key])
            if "fail" in made:
                made["fail"] = self.message_from(made["fail"])
            if "do" in made:
                made["do"] = self.steps(made["do"])
            out.append(made)
        return out

    def response(self, value: Any) -> Any:
        """A response: ``result``, ``value`` and other literal data are kept as written."""
        if not isinstance(value, Mapping):
            return value
        made = dict(value)
        for key in ("when", "result_from"):
            if key in made:
                made[key] = self.text(made[key])
        if isinstance(made.get("let"), Mapping):
            made["let"] = {k: self.text(v) for k, v in made["let"].items()}
        if "error" in made:
            made["error"] = self.message_from(made["error"])
        if "state_change" in made:
            made["state_change"] = self.steps(made["state_change"])
        return made


def expand_tool(
    fixture: Mapping[str, Any], fixtures: Mapping[str, Mapping[str, Any]]
) -> Mapping[str, Any] | DefinitionError:
    """The tool fixture with the definitions it ``uses`` expanded into its responses,
    its default and its own side_effect_policy's preconditions; the fixture itself when
    it uses none."""
    uses = uses_of(fixture)
    if not uses:
        return fixture
    definitions = collect(uses, fixtures)
    if isinstance(definitions, DefinitionError):
        return definitions
    data = dict(fixture.get("data") or {})
    expander = _Expander(definitions)
    if isinstance(data.get("responses"), list):
        data["responses"] = [expander.response(r) for r in data["responses"]]
    if "default" in data:
        data["default"] = expander.response(data["default"])
    policy = data.get("side_effect_policy")
    if isinstance(policy, Mapping) and isinstance(policy.get("precondition"), list):
        conditions = [expander.text(c) for c in policy["precondition"]]
        data["side_effect_policy"] = {**policy, "precondition": conditions}
    if expander.errors:
        return DefinitionError(expander.errors[0])
    return {**fixture, "data": data}
