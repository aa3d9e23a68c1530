"""evalcase's text checks as JavaScript expressions over ``output``, where one means
exactly what the Python check means, for every output.

promptfoo starts a Python process for each ``python`` assertion it checks; a
``javascript`` assertion runs inside promptfoo's own process. The export writes a check
in JavaScript only when this module can restate it with the same verdict on every
text (and a failure on any output that is not text, as Python's would fail), and keeps
the ``python`` assertion otherwise:

- ``exact_match``: Python's ``str.strip`` and ``\\s`` are one whitespace set
  (``str.isspace``), written out as a character class; ``casefold`` is restated as a
  table of the characters whose case folding can make up one of the answers (any other
  character cannot appear in a matching answer), so the comparison is exact;
- ``regex``: a pattern read with Python's own parser (``re._parser``) and rewritten node
  by node into a ``u``-flag JavaScript regular expression (code points, as Python), for
  the constructs whose meaning is the same in both: literals, classes of literals and
  ranges, ``\\s`` / ``\\S`` (the whitespace set above), ``.`` (any character but
  ``\\n``), repetitions, groups, alternation, lookahead and (fixed-width) lookbehind,
  ``^``, ``\\A``, ``$`` (end, or before a final ``\\n``) and ``\\Z``. Flags, ``\\d``,
  ``\\w``, ``\\b``, backreferences, atomic groups and possessive repeats differ between
  the engines (Unicode tables, case folding, an unset group): such a pattern is None
  here and stays a ``python`` assertion.

Every expression is written without ``{`` or ``}`` (promptfoo renders assertion values
as Nunjucks templates): braces inside strings are ``\\u007b`` and ``\\u007d``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

_UNICODE = 0x110000


@cache
def python_space() -> str:
    """Every character ``str.isspace`` (so ``str.strip`` and regex ``\\s``) counts."""
    return "".join(chr(c) for c in range(_UNICODE) if chr(c).isspace())


@cache
def _folding() -> tuple[str, ...]:
    """The characters ``str.casefold`` changes."""
    return tuple(chr(c) for c in range(_UNICODE) if chr(c).casefold() != chr(c))


def js(value: Any) -> str:
    """A JavaScript literal of ``value`` (JSON, ASCII, braces escaped)."""
    return json.dumps(value, ensure_ascii=True).replace("{", "\\u007b").replace("}", "\\u007d")


def _cp(c: int) -> str:
    """One code point inside a ``u``-flag regular expression."""
    ch = chr(c)
    return ch if ch.isascii() and ch.isalnum() else f"\\u{{{c:x}}}"


def _space_class(negate: bool = False) -> str:
    return "[" + "^" * negate + "".join(_cp(ord(c)) for c in python_space()) + "]"


def _strip(code: str) -> str:
    space = _space_class()
    return f"{code}.replace(new RegExp({js(f'^{space}+|{space}+$')}, 'gu'), '')"


def exact_code(answers: Sequence[str], ignore_case: bool, ignore_space: bool) -> str:
    """``normal(output, ignore_case, ignore_space) in answers`` (the answers normalised
    already), as a JavaScript expression."""
    code = _strip("output")
    if ignore_space:
        code = f"{code}.replace(new RegExp({js(_space_class() + '+')}, 'gu'), '')"
    if not ignore_case:
        return f"(typeof output === 'string' && {js(sorted(answers))}.includes({code}))"
    # casefold, character by character: a character whose folding holds one that no
    # answer holds cannot be in a matching text, so the table needs only the others.
    chars = set("".join(answers))
    table = sorted((c, c.casefold()) for c in chars.union(_folding()) if set(c.casefold()) <= chars)
    fold = f"((s, m) => [...s].every(c => m.has(c)) && {js(sorted(answers))}.includes("
    fold += "[...s].map(c => m.get(c)).join('')))"
    return (
        f"(typeof output === 'string' && {fold}({code}, new Map({js([list(p) for p in table])})))"
    )


class _Unsupported(Exception):
    pass


def _node(op: Any, av: Any) -> str:
    if op is sre.LITERAL:
        return _cp(av)
    if op is sre.NOT_LITERAL:
        return f"[^{_cp(av)}]"
    if op is sre.ANY:
        return "[^\\n]"
    if op is sre.IN:
        return _klass(av)
    if op is sre.CATEGORY:
        if av is sre.CATEGORY_SPACE:
            return _space_class()
        if av is sre.CATEGORY_NOT_SPACE:
            return _space_class(negate=True)
        raise _Unsupported(av)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        low, high, sub = av
        count = f"{low}," if high is sre.MAXREPEAT else f"{low},{high}"
        lazy = "?" if op is sre.MIN_REPEAT else ""
        return f"(?:{_seq(sub)}){{{count}}}{lazy}"
    if op is sre.SUBPATTERN:
        _group, add, delete, sub = av
        if add or delete:
            raise _Unsupported("inline flags")
        return f"(?:{_seq(sub)})"
    if op is sre.BRANCH:
        return "(?:" + "|".join(_seq(s) for s in av[1]) + ")"
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        direction, sub = av
        sign = "=" if op is sre.ASSERT else "!"
        return f"(?{'<' if direction < 0 else ''}{sign}{_seq(sub)})"
    if op is sre.AT:
        at = {
            sre.AT_BEGINNING: "^",
            sre.AT_BEGINNING_STRING: "^",
            sre.AT_END: "(?=\\n?$)",
            sre.AT_END_STRING: "$",
        }
        if av in at:
            return at[av]
        raise _Unsupported(av)
    raise _Unsupported(op)


def _klass(items: Any) -> str:
    if list(items) == [(sre.CATEGORY, sre.CATEGORY_NOT_SPACE)]:  # \S alone
        return _space_class(negate=True)
    out, negate = [], False
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            out.append(_cp(av))
        elif op is sre.RANGE:
            out.append(f"{_cp(av[0])}-{_cp(av[1])}")
        elif op is sre.CATEGORY and av is sre.CATEGORY_SPACE:
            out.append(_space_class()[1:-1])
        else:
            raise _Unsupported(op)
    return "[" + "^" * negate + "".join(out) + "]"


def _seq(sub: Any) -> str:
    return "".join(_node(op, av) for op, av in sub)


def regex_source(pattern: str) -> str | None:
    """The ``u``-flag JavaScript source matching where ``re.search(pattern, ...)`` does,
    or None when the pattern uses a construct whose meaning differs."""
    try:
        parsed = sre_parse.parse(pattern)
        if parsed.state.flags != sre.SRE_FLAG_UNICODE:
            return None
        return _seq(parsed)
    except (_Unsupported, re.error, RecursionError, AttributeError, TypeError, ValueError):
        # (the last three: a Python whose private parser differs keeps the python check)
        return None


def regex_code(pattern: str, wanted: bool) -> str | None:
    """``re.search(pattern, output)`` found (``wanted``) or not, as a JavaScript
    expression, or None (keep Python's)."""
    source = regex_source(pattern)
    if source is None:
        return None
    test = f"new RegExp({js(source)}, 'u').test(output)"
    return f"(typeof output === 'string' && {'!' * (not wanted)}{test})"
