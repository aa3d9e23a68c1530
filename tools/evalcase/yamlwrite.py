"""The round-trip YAML writer: edits that keep a file as its author wrote it.

`evalcase bump` changes a few scalar values in place. The file is parsed with
ruamel.yaml's round-trip loader (which knows where every value is and how it was
quoted) and only the characters of the edited values are replaced, so comments, key
order, quoting, indentation and line wrapping stay exactly as they were. Should a value
not sit where the parser says (an escaped or multi-line scalar), the document is dumped
by ruamel.yaml's round-trip dumper instead, which still keeps comments, order and quotes.
``evalcase fmt``, ``new`` and ``review-case`` write through the same dumper. Reading a
file for lint or a run is :mod:`evalcase.loader` (the only YAML reader).
"""

from __future__ import annotations

import math
import re
from functools import cache, lru_cache
from typing import Any

from evalcase.loader import Path

_PLAIN_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PLAIN_RESERVED = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"})


def _plain_ok(value: str) -> bool:
    return (
        bool(value)
        and set(value) <= _PLAIN_SAFE
        and value[0].isalpha()
        and value.lower() not in _PLAIN_RESERVED
    )


def _render_scalar(old: Any, new: str) -> str:
    """``new`` written in the style ``old`` was written in (plain, '...' or "...")."""
    import json

    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    if isinstance(old, SingleQuotedScalarString):
        return "'" + new.replace("'", "''") + "'"
    if isinstance(old, DoubleQuotedScalarString) or not _plain_ok(new):
        return json.dumps(new, ensure_ascii=False)
    return new


def set_scalars(text: str, values: dict[Path, str]) -> str:
    """``text`` with the scalar at each path replaced by a new string value.

    Paths name existing mapping entries (``("case_version",)``); a missing one is a
    KeyError. Only the edited values change; everything else is kept byte for byte.
    """
    from ruamel.yaml import YAML

    if not values:
        return text
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    data = yaml.load(text)
    line_starts = [0]
    newline = text.find("\n")
    while newline >= 0:
        line_starts.append(newline + 1)
        newline = text.find("\n", newline + 1)
    edits: list[tuple[int, int, str]] = []
    spliced = True
    for path, new in values.items():
        *parents, key = path
        node: Any = data
        for part in parents:
            node = node[part]
        mapping: Any = node  # a ruamel.yaml CommentedMap: knows where its values are
        if not isinstance(node, dict) or key not in node:
            raise KeyError(f"no value at {'.'.join(str(p) for p in path)}")
        old = mapping[key]
        line, col = mapping.lc.value(key)
        if line >= len(line_starts) or isinstance(old, dict | list):
            spliced = False
            break
        start = line_starts[line] + col
        if old is None or isinstance(old, bool):
            token = text[start:].split("\n", 1)[0].split(" #", 1)[0].rstrip()
        else:
            token = _render_scalar(old, str(old)) if isinstance(old, str) else str(old)
        end = start + len(token)
        after = text[end : end + 1]
        if text[start:end] != token or after not in ("", "\n", "\r", " ", "\t", ",", "}", "]"):
            spliced = False
            break
        edits.append((start, end, _render_scalar(old, new)))
    if spliced:
        for start, end, replacement in sorted(edits, reverse=True):
            text = text[:start] + replacement + text[end:]
        return text
    return _dump_with(yaml, data, values)


def _dump_with(yaml: Any, data: Any, values: dict[Path, str]) -> str:
    import io

    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    for path, new in values.items():
        *parents, key = path
        node: Any = data
        for part in parents:
            node = node[part]
        old = node[key]
        if isinstance(old, SingleQuotedScalarString):
            node[key] = SingleQuotedScalarString(new)
        elif isinstance(old, DoubleQuotedScalarString):
            node[key] = DoubleQuotedScalarString(new)
        else:
            node[key] = new
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _flow(value: Any) -> str:
    """A value as YAML flow text (strings plain when safe, else double-quoted)."""
    import json

    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    text = str(value)
    return text if _plain_ok(text) else json.dumps(text, ensure_ascii=False)


def append_to_list(text: str, path: Path, item: dict[str, Any]) -> str:
    """``text`` with ``item`` appended, as one flow-mapping line, to the block list at
    ``path`` (created, as the last key of its parent mapping, when absent). Everything
    else is kept byte for byte; when the list is not a block list the document is dumped
    by ruamel.yaml's round-trip dumper instead. The parent mapping must exist."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    data = yaml.load(text)
    *parents, key = path
    node: Any = data
    for part in parents:
        node = node[part]
    if not isinstance(node, dict):
        raise KeyError(f"no mapping at {'.'.join(str(p) for p in parents)}")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"

    def block_end(start: int, indent: int) -> int:
        """Index of the first line after ``start`` indented at most ``indent``."""
        end = start + 1
        while end < len(lines):
            stripped = lines[end].strip()
            indented = len(lines[end]) - len(lines[end].lstrip(" "))
            if stripped and not stripped.startswith("#") and indented <= indent:
                break
            end += 1
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        return end

    existing: Any = node.get(key)
    if key not in node:
        if not parents or not node:
            return _append_dump(yaml, data, node, key, item)
        grand: Any = data
        for part in parents[:-1]:
            grand = grand[part]
        parent_line, parent_col = grand.lc.key(parents[-1])
        mapping: Any = node
        child_col = mapping.lc.key(next(iter(node)))[1]
        end = block_end(parent_line, parent_col)
        pad = " " * child_col
        new = [f"{pad}{key}:\n", f"{pad}  - {_flow(item)}\n"]
        return "".join(lines[:end] + new + lines[end:])
    if not isinstance(existing, list) or not existing or existing.fa.flow_style():  # type: ignore[attr-defined]
        return _append_dump(yaml, data, node, key, item)
    block: Any = existing  # a ruamel.yaml CommentedSeq: knows where its items are
    last_line, dash_col = block.lc.item(len(block) - 1)
    dash_col -= 2  # lc.item points at the item's value, after "- "
    if last_line >= len(lines) or lines[last_line][dash_col : dash_col + 1] != "-":
        return _append_dump(yaml, data, node, key, item)
    end = block_end(last_line, dash_col)
    new_line = f"{' ' * dash_col}- {_flow(item)}\n"
    return "".join([*lines[:end], new_line, *lines[end:]])


def _append_dump(yaml: Any, data: Any, node: Any, key: Any, item: dict[str, Any]) -> str:
    import io

    node.setdefault(key, [])
    node[key].append(item)
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


# --- round-trip formatting ----------------------------------------------------------
# `evalcase fmt` and `evalcase new --from` rewrite whole files. They use ruamel.yaml's
# round-trip mode (comments, blank lines and quoting survive) through these two
# functions so that every YAML reader stays in this module. They are for files a person
# asked to rewrite; linting never goes through them.


def round_trip_load(text: str) -> Any:
    """The document in ``text`` as ruamel.yaml's commented containers (keeps comments,
    blank lines, quoting and flow style). Raises ruamel.yaml's YAMLError on bad YAML."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    return yaml.load(text)


def round_trip_dump(data: Any) -> str:
    """``data`` (from round_trip_load, or plain containers) as YAML text in evalcase's
    house style: two-space mappings, sequences indented two with the dash, no wrapping
    of long lines, UTF-8 text unescaped."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.allow_unicode = True
    # [{a: 1}] stays [{a: 1}], not the equivalent but surprising [a: 1].
    yaml.brace_single_entry_mapping_in_flow_sequence = True
    # An explicit null, not ruamel's empty value: readers see the value is meant.
    yaml.representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


_BREAKS = re.compile("[\n\r\x85\u2028\u2029\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class _NotPlain(Exception):
    pass


def _plain(value: Any) -> Any:
    """Plain dicts and lists of the data, or None when libyaml might write it otherwise
    than the round-trip dumper: a comment, a quoted or folded scalar of the round-trip
    loader, a line break or a very long string, a list in a list, a key that is no string
    or is ``<<`` (plain, a merge key), a value that is not JSON-like."""
    try:
        return _copy(value)
    except _NotPlain:
        return None


_SCALARS = (bool, int, float, type(None))


def _copy(value: Any) -> Any:
    if type(value) is str:
        if len(value) > 2000 or _BREAKS.search(value):
            raise _NotPlain
        return value
    if isinstance(value, dict):
        attached = getattr(value, "ca", None)
        if attached is not None and (attached.items or attached.comment):
            raise _NotPlain
        out = {}
        for key, item in value.items():
            if type(key) is not str or len(key) > 2000 or _BREAKS.search(key):
                raise _NotPlain
            if key == "<<":  # libyaml writes it plain: a merge key (EC010) when read back
                raise _NotPlain
            out[key] = _copy(item)
        return out
    if isinstance(value, list):
        attached = getattr(value, "ca", None)
        if attached is not None and (attached.items or attached.comment):
            raise _NotPlain
        if any(isinstance(item, list) for item in value):
            raise _NotPlain  # ruamel.yaml writes a list in a list its own way
        return [_copy(item) for item in value]
    if isinstance(value, _SCALARS) and not isinstance(value, str):
        return value
    raise _NotPlain


_TAG = "tag:yaml.org,2002:"


_STR, _MAP, _SEQ = _TAG + "str", _TAG + "map", _TAG + "seq"


def _node(value: Any, yaml: Any) -> Any:
    """The YAML node of plain data, built directly (what PyYAML's representer would
    build, without its dispatch and alias bookkeeping); _NotPlain as :func:`_copy`."""
    scalar, mapping, sequence = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
    breaks = _BREAKS.search

    def node(value: Any) -> Any:
        kind = type(value)
        if kind is str:
            if len(value) > 2000 or breaks(value):
                raise _NotPlain
            return scalar(_STR, value, style='"' if "'" in value and _quote_style(value) else None)
        if kind is dict or (isinstance(value, dict) and not _commented(value)):
            pairs = []
            for key, item in value.items():
                if type(key) is not str:
                    raise _NotPlain
                if "'" in key or len(key) > 2000 or breaks(key):
                    pairs.append((node(key), node(item)))
                else:  # nearly every key: a plain string, its node built here
                    pairs.append((scalar(_STR, key), node(item)))
            return mapping(_MAP, pairs, flow_style=False)
        if kind is list or (isinstance(value, list) and not _commented(value)):
            items = []
            for item in value:
                if isinstance(item, list):
                    raise _NotPlain  # ruamel.yaml writes a list in a list its own way
                items.append(node(item))
            return sequence(_SEQ, items, flow_style=False)
        if value is None:
            return scalar(_TAG + "null", "null")
        if value is True or value is False:
            return scalar(_TAG + "bool", "true" if value else "false")
        if kind is int:
            return scalar(_TAG + "int", str(value))
        if kind is float and math.isfinite(value):
            return _house_dumper().represent_float(None, value)  # PyYAML's own float text
        raise _NotPlain

    return node(value)


def _commented(value: Any) -> bool:
    """False for a container without comments; _NotPlain for a ruamel.yaml container
    carrying one (the round-trip dumper keeps it)."""
    attached = getattr(value, "ca", None)
    if attached is not None and (attached.items or attached.comment):
        raise _NotPlain
    return False


def _quote_style(value: str) -> str | None:
    """ruamel.yaml's choice: a string holding ``'`` that cannot be plain is double-quoted."""
    if "'" not in value:
        return None
    from yaml.emitter import Emitter  # type: ignore[import-untyped]

    analysis = Emitter.analyze_scalar(_UNICODE, value)
    if not analysis.allow_block_plain or _CORE.match(value) or _TIMESTAMP.match(value):
        return '"'
    return None


def _indent_sequences(text: str) -> str:
    """libyaml's indentless sequences under a mapping key (``key:\\n- a``) in the house
    style (``key:\\n  - a``): every line of such a sequence two spaces further in."""
    out: list[str] = []
    open_at: list[int] = []  # columns of the indentless sequences the line is inside
    previous = ""
    for line in text.split("\n"):
        body = line.lstrip(" ")
        column = len(line) - len(body)
        while open_at and (
            open_at[-1] > column or (open_at[-1] == column and not body.startswith("- "))
        ):
            open_at.pop()
        if (
            body.startswith("- ")
            and previous.endswith(":")
            and (not open_at or open_at[-1] < column)
        ):
            stripped = previous.lstrip(" ")
            key_column = len(previous) - len(stripped)
            while stripped.startswith("- "):
                stripped, key_column = stripped[2:], key_column + 2
            if key_column == column:
                open_at.append(column)
        out.append(" " * (2 * len(open_at)) + line if line else line)
        previous = line
    return "\n".join(out)


def dump_plain(data: Any, *, verify: bool = True) -> str:
    """Plain data (dicts, lists, strings, numbers, booleans, None) as
    :func:`round_trip_dump` writes it, through libyaml's emitter: about ten times faster
    (a trace import writes thousands of drafts). Falls back on :func:`round_trip_dump`
    for what libyaml could write otherwise (multi-line or very long strings) and when
    the text does not read back as the same data."""
    import yaml  # type: ignore[import-untyped]

    from evalcase.loader import load

    dumper = _house_dumper()
    if dumper is None or not isinstance(data, dict):
        return round_trip_dump(data)
    try:
        node = _node(data, yaml)
    except _NotPlain:
        return round_trip_dump(data)
    text = _indent_sequences(yaml.serialize(node, Dumper=dumper, allow_unicode=True, width=4096))
    if verify:
        plain = _plain(data)
        back = load("draft.yaml", text.encode("utf-8"))
        if back.findings or back.data != plain:
            return round_trip_dump(data)
    return text


# YAML 1.2 core scalars (as ruamel.yaml's round-trip dumper resolves them): a string that
# reads as one of these is quoted, any other may stay plain (``yes``, ``on`` included).
_CORE = re.compile(
    r"^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE"
    r"|[-+]?[0-9_]+|0o[0-7_]+|0x[0-9a-fA-F_]+"
    r"|[-+]?(?:\.[0-9_]+|[0-9_]+(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}"
    r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?$"
)


_MAYBE_CORE = frozenset("0123456789+-.~nNtTfF")


@lru_cache(maxsize=4096)
def _core_tag(value: str) -> str:
    if not value:
        return "tag:yaml.org,2002:null"  # quoted: an empty plain value reads as null
    if value[:1] not in _MAYBE_CORE:
        return "tag:yaml.org,2002:str"
    if _TIMESTAMP.match(value):  # ruamel.yaml quotes a date, as YAML 1.1 would read it
        return "tag:yaml.org,2002:timestamp"
    if not _CORE.match(value):
        return "tag:yaml.org,2002:str"
    if value in ("~", "null", "Null", "NULL"):
        return "tag:yaml.org,2002:null"
    if value.lower() in ("true", "false"):
        return "tag:yaml.org,2002:bool"
    if re.fullmatch(r"[-+]?[0-9_]+|0o[0-7_]+|0x[0-9a-fA-F_]+", value):
        return "tag:yaml.org,2002:int"
    return "tag:yaml.org,2002:float"


class _Unicode:
    """What ``Emitter.analyze_scalar`` reads of its emitter."""

    allow_unicode = True


_UNICODE = _Unicode()


@cache
def _house_dumper() -> Any:
    """libyaml's emitter with ruamel.yaml's choices: YAML 1.2 core resolution, and a
    quoted string holding ``'`` in double quotes."""
    import yaml

    base = getattr(yaml, "CSafeDumper", None)
    if base is None:
        return None
    text_tag = "tag:yaml.org,2002:str"

    class HouseDumper(base):  # type: ignore[misc, valid-type]
        # The emitter asks twice per scalar (plain? quoted?): the answers without
        # PyYAML's resolver dispatch, the same as its for what _node builds.
        def resolve(
            self, kind: Any, value: Any, implicit: Any, _scalar: Any = yaml.ScalarNode
        ) -> Any:
            if kind is _scalar and type(value) is str:
                return _core_tag(value) if implicit[0] else text_tag
            return super().resolve(kind, value, implicit)

        def represent_str(self, value: str) -> Any:
            return self.represent_scalar(text_tag, value, style=_quote_style(value))

        @staticmethod
        def represent_float(_: Any, value: float) -> Any:
            text = repr(value).lower()
            if "." not in text and "e" in text:
                text = text.replace("e", ".0e", 1)  # as PyYAML writes 1e+17: 1.0e+17
            return yaml.ScalarNode(_TAG + "float", text)

        def ignore_aliases(self, data: Any) -> bool:
            return True  # plain copies: nothing is shared, no anchors to look for

    HouseDumper.add_representer(str, HouseDumper.represent_str)
    return HouseDumper
