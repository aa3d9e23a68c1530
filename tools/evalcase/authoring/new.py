"""`evalcase new DATASET --type tool,agent --scenario STEM [--from CASE_ID]`.

Writes ``datasets/DATASET/cases/<STEM>_<NNN>.yaml`` with the next free number (never one
used, deleted or released: evalcase.authoring.ids) and every field the chosen case
types require, derived from the schemas themselves. What only a person can decide is
a ``TODO:`` placeholder saying what belongs there (lint rule EC451 reports each one by
field until it is filled). The case starts as ``case_version: v1`` at the manifest's
``dataset_version``, ``review_status: draft``, without review records and without the
golden role.

``--from CASE_ID`` copies the execution fields (input, context, environment, state,
tools: what the agent is given) and the classification of an existing case, keeping
their comments; the judging fields (expectations) become placeholders again, because
what is correct for the variant is for a person to decide (docs/authoring.md). Approvals never
travel: no review records, draft status, and no golden role.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcase.authoring.fmt import EXECUTION, canonicalize
from evalcase.authoring.ids import case_path, check_stem, next_case_id, used_case_ids
from evalcase.config import Config
from evalcase.loader import load
from evalcase.model import FatalError, FileKind
from evalcase.placeholders import make
from evalcase.schemas import CASE_TYPES, raw_schemas
from evalcase.yamlwrite import round_trip_dump, round_trip_load

# Identity fields a variant keeps (what the case is about); the rest is new.
KEPT_IDENTITY = ("scenario", "user_task", "ability_tags", "risk_level", "difficulty")
# Worth writing even though the schema does not always require them.
RECOMMENDED = ("negative_behavior",)
_MAX_DEPTH = 6


@dataclass(frozen=True)
class NewCase:
    case_id: str
    path: Path
    placeholders: int


def _resolve(schema: dict[str, Any], file: str) -> tuple[dict[str, Any], str]:
    seen = 0
    while "$ref" in schema and seen < 10:
        ref = schema["$ref"]
        target, _, pointer = ref.partition("#")
        file = target or file
        node: Any = raw_schemas()[file]
        for part in [p for p in pointer.split("/") if p]:
            node = node[part]
        schema = {**node, **{k: v for k, v in schema.items() if k not in ("$ref",)}}
        if "description" in node and "description" not in schema:
            schema["description"] = node["description"]
        seen += 1
    return schema, file


def _first_sentence(text: str) -> str:
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "." and depth == 0 and (i + 1 == len(text) or text[i + 1] == " "):
            return text[:i]
    return text


def shape(schema: dict[str, Any], file: str, hint: str, depth: int = 0) -> Any:
    """A value of the schema's shape whose leaves are placeholders. The hint is the
    description of the field itself (not of the generic type it refers to)."""
    own = schema.get("description")
    hint = _first_sentence(str(own)) if own else hint
    schema, file = _resolve(schema, file)
    if depth >= _MAX_DEPTH:
        return make(hint)
    if "enum" in schema:
        return make(f"{hint}: one of {', '.join(str(v) for v in schema['enum'])}")
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [_resolve(o, file) for o in schema[key]]
            texts = [o for o in options if o[0].get("type") == "string" or "enum" in o[0]]
            chosen, chosen_file = (texts or options)[0]
            chosen = {k: v for k, v in chosen.items() if k != "description"}
            return shape(chosen, chosen_file, hint, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "string" if "string" in kind else kind[0]
    if kind == "array":
        items = {k: v for k, v in schema.get("items", {}).items() if k != "description"}
        return [shape(items, file, hint, depth + 1)]
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        required = list(schema.get("required", ()))
        if required:
            return {k: shape(props.get(k, {}), file, k, depth + 1) for k in required}
        if props:
            first = next(iter(props))
            return {first: shape(props[first], file, first, depth + 1)}
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            extra = {k: v for k, v in extra.items() if k != "description"}
            return {make("name"): shape(extra, file, hint, depth + 1)}
        return {make("key"): make(hint)}
    return make(hint)


def _forms() -> dict[str, Any]:
    """The contract's forms (docs/design/execution-contract.md) for fields whose schema
    also accepts older ones: a new case starts in the form the runner reads natively."""
    return {
        "expected_calls": {
            "order": "in_order",
            "calls": [{"tool": make("tool name"), "args": {make("argument"): make("value")}}],
        },
        "final_state_check": {
            "expected": {make("state path, e.g. orders.ORDER_1.status"): make("its value")},
            "unchanged": ["*"],
        },
    }


def required_fields(case_types: tuple[str, ...]) -> list[tuple[str, dict[str, Any], str]]:
    """(field, its schema, the schema file) for every field the case types require. Where
    a type accepts one of several sets of fields (``anyOf`` of ``required``), the first
    set: the contract's form (expected_calls rather than expected_tool_sequence)."""
    base = raw_schemas()["case.schema.json"]
    fields: dict[str, tuple[dict[str, Any], str]] = {}
    required = list(base["required"])
    # Fields required unless some other field is there (``input``, unless the case has a
    # simulated user to open the conversation): a new case has none of those, so they
    # are required of it, in the order the schema lists its properties.
    for rule in base.get("allOf", ()):
        absent = rule.get("if", {}).get("not", {}).get("required")
        if absent and "then" in rule:
            required += [n for n in rule["then"].get("required", ()) if n not in required]
    order = list(base["properties"])
    required.sort(key=lambda n: order.index(n) if n in order else len(order))
    for name in (*required, *RECOMMENDED):
        fields[name] = (base["properties"][name], "case.schema.json")
    for case_type in case_types:
        ext_file = f"{case_type}.schema.json"
        ext = raw_schemas()[ext_file]
        names = list(ext.get("required", ()))
        for alternatives in (ext.get("anyOf"), ext.get("oneOf")):
            if isinstance(alternatives, list) and alternatives:
                names += list(alternatives[0].get("required", ()))
        for name in names:
            if name in ext.get("properties", {}):
                fields.setdefault(name, (ext["properties"][name], ext_file))
            else:
                fields.setdefault(name, (base["properties"][name], "case.schema.json"))
    return [(name, schema, file) for name, (schema, file) in fields.items()]


def parse_types(text: str) -> tuple[str, ...]:
    types = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    unknown = [t for t in types if t not in CASE_TYPES]
    if unknown or not types:
        raise FatalError(
            f"unknown case type {', '.join(unknown) or '(none)'}: choose from "
            f"{', '.join(CASE_TYPES)}, comma-separated"
        )
    return types


def manifest_of(config: Config, dataset_id: str) -> dict[str, Any]:
    path = config.root / "datasets" / dataset_id / "dataset.yaml"
    if not path.is_file():
        known = sorted(p.parent.name for p in (config.root / "datasets").glob("*/dataset.yaml"))
        raise FatalError(
            f"no dataset '{dataset_id}' (datasets/{dataset_id}/dataset.yaml); "
            f"known: {', '.join(known) or 'none'}"
        )
    doc = load(path.relative_to(config.root).as_posix(), path.read_bytes())
    if not isinstance(doc.data, dict) or not isinstance(doc.data.get("dataset_version"), str):
        raise FatalError(f"{path}: the manifest has no readable dataset_version; lint it first")
    return doc.data


def find_case(config: Config, case_id: str) -> Path:
    found = sorted((config.root / "datasets").glob(f"*/cases/{case_id}.yaml"))
    if not found:
        raise FatalError(f"no case '{case_id}' under datasets/*/cases/")
    return found[0]


def count_placeholders(value: Any) -> int:
    from evalcase.placeholders import is_placeholder

    if isinstance(value, dict):
        return sum(is_placeholder(k) + count_placeholders(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(count_placeholders(v) for v in value)
    return int(is_placeholder(value))


def build(
    config: Config,
    dataset_id: str,
    case_id: str,
    case_types: tuple[str, ...] | None,
    source: dict[str, Any] | None = None,
    source_id: str | None = None,
) -> Any:
    """The new case as a round-trip document (comments of copied fields kept)."""
    from ruamel.yaml.comments import CommentedMap

    manifest = manifest_of(config, dataset_id)
    src: dict[str, Any] = source or {}
    if case_types is None:
        found = src.get("case_types")
        case_types = tuple(str(t) for t in found) if isinstance(found, list) else ()
    data: Any = CommentedMap()
    data["case_id"] = case_id
    data["case_version"] = "v1"
    data["dataset_id"] = dataset_id
    data["dataset_version"] = manifest["dataset_version"]
    if case_types:
        data["case_types"] = list(case_types)
    for name in KEPT_IDENTITY:
        if name in src:
            data[name] = src[name]
    if source_id is not None:
        data["source"] = make(f"where this variant comes from (derived from {source_id})")
    for name in EXECUTION:
        if name in src:
            data[name] = src[name]
    forms = _forms()
    for name, schema, file in required_fields(case_types):
        if name not in data and name != "metadata":
            data[name] = forms[name] if name in forms else shape(schema, file, name)
    data["metadata"] = _metadata(src.get("metadata"), manifest)
    canonicalize(data, FileKind.CASE)
    return data


def _metadata(source: Any, manifest: dict[str, Any]) -> Any:
    from ruamel.yaml.comments import CommentedMap

    src = source if isinstance(source, dict) else {}
    meta: Any = CommentedMap()
    roles = src.get("dataset_role")
    roles = [roles] if isinstance(roles, str) else list(roles or [])
    # A copy is not reviewed: it cannot inherit golden, which needs an approval.
    roles = [r for r in roles if r != "golden"]
    meta["dataset_role"] = (
        (roles[0] if len(roles) == 1 else roles)
        if roles
        else make("one of iteration, risk, regression, observation, hard_case, red_team")
    )
    meta["tags"] = list(src.get("tags") or [])
    owner = src.get("owner") or manifest.get("owner")
    meta["owner"] = owner if isinstance(owner, str) and owner else make("owning team")
    meta["review_status"] = "draft"
    meta["usage_rights_status"] = src.get("usage_rights_status") or make(
        "approved_for_evaluation once the data may be used for evaluation"
    )
    if isinstance(src.get("coverage"), dict):
        meta["coverage"] = src["coverage"]
    return meta


def new_case(
    config: Config,
    dataset_id: str,
    *,
    case_types: tuple[str, ...] | None,
    stem: str | None,
    from_case: str | None = None,
) -> NewCase:
    """Write the new case file and say where."""
    source: dict[str, Any] | None = None
    if from_case is not None:
        text = find_case(config, from_case).read_text("utf-8")
        if load(from_case, text.encode("utf-8")).data is None:
            raise FatalError(f"{from_case} cannot be read; lint it first")
        source = round_trip_load(text)
        if stem is None:
            stem = from_case.rsplit("_", 1)[0] if from_case[-1].isdigit() else from_case
    if stem is None:
        raise FatalError("give --scenario <domain>_<ability>_<words> (or --from CASE_ID)")
    if case_types is None and source is None:
        raise FatalError("give --type (llm, rag, tool, agent, business; comma-separated)")
    stem = check_stem(stem, config)
    case_id = next_case_id(stem, used_case_ids(config))
    data = build(config, dataset_id, case_id, case_types, source, from_case)
    path = case_path(config.root, dataset_id, case_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = round_trip_dump(data)
    with path.open("x", encoding="utf-8") as out:
        out.write(text)
    return NewCase(case_id, path, count_placeholders(load(case_id, text.encode()).data))
