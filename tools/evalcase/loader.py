"""The only YAML reader in evalcase.

Files are untrusted: they arrive in pull requests and are derived from production logs.
So the loader never constructs objects from tags and never recurses: it drives libyaml's
event parser (PyYAML's or ruamel.yaml's C binding) and builds plain dicts, lists and
scalars with an explicit stack, recording the line and column of every key and value.
Resource limits (size, depth, alias expansion) are checked while building, so a hostile
file costs bounded time and memory and turns into a Finding like any other mistake.

YAML 1.2 core schema: ``yes``/``no`` are strings, timestamps stay strings, and only the
standard tags (str, int, float, bool, null, map, seq) are honoured.

One module of about 1,100 lines, on purpose: decoding, the event-driven builder, the
plain-scalar resolver and the limits are one pass over one file's events, sharing the
marks and the finding budget of that pass; split, each part would hand the others its
internals. Writing YAML back (bump, fmt, new, review-case) is :mod:`evalcase.yamlwrite`.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, NamedTuple, NoReturn

from evalcase.model import Finding, Severity

Path = tuple[str | int, ...]
Position = tuple[int, int]
# Where the values of one container came from: libyaml marks of its values (a dict by key,
# a list by index) and of its keys (None for a list).
_Table = tuple[Any, dict[Any, Any] | None]

_YAML = "tag:yaml.org,2002:"
_STANDARD_TAGS = frozenset(
    _YAML + t for t in ("str", "int", "float", "bool", "null", "map", "seq", "omap")
) | {"!"}

# Loader rule codes; their documentation lives in evalcase.lint.rules.
SYNTAX = "EC001"
DUPLICATE_KEY = "EC002"
UNSAFE_TAG = "EC003"
ENCODING = "EC004"
TOO_LARGE = "EC005"
RESOURCE_LIMIT = "EC006"
NOT_A_MAPPING = "EC007"
KEY_TYPE = "EC008"
BAD_NUMBER = "EC009"
MERGE_KEY = "EC010"
TEXT_HYGIENE = "EC011"

_NAMES = {
    SYNTAX: "yaml-syntax",
    DUPLICATE_KEY: "duplicate-key",
    UNSAFE_TAG: "unsafe-tag",
    ENCODING: "encoding",
    TOO_LARGE: "file-too-large",
    RESOURCE_LIMIT: "resource-limit",
    NOT_A_MAPPING: "not-a-mapping",
    KEY_TYPE: "key-type",
    BAD_NUMBER: "bad-number",
    MERGE_KEY: "merge-key",
    TEXT_HYGIENE: "text-hygiene",
}

# Characters YAML forbids in a stream (libyaml's reader rejects them): C0 controls other
# than tab, LF and CR; DEL; C1 controls other than NEL; U+FFFE and U+FFFF. NUL is reported
# earlier, as binary content.
_FORBIDDEN_CHAR = re.compile("[\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ufffe\uffff]")
# Line breaks libyaml counts (YAML 1.1) that git, and the line numbers evalcase reports,
# do not: a CR without LF, NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR.
_ODD_BREAK = re.compile("\r(?!\n)|[\x85\u2028\u2029]")


def _may_break_oddly(text: str) -> bool:
    """False when ``text`` has none of _ODD_BREAK's breaks. The regular expression has no
    literal to skip ahead by and reads every character (a tenth of loading a case); these
    scans are a few microseconds."""
    if "\x85" in text or "\u2028" in text or "\u2029" in text:
        return True
    crs = text.count("\r")
    return crs > 0 and crs != text.count("\r\n")


_ODD_BREAK_NAMES = {
    "\r": "a carriage return (CR) without a line feed",
    "\x85": "NEXT LINE (U+0085)",
    "\u2028": "LINE SEPARATOR (U+2028)",
    "\u2029": "PARAGRAPH SEPARATOR (U+2029)",
}


# A hostile file can repeat one mistake 100,000 times; past this many findings of one rule
# in one file, the rest are counted, not reported (the last one shown says so).
MAX_FINDINGS_PER_RULE = 100


@dataclass(frozen=True)
class Limits:
    """Bounds on what one file may cost. Configurable under [lint] in evalcase.toml."""

    max_bytes: int = 1_000_000
    max_depth: int = 64
    max_nodes: int = 200_000
    max_int_digits: int = 4300


@dataclass
class Document:
    """A loaded YAML file: plain data plus where every piece of it came from."""

    path: str
    text: str
    data: Any = None
    findings: list[Finding] = field(default_factory=list)
    # Where values came from: a table per container, by the container's path (a path and
    # a position per value took a fifth of loading). Marks become positions when asked
    # for, which is for a few values of a file.
    _tables: dict[Path, _Table] = field(default_factory=dict, init=False, repr=False, compare=False)
    _root_mark: Any = field(default=None, init=False, repr=False, compare=False)
    _breaks: tuple[list[int], list[int]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _lines: tuple[str, int] | None = field(default=None, init=False, repr=False, compare=False)
    # Findings per rule code, including those past MAX_FINDINGS_PER_RULE (not kept).
    _counts: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    _strings: tuple[Any, list[tuple[Path, str]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    # Plain scalars YAML 1.2 reads as numbers although they are not written the way the
    # number prints (6634E6, 1e5, 0x1F, 012, 1_000): their text by position. An ID
    # written that way silently becomes another value (EC211, EC008).
    numbers: dict[Position, str] = field(default_factory=dict, repr=False, compare=False)
    # What several rules derive from the same data (a case's judge view, its fields'
    # digests), derived once per file: evalcase.lint.semantic.memo. The data is never
    # changed after loading.
    memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the file parsed to a mapping that rules can inspect."""
        return isinstance(self.data, dict)

    @property
    def line_count(self) -> int:
        """Lines as git and editors number them ('\\n'-separated); counted once per text."""
        cached = self._lines
        if cached is None or cached[0] is not self.text:
            text = self.text
            count = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
            cached = self._lines = (text, count)
        return cached[1]

    def strings(self) -> list[tuple[Path, str]]:
        """Every string value with its path, depth first (as :func:`iter_paths`). Several
        rules scan every string of a file; the walk is done once per document."""
        cached = self._strings
        if cached is None or cached[0] is not self.data:
            found = _string_paths(self.data)
            cached = self._strings = (self.data, found)
        return cached[1]

    def mapping_keys(self) -> frozenset[Any] | None:
        """Every key of every mapping of the file, at any depth (a superset: keys the
        loader dropped are in it too); None when not known (a file read as JSON has no
        tables). A rule that looks for a key anywhere asks this first and skips its
        walk of the data when none of its keys is there."""
        if self._root_mark is None:
            return None
        found: frozenset[Any] | None = self.memo.get("mapping_keys")
        if found is None:
            found = self.memo["mapping_keys"] = frozenset().union(
                *(keys for _marks, keys in self._tables.values() if keys is not None)
            )
        return found

    def locate(self, path: Path) -> Position:
        """Where the value at ``path`` starts; the nearest located ancestor otherwise."""
        path = tuple(path)
        tables = self._tables
        while path:
            parent = path[:-1]
            table = tables.get(parent)
            if table is not None:
                marks, keys = table
                part = path[-1]
                if keys is not None:
                    mark = marks.get(part)
                elif isinstance(part, int) and 0 <= part < len(marks):
                    mark = marks[part]
                else:
                    mark = None
                if mark is not None:
                    if self._breaks is None:  # the usual case, inlined: called per value
                        return mark.line + 1, mark.column + 1
                    return _position(mark, self._breaks)
            path = parent
        mark = self._root_mark
        return (1, 1) if mark is None else _position(mark, self._breaks)

    def locate_key(self, path: Path) -> Position:
        """Where the key of the mapping entry at ``path`` is (the value's place otherwise)."""
        path = tuple(path)
        if path:
            table = self._tables.get(path[:-1])
            if table is not None:
                marks, keys = table
                if keys is not None and path[-1] in marks:
                    return _position(keys[path[-1]], self._breaks)
        return self.locate(path)

    @property
    def positions(self) -> dict[Path, Position]:
        """Every located value's position by path (built on demand: rules use locate)."""
        out: dict[Path, Position] = {}
        if self._root_mark is not None:
            out[()] = _position(self._root_mark, self._breaks)
        for path, (marks, _keys) in self._tables.items():
            items = marks.items() if isinstance(marks, dict) else enumerate(marks)
            for part, mark in items:
                out[(*path, part)] = _position(mark, self._breaks)
        return out

    @property
    def key_positions(self) -> dict[Path, Position]:
        """Every mapping entry's key position by path (built on demand)."""
        out: dict[Path, Position] = {}
        for path, (marks, keys) in self._tables.items():
            if keys is not None:
                for part in marks:
                    out[(*path, part)] = _position(keys[part], self._breaks)
        return out

    def get(self, path: Path, default: Any = None) -> Any:
        node = self.data
        for part in path:
            if isinstance(node, dict):
                if not (isinstance(part, str) and part in node):
                    return default
            elif isinstance(node, list):
                if not (isinstance(part, int) and 0 <= part < len(node)):
                    return default
            else:
                return default
            node = node[part]
        return node


class _Abort(Exception):
    """Stop building: the document exceeded a limit (already reported)."""


def _finding(
    doc: Document,
    code: str,
    line: int,
    column: int,
    message: str,
    severity: Severity = Severity.ERROR,
    related: tuple[tuple[str, int, int], ...] = (),
) -> None:
    count = doc._counts[code] = doc._counts.get(code, 0) + 1
    if count > MAX_FINDINGS_PER_RULE:
        return
    line = min(max(line, 1), doc.line_count)
    doc.findings.append(
        Finding(doc.path, line, max(column, 1), code, severity, message, _NAMES[code], related)
    )


def not_shown(finding: Finding, hidden: int | None = None) -> Finding:
    """``finding`` with a note that more findings like it were left out."""
    count = f"{hidden:,} more" if hidden is not None else "more"
    return replace(
        finding, message=f"{finding.message} (and {count} like this in this file, not shown)"
    )


def capped(findings: Iterable[Finding], limit: int = MAX_FINDINGS_PER_RULE) -> list[Finding]:
    """At most ``limit`` findings, taken lazily (so a flood costs no more than ``limit``)."""
    out: list[Finding] = []
    for finding in findings:
        if len(out) == limit:
            out[-1] = not_shown(out[-1])
            break
        out.append(finding)
    return out


def _line_col(text: str, offset: int) -> Position:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _bytes_line_col(raw: bytes, offset: int) -> Position:
    line = raw.count(b"\n", 0, offset) + 1
    return line, offset - (raw.rfind(b"\n", 0, offset) + 1) + 1


def _lines_only(raw: bytes) -> str:
    """Text with the lines of ``raw`` and nothing in them: an unreadable file still has a
    line count (findings stay within it), but no suppression comments."""
    return "\n" * raw.count(b"\n") + ("" if raw.endswith(b"\n") else " ")


def decode(path: str, raw: bytes, limits: Limits) -> Document:
    """Turn bytes into text, reporting what keeps a file from being read as UTF-8 YAML."""
    doc = Document(path, "")
    if len(raw) > limits.max_bytes:
        _finding(
            doc,
            TOO_LARGE,
            1,
            1,
            f"file is {len(raw):,} bytes, over the limit of {limits.max_bytes:,}; split it, "
            "move bulk data into a fixture, or raise [lint] max_file_bytes in evalcase.toml",
        )
        return doc
    if raw.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        _finding(
            doc,
            ENCODING,
            1,
            1,
            "file is UTF-16 or UTF-32 encoded; save it as UTF-8 without a byte-order mark",
        )
        return doc
    nul = raw.find(b"\x00")
    if nul >= 0:
        line, col = _bytes_line_col(raw, nul)
        doc.text = _lines_only(raw)
        _finding(
            doc,
            ENCODING,
            line,
            col,
            "file contains a NUL byte: it is binary, not YAML text; "
            "replace it with a UTF-8 text file",
        )
        return doc
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
        _finding(
            doc,
            TEXT_HYGIENE,
            1,
            1,
            "file starts with a UTF-8 byte-order mark; remove it",
            Severity.WARNING,
        )
    try:
        doc.text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _bytes_line_col(raw, exc.start)
        doc.text = _lines_only(raw)
        _finding(
            doc,
            ENCODING,
            line,
            col,
            f"byte 0x{raw[exc.start]:02x} is not valid UTF-8; re-save the file as UTF-8",
        )
        return doc
    crlf = doc.text.find("\r\n")
    if crlf >= 0:
        line, col = _line_col(doc.text, crlf)
        _finding(
            doc,
            TEXT_HYGIENE,
            line,
            col,
            "Windows line endings (CRLF); use LF line endings (e.g. `git add --renormalize`)",
            Severity.WARNING,
        )
    odd = _ODD_BREAK.search(doc.text) if _may_break_oddly(doc.text) else None
    if odd is not None:
        line, col = _line_col(doc.text, odd.start())
        char = odd.group()
        fix = (
            "use LF line endings"
            if char == "\r"
            else f"write it as the escape \\u{ord(char):04x} inside a double-quoted string"
        )
        _finding(
            doc,
            TEXT_HYGIENE,
            line,
            col,
            f"{_ODD_BREAK_NAMES[char]}: YAML 1.1 parsers (libyaml, PyYAML) and some editors "
            f"break the line there, git does not, so tools disagree on lines and values; {fix}",
            Severity.WARNING,
        )
    bad = _FORBIDDEN_CHAR.search(doc.text)
    if bad is not None:
        line, col = _line_col(doc.text, bad.start())
        code = ord(bad.group())
        escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        _finding(
            doc,
            ENCODING,
            line,
            col,
            f"control character U+{code:04X} cannot appear in YAML text; delete it, or write "
            f"it as the escape {escape} inside a double-quoted string",
        )
    return doc


class _NotPlainJson(Exception):
    """The text is not JSON the fast path can take (the YAML builder reads it)."""


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _NotPlainJson("duplicate key")  # the YAML builder reports where
    return out


def _json_constant(name: str) -> Any:
    raise _NotPlainJson(name)


def _fits(data: Any, limits: Limits) -> bool:
    """Within the depth, value-count and integer-size limits (a walk level by level,
    without recursion)."""
    nodes, depth, level = 1, 1, [data]
    while level:
        if depth > limits.max_depth:
            return False
        below: list[Any] = []
        for value in level:
            values = value.values() if type(value) is dict else value
            nodes += len(values)
            for item in values:
                kind = type(item)
                if kind is dict or kind is list:
                    below.append(item)
                elif kind is int and item.bit_length() > limits.max_int_digits * 3:
                    return False  # over 0.9 x bits per digit: possibly too many digits
        if nodes > limits.max_nodes:
            return False
        level = below
        depth += 1
    return True


def _load_json(doc: Document, limits: Limits) -> bool:
    """A document written as one JSON object (a benchmark's database as a state fixture):
    read by the json C parser, tens of times faster than YAML events; JSON is YAML 1.2, so
    the data is the same. Positions inside it are not tracked (findings name its first
    line). Anything unusual (a duplicate key, NaN, a limit) goes to the YAML builder,
    which reports it where it is."""
    import json

    try:
        data = json.loads(doc.text, object_pairs_hook=_json_pairs, parse_constant=_json_constant)
    except (_NotPlainJson, ValueError, RecursionError):
        return False
    if not isinstance(data, dict) or not _fits(data, limits):
        return False
    doc.data = data
    return True


def load(path: str, raw: bytes, limits: Limits | None = None) -> Document:
    """Load one YAML file. Never raises for anything the file contains."""
    limits = limits or Limits()
    doc = decode(path, raw, limits)
    readable = not any(f.severity is Severity.ERROR for f in doc.findings)
    if readable and not (doc.text.lstrip()[:1] == "{" and _load_json(doc, limits)):
        _Builder(doc, limits).run()
    for code, count in doc._counts.items():
        if count > MAX_FINDINGS_PER_RULE:
            last = max(i for i, f in enumerate(doc.findings) if f.code == code)
            doc.findings[last] = not_shown(doc.findings[last], count - MAX_FINDINGS_PER_RULE)
    return doc


# What else a parser may raise on hostile input; reported as a syntax finding.
_PARSE_ERRORS: tuple[type[BaseException], ...] = (ValueError, RecursionError, MemoryError)


class _LibYAML(NamedTuple):
    parser: Any  # CParser(text): check_event(), get_event(), dispose()
    events: Any  # the module of its event classes
    marked_errors: tuple[type[BaseException], ...]
    errors: tuple[type[BaseException], ...]


@cache
def _libyaml() -> _LibYAML:
    """libyaml's event parser. PyYAML's binding (installed with pre-commit) makes the
    same events as ruamel.yaml's in about 60 % of the time (event objects are built in
    Python, and PyYAML's are lighter); half of a cold lint is YAML, so it is used when
    present. Both bindings wrap the same C parser: the events, marks and messages agree.
    ruamel.yaml is imported only without PyYAML: the commit hook parses one file, and
    the second binding would cost it 25 ms of import."""
    try:
        import yaml  # type: ignore[import-untyped]
        from yaml import events as pyyaml_events
        from yaml._yaml import CParser as PyYAMLParser  # type: ignore[import-untyped]
    except ImportError:
        from ruamel.yaml import events as ruamel_events
        from ruamel.yaml.cyaml import CParser  # type: ignore[attr-defined]
        from ruamel.yaml.error import MarkedYAMLError, YAMLError

        return _LibYAML(CParser, ruamel_events, (MarkedYAMLError,), (YAMLError, *_PARSE_ERRORS))
    return _LibYAML(
        PyYAMLParser, pyyaml_events, (yaml.MarkedYAMLError,), (yaml.YAMLError, *_PARSE_ERRORS)
    )


def _position(mark: Any, breaks: tuple[list[int], list[int]] | None) -> Position:
    """A libyaml mark as a 1-based (line, column) in '\\n'-numbered lines.

    libyaml also breaks lines at a lone CR, NEL, U+2028 and U+2029; those lines are
    folded back into the line git and editors show.
    """
    line, col = mark.line + 1, mark.column + 1
    if breaks is not None:
        starts, offsets = breaks
        n = bisect_right(starts, mark.line)
        if n and starts[n - 1] == mark.line:
            col += offsets[n - 1]
        line -= n
    return line, col


class _Builder:
    def __init__(self, doc: Document, limits: Limits) -> None:
        self.doc = doc
        self.limits = limits
        # anchor -> (value, values it expands to, levels of nesting it adds)
        self.anchors: dict[str, tuple[Any, int, int]] = {}
        self.breaks = doc._breaks = _odd_breaks(doc.text)

    def _pos(self, mark: Any) -> Position:
        return _position(mark, self.breaks)

    def run(self) -> None:
        libyaml = _libyaml()
        parser = libyaml.parser(self.doc.text)
        try:
            self._build(parser, libyaml.events)
        except _Abort:
            self.doc.data = None
        except libyaml.marked_errors as exc:
            self.doc.data = None
            self._syntax_error(exc)
        except libyaml.errors as exc:
            self.doc.data = None
            _finding(self.doc, SYNTAX, 1, 1, f"cannot parse YAML: {exc}")
        finally:
            parser.dispose()

    def _syntax_error(self, exc: Any) -> None:
        mark = exc.problem_mark or exc.context_mark
        line, col = self._pos(mark) if mark is not None else (1, 1)
        if "maximum nesting depth" in str(exc.problem):
            # libyaml's own limit (1,000 levels), met while it reads ahead in flow
            # collections before evalcase's lower one could be.
            _finding(
                self.doc,
                RESOURCE_LIMIT,
                line,
                col,
                f"nesting deeper than {self.limits.max_depth} levels; flatten the structure",
            )
            return
        problem = exc.problem or "invalid YAML"
        lines = self.doc.text.split("\n")
        char = lines[line - 1][col - 1 : col] if 0 < line <= len(lines) else ""
        if char == "\t":
            message = "tab character: YAML indents with spaces only; replace tabs with spaces"
        else:
            message = f"YAML syntax error: {problem}"
            if exc.context:
                message += f" ({exc.context}"
                if exc.context_mark is not None and exc.context_mark is not mark:
                    message += f" started at line {self._pos(exc.context_mark)[0]}"
                message += ")"
            odd = _ODD_BREAK.search(self.doc.text) if self.breaks is not None else None
            if odd is not None:
                where = _line_col(self.doc.text, odd.start())
                message += (
                    f"; the {_ODD_BREAK_NAMES[odd.group()]} at line {where[0]}, column "
                    f"{where[1]} is read as a line break"
                )
        _finding(self.doc, SYNTAX, line, col, message)

    def _too_many(self, mark: Any) -> NoReturn:
        _finding(
            self.doc,
            RESOURCE_LIMIT,
            *self._pos(mark),
            f"document expands to more than {self.limits.max_nodes:,} values "
            "(alias expansion?); write the values out or raise [lint] max_nodes",
        )
        raise _Abort

    def _build(self, parser: Any, ev: Any) -> None:
        # The hot loop of a cold lint (a few hundred events per case, 100,000 cases): the
        # open container's state lives in local variables, the scalar cases of _scalar and
        # _take_key that recur in every file are inlined, and where each value came from
        # is a libyaml mark kept in its container's table (see Document._tables).
        doc = self.doc
        pos = self._pos
        anchors = self.anchors
        tables = doc._tables
        max_depth = self.limits.max_depth
        max_nodes = self.limits.max_nodes
        plain_values = _PLAIN_VALUES
        get_event = parser.get_event
        scalar_event, alias_event = ev.ScalarEvent, ev.AliasEvent
        mapping_start, sequence_start = ev.MappingStartEvent, ev.SequenceStartEvent
        mapping_end, sequence_end = ev.MappingEndEvent, ev.SequenceEndEvent
        document_start, stream_end = ev.DocumentStartEvent, ev.StreamEndEvent
        nothing, no_key, dropped, merge = _NOTHING, _NO_KEY, _DROPPED, _MERGE
        nodes = 0
        # The open container: itself, whether a mapping, marks of its values and of its
        # keys, the pending key (or _NO_KEY, _DROPPED), levels of its deepest child, path.
        container: Any = None
        is_map = False
        marks: Any = None
        keys: Any = None
        key: Any = no_key
        deepest = 0
        path: Path = ()  # of the open container
        # Each entry: the enclosing container's state as above, then the open
        # container's nodes at start, anchor and start mark.
        stack: list[tuple[Any, ...]] = []
        documents = 0
        root: Any = nothing
        root_mark: Any = None
        while True:
            event = get_event()
            if event is None:
                break
            cls = event.__class__
            if cls is scalar_event:
                nodes += 1
                if nodes > max_nodes:
                    self._too_many(event.start_mark)
                if event.tag is None:
                    if event.implicit[0]:
                        value = plain_values.get(event.value, nothing)
                        if value is nothing:
                            value = self._scalar(event)
                    else:
                        value = event.value
                else:
                    value = self._scalar(event)
                if event.anchor:
                    anchors[event.anchor] = (value, 1, 0)
                mark = event.start_mark
                height = 0
            elif cls is mapping_start or cls is sequence_start:
                nodes += 1
                if nodes > max_nodes:
                    self._too_many(event.start_mark)
                if event.tag is not None:
                    self._check_tag(event)
                if len(stack) >= max_depth:
                    self._too_deep(event.start_mark)
                stack.append(
                    (container, is_map, marks, keys, key, deepest, path, nodes, event.anchor,
                     event.start_mark)
                )  # fmt: skip
                if container is None:
                    path = ()
                elif not is_map:
                    path = (*path, len(container))
                elif key is no_key:
                    # A key that is a mapping or list (reported, never kept): a path no
                    # value of the data can have.
                    path = (*path, no_key)
                else:
                    path = (*path, key)
                if cls is mapping_start:
                    container, is_map, marks, keys = {}, True, {}, {}
                else:
                    container, is_map, marks, keys = [], False, [], None
                tables[path] = (marks, keys)
                key = no_key
                deepest = 0
                continue
            elif cls is mapping_end or cls is sequence_end:
                value, height = container, deepest + 1
                (container, is_map, marks, keys, key, deepest, path, start, anchor,
                 mark) = stack.pop()  # fmt: skip
                if anchor:
                    anchors[anchor] = (value, nodes - start + 1, height)
            elif cls is alias_event:
                target = anchors.get(event.anchor)
                if target is None:  # libyaml reports undefined aliases itself; belt and braces
                    _finding(
                        doc,
                        SYNTAX,
                        *pos(event.start_mark),
                        f"alias *{_clip(event.anchor)} refers to no anchor (an anchor cannot "
                        "be used inside itself); write the value out",
                    )
                    raise _Abort
                nodes += target[1]
                if nodes > max_nodes:
                    self._too_many(event.start_mark)
                # The alias stands for a copy of its target: its nesting counts here too.
                if len(stack) + target[2] > max_depth:
                    self._too_deep(event.start_mark, event.anchor)
                value, mark, height = target[0], event.start_mark, target[2]
            elif cls is document_start:
                documents += 1
                if documents > 1:
                    _finding(
                        doc,
                        NOT_A_MAPPING,
                        *pos(event.start_mark),
                        "a second YAML document ('---'): one case or fixture per file; "
                        "move it to a file of its own",
                    )
                    break
                continue
            elif cls is stream_end:
                break
            else:
                continue
            # The value (scalar, finished container or alias) goes into the open container.
            if container is None:
                root, root_mark = ("<<" if value is merge else value), mark
                continue
            if height > deepest:
                deepest = height
            if not is_map:
                container.append("<<" if value is merge else value)
                marks.append(mark)
            elif key is no_key:
                if type(value) is str and value not in keys:
                    keys[value] = mark
                    key = value
                else:
                    key = self._take_key(keys, value, mark)
            else:
                if key is not dropped:
                    container[key] = "<<" if value is merge else value
                    marks[key] = mark
                key = no_key
        if root is nothing or root is None:
            has_comment = any(line.strip().startswith("#") for line in doc.text.splitlines())
            what = "only comments" if has_comment else "nothing"
            _finding(
                doc,
                NOT_A_MAPPING,
                1,
                1,
                f"file contains {what}; a case, manifest or fixture is a YAML mapping "
                "(key: value lines)",
            )
            return
        if not isinstance(root, dict):
            kind = "a list" if isinstance(root, list) else f"a single {type(root).__name__} value"
            _finding(
                doc,
                NOT_A_MAPPING,
                *pos(root_mark),
                f"top level is {kind}; a case, manifest or fixture is a YAML mapping "
                "(key: value lines)",
            )
            return
        doc.data = root
        doc._root_mark = root_mark

    def _too_deep(self, mark: Any, alias: str | None = None) -> NoReturn:
        through = f" (through alias *{_clip(alias)})" if alias is not None else ""
        _finding(
            self.doc,
            RESOURCE_LIMIT,
            *self._pos(mark),
            f"nesting deeper than {self.limits.max_depth} levels{through}; flatten the "
            "structure or raise [lint] max_depth",
        )
        raise _Abort

    def _take_key(self, seen: dict[str, Any], key: Any, mark: Any) -> Any:
        """The pending key of a mapping after ``key`` was read (_DROPPED when its entry
        is not kept); ``seen``: the marks of the mapping's keys so far."""
        line, col = self._pos(mark)
        doc = self.doc
        if key is _MERGE:
            _finding(
                doc,
                MERGE_KEY,
                line,
                col,
                "merge key '<<' is not allowed: merged fields are invisible in review diffs; "
                "write the fields out",
            )
            return _DROPPED
        if not isinstance(key, str):
            what = _KEY_KINDS.get(type(key), "a mapping or list")
            text = doc.numbers.get((line, col))
            if text is not None:
                message = (
                    f"key {_clip(text)} is read by YAML 1.2 as the number {_prints_as(key)}, "
                    f"not a string (a YAML 1.1 writer such as PyYAML leaves it unquoted); "
                    f"quote it: '{_clip(text)}'"
                )
            else:
                message = f"key is {what}, not a string; quote it or use a plain name"
            _finding(doc, KEY_TYPE, line, col, message)
            return _DROPPED
        first_mark = seen.get(key)
        if first_mark is not None:
            first = self._pos(first_mark)
            _finding(
                doc,
                DUPLICATE_KEY,
                line,
                col,
                f"duplicate key '{_clip(key)}': first defined at line {first[0]}, again at line "
                f"{line}; keep one (only one value would survive loading)",
                related=((doc.path, first[0], first[1]),),
            )
            return _DROPPED
        seen[key] = mark
        return key

    def _check_tag(self, event: Any) -> bool:
        tag = event.tag
        if tag is None or tag in _STANDARD_TAGS:
            return True
        _finding(
            self.doc,
            UNSAFE_TAG,
            *self._pos(event.start_mark),
            f"YAML tag '{_clip(_short_tag(tag))}' is not allowed: evalcase never constructs "
            "objects from tags; remove the tag",
        )
        return False

    def _scalar(self, event: Any) -> Any:
        value: str = event.value
        tag = event.tag
        if tag is not None:
            if not self._check_tag(event) or tag in (_YAML + "str", "!"):
                return value
            resolved = tag
        elif event.implicit[0]:
            known = _PLAIN_VALUES.get(value, _NOTHING)
            if known is not _NOTHING:
                return known
            resolved = _resolve_plain(value)
            if resolved == _YAML + "str" or resolved == _YAML + "timestamp":
                _remember(value, value)
                return value
        else:
            return value
        if resolved == _YAML + "str" or resolved == _YAML + "timestamp":
            return value
        if resolved == _YAML + "null":
            if tag is None:
                _remember(value, None)
            return None
        if resolved == _YAML + "bool":
            low = value.lower()
            if low in ("true", "false"):
                if tag is None:
                    _remember(value, low == "true")
                return low == "true"
            return self._bad_number(event, f"'{_clip(value)}' is not a boolean (true or false)")
        if resolved == _YAML + "merge":
            return _MERGE
        if resolved == _YAML + "int":
            number = self._int(event, value)
        elif resolved == _YAML + "float":
            number = self._float(event, value)
        else:
            return value
        if tag is None and not isinstance(number, str):
            if _prints_as(number) == value:
                _remember(value, number)
            else:  # never memoized: each occurrence is recorded where it is
                self.doc.numbers[self._pos(event.start_mark)] = value
        return number

    def _int(self, event: Any, value: str) -> Any:
        text = value.replace("_", "")
        sign = -1 if text.startswith("-") else 1
        text = text.lstrip("+-")
        digits = len(text)
        if digits > self.limits.max_int_digits:
            return self._bad_number(
                event,
                f"integer with {digits:,} digits (limit {self.limits.max_int_digits:,}); "
                "quote it if it is an identifier",
            )
        base = {"0o": 8, "0x": 16, "0b": 2}.get(text[:2].lower(), 10)
        try:
            number = sign * int(text[2:] if base != 10 else text, base)
        except ValueError:
            return self._bad_number(event, f"'{_clip(value)}' is not a valid integer")
        # Hex, octal and binary digits are fewer than the decimal digits of their value,
        # which Python (and JSON) would refuse to print.
        if base != 10 and abs(number) >= 10**self.limits.max_int_digits:
            return self._bad_number(
                event,
                f"integer '{_clip(value)}' has more than {self.limits.max_int_digits:,} decimal "
                "digits; quote it if it is an identifier",
            )
        return number

    def _float(self, event: Any, value: str) -> Any:
        # .nan, .inf and -.inf (any case) are YAML's; 1e999 overflows, !!float nan is NaN.
        special = value[-4:].lower() in (".nan", ".inf")
        try:
            number = math.nan if special else float(value.replace("_", ""))
        except ValueError:
            return self._bad_number(event, f"'{_clip(value)}' is not a valid number")
        if special or not math.isfinite(number):
            return self._bad_number(
                event,
                f"'{_clip(value)}' is not a finite number; NaN and infinities cannot be compared "
                "or stored as JSON: write a finite number",
            )
        return number

    def _bad_number(self, event: Any, message: str) -> str:
        _finding(self.doc, BAD_NUMBER, *self._pos(event.start_mark), message)
        # Kept as text so nothing downstream ever sees a NaN or a giant int.
        return str(event.value)


# ruamel.yaml's YAML 1.2 resolver table (ruamel.yaml.resolver.VersionedResolver for
# version 1.2): the first character of a plain scalar -> (tag, pattern) in the order
# tried. Copied, because importing ruamel.yaml for it costs the commit hook 20 ms while
# PyYAML parses; tests/test_loader.py keeps the copy equal to ruamel.yaml's own table.
_FLOAT_12 = r"""^(?:
         [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$"""
_INT_12 = r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0o?[0-7_]+
        |[-+]?[0-9_]+
        |[-+]?0x[0-9a-fA-F_]+)$"""
_TIMESTAMP_12 = r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
        |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
        (?:[Tt]|[ \t]+)[0-9][0-9]?
        :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$"""
_NULL_12 = r"""^(?: ~
        |null|Null|NULL
        | )$"""
_BOOL_12 = r"^(?:true|True|TRUE|false|False|FALSE)$"
_VERBOSE = re.X | re.U


def _resolver_table() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    """The table above, compiled: {first character: [(tag, pattern), ...]}."""
    number = [(_YAML + "float", re.compile(_FLOAT_12, _VERBOSE)),
              (_YAML + "int", re.compile(_INT_12, _VERBOSE))]  # fmt: skip
    dated = [*number, (_YAML + "timestamp", re.compile(_TIMESTAMP_12, _VERBOSE))]
    null = [(_YAML + "null", re.compile(_NULL_12, _VERBOSE))]
    table: dict[str, list[tuple[str, re.Pattern[str]]]] = {
        c: [(_YAML + "bool", re.compile(_BOOL_12, _VERBOSE))] for c in "tTfF"
    }
    table.update({"-": number, "+": number, **{d: dated for d in "0123456789"}})
    table["."] = number[:1]
    table["<"] = [(_YAML + "merge", re.compile(r"^(?:<<)$", re.U))]
    table.update({c: null for c in ("~", "n", "N", "")})
    table["="] = [(_YAML + "value", re.compile(r"^(?:=)$", re.U))]
    yaml_chars = [(_YAML + "yaml", re.compile(r"^(?:!|&|\*)$", re.U))]
    table.update({c: yaml_chars for c in "!&*"})
    return table


_RESOLVERS: dict[str, list[tuple[str, re.Pattern[str]]]] | None = None
# Plain scalars recur a lot (keys, enum values): their resolved values are memoized.
# Only values that resolve without a finding are stored, so findings are never skipped.
_PLAIN_VALUES: dict[str, Any] = {}
_PLAIN_LIMIT = 100_000


def _resolve_plain(value: str) -> str:
    """The YAML 1.2 core-schema tag of a plain scalar, from ruamel.yaml's resolver table."""
    global _RESOLVERS
    if _RESOLVERS is None:
        _RESOLVERS = _resolver_table()
    if value == "":
        return _YAML + "null"
    for tag, regexp in _RESOLVERS.get(value[0], ()):
        if regexp.match(value):
            return tag
    return _YAML + "str"


def _prints_as(number: int | float) -> str:
    """How a number is written back (JSON, YAML, Python): 12, 1.5, 6634000000.0."""
    return repr(number)


def _remember(text: str, value: Any) -> None:
    if len(text) > 64:
        return
    if len(_PLAIN_VALUES) >= _PLAIN_LIMIT:
        _PLAIN_VALUES.clear()
    _PLAIN_VALUES[text] = value


_KEY_KINDS: dict[type, str] = {
    int: "a number",
    float: "a number",
    bool: "true or false (a boolean)",
    type(None): "empty (null)",
}


def _clip(text: str, limit: int = 60) -> str:
    """Text quoted in a message, shortened: a hostile key or tag can be a megabyte long."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _odd_breaks(text: str) -> tuple[list[int], list[int]] | None:
    """Where libyaml's line numbering departs from git's, or None when it never does.

    For each lone CR, NEL, U+2028 or U+2029: the 0-based libyaml line it starts, and the
    column offset of that line's start within the real ('\\n'-separated) line.
    """
    if not _may_break_oddly(text) or _ODD_BREAK.search(text) is None:
        return None
    starts: list[int] = []
    offsets: list[int] = []
    newlines = 0
    scanned = 0
    for match in _ODD_BREAK.finditer(text):
        end = match.end()
        newlines += text.count("\n", scanned, end)
        scanned = end
        starts.append(newlines + len(starts) + 1)
        offsets.append(end - (text.rfind("\n", 0, end) + 1))
    return starts, offsets


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML) :] if tag.startswith(_YAML) else tag


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_NOTHING: Any = _Sentinel("<nothing>")
_NO_KEY: Any = _Sentinel("<no key>")
_DROPPED: Any = _Sentinel("<dropped>")
_MERGE: Any = _Sentinel("<<")


def _string_paths(data: Any) -> list[tuple[Path, str]]:
    """The string values of ``data`` with their paths, in :func:`iter_paths` order. The
    same walk without a path for every value (three rules scan every file's strings)."""
    if isinstance(data, str):
        return [((), data)]
    found: list[tuple[Path, str]] = []
    if not (isinstance(data, dict | list) and data):
        return found
    stack: list[tuple[Path, Iterator[tuple[Any, Any]]]] = [
        ((), iter(data.items() if isinstance(data, dict) else enumerate(data)))
    ]
    append = found.append
    while stack:
        path, children = stack[-1]
        for key, value in children:
            kind = type(value)
            if kind is str:
                append(((*path, key), value))
            elif kind is dict or kind is list or isinstance(value, dict | list):
                if value:
                    items = value.items() if isinstance(value, dict) else enumerate(value)
                    stack.append(((*path, key), iter(items)))
                    break
            elif isinstance(value, str):
                append(((*path, key), value))
        else:
            stack.pop()
    return found


def iter_paths(data: Any, prefix: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every (path, value) in ``data``, depth first, without recursion.

    Children are visited lazily, so only the paths of one branch are alive at a time.
    """
    yield prefix, data
    stack: list[tuple[Path, Iterator[tuple[Any, Any]]]] = []
    if isinstance(data, dict | list) and data:
        stack.append((prefix, iter(data.items() if isinstance(data, dict) else enumerate(data))))
    while stack:
        path, children = stack[-1]
        for key, value in children:
            child = (*path, key)
            yield child, value
            if isinstance(value, dict | list) and value:
                items = value.items() if isinstance(value, dict) else enumerate(value)
                stack.append((child, iter(items)))
            break
        else:
            stack.pop()
