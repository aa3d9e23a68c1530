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
