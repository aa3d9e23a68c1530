"""One typed reader for the JSON and YAML objects grading reads (run.json, grade lines,
review lines, judge answers and cache entries, case metadata, ``[grade.judge]``).

``parse(Type, data)`` reads a frozen dataclass from a mapping: each field from the key of
its name, converted to the field's type (``str``, ``int``, ``float``, ``bool``, ``X | None``,
``tuple[str, ...]``, a mapping, another such dataclass, or :data:`JSONValue`: any JSON
value, kept as it is); a missing key or ``None`` leaves the field's default. The keys
come from the type, never from the caller, so the rest of grading reads attributes. A
value of the wrong kind is a ``ReadError`` naming the field, returned, never raised: the
caller says which file it was.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, Union

__all__ = ["JSONValue", "ReadError", "parse"]

T = TypeVar("T")

# Any JSON (or YAML-loaded) value: a field of this type is read as it is, and a reader
# checks the kind it needs (``isinstance``) before it uses it.
JSONValue: TypeAlias = (
    bool | int | float | str | list["JSONValue"] | Mapping[str, "JSONValue"] | None
)


@dataclass(frozen=True)
class ReadError:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class _Bad(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        # The alias's own forward references ("JSONValue") resolve here whatever the
        # defining module imported (``readers.JSONValue`` leaves the name undefined there).
        _HINTS[cls] = typing.get_type_hints(cls, localns={"JSONValue": JSONValue})
    return _HINTS[cls]


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


# The kinds JSONValue is the union of, as the type hints of a field give them back (the
# alias's forward references resolved, so it is recognised by its members).
_JSON_KINDS = frozenset({type(None), bool, int, float, str, list, Mapping})


def _is_json(hint: object) -> bool:
    args = typing.get_args(hint)
    return {typing.get_origin(a) or a for a in args} == _JSON_KINDS


def _convert(hint: Any, value: object, where: str) -> object:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType) and _is_json(hint):
        return value
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return None if value is None else _convert(options[0], value, where)
    if hint is Any or hint is object:
        return value
    if hint is str:
        if isinstance(value, Mapping | list):
            raise _Bad(where, f"must be a string, not {_kind(value)}")
        return str(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise _Bad(where, f"must be true or false, not {value!r}")
        return value
    if hint in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise _Bad(where, f"must be a number, not {value!r}")
        try:
            return hint(value)
        except ValueError:
            raise _Bad(where, f"must be a number, not {value!r}") from None
    if origin is tuple:
        items = value if isinstance(value, list | tuple) else [value]
        (item, _) = typing.get_args(hint)
        return tuple(_convert(item, v, f"{where}[{n}]") for n, v in enumerate(items))
    if origin in (Mapping, dict) or hint in (Mapping, dict):
        if not isinstance(value, Mapping):
            raise _Bad(where, f"must be an object, not {_kind(value)}")
        return dict(value)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, Mapping):
            raise _Bad(where, f"must be an object, not {_kind(value)}")
        return _build(hint, value, f"{where}.")
    raise TypeError(f"readers.parse cannot read {hint!r}")  # a programming error


def _build(cls: type[T], data: Mapping[str, Any], prefix: str) -> T:
    hints = _hints(cls)
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        value = data.get(f.name)
        if value is not None:
            values[f.name] = _convert(hints[f.name], value, prefix + f.name)
    return cls(**values)


def parse(cls: type[T], data: object) -> T | ReadError:
    """``cls`` (a frozen dataclass whose fields all have defaults) read from ``data``."""
    if not isinstance(data, Mapping):
        return ReadError("", f"must be an object, not {_kind(data)}")
    try:
        return _build(cls, data, "")
    except _Bad as bad:
        return ReadError(bad.field, bad.message)
