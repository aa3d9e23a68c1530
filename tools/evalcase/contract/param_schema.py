"""A tool's parameter schema (``data.parameters`` of a tool fixture): checked once, used safely.

A fixture is untrusted data, so its JSON Schema may be anything: ``type: strng``, a
``pattern`` that is not a regular expression, ``required: yes``. Every place that
validates arguments against such a schema (lint's EC304 and EC606, the runner) goes
through here, so that a broken schema is one finding on the keyword that is wrong
(EC418) and never an exception in the middle of another rule.

``problems`` returns each place where the schema breaks the JSON Schema 2020-12 meta
schema, as a path inside ``parameters`` and a sentence; ``validator`` returns a
validator for a schema without problems (``$ref`` never fetched: an empty registry),
or None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a parameter schema: where (inside ``parameters``) and why."""

    path: tuple[str | int, ...]
    message: str


def _describe(error: Any) -> str:
    keyword = next((p for p in reversed(error.absolute_path) if isinstance(p, str)), None)
    if error.validator in ("anyOf", "oneOf") and keyword == "type":
        return (
            f"type {error.instance!r} is not a JSON Schema type (array, boolean, integer, "
            "null, number, object, string) or a list of them"
        )
    if error.validator == "format" and error.validator_value == "regex":
        return f"{keyword or 'pattern'} {error.instance!r} is not a regular expression"
    where = f"{keyword}: " if keyword else ""
    return f"{where}{error.message}"


_checked: dict[str, tuple[Problem, ...]] = {}
_PLAIN = (str, int, float, bool, type(None))
_MAX_NODES = 10_000
_MAX_KEY = 64 * 1024  # characters: at most 4,097 keys of this size are kept


def _key(schema: Any) -> str | None:
    """A key that tells apart every two schemas ``problems`` may answer differently, or
    None (then the schema is checked again): JSON data only (dicts with string keys,
    lists, scalars), whose ``repr`` keeps types (1, 1.0, True, "1") and key order. Large
    schemas (and a structure that contains itself, which the walk would never finish)
    are not remembered."""
    stack = [schema]
    nodes = 0
    while stack:
        node = stack.pop()
        nodes += 1
        if nodes > _MAX_NODES:
            return None
        kind = type(node)
        if kind is dict:
            if any(type(k) is not str for k in node):
                return None
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
        elif kind not in _PLAIN:
            return None
    try:
        key = repr(schema)
    except RecursionError:
        return None
    return key if len(key) <= _MAX_KEY else None


def problems(schema: Any) -> list[Problem]:
    """Every place where ``schema`` is not a valid JSON Schema 2020-12, in path order.
    Checked once per distinct schema (about 7 ms each against the meta schema): the
    cases of a repository name the same few tool schemas again and again."""
    key = _key(schema)
    if key is not None and key in _checked:
        return list(_checked[key])
    found, final = _problems(schema)
    if key is not None and final:
        if len(_checked) > 4096:
            _checked.clear()  # bounded: a long-lived process sees many fixtures
        _checked[key] = tuple(found)
    return found


def _problems(schema: Any) -> tuple[list[Problem], bool]:
    """The problems, and whether they are the schema's own (not an exception that the
    depth of the stack at the time may have caused)."""
    try:
        from jsonschema import Draft202012Validator

        meta = Draft202012Validator(
            Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        errors = sorted(meta.iter_errors(schema), key=lambda e: [str(p) for p in e.path])
        found = [Problem(tuple(e.absolute_path), _describe(e)) for e in errors]
    except Exception as exc:  # a hostile schema (deep nesting, huge numbers) must not stop lint
        return [Problem((), f"cannot be checked: {type(exc).__name__}: {exc}")], False
    if found:
        return found, True
    try:  # the meta schema does not know every pattern dialect: compile what validation uses
        Draft202012Validator(schema, format_checker=None)
    except Exception as exc:
        return [Problem((), f"cannot be compiled: {exc}")], False
    return [], True


_validators: dict[str, Any] = {}


def validator(schema: Any) -> Any:
    """A Python validator for a schema without problems (no remote ``$ref``), or None.
    Built once per distinct schema: a fixture's responses all share one."""
    try:
        key = json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return None
    if key not in _validators:
        if len(_validators) > 4096:
            _validators.clear()  # bounded: a long-lived process sees many fixtures
        _validators[key] = None
        if not problems(schema):
            from jsonschema import Draft202012Validator
            from referencing import Registry

            _validators[key] = Draft202012Validator(schema, registry=Registry())
    return _validators[key]


def first_error(schema: Any, value: Any) -> str | None:
    """Why ``value`` is rejected by ``schema``; None when it is accepted or the schema is
    broken (that is reported on the schema, EC418) or cannot be evaluated."""
    checker = validator(schema)
    if checker is None:
        return None
    try:
        error = next(iter(checker.iter_errors(value)), None)
    except Exception:  # e.g. a $ref that resolves to nothing, or a pattern re cannot run
        return None
    return None if error is None else str(error.message)
