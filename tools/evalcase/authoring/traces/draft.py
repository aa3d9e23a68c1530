"""Conversations to draft cases and tool fixtures: redacted, deduplicated, planned whole.

Each conversation becomes one draft case (``input``, or ``interaction`` for more than one
user turn; the system instructions as ``generation_config.system_prompt``; the tools it
called as ``available_tools`` at the fixture versions written here). Each recorded tool
result becomes a response ``{when: <the call's arguments>, result | error}`` of the tool's
fixture: a new fixture (``v1``, parameters inferred from the calls, a ``TODO:``
description) or the next version of the fixture with that ID (the responses appended,
before a final response without ``when``). The agent's calls and answer are kept in
``metadata.origin.observed``, for the reviewer: what happened, never the expectation.

Personal data (``evalcase.pii``) in the turns, the system instructions, arguments,
results and the observed answer is replaced by placeholders, one per value across the
whole import (``<EMAIL_1>``), unless ``allow_personal_data``: a case and its fixtures
then agree, and an agent repeating the placeholder makes the recorded call.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from evalcase.authoring.traces.model import Conversation, Skipped, ToolCall, ToolDefinition
from evalcase.config import Config
from evalcase.model import FatalError

_LISTED_SPANS = 12


@dataclass(frozen=True)
class Replacement:
    placeholder: str
    kind: str
    masked: str
    where: str


class Redactor:
    """Stable placeholders: the same value (normalised) the same placeholder."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.placeholders: dict[tuple[str, str], str] = {}
        self.counts: dict[str, int] = {}
        self.found: list[Replacement] = []

    def text(self, value: str, where: str) -> str:
        from evalcase.pii import find_personal_data

        matches = find_personal_data(value)
        if not matches:
            return value
        for match in matches:
            key = (match.kind, match.normalised)
            if key not in self.placeholders:
                self.counts[match.kind] = self.counts.get(match.kind, 0) + 1
                self.placeholders[key] = f"<{match.kind.upper()}_{self.counts[match.kind]}>"
            self.found.append(Replacement(self.placeholders[key], match.kind, match.masked, where))
        if not self.enabled:
            return value
        out = value
        for match in sorted(matches, key=lambda m: m.start, reverse=True):
            out = (
                out[: match.start]
                + self.placeholders[(match.kind, match.normalised)]
                + out[match.end :]
            )
        return out

    def value(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            return self.text(value, where)
        if isinstance(value, dict):
            return {
                self.text(k, f"{where} (a key)"): self.value(v, f"{where}.{k}")
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.value(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value


@dataclass(frozen=True)
class PlannedFile:
    path: Path
    text: str
    what: str  # "case", "new fixture", "fixture v3" ...


@dataclass(frozen=True)
class PlannedCase:
    case_id: str
    conversation: Conversation
    file: PlannedFile


@dataclass
class TracePlan:
    """What a trace import would write; nothing is written before it is complete."""

    cases: list[PlannedCase] = field(default_factory=list)
    fixtures: list[PlannedFile] = field(default_factory=list)
    already: list[tuple[Conversation, str]] = field(default_factory=list)
    duplicates: list[tuple[Conversation, str]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    replaced: list[Replacement] = field(default_factory=list)
    redacted: bool = True
    conversations: int = 0
    spans: int = 0


def trace_key(conversation: Conversation) -> str:
    return conversation.key


def existing_cases(config: Config) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(trace key -> case ID of every case imported from a trace, tool -> the cases
    whose ``tool_schema`` pins it)."""
    from evalcase.loader import load

    keys: dict[str, str] = {}
    pins: dict[str, list[str]] = {}
    for path in sorted((config.root / "datasets").glob("*/cases/*.yaml")):
        data = load(path.name, path.read_bytes()).data
        if not isinstance(data, dict):
            continue
        meta = data.get("metadata")
        origin = meta.get("origin") if isinstance(meta, dict) else None
        key = origin.get("trace_key") if isinstance(origin, dict) else None
        if isinstance(key, str):
            keys.setdefault(key, path.stem)
        schema = data.get("tool_schema")
        for tool in schema if isinstance(schema, dict) else ():
            pins.setdefault(str(tool), []).append(path.stem)
    return keys, pins


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def infer_parameters(calls: list[ToolCall]) -> dict[str, Any]:
    """A JSON Schema of the arguments seen: each argument's types, those in every call
    required."""
    types: dict[str, list[str]] = {}
    for call in calls:
        for name, value in call.arguments.items():
            kinds = types.setdefault(name, [])
            kind = _json_type(value)
            if kind not in kinds:
                kinds.append(kind)
    for kinds in types.values():
        if "integer" in kinds and "number" in kinds:
            kinds.remove("integer")
    properties = {
        name: {"type": kinds[0] if len(kinds) == 1 else sorted(kinds)}
        for name, kinds in types.items()
    }
    required = [n for n in types if all(n in c.arguments for c in calls)]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _response(call: ToolCall) -> dict[str, Any]:
    response: dict[str, Any] = {"when": dict(call.arguments)}
    if call.error is not None:
        message = call.result if isinstance(call.result, str) else ""
        code = re.sub(r"[^a-z0-9_]+", "_", call.error.lower()).strip("_") or "tool_error"
        response["error"] = {"code": code, "message": message} if message else code
    else:
        response["result"] = call.result
    return response


def _bump(version: str) -> str:
    number = int(version[1:]) if re.fullmatch(r"v[0-9]+", version) else 0
    return f"v{number + 1}"


@dataclass(frozen=True)
class FixtureJob:
    """A tool fixture to write: its text (and notes on it) made by ``render``, which reads
    only what it was given (so it may run in a forked child, evalcase.forked)."""

    path: Path
    what: str
    weight: float  # what rendering costs, in drafts' worth (about 0.5 ms each)
    render: Callable[[], tuple[str, tuple[str, ...]]]


def fixture_jobs(
    config: Config,
    calls: dict[str, list[ToolCall]],
    origin: str,
    redacted: bool,
    notes: list[str],
    definitions: Mapping[str, ToolDefinition] | None = None,
) -> tuple[list[FixtureJob], dict[str, str]]:
    """The tool fixtures to write, each to be rendered, and each tool's fixture version."""
    from evalcase.yamlwrite import round_trip_load

    jobs: list[FixtureJob] = []
    versions: dict[str, str] = {}
    folder = config.root / "fixtures" / "tool"
    for name in sorted(calls):
        answered = [c for c in calls[name] if c.answered]
        unanswered = len(calls[name]) - len(answered)
        if unanswered:
            notes.append(f"{name}: {unanswered} call(s) without a recorded result (no response)")
        responses: list[dict[str, Any]] = []
        seen: dict[str, str] = {}
        for call in answered:
            response = _response(call)
            when = json.dumps(response["when"], sort_keys=True, ensure_ascii=False)
            body = json.dumps(response, sort_keys=True, ensure_ascii=False, default=str)
            if when in seen:
                if seen[when] != body:
                    notes.append(
                        f"{name}: the same arguments answered differently ({when}); the first kept"
                    )
                continue
            seen[when] = body
            responses.append(response)
        path = folder / f"{name}.yaml"
        if path.is_file():
            original = path.read_text("utf-8")
            data = round_trip_load(original)
            inner = data.get("data") if isinstance(data, dict) else None
            if not isinstance(inner, dict):
                raise FatalError(f"{path.relative_to(config.root)}: not a tool fixture with data")
            existing = inner.get("responses") or []
            known = {
                json.dumps(r.get("when"), sort_keys=True, ensure_ascii=False, default=str)
                for r in existing
                if isinstance(r, dict)
            }
            new = [
                r
                for r in responses
                if json.dumps(r["when"], sort_keys=True, ensure_ascii=False) not in known
            ]
            version = str(data.get("fixture_version") or "v1")
            if not new:
                versions[name] = version
                continue
            version = _bump(version)
            versions[name] = version
            what = f"fixture {version} (+{len(new)} response(s))"
            render = partial(_render_version, name, original, data, inner, new, version)
            jobs.append(FixtureJob(path, what, 1 + len(new) / 5, render))
            continue
        versions[name] = "v1"
        jobs.append(
            FixtureJob(
                path,
                "new fixture",
                1 + len(responses) / 5,
                partial(
                    _render_new, name, calls[name], responses, origin, redacted,
                    (definitions or {}).get(name),
                ),
            )
        )  # fmt: skip
    return jobs, versions


def _render_version(
    name: str,
    original: str,
    data: Any,
    inner: Any,
    new: list[dict[str, Any]],
    version: str,
) -> tuple[str, tuple[str, ...]]:
    """The next version of an existing fixture: ``new`` cut into its text."""
    from evalcase.yamlwrite import round_trip_dump

    said = _fit_notes(name, inner.get("parameters"), new, "the fixture's")
    existing = inner.get("responses") or []
    at = len(existing)
    if existing and isinstance(existing[-1], dict) and "when" not in existing[-1]:
        at -= 1  # before a response that answers every call
    if "responses" in inner:
        text = _inserted(original, existing, at, new, version)
    else:
        text = _added(original, data, inner, new, version)
    if text is None:
        inner["responses"] = list(existing[:at]) + new + list(existing[at:])
        data["fixture_version"] = version
        text = round_trip_dump(data)
    return text, said


def _render_new(
    name: str,
    calls: list[ToolCall],
    responses: list[dict[str, Any]],
    origin: str,
    redacted: bool,
    declared: ToolDefinition | None,
) -> tuple[str, tuple[str, ...]]:
    """A draft v1 fixture of a tool the repository has none of."""
    from evalcase.yamlwrite import dump_plain

    schema = declared.parameters if declared is not None else None
    said: tuple[str, ...] = ()
    if isinstance(schema, Mapping) and schema.get("type") == "object":
        parameters = dict(schema)
        how = "the parameters are the app's own tool definition"
        said = _fit_notes(name, parameters, responses, "the app's declared")
    else:
        parameters = infer_parameters(calls)
        how = "the parameters are inferred from them"
    what = (
        f"the app says: {declared.description}"
        if declared and declared.description
        else (f"what {name} does")
    )
    document = {
        "fixture_id": name,
        "fixture_version": "v1",
        "kind": "tool",
        "description": (
            f"TODO: {what}. Drafted by evalcase import from {len(calls)} recorded "
            f"call(s): {how}, and side_effect is a guess; check both"
        ),
        "source": f"recorded tool results, {origin}",
        "desensitized": redacted,
        "data": {
            "name": name,
            "parameters": parameters,
            "side_effect": False,
            "responses": responses,
        },
    }
    return dump_plain(copy.deepcopy(document)), said


def _fit_notes(
    name: str, parameters: Any, responses: list[dict[str, Any]], whose: str
) -> tuple[str, ...]:
    """A note when recorded arguments do not fit the tool's parameter schema: the runner
    refuses such a call (``invalid_args``) before any response answers it, so the
    recorded response would never replay (lint's EC304 says so only of expected calls)."""
    from evalcase.contract.param_schema import first_error, validator

    checker = validator(parameters) if isinstance(parameters, Mapping) and responses else None
    if checker is None:
        return ()  # nothing to check, or a broken schema (lint's EC418 reports it)
    misfits = [r["when"] for r in responses if not _fits(checker, r["when"])]
    if not misfits:
        return ()
    args, why = misfits[0], first_error(parameters, misfits[0])
    shown = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return (
        f"{name}: {len(misfits)} of {len(responses)} recorded call(s) do not fit {whose} "
        f"parameters (the first, {shown}: {why}); the runner refuses such a call before a "
        "response answers it: check the parameters against what production sent",
    )


def _fits(checker: Any, args: Any) -> bool:
    try:
        return bool(checker.is_valid(args))
    except Exception:  # a schema that cannot be evaluated on it: not said (as first_error)
        return True


def _inserted(
    text: str, existing: Any, at: int, new: list[dict[str, Any]], version: str
) -> str | None:
    """``text`` with ``new`` responses inserted in its block list ``data.responses``
    before item ``at`` (or after the last), and ``fixture_version`` set: every other line
    kept as it is (comments included), without dumping the whole file again. None when
    the list is not a block list the text can be cut at (the caller dumps it whole)."""
    from evalcase.yamlwrite import dump_plain

    if not existing or not hasattr(existing, "lc") or existing.fa.flow_style():
        return None
    bumped, lines = _bumped_lines(text, version)
    line, column = existing.lc.item(min(at, len(existing) - 1))
    dash = column - 2
    if line >= len(lines) or lines[line][dash : dash + 1] != "-":
        return None
    # before item ``at``, or after the last item's block
    cut = line if at < len(existing) else _block_end(lines, line, dash)
    # not verified alone: the whole result is read back below
    block = dump_plain({"responses": new}, verify=False).splitlines(keepends=True)[1:]
    pad = " " * dash
    moved = [pad + b[2:] if b.strip() else b for b in block]
    result = "".join(lines[:cut] + moved + lines[cut:])
    return _reads_back(result, bumped, lambda old: old[:at] + new + old[at:])


def _added(text: str, data: Any, inner: Any, new: list[dict[str, Any]], version: str) -> str | None:
    """``text`` with a ``responses`` list of ``new`` added as the last key of its block
    mapping ``data``, and ``fixture_version`` set; None when that cannot be cut in."""
    from evalcase.yamlwrite import dump_plain

    if not inner or not hasattr(inner, "lc") or inner.fa.flow_style():
        return None
    bumped, lines = _bumped_lines(text, version)
    key_line, key_column = data.lc.key("data")
    child = inner.lc.key(next(iter(inner)))[1]
    cut = _block_end(lines, key_line, key_column)
    block = dump_plain({"responses": new}, verify=False).splitlines(keepends=True)
    pad = " " * child
    moved = [pad + b if b.strip() else b for b in block]
    result = "".join(lines[:cut] + moved + lines[cut:])
    return _reads_back(result, bumped, lambda _: new)


def _bumped_lines(text: str, version: str) -> tuple[str, list[str]]:
    """``text`` with ``fixture_version`` set, and its lines (the last one ended)."""
    from evalcase.yamlwrite import set_scalars

    bumped = set_scalars(text, {("fixture_version",): version})
    lines = bumped.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return bumped, lines


def _block_end(lines: list[str], start: int, column: int) -> int:
    """Where the block opened on line ``start`` ends: the first later line that is not
    blank or a comment and is indented at most ``column``, before any blank lines."""
    cut = start + 1
    while cut < len(lines):
        stripped = lines[cut].strip()
        indent = len(lines[cut]) - len(lines[cut].lstrip(" "))
        if stripped and not stripped.startswith("#") and indent <= column:
            break
        cut += 1
    while cut > start + 1 and not lines[cut - 1].strip():
        cut -= 1
    return cut


def _reads_back(
    result: str, bumped: str, responses: Callable[[list[Any]], list[Any]]
) -> str | None:
    """``result`` when it reads back as ``bumped``'s data with ``data.responses`` made
    ``responses(old responses)``; None otherwise (the caller dumps the file whole)."""
    from evalcase.loader import load

    expected = load("a", bumped.encode("utf-8")).data
    expected["data"]["responses"] = responses(expected["data"].get("responses") or [])
    back = load("b", result.encode("utf-8"))
    return result if not back.findings and back.data == expected else None
