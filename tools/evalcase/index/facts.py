"""Facts: the compact summary of one file that cross-file and history rules need.

Facts are computed once per file content and cached, so that a run where little changed
never re-parses the rest of the repository. Everything here is plain data (str, int,
bool, tuples, dicts) so that it round-trips through marshal unchanged.

``Located`` values are ``(value, line, column)``.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from evalcase.contract import param_schema
from evalcase.contract.prompt import exceeds, offered, referenced
from evalcase.index.expressions import (
    case_expressions,
    leaves,
    tool_expressions,
    tool_state_reads,
    tool_state_writes,
)
from evalcase.loader import Document, Path
from evalcase.suites import ALIASES, CRITERIA

Located = tuple[Any, int, int]
# (field, expected fixture kind, target id, line, column)
Ref = tuple[str, str, str, int, int]

# Expected kinds of a reference. "corpus_version" and "knowledge_base" resolve against the
# corpus fixtures' data, every other kind against fixture IDs of that kind.
TOOL, STATE, STATE_OR_CONVERSATION, RUBRIC = "tool", "state", "state|conversation", "rubric"
PROMPT = "prompt"
CORPUS_VERSION, KNOWLEDGE_BASE = "corpus_version", "knowledge_base"


def digest(value: Any) -> str:
    """Hash of a value's normalized form: independent of formatting, comments, key order."""
    blob = _NORMAL_JSON.encode(value)
    return hashlib.blake2b(blob.encode("utf-8"), digest_size=12).hexdigest()


# What json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")) and
# json.dumps(value, separators=(",", ":")) use, made once: json.dumps builds an encoder
# per call, and a case has a digest per field.
_NORMAL_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))
# json.dumps(value, sort_keys=True, ensure_ascii=False), for normalize_text.
_SORTED_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)


def _located(doc: Document, path: Path) -> Located | None:
    value = doc.get(path, _MISSING)
    if value is _MISSING:
        return None
    line, col = doc.locate(path)
    return (value, line, col)


_MISSING: Any = object()
_dumps = marshal.dumps


class _FieldDigests:
    """``field_digests``: the per-field digests, decoded on first use."""

    field_digest_text: str

    @cached_property
    def field_digests(self) -> dict[str, str]:
        value = json.loads(self.field_digest_text)
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class CaseFacts(_FieldDigests):
    path: str
    dataset_dir: str
    case_id: Located | None = None
    dataset_id: Located | None = None
    case_version: Located | None = None
    dataset_version: Located | None = None
    risk_level: str | None = None
    roles: tuple[str, ...] = ()
    refs: tuple[Ref, ...] = ()
    tool_pins: tuple[tuple[str, str, int, int], ...] = ()
    # (tool, args mapping, line, col, ((arg name, line, col), ...))
    expected_args: tuple[tuple[str, Any, int, int, tuple[tuple[str, int, int], ...]], ...] = ()
    # With final_state_check.from_expected_calls: true, every expected call the grader
    # replays, as (tool, args or None when the call has none, line, column).
    gold_calls: tuple[tuple[str, Any, int, int], ...] = ()
    # Where a side_effect_policy grader is configured on a case without a policy of its
    # own (the offered tools' fixtures may hold one: EC326 resolves it).
    policy_grader_at: tuple[int, int] | None = None
    gold_evidence: tuple[tuple[str, str, int, int], ...] = ()
    effective_at: str | None = None
    similarity: tuple[str, int, int] | None = None
    # Field -> digest of its normalized value, as JSON text: one object instead of ~60
    # makes the cache of a 10,000-case repository load in a third less time.
    field_digest_text: str = "{}"
    # Parallel to gold_evidence: (doc_id line, column, passage_id line, column).
    evidence_at: tuple[tuple[int, int, int, int], ...] = ()
    # Parallel to tool_pins: where each pinned version value is.
    pin_values: tuple[tuple[int, int], ...] = ()
    # metadata.usage_rights_status: the status, allowed uses and retention date, located.
    usage_status: Located | None = None
    allowed_uses: Located | None = None
    retention_until: Located | None = None
    # The content digest under the configured governance fields (which ones, comma
    # separated), computed once with the file: every run needs it for every case.
    content_governance: str = ""
    content_digest: str = ""
    # The same fields with every text NFKC-normalised, case-folded and stripped of
    # punctuation and spacing: two copies that differ only there share it (EC417).
    copy_digest: str = ""
    # metadata.tags, and metadata.coverage as (dimension, class, line, column).
    tags: tuple[str, ...] = ()
    coverage: tuple[tuple[str, str, int, int], ...] = ()
    # What decides which suites and gates measure the case, and how (tags, roles, risk
    # level, coverage cells): part of what a release freezes (see index.digest).
    grouping_digest: str = ""
    # Where metadata.dataset_role is (for findings about the case's views).
    roles_at: tuple[int, int] | None = None
    # metadata.review_status (coverage counts approved cases only).
    review_status: str | None = None
    # CEL expressions and state paths (evalcase.index.expressions), inline state leaves.
    cel: tuple[Any, ...] = ()
    state_paths: tuple[tuple[str, str, int, int], ...] = ()
    inline_state: tuple[tuple[str, str, int, int], ...] = ()
    # The variable paths the case offers a prompt template (evalcase.contract.prompt).
    prompt_offers: tuple[str, ...] = ()
    # case_types, which suites may select by (evalcase.suites).
    case_types: tuple[str, ...] = ()

    def offered_tools(self) -> tuple[Ref, ...]:
        return tuple(r for r in self.refs if r[0] in ("available_tools", "environment.tools"))


@dataclass(frozen=True)
class FixtureFacts(_FieldDigests):
    path: str
    dir_kind: str
    fixture_id: Located | None = None
    fixture_version: Located | None = None
    kind: Located | None = None
    desensitized: Located | None = None
    tool_name: Located | None = None
    side_effect: bool | None = None
    parameters: dict[str, Any] | None = None
    knowledge_base: str | None = None
    corpus_version: str | None = None
    # doc_id -> {passage_id: effective date (the passage's, else its document's)}
    passages: dict[str, dict[str, str | None]] = field(default_factory=dict)
    # Field -> digest of its normalized value, as JSON text: one object instead of ~60
    # makes the cache of a 10,000-case repository load in a third less time.
    field_digest_text: str = "{}"
    # Where data.parameters of a tool definition is, and whether it is a valid JSON
    # Schema (EC418 says where it is not). Known when the fixture is analysed, so that a
    # commit hook checking one case's arguments never loads the meta-schema again.
    parameters_at: tuple[int, int] | None = None
    parameters_valid: bool = True
    # Where data.corpus_version of a corpus is.
    corpus_at: tuple[int, int] | None = None
    # A tool's own side_effect_policy (every case offering the tool inherits it): where
    # it is, and the tool it names (None when it names none).
    policy_at: tuple[int, int] | None = None
    policy_tool: str | None = None
    # CEL of a tool's responses; the leaves of a state fixture (path, JSON, line, column),
    # which only lint's state rules read: None where the analysis was asked not to compute
    # them (a dataset's load for a run: 107,805 nodes of tau2 airline's database walked for
    # nothing; evalcase.index.analysis.Analyzer ``state_leaves``).
    cel: tuple[Any, ...] = ()
    state_leaves: tuple[tuple[str, str, int, int], ...] | None = ()
    # A tool's field chains read from state keys, each part with its place, and the state
    # paths its responses write ("*" for a {CEL} segment): EC328.
    state_reads: tuple[tuple[tuple[str, ...], tuple[tuple[int, int], ...]], ...] = ()
    state_writes: tuple[str, ...] = ()
    # A prompt's templates: (field, variable path read, line, column); a template that
    # does not parse gives (field, "", line, column) (the schema rules say why).
    prompt_vars: tuple[tuple[str, str, int, int], ...] = ()
    # A prompt's templates that exceed a rendering limit when lint renders them
    # (evalcase.contract.prompt.exceeds): (field, the limit's message, line, column).
    prompt_limits: tuple[tuple[str, str, int, int], ...] = ()
    # A tool's data.uses (cel fixture IDs, located); a cel fixture's definitions:
    # (name, params, expr, line, column, the expression's syntax error or None) (EC619).
    uses: tuple[Located, ...] = ()
    definitions: tuple[tuple[str, tuple[str, ...], str, int, int, str | None], ...] = ()
    # a cel fixture's definitions: (name, the free names its expression reads).
    definition_reads: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class ManifestFacts(_FieldDigests):
    path: str
    dataset_dir: str
    dataset_id: Located | None = None
    dataset_version: Located | None = None
    # Field -> digest of its normalized value, as JSON text: one object instead of ~60
    # makes the cache of a 10,000-case repository load in a third less time.
    field_digest_text: str = "{}"
    # suites: (name, line, column, selectors) with selectors
    # {"case_ids": ((id, line, column), ...), "tags": (...), "dataset_roles": (...),
    #  "risk_levels": (...), "case_types": (...)} (only the criteria the suite has; see
    #  evalcase.suites).
    suites: tuple[tuple[str, int, int, dict[str, Any]], ...] = ()
    # gates: (name, line, column, suite or None, suite line, suite column, risk levels or None)
    gates: tuple[tuple[str, int, int, str | None, int, int, tuple[str, ...] | None], ...] = ()
    # coverage.dimensions: dimension -> its classes; None when the manifest declares none.
    coverage: dict[str, list[str]] | None = None
    # coverage.required: each required cell as ((dimension, class), ...) with its place.
    coverage_required: tuple[tuple[tuple[tuple[str, str], ...], int, int], ...] = ()
    # prompts: the prompt fixture IDs every case runs with, located.
    prompts: tuple[Located, ...] = ()


Facts = CaseFacts | FixtureFacts | ManifestFacts
_CLASSES: dict[str, type[CaseFacts] | type[FixtureFacts] | type[ManifestFacts]] = {
    "case": CaseFacts,
    "fixture": FixtureFacts,
    "dataset": ManifestFacts,
}
_TAGS = {CaseFacts: "case", FixtureFacts: "fixture", ManifestFacts: "dataset"}
_FIELD_NAMES = {cls: tuple(f.name for f in fields(cls)) for cls in _TAGS}


def to_raw(facts: Facts) -> tuple[Any, ...]:
    return (_TAGS[type(facts)], *(getattr(facts, f.name) for f in fields(facts)))


def from_raw(raw: tuple[Any, ...]) -> Facts:
    cls = _CLASSES[raw[0]]
    names = _FIELD_NAMES[cls]
    if len(raw) - 1 != len(names):
        raise ValueError(f"cached {raw[0]} facts have {len(raw) - 1} fields, not {len(names)}")
    # Frozen dataclasses set each field through object.__setattr__; facts of a whole
    # repository come back from the cache on every run, so fill __dict__ at once.
    facts = object.__new__(cls)
    facts.__dict__.update(zip(names, raw[1:], strict=True))
    return facts


def field_digests(doc: Document) -> dict[str, str]:
    """Field -> digest of its value, for a file's top-level mapping ({} for anything
    else). Computed once per file: the facts, EC419 (twice) and the content digests all
    read them, and a cold lint computes them for every case."""
    found: dict[str, str] | None = doc.memo.get("field_digests")
    if found is None:
        found = doc.memo["field_digests"] = digests_of(
            doc.data if isinstance(doc.data, dict) else {}
        )
    return found


def digests_of(data: Mapping[str, Any]) -> dict[str, str]:
    """Field -> digest of its value, for parsed data (field_digests, once per file)."""
    return {str(k): memo_digest(v, _DIGESTS, digest) for k, v in data.items()}


def memo_digest(value: Any, memo: dict[bytes, str], compute: Any) -> str:
    """``compute(value)``, remembered in ``memo`` by the value's marshal bytes.

    Most fields of a case (its graders, environment, expected behaviour, tools) repeat
    from case to case in a dataset, and a cold lint digests every field of every case
    (twice: as written, and squeezed for EC417). marshal keeps every type apart (True
    from 1, 1 from 1.0, "1" from 1, a key's type), so equal bytes are an equal value
    and the digest is the one ``compute`` gives; two equal values marshalled apart
    (different sharing) only miss. Bounded: a file of unique values costs one marshal per field."""
    try:
        key = _dumps(value)
    except (ValueError, TypeError, RecursionError):
        return str(compute(value))
    found = memo.get(key)
    if found is None:
        found = str(compute(value))
        if len(key) <= _MEMO_KEY_MAX:
            if len(memo) >= _MEMO_MAX:
                memo.clear()
            memo[key] = found
    return found


# Field digests by marshal bytes (memo_digest); evalcase.index.digest keeps another for
# the squeezed (copy) digests.
_DIGESTS: dict[bytes, str] = {}
# At most 4,096 values of up to 4 KB each (16 MB): long values are rarely repeated.
_MEMO_MAX = 4096
_MEMO_KEY_MAX = 4096


def _field_digests(doc: Document) -> str:
    return _COMPACT_JSON.encode(field_digests(doc))


def _strings(doc: Document, path: Path) -> list[Located]:
    value = doc.get(path)
    if not isinstance(value, list):
        return []
    out = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            line, col = doc.locate((*path, i))
            out.append((item, line, col))
    return out


def _string(doc: Document, path: Path) -> Located | None:
    located = _located(doc, path)
    return located if located is not None and isinstance(located[0], str) else None


_FOLD = re.compile(r"[\W_]+", re.UNICODE)


def normalize_text(value: Any) -> str:
    """Case-folded, whitespace and punctuation folded form of any value, for near-duplicates."""
    text = _SORTED_JSON.encode(value)
    text = unicodedata.normalize("NFKC", text).casefold()
    return _FOLD.sub("", text)


def _gold_calls(doc: Any, data: dict[str, Any]) -> tuple[tuple[str, Any, int, int], ...]:
    """The calls a ``from_expected_calls`` check replays, located (see CaseFacts)."""
    check = data.get("final_state_check")
    if not isinstance(check, dict) or check.get("from_expected_calls") is not True:
        return ()
    out: list[tuple[str, Any, int, int]] = []
    for call_path in expected_call_paths(data):
        tool = doc.get((*call_path, "tool"))
        if isinstance(tool, str):
            args = doc.get((*call_path, "args"))
            out.append((tool, args if isinstance(args, dict) else None, *doc.locate(call_path)))
    sequence = data.get("expected_tool_sequence")
    if not out and isinstance(sequence, list):
        given = data.get("expected_args")
        given = given if isinstance(given, dict) else {}
        for i, tool in enumerate(sequence):
            args = given.get(tool)
            line, col = doc.locate(("expected_tool_sequence", i))
            out.append((str(tool), args if isinstance(args, dict) else None, line, col))
    return tuple(out)


def expected_call_paths(data: dict[str, Any]) -> list[Path]:
    """Paths of every call in ``expected_calls`` (one plan, or ``any_of`` plans)."""
    block = data.get("expected_calls")
    if not isinstance(block, dict):
        return []
    plans: list[Path] = []
    if isinstance(block.get("any_of"), list):
        plans = [("expected_calls", "any_of", i) for i in range(len(block["any_of"]))]
    else:
        plans = [("expected_calls",)]
    out: list[Path] = []
    for plan in plans:
        node: Any = data
        for key in plan:
            if isinstance(node, dict) and isinstance(key, str):
                node = node.get(key)
            elif isinstance(node, list) and isinstance(key, int) and key < len(node):
                node = node[key]
            else:
                node = None
        calls = node.get("calls") if isinstance(node, dict) else None
        if isinstance(calls, list):
            out += [(*plan, "calls", i) for i in range(len(calls))]
    return out


def case_facts(doc: Document, dataset_dir: str) -> CaseFacts:
    data = doc.data if isinstance(doc.data, dict) else {}
    refs: list[Ref] = []

    def add(field_name: str, kind: str, items: list[Located]) -> None:
        refs.extend((field_name, kind, str(v), ln, c) for v, ln, c in items)

    add("environment.tools", TOOL, _strings(doc, ("environment", "tools")))
    faults = doc.get(("environment", "faults"))
    if isinstance(faults, list):
        for i in range(len(faults)):
            fault_tool = _string(doc, ("environment", "faults", i, "tool"))
            if fault_tool is not None:
                add("environment.faults.tool", TOOL, [fault_tool])
    add("available_tools", TOOL, _strings(doc, ("available_tools",)))
    add("user_simulator.tools", TOOL, _strings(doc, ("user_simulator", "tools")))
    add("expected_tool_sequence", TOOL, _strings(doc, ("expected_tool_sequence",)))
    add("forbidden_tools", TOOL, _strings(doc, ("forbidden_tools",)))
    for state_field in ("initial_state", "state"):
        add(f"{state_field}.fixtures", STATE, _strings(doc, (state_field, "fixtures")))
    add("context.fixtures", STATE_OR_CONVERSATION, _strings(doc, ("context", "fixtures")))
    for path, kind in (
        (("rubric",), RUBRIC),
        (("prompt",), PROMPT),
        (("evaluator_config", "judge", "rubric"), RUBRIC),
        (("environment_requirements", "corpus_version"), CORPUS_VERSION),
        (("environment", "knowledge_base"), KNOWLEDGE_BASE),
    ):
        located = _string(doc, path)
        if located is not None:
            add(".".join(str(p) for p in path), kind, [located])

    policy = data.get("side_effect_policy")
    policies = policy if isinstance(policy, list) else [policy] if isinstance(policy, dict) else []
    base: Path = ("side_effect_policy",)
    for i, item in enumerate(policies):
        prefix = (*base, i) if isinstance(policy, list) else base
        if isinstance(item, dict):
            located = _string(doc, (*prefix, "tool"))
            if located is not None:
                add("side_effect_policy.tool", TOOL, [located])

    pins = []
    pin_values = []
    tool_schema = data.get("tool_schema")
    if isinstance(tool_schema, dict):
        for tool, version in tool_schema.items():
            line, col = doc.locate_key(("tool_schema", tool))
            pins.append((str(tool), str(version), line, col))
            pin_values.append(doc.locate(("tool_schema", tool)))
            add("tool_schema", TOOL, [(str(tool), line, col)])

    expected_args = []
    for call_path in expected_call_paths(data):
        tool_at = _string(doc, (*call_path, "tool"))
        if tool_at is None:
            continue
        add("expected_calls.tool", TOOL, [tool_at])
        args = doc.get((*call_path, "args"))
        if isinstance(args, dict):
            line, col = doc.locate((*call_path, "args"))
            call_arg_locs = tuple(
                (str(name), *doc.locate_key((*call_path, "args", name))) for name in args
            )
            expected_args.append((str(tool_at[0]), args, line, col, call_arg_locs))
    args_block = data.get("expected_args")
    if isinstance(args_block, dict):
        for tool, args in args_block.items():
            line, col = doc.locate_key(("expected_args", tool))
            add("expected_args", TOOL, [(str(tool), line, col)])
            arg_locs: tuple[tuple[str, int, int], ...] = ()
            if isinstance(args, dict):
                arg_locs = tuple(
                    (str(name), *doc.locate_key(("expected_args", tool, name))) for name in args
                )
            expected_args.append((str(tool), args, line, col, arg_locs))

    gold_calls = _gold_calls(doc, data)
    policy_grader_at = None
    evaluator = data.get("evaluator_config")
    graders = evaluator.get("graders") if isinstance(evaluator, dict) else None
    if not data.get("side_effect_policy") and isinstance(graders, list):
        for i, grader in enumerate(graders):
            if isinstance(grader, dict) and grader.get("type") == "side_effect_policy":
                policy_grader_at = doc.locate(("evaluator_config", "graders", i, "type"))
                break

    evidence = []
    evidence_at = []
    gold = data.get("gold_evidence")
    if isinstance(gold, list):
        for i, item in enumerate(gold):
            if isinstance(item, dict):
                line, col = doc.locate(("gold_evidence", i))
                evidence.append(
                    (str(item.get("doc_id", "")), str(item.get("passage_id", "")), line, col)
                )
                evidence_at.append(
                    (
                        *doc.locate(("gold_evidence", i, "doc_id")),
                        *doc.locate(("gold_evidence", i, "passage_id")),
                    )
                )
    requirements = data.get("environment_requirements")
    environment = data.get("environment")
    effective_at = None
    if isinstance(requirements, dict) and isinstance(requirements.get("effective_at"), str):
        effective_at = requirements["effective_at"]
    elif isinstance(environment, dict) and isinstance(environment.get("effective_at"), str):
        effective_at = environment["effective_at"]

    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    role = metadata.get("dataset_role") if isinstance(metadata, dict) else None
    roles = tuple(str(r) for r in (role if isinstance(role, list) else [role] if role else []))

    similarity = None
    if "input" in data:
        # The same input and context over another initial state is another case (12.1).
        key = normalize_text(
            {
                "input": data.get("input"),
                "context": data.get("context"),
                "state": data.get("state"),
                "initial_state": data.get("initial_state"),
            }
        )
        line, col = doc.locate(("input",))
        similarity = (hashlib.blake2b(key.encode(), digest_size=12).hexdigest(), line, col)

    rights: Path = ("metadata", "usage_rights_status")
    usage_status = _string(doc, rights)
    allowed_uses = None
    retention_until = None
    if isinstance(doc.get(rights), dict):
        usage_status = _string(doc, (*rights, "status"))
        uses = _located(doc, (*rights, "allowed_uses"))
        if uses is not None and isinstance(uses[0], list):
            allowed_uses = (tuple(str(u) for u in uses[0]), uses[1], uses[2])
        retention_until = _string(doc, (*rights, "retention_until"))

    cel, state_paths = case_expressions(doc)
    inline: list[tuple[str, str, int, int]] = []
    for block in ("state", "initial_state"):
        if isinstance(data.get(block), dict):
            for key in data[block]:
                if key != "fixtures":
                    inline += leaves(doc, (block, key), (str(key),))

    risk = data.get("risk_level")
    types = data.get("case_types")
    tags_value = metadata.get("tags") if isinstance(metadata, dict) else None
    tags = tuple(str(t) for t in tags_value) if isinstance(tags_value, list) else ()
    coverage: list[tuple[str, str, int, int]] = []
    cells = metadata.get("coverage") if isinstance(metadata, dict) else None
    if isinstance(cells, dict):
        for dimension, value in cells.items():
            for i, item in enumerate(value if isinstance(value, list) else [value]):
                at = ("metadata", "coverage", dimension, i) if isinstance(value, list) else None
                line, col = doc.locate(at or ("metadata", "coverage", dimension))
                coverage.append((str(dimension), str(item), line, col))
    grouping = digest(
        {
            "tags": sorted(tags),
            "roles": sorted(roles),
            "risk_level": risk,
            "coverage": cells if isinstance(cells, dict) else None,
        }
    )
    roles_at = doc.locate(("metadata", "dataset_role")) if role else None
    return CaseFacts(
        path=doc.path,
        dataset_dir=dataset_dir,
        case_id=_string(doc, ("case_id",)),
        dataset_id=_string(doc, ("dataset_id",)),
        case_version=_string(doc, ("case_version",)),
        dataset_version=_string(doc, ("dataset_version",)),
        risk_level=risk if isinstance(risk, str) else None,
        roles=roles,
        refs=tuple(refs),
        tool_pins=tuple(pins),
        expected_args=tuple(expected_args),
        gold_calls=gold_calls,
        policy_grader_at=policy_grader_at,
        gold_evidence=tuple(evidence),
        effective_at=effective_at,
        similarity=similarity,
        field_digest_text=_field_digests(doc),
        evidence_at=tuple(evidence_at),
        pin_values=tuple(pin_values),
        usage_status=usage_status,
        allowed_uses=allowed_uses,
        retention_until=retention_until,
        tags=tags,
        coverage=tuple(coverage),
        grouping_digest=grouping,
        roles_at=roles_at,
        review_status=_review_status(metadata),
        cel=cel,
        state_paths=state_paths,
        inline_state=tuple(inline),
        prompt_offers=offered(data.get("input"), data.get("interaction"), data.get("context")),
        case_types=tuple(str(t) for t in types) if isinstance(types, list) else (),
    )


def fixture_facts(doc: Document, dir_kind: str, *, state_leaves: bool = True) -> FixtureFacts:
    """A fixture's facts; ``state_leaves`` False: a state fixture's leaves are None (not
    computed), for a reader that runs no lint rule."""
    data = doc.data if isinstance(doc.data, dict) else {}
    body = data.get("data") if isinstance(data.get("data"), dict) else {}
    assert isinstance(body, dict)
    kind = data.get("kind")
    side_effect = body.get("side_effect") if kind == "tool" else None
    parameters = body.get("parameters") if kind == "tool" else None
    passages: dict[str, dict[str, str | None]] = {}
    if kind == "corpus" and isinstance(body.get("documents"), list):
        for document in body["documents"]:
            if not isinstance(document, dict):
                continue
            doc_date = document.get("effective_date")
            entry = passages.setdefault(str(document.get("doc_id")), {})
            found = document.get("passages")
            for passage in found if isinstance(found, list) else []:
                if isinstance(passage, dict):
                    date = passage.get("effective_date", doc_date)
                    entry[str(passage.get("passage_id"))] = date if isinstance(date, str) else None
    kb = body.get("knowledge_base")
    cv = body.get("corpus_version")
    policy = body.get("side_effect_policy") if kind == "tool" else None
    return FixtureFacts(
        path=doc.path,
        dir_kind=dir_kind,
        fixture_id=_string(doc, ("fixture_id",)),
        fixture_version=_string(doc, ("fixture_version",)),
        kind=_string(doc, ("kind",)),
        desensitized=_located(doc, ("desensitized",)),
        tool_name=_string(doc, ("data", "name")) if kind == "tool" else None,
        side_effect=side_effect if isinstance(side_effect, bool) else None,
        parameters=parameters if isinstance(parameters, dict) else None,
        knowledge_base=kb if kind == "corpus" and isinstance(kb, str) else None,
        corpus_version=cv if kind == "corpus" and isinstance(cv, str) else None,
        passages=passages,
        field_digest_text=_field_digests(doc),
        parameters_at=doc.locate(("data", "parameters")) if kind == "tool" else None,
        parameters_valid=not isinstance(parameters, dict) or not param_schema.problems(parameters),
        corpus_at=doc.locate(("data", "corpus_version")) if kind == "corpus" and cv else None,
        policy_at=doc.locate_key(("data", "side_effect_policy"))
        if isinstance(policy, dict)
        else None,
        policy_tool=str(policy.get("tool"))
        if isinstance(policy, dict) and policy.get("tool")
        else None,
        cel=tool_expressions(doc) if kind == "tool" else (),
        state_reads=tool_state_reads(doc) if kind == "tool" else (),
        state_writes=tool_state_writes(doc) if kind == "tool" else (),
        state_leaves=(leaves(doc, ("data",)) if state_leaves else None) if kind == "state" else (),
        prompt_vars=_prompt_vars(doc, body) if kind == PROMPT else (),
        prompt_limits=_prompt_limits(doc, body) if kind == PROMPT else (),
        uses=tuple(_strings(doc, ("data", "uses"))) if kind == "tool" else (),
        definitions=_definitions(doc, body) if kind == "cel" else (),
        definition_reads=_definition_reads(body) if kind == "cel" else (),
    )


def _definition_reads(body: dict[str, Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    from evalcase.contract import cel

    raw = body.get("definitions")
    out: list[tuple[str, tuple[str, ...]]] = []
    for name, value in raw.items() if isinstance(raw, dict) else ():
        if isinstance(value, dict) and isinstance(value.get("expr"), str):
            refs = cel.analyze(value["expr"]).references
            out.append((str(name), tuple(dict.fromkeys(r.root for r in refs))))
    return tuple(out)


def _definitions(
    doc: Document, body: dict[str, Any]
) -> tuple[tuple[str, tuple[str, ...], str, int, int, str | None], ...]:
    from evalcase.contract import cel

    raw = body.get("definitions")
    out: list[tuple[str, tuple[str, ...], str, int, int, str | None]] = []
    for name, value in raw.items() if isinstance(raw, dict) else ():
        if not isinstance(value, dict) or not isinstance(value.get("expr"), str):
            continue  # the schema rules say what is missing
        params = value.get("params")
        names = tuple(p for p in params if isinstance(p, str)) if isinstance(params, list) else ()
        line, col = doc.locate(("data", "definitions", name, "expr"))
        error = cel.analyze(value["expr"]).error
        out.append(
            (str(name), names, value["expr"], line, col, None if error is None else error.message)
        )
    return tuple(out)


def _prompt_limits(doc: Document, body: dict[str, Any]) -> tuple[tuple[str, str, int, int], ...]:
    from evalcase.index.expressions import file_position

    variables = body.get("variables")
    data = variables if isinstance(variables, dict) else {}
    out: list[tuple[str, str, int, int]] = []
    for name, template, path in _templates(body):
        if not isinstance(template, str):
            continue
        found = exceeds(template, data)
        if found is not None:
            message, t_line = found
            out.append((name, message, *file_position(doc, path, template, t_line, 1)))
    return tuple(out)


def _templates(body: dict[str, Any]) -> list[tuple[str, Any, Path]]:
    """A prompt's templates: (field, template, where it is)."""
    templates: list[tuple[str, Any, Path]] = [
        ("system", body.get("system"), ("data", "system")),
        ("user", body.get("user"), ("data", "user")),
    ]
    messages = body.get("messages")
    for i, message in enumerate(messages if isinstance(messages, list) else []):
        if isinstance(message, dict):
            templates.append(
                (f"messages.{i}", message.get("content"), ("data", "messages", i, "content"))
            )
    return templates


def _prompt_vars(doc: Document, body: dict[str, Any]) -> tuple[tuple[str, str, int, int], ...]:
    out: list[tuple[str, str, int, int]] = []
    for name, template, path in _templates(body):
        if not isinstance(template, str):
            continue
        line, col = doc.locate(path)
        found = referenced(template)
        if isinstance(found, str):
            out.append((name, "", line, col))
        else:
            out += [(name, variable, line, col) for variable in found]
    return tuple(out)


def manifest_facts(doc: Document, dataset_dir: str) -> ManifestFacts:
    data = doc.data if isinstance(doc.data, dict) else {}
    return ManifestFacts(
        path=doc.path,
        dataset_dir=dataset_dir,
        dataset_id=_string(doc, ("dataset_id",)),
        dataset_version=_string(doc, ("dataset_version",)),
        field_digest_text=_field_digests(doc),
        suites=_suites(doc),
        gates=_gates(doc),
        coverage=_coverage(data),
        coverage_required=_required_cells(doc),
        prompts=tuple(_strings(doc, ("prompts",))),
    )


# Every criterion of evalcase.suites, and the old spellings (stored as what they mean).
_SELECTORS = (*CRITERIA, *ALIASES)


def _suites(doc: Document) -> tuple[tuple[str, int, int, dict[str, Any]], ...]:
    suites = doc.get(("suites",))
    if not isinstance(suites, dict):
        return ()
    out = []
    for name, suite in suites.items():
        line, col = doc.locate_key(("suites", name))
        selectors: dict[str, Any] = {}
        if isinstance(suite, dict):
            for selector in _SELECTORS:
                if isinstance(suite.get(selector), list):
                    criterion = ALIASES.get(selector, selector)
                    selectors[criterion] = selectors.get(criterion, ()) + tuple(
                        (str(v), *doc.locate(("suites", name, selector, i)))
                        for i, v in enumerate(suite[selector])
                    )
        out.append((str(name), line, col, selectors))
    return tuple(out)


def _gates(
    doc: Document,
) -> tuple[tuple[str, int, int, str | None, int, int, tuple[str, ...] | None], ...]:
    gates = doc.get(("gates",))
    if not isinstance(gates, list):
        return ()
    out = []
    for i, gate in enumerate(gates):
        if not isinstance(gate, dict):
            continue
        name = gate.get("name")
        at = ("gates", i, "name") if "name" in gate else ("gates", i)
        line, col = doc.locate(at)
        suite = gate.get("suite")
        suite_at = doc.locate(("gates", i, "suite")) if "suite" in gate else (line, col)
        levels = gate.get("risk_levels")
        out.append(
            (
                str(name) if name is not None else "",
                line,
                col,
                str(suite) if isinstance(suite, str) else None,
                suite_at[0],
                suite_at[1],
                tuple(str(v) for v in levels) if isinstance(levels, list) else None,
            )
        )
    return tuple(out)


def _review_status(metadata: Any) -> str | None:
    status = metadata.get("review_status") if isinstance(metadata, dict) else None
    return status if isinstance(status, str) else None


def _required_cells(
    doc: Document,
) -> tuple[tuple[tuple[tuple[str, str], ...], int, int], ...]:
    cells = doc.get(("coverage", "required"))
    if not isinstance(cells, list):
        return ()
    out = []
    for i, cell in enumerate(cells):
        if isinstance(cell, dict) and cell:
            pairs = tuple(sorted((str(k), str(v)) for k, v in cell.items()))
            out.append((pairs, *doc.locate(("coverage", "required", i))))
    return tuple(out)


def _coverage(data: dict[str, Any]) -> dict[str, list[str]] | None:
    coverage = data.get("coverage")
    dimensions = coverage.get("dimensions") if isinstance(coverage, dict) else None
    if not isinstance(dimensions, dict):
        return None
    return {
        str(k): [str(x) for x in v] if isinstance(v, list) else [] for k, v in dimensions.items()
    }
