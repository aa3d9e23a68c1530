"""The only YAML reader in evalcase.

Files are untrusted: they arrive in pull requests and are derived from production logs.
So the loader never constructs objects from tags and never recurses: it drives libyaml's
event parser (ruamel.yaml's C extension) and builds plain dicts, lists and scalars with
an explicit stack, recording the line and column of every key and value. Resource limits
(size, depth, alias expansion) are checked while building, so a hostile file costs
bounded time and memory and turns into a Finding like any other mistake.

YAML 1.2 core schema: ``yes``/``no`` are strings, timestamps stay strings, and only the
standard tags (str, int, float, bool, null, map, seq) are honoured.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from evalcase.model import Finding, Severity

Path = tuple[str | int, ...]
Position = tuple[int, int]

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
    positions: dict[Path, Position] = field(default_factory=dict)
    key_positions: dict[Path, Position] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the file parsed to a mapping that rules can inspect."""
        return isinstance(self.data, dict)

    @property
    def line_count(self) -> int:
        return max(1, self.text.count("\n") + (0 if self.text.endswith("\n") else 1))

    def locate(self, path: Path) -> Position:
        """Where the value at ``path`` starts; the nearest located ancestor otherwise."""
        path = tuple(path)
        while path:
            pos = self.positions.get(path)
            if pos is not None:
                return pos
            path = path[:-1]
        return self.positions.get((), (1, 1))

    def locate_key(self, path: Path) -> Position:
        """Where the key of the mapping entry at ``path`` is (the value's place otherwise)."""
        pos = self.key_positions.get(tuple(path))
        return pos if pos is not None else self.locate(path)

    def get(self, path: Path, default: Any = None) -> Any:
        node = self.data
        for part in path:
            in_mapping = isinstance(part, str) and isinstance(node, dict) and part in node
            in_list = isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node)
            if not (in_mapping or in_list):
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
    line = min(max(line, 1), doc.line_count)
    doc.findings.append(
        Finding(doc.path, line, max(column, 1), code, severity, message, _NAMES[code], related)
    )


def _line_col(text: str, offset: int) -> Position:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _bytes_line_col(raw: bytes, offset: int) -> Position:
    line = raw.count(b"\n", 0, offset) + 1
    return line, offset - (raw.rfind(b"\n", 0, offset) + 1) + 1


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
        doc.text = "\n" * (line - 1)
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
        doc.text = "\n" * (line - 1)
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
    return doc


def load(path: str, raw: bytes, limits: Limits | None = None) -> Document:
    """Load one YAML file. Never raises for anything the file contains."""
    limits = limits or Limits()
    doc = decode(path, raw, limits)
    if any(f.severity is Severity.ERROR for f in doc.findings):
        return doc
    _Builder(doc, limits).run()
    return doc


class _Builder:
    def __init__(self, doc: Document, limits: Limits) -> None:
        self.doc = doc
        self.limits = limits
        self.nodes = 0
        self.anchors: dict[str, tuple[Any, int]] = {}

    def run(self) -> None:
        from ruamel.yaml.cyaml import CParser  # type: ignore[attr-defined]
        from ruamel.yaml.error import MarkedYAMLError, YAMLError

        parser = CParser(self.doc.text)
        try:
            self._build(parser)
        except _Abort:
            self.doc.data = None
        except MarkedYAMLError as exc:
            self.doc.data = None
            self._syntax_error(exc)
        except (YAMLError, ValueError, RecursionError, MemoryError) as exc:
            self.doc.data = None
            _finding(self.doc, SYNTAX, 1, 1, f"cannot parse YAML: {exc}")
        finally:
            parser.dispose()

    def _syntax_error(self, exc: Any) -> None:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
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
                    message += f" started at line {exc.context_mark.line + 1}"
                message += ")"
        _finding(self.doc, SYNTAX, line, col, message)

    def _count(self, n: int, mark: Any) -> None:
        self.nodes += n
        if self.nodes > self.limits.max_nodes:
            _finding(
                self.doc,
                RESOURCE_LIMIT,
                mark.line + 1,
                mark.column + 1,
                f"document expands to more than {self.limits.max_nodes:,} values "
                "(alias expansion?); write the values out or raise [lint] max_nodes",
            )
            raise _Abort

    def _build(self, parser: Any) -> None:
        from ruamel.yaml import events as ev

        doc = self.doc
        # Each frame: [container, path, pending key (or _NO_KEY), key mark, seen keys,
        #              nodes at start, anchor]
        stack: list[list[Any]] = []
        documents = 0
        root: Any = _NOTHING
        root_mark: Any = None

        def attach(value: Any, mark: Any, size: int) -> None:
            nonlocal root, root_mark
            if not stack:
                root, root_mark = ("<<" if value is _MERGE else value), mark
                return
            frame = stack[-1]
            container = frame[0]
            if value is _MERGE and not (isinstance(container, dict) and frame[2] is _NO_KEY):
                value = "<<"
            if isinstance(container, list):
                path = (*frame[1], len(container))
                container.append(value)
                doc.positions[path] = (mark.line + 1, mark.column + 1)
                return
            key = frame[2]
            if key is _NO_KEY:
                self._take_key(frame, value, mark)
                return
            frame[2] = _NO_KEY
            if key is _DROPPED:
                return
            path = (*frame[1], key)
            container[key] = value
            doc.positions[path] = (mark.line + 1, mark.column + 1)
            doc.key_positions[path] = frame[3]

        while parser.check_event():
            event = parser.get_event()
            cls = event.__class__
            if cls is ev.ScalarEvent:
                self._count(1, event.start_mark)
                value = self._scalar(event)
                if event.anchor:
                    self.anchors[event.anchor] = (value, 1)
                attach(value, event.start_mark, 1)
            elif cls is ev.MappingStartEvent or cls is ev.SequenceStartEvent:
                self._count(1, event.start_mark)
                self._check_tag(event)
                if len(stack) >= self.limits.max_depth:
                    _finding(
                        doc,
                        RESOURCE_LIMIT,
                        event.start_mark.line + 1,
                        event.start_mark.column + 1,
                        f"nesting deeper than {self.limits.max_depth} levels; flatten the "
                        "structure or raise [lint] max_depth",
                    )
                    raise _Abort
                container: Any = {} if cls is ev.MappingStartEvent else []
                in_key = bool(stack) and isinstance(stack[-1][0], dict) and stack[-1][2] is _NO_KEY
                if not stack:
                    path: Path = ()
                elif in_key:
                    path = (*stack[-1][1], "<complex key>")
                elif isinstance(stack[-1][0], list):
                    path = (*stack[-1][1], len(stack[-1][0]))
                else:
                    path = (*stack[-1][1], stack[-1][2])
                stack.append(
                    [container, path, _NO_KEY, None, {}, self.nodes, event.anchor, event.start_mark]
                )
            elif cls is ev.MappingEndEvent or cls is ev.SequenceEndEvent:
                frame = stack.pop()
                size = self.nodes - frame[5] + 1
                if frame[6]:
                    self.anchors[frame[6]] = (frame[0], size)
                attach(frame[0], frame[7], size)
            elif cls is ev.AliasEvent:
                target = self.anchors.get(event.anchor)
                if target is None:  # libyaml reports undefined aliases itself; belt and braces
                    _finding(
                        doc,
                        SYNTAX,
                        event.start_mark.line + 1,
                        event.start_mark.column + 1,
                        f"alias *{event.anchor} refers to no anchor",
                    )
                    raise _Abort
                self._count(target[1], event.start_mark)
                attach(target[0], event.start_mark, target[1])
            elif cls is ev.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    _finding(
                        doc,
                        NOT_A_MAPPING,
                        event.start_mark.line + 1,
                        event.start_mark.column + 1,
                        "a second YAML document ('---'): one case or fixture per file; "
                        "move it to a file of its own",
                    )
                    break
        if root is _NOTHING or root is None:
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
                root_mark.line + 1,
                root_mark.column + 1,
                f"top level is {kind}; a case, manifest or fixture is a YAML mapping "
                "(key: value lines)",
            )
            return
        doc.data = root
        doc.positions[()] = (root_mark.line + 1, root_mark.column + 1)

    def _take_key(self, frame: list[Any], key: Any, mark: Any) -> None:
        line, col = mark.line + 1, mark.column + 1
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
            frame[2] = _DROPPED
            return
        if not isinstance(key, str):
            what = "a mapping or list" if isinstance(key, dict | list) else type(key).__name__
            _finding(
                doc,
                KEY_TYPE,
                line,
                col,
                f"key is {what}, not a string; quote it or use a plain name",
            )
            frame[2] = _DROPPED
            return
        seen: dict[str, Position] = frame[4]
        first = seen.get(key)
        if first is not None:
            _finding(
                doc,
                DUPLICATE_KEY,
                line,
                col,
                f"duplicate key '{key}': first defined at line {first[0]}, again at line "
                f"{line}; keep one (only one value would survive loading)",
                related=((doc.path, first[0], first[1]),),
            )
            frame[2] = _DROPPED
            return
        seen[key] = (line, col)
        frame[2] = key
        frame[3] = (line, col)

    def _check_tag(self, event: Any) -> bool:
        tag = event.tag
        if tag is None or tag in _STANDARD_TAGS:
            return True
        _finding(
            self.doc,
            UNSAFE_TAG,
            event.start_mark.line + 1,
            event.start_mark.column + 1,
            f"YAML tag '{_short_tag(tag)}' is not allowed: evalcase never constructs objects "
            "from tags; remove the tag",
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
            return self._bad_number(event, f"'{value}' is not a boolean (true or false)")
        if resolved == _YAML + "merge":
            return _MERGE
        if resolved == _YAML + "int":
            number = self._int(event, value)
        elif resolved == _YAML + "float":
            number = self._float(event, value)
        else:
            return value
        if tag is None and not isinstance(number, str):
            _remember(value, number)
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
        try:
            if text[:2] in ("0o", "0O"):
                return sign * int(text[2:], 8)
            if text[:2] in ("0x", "0X"):
                return sign * int(text[2:], 16)
            if text[:2] in ("0b", "0B"):
                return sign * int(text[2:], 2)
            return sign * int(text, 10)
        except ValueError:
            return self._bad_number(event, f"'{value}' is not a valid integer")

    def _float(self, event: Any, value: str) -> Any:
        try:
            number = float(value.replace("_", ""))
        except ValueError:
            low = value.lower()
            number = (
                math.nan
                if low == ".nan"
                else (-math.inf if low.startswith("-") else math.inf)
                if low.lstrip("+-") == ".inf"
                else None  # type: ignore[assignment]
            )
            if number is None:
                return self._bad_number(event, f"'{value}' is not a valid number")
        if math.isnan(number) or math.isinf(number):
            return self._bad_number(
                event,
                f"'{value}' is not a finite number; NaN and infinities cannot be compared "
                "or stored as JSON: write a finite number",
            )
        return number

    def _bad_number(self, event: Any, message: str) -> str:
        _finding(
            self.doc,
            BAD_NUMBER,
            event.start_mark.line + 1,
            event.start_mark.column + 1,
            message,
        )
        # Kept as text so nothing downstream ever sees a NaN or a giant int.
        return str(event.value)


_RESOLVERS: dict[str | None, list[tuple[str, Any]]] | None = None
# Plain scalars recur a lot (keys, enum values): their resolved values are memoized.
# Only values that resolve without a finding are stored, so findings are never skipped.
_PLAIN_VALUES: dict[str, Any] = {}
_PLAIN_LIMIT = 100_000


def _resolve_plain(value: str) -> str:
    """The YAML 1.2 core-schema tag of a plain scalar, from ruamel.yaml's resolver table."""
    global _RESOLVERS
    if _RESOLVERS is None:
        from ruamel.yaml.resolver import VersionedResolver

        table = VersionedResolver(version=(1, 2)).versioned_resolver
        _RESOLVERS = {k: [(str(tag), rx) for tag, rx in v] for k, v in table.items()}
    if value == "":
        return _YAML + "null"
    for tag, regexp in _RESOLVERS.get(value[0], ()):
        if regexp.match(value):
            return tag
    for tag, regexp in _RESOLVERS.get(None, ()):
        if regexp.match(value):
            return tag
    return _YAML + "str"


def _remember(text: str, value: Any) -> None:
    if len(text) > 64:
        return
    if len(_PLAIN_VALUES) >= _PLAIN_LIMIT:
        _PLAIN_VALUES.clear()
    _PLAIN_VALUES[text] = value


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


def iter_paths(data: Any, prefix: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every (path, value) in ``data``, depth first, without recursion."""
    stack: list[tuple[Path, Any]] = [(prefix, data)]
    while stack:
        path, value = stack.pop()
        yield path, value
        if isinstance(value, dict):
            stack.extend(((*path, k), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))
