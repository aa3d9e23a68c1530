"""The case contract: loads schemas/ once, builds validators once, turns errors into Findings.

The schemas ship inside the wheel (evalcase/schemas); in a source checkout the
repository's own schemas/ folder is used, so there is one source of truth.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from evalcase.contract.run_fields import RUN_FIELD_PLACES, RUN_FIELDS
from evalcase.loader import MAX_FINDINGS_PER_RULE, RESOURCE_LIMIT, Document, capped
from evalcase.model import Finding, Severity

SCHEMA_FILES = {
    "case": "case.schema.json",
    "dataset": "dataset.schema.json",
    "fixture": "fixture.schema.json",
    "config": "config.schema.json",
    # offline JSONL lines, schemas/offline-case.schema.json (evalcase import, export --format jsonl)
    "offline_case": "offline-case.schema.json",
}
CASE_TYPES = ("llm", "rag", "tool", "agent", "business")

REQUIRED = "EC101"
UNKNOWN_FIELD = "EC102"
WRONG_TYPE = "EC103"
NOT_ALLOWED_VALUE = "EC104"
INVALID_VALUE = "EC105"
SCHEMA_CODES = (REQUIRED, UNKNOWN_FIELD, WRONG_TYPE, NOT_ALLOWED_VALUE, INVALID_VALUE)
_NAMES = {
    REQUIRED: "required-field",
    UNKNOWN_FIELD: "unknown-field",
    WRONG_TYPE: "wrong-type",
    NOT_ALLOWED_VALUE: "not-allowed-value",
    INVALID_VALUE: "invalid-value",
}
_TYPE_NAMES = {
    "string": "text",
    "array": "a list",
    "object": "a mapping",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "empty",
}


def schema_dir() -> Path:
    packaged = Path(__file__).parent / "schemas"
    if (packaged / "case.schema.json").is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "schemas"


@cache
def raw_schemas() -> dict[str, dict[str, Any]]:
    """Every schema file by file name."""
    return {
        path.name: json.loads(path.read_text("utf-8"))
        for path in sorted(schema_dir().glob("*.schema.json"))
    }


@cache
def schemas_digest() -> str:
    """Changes whenever a schema file changes. Hashes the bytes: parsing the schemas
    would cost a warm run more than everything else it does with them."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for path in sorted(schema_dir().glob("*.schema.json")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@cache
def _registry() -> Any:
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    return Registry().with_resources(
        (name, Resource.from_contents(schema, default_specification=DRAFT202012))
        for name, schema in raw_schemas().items()
    )


@cache
def validator_for(kind: str) -> Any:
    return _validator_class()(raw_schemas()[SCHEMA_FILES[kind]], registry=_registry())


@cache
def _validator_class() -> Any:
    """Draft 2020-12, bounded for hostile documents.

    A 100,000-item list of wrong values would make one keyword build 100,000 errors
    (eagerly, inside anyOf), ``contains`` conditions re-check every item of a list each
    time they are asked, and uniqueItems compares unhashable items pairwise. Here each
    keyword reports at most MAX_FINDINGS_PER_RULE errors per value, lazily; one
    validation applies at most _MAX_CHECKS keywords; uniqueItems compares items by their
    canonical JSON text.
    """
    from jsonschema import Draft202012Validator, validators

    keywords = dict(Draft202012Validator.VALIDATORS)
    keywords["uniqueItems"] = _unique_items
    extend: Any = validators.extend
    return extend(Draft202012Validator, {name: _bounded(c) for name, c in keywords.items()})


# Keyword applications one validation may make: ordinary files need a few hundred; a
# hostile one stops here after about a second.
_MAX_CHECKS = 50_000
# Checks left in the validation under way (None outside validate()).
_checks_left: list[int | None] = [None]


class _TooManyChecks(Exception):
    pass


def _bounded(check: Callable[..., Any]) -> Callable[..., Any]:
    def bounded(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        left = _checks_left[0]
        if left is not None:
            if left <= 0:
                raise _TooManyChecks
            _checks_left[0] = left - 1
        errors = check(validator, value, instance, schema)
        return itertools.islice(errors, MAX_FINDINGS_PER_RULE) if errors is not None else ()

    return bounded


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not (unique and validator.is_type(instance, "array")):
        return
    seen: set[str] = set()
    for item in instance:
        # 1 and 1.0 are equal in JSON Schema (true and 1 are not).
        if isinstance(item, float) and item.is_integer():
            item = int(item)
        key = json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)
        if key in seen:
            yield ValidationError(f"{_show(item)} appears more than once; items must be unique")
            return
        seen.add(key)


@cache
def extension_fields() -> dict[str, str]:
    """Field name -> the case type that adds it (e.g. gold_evidence -> rag)."""
    fields: dict[str, str] = {}
    for case_type in CASE_TYPES:
        for name in raw_schemas()[f"{case_type}.schema.json"].get("properties", {}):
            fields.setdefault(name, case_type)
    return fields


@cache
def extension_required() -> dict[str, tuple[str, ...]]:
    return {t: tuple(raw_schemas()[f"{t}.schema.json"].get("required", ())) for t in CASE_TYPES}


@cache
def common_fields() -> frozenset[str]:
    return frozenset(raw_schemas()["case.schema.json"]["properties"])


_BASE_URI = "https://evalcase.invalid/schemas/"


@cache
def fast_validator_for(kind: str) -> Any:
    """A compiled Rust validator (jsonschema-rs) for the yes/no question, or None.

    Valid documents are the common case; they cost microseconds here instead of
    milliseconds. Only invalid documents go through python-jsonschema, whose errors
    carry the detail the findings need.
    """
    try:
        import jsonschema_rs

        registry = jsonschema_rs.Registry(
            [(_BASE_URI + name, schema) for name, schema in raw_schemas().items()]
        )
        name = SCHEMA_FILES[kind]
        return jsonschema_rs.validator_for(
            raw_schemas()[name], registry=registry, base_uri=_BASE_URI + name
        )
    except Exception:  # not installed, or cannot compile: the full validator still works
        return None


def validate(doc: Document, kind: str) -> list[Finding]:
    """All schema findings for a loaded document of the given kind."""
    if not doc.ok:
        return []
    fast = fast_validator_for(kind)
    if fast is not None:
        try:
            if fast.is_valid(doc.data):
                return []
        except Exception:  # e.g. an integer too large for it: let the full validator decide
            pass
    findings: list[Finding] = []
    _checks_left[0] = _MAX_CHECKS
    try:
        for error in validator_for(kind).iter_errors(doc.data):
            room = MAX_FINDINGS_PER_RULE + 1 - len(findings)
            findings.extend(itertools.islice(_to_findings(doc, kind, error), room))
            if len(findings) > MAX_FINDINGS_PER_RULE:
                break
    except _TooManyChecks:
        findings.append(
            Finding(
                doc.path,
                1,
                1,
                RESOURCE_LIMIT,
                Severity.ERROR,
                f"checking this file against the {kind} schema took more than "
                f"{_MAX_CHECKS:,} steps, so it stopped: the file is far larger than a "
                f"{kind} should be; split it or move bulk data into a fixture",
                "resource-limit",
            )
        )
    finally:
        _checks_left[0] = None
    return sorted(set(capped(findings)))


def dotted(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _make(doc: Document, code: str, pos: tuple[int, int], message: str) -> Finding:
    return Finding(doc.path, pos[0], pos[1], code, Severity.ERROR, message, _NAMES[code])


def _choose(error: Any) -> list[Any]:
    """For anyOf/oneOf failures, the sub-errors that explain the problem best: every error
    of the branch the best one comes from (so a policy missing three required fields is
    reported three times in one run, not once per run)."""
    from jsonschema.exceptions import best_match

    if not (error.context and error.validator in ("anyOf", "oneOf")):
        return [error]
    non_type = [e for e in error.context if e.validator != "type"]
    if not non_type:
        return [error]
    # Prefer errors from the branch whose type matched the instance.
    best = best_match(non_type)
    branch = best.relative_schema_path[0] if best.relative_schema_path else None
    same = [
        e
        for e in non_type
        if branch is not None and e.relative_schema_path and e.relative_schema_path[0] == branch
    ]
    out: list[Any] = []
    for e in same or [best]:
        out.extend(_choose(e))
    return out


def _to_findings(doc: Document, kind: str, error: Any) -> Iterator[Finding]:
    for chosen in _choose(error):
        yield from _finding(doc, kind, chosen)


def _finding(doc: Document, kind: str, error: Any) -> Iterator[Finding]:
    path = tuple(error.absolute_path)
    field = dotted(path)
    validator = error.validator
    if validator == "required":
        missing = _quoted(error.message)
        # Only a case's fields are required by a case type; a fixture's are its schema's
        # (its allOf branches are fixture kinds, not case types).
        owner = _required_by(error) if kind == "case" else None
        suffix = f" (required by case type '{owner}')" if owner else ""
        where = "" if not path else f" in {field}"
        yield _make(
            doc,
            REQUIRED,
            doc.locate_key(path) if path else (1, 1),
            f"missing required field '{missing}'{where}{suffix}",
        )
    elif validator in ("additionalProperties", "unevaluatedProperties"):
        for key in _unexpected(doc, kind, error, path):
            yield _make(
                doc,
                UNKNOWN_FIELD,
                doc.locate_key((*path, key)),
                _unknown_message(doc, kind, error, path, key),
            )
    elif validator == "type" or (validator in ("anyOf", "oneOf") and error.context):
        yield _make(
            doc,
            WRONG_TYPE,
            doc.locate(path),
            f"{field} should be {_expected_types(error)}, not {_describe(error.instance)}",
        )
    elif validator in ("enum", "const"):
        allowed = error.validator_value if validator == "enum" else [error.validator_value]
        message = (
            f"{field} {_show(error.instance)} is not one of {', '.join(str(a) for a in allowed)}"
        )
        hint = _did_you_mean(error.instance, [str(a) for a in allowed])
        yield _make(doc, NOT_ALLOWED_VALUE, doc.locate(path), message + hint)
    else:
        description = error.schema.get("description") if isinstance(error.schema, dict) else None
        detail = _constraint(error)
        message = f"{field} {_show(error.instance)} is not valid: {detail}"
        if description and validator == "pattern":
            message += f" ({description})"
        yield _make(doc, INVALID_VALUE, doc.locate(path), message)


def _constraint(error: Any) -> str:
    v, value = error.validator, error.validator_value
    if v == "pattern":
        return f"must match {value}"
    if v == "minItems":
        return "must not be empty" if value == 1 else f"needs at least {value} items"
    if v == "minLength":
        return "must not be empty" if value == 1 else f"needs at least {value} characters"
    if v == "maxLength":
        return f"must be at most {value} characters"
    if v == "minProperties":
        return "must not be empty"
    if v == "uniqueItems":
        return "items must be unique"
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        words = {
            "minimum": "at least",
            "exclusiveMinimum": "greater than",
            "maximum": "at most",
            "exclusiveMaximum": "less than",
        }
        return f"must be {words[v]} {value}"
    return str(error.message)


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
    if isinstance(value, dict | list):
        return f"({_describe(value)})"
    return repr(value)


def _describe(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return f"the number {value}"
    return "text"


def _expected_types(error: Any) -> str:
    if error.validator == "type":
        types = error.validator_value
        types = [types] if isinstance(types, str) else list(types)
    else:
        types = []
        for sub in error.context:
            if sub.validator == "type":
                value = sub.validator_value
                types.extend([value] if isinstance(value, str) else value)
            elif sub.validator in ("enum", "const"):
                types.append("string")
    names = []
    for t in types:
        name = _TYPE_NAMES.get(t, t)
        if name not in names:
            names.append(name)
    return " or ".join(names) or "something else"


def _quoted(message: str) -> str:
    match = re.match(r"^'(.*)' is a required property$", message)
    return match.group(1) if match else message


def _required_by(error: Any) -> str | None:
    parts = list(error.relative_schema_path)
    for case_type in CASE_TYPES:
        ref = f"{case_type}.schema.json"
        if error.schema is raw_schemas().get(ref) or ref in str(parts):
            return case_type
    if "allOf" in parts and "then" in parts:
        index = parts[parts.index("allOf") + 1]
        if isinstance(index, int) and index < len(CASE_TYPES):
            return CASE_TYPES[index]
    return None


def _unexpected(doc: Document, kind: str, error: Any, path: tuple[Any, ...]) -> list[str]:
    instance = error.instance
    if not isinstance(instance, dict):
        return []
    schema = error.schema
    known = set(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    if kind == "case" and not path and error.validator == "unevaluatedProperties":
        # Any case may use any case type's fields (a type makes its own required).
        known |= set(extension_fields())
    # Run results have their own rule (EC106) that says where they belong.
    run_fields: Any = RUN_FIELDS if kind == "case" and tuple(path) in RUN_FIELD_PLACES else ()
    return [
        key
        for key in instance
        if key not in known
        and key not in run_fields
        and not any(p.search(str(key)) for p in patterns)
    ]


def _calls_for(value: Any) -> str:
    """The ``expected_calls`` that says what an ``expected_tool`` value says."""
    tools = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    names = [t for t in tools if isinstance(t, str)] or ["<tool>"]
    calls = ", ".join(f"{{tool: {t}}}" for t in names)
    order = ", order: in_order" if len(names) > 1 else ""
    return f"expected_calls: {{calls: [{calls}]{order}}}"


def _unknown_message(doc: Document, kind: str, error: Any, path: tuple[Any, ...], key: str) -> str:
    where = f" in {dotted(path)}" if path else ""
    if kind == "dataset" and len(path) == 2 and path[0] == "suites":
        from evalcase.suites import ALIASES

        if key in ALIASES:
            return (
                f"suite criterion '{key}'{where} is spelled '{ALIASES[key]}': rename it "
                f"(evalcase run reads the old spelling too, but lint, run and gates share "
                "one vocabulary)"
            )
    if kind == "case" and not path and key in ("expected_tool", "expected_tools"):
        # The design document's Tool Case table names this field; a team copies it.
        return (
            f"'{key}' is the design document's name for the expected tool; this contract "
            f"writes it as {_calls_for(doc.get((key,)))} (arguments go in each call's "
            "'args'; see docs/fields.md#expected_calls)"
        )
    candidates = list(error.schema.get("properties", {}))
    if kind == "case" and not path:
        candidates += list(extension_fields())
    hint = _did_you_mean(key, candidates)
    return (
        f"unknown field '{key}'{where}{hint or ''}; put team-specific fields under an 'x-' prefix"
    )


def _did_you_mean(value: Any, candidates: list[str]) -> str:
    if not isinstance(value, str):
        return ""
    lowered = {c.lower(): c for c in candidates}
    if value.lower() in lowered and lowered[value.lower()] != value:
        return f" (did you mean '{lowered[value.lower()]}'?)"
    close = difflib.get_close_matches(value, candidates, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(value, candidates, n=1, cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else ""
