"""`evalcase import PATH` for OpenTelemetry traces: production conversations become
draft cases whose tools answer as production's did (docs/authoring.md).

One module per step: ``otlp`` decodes files (OTLP/JSON, OTLP protobuf) into spans,
``genai`` and ``openinference`` read each span's convention, ``conversation`` makes
conversations of them, ``draft`` plans the case and fixture files (redacted,
deduplicated). Nothing is written unless the whole import was read and planned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from evalcase.authoring.traces.draft import (
    PlannedCase,
    PlannedFile,
    Redactor,
    TracePlan,
    existing_cases,
    fixture_jobs,
)
from evalcase.authoring.traces.model import (
    MAX_SPANS,
    Conversation,
    Skipped,
    Span,
    ToolCall,
    ToolDefinition,
)
from evalcase.authoring.traces.otlp import TraceError, read_file, sniff, too_many
from evalcase.config import Config
from evalcase.forked import run as run_jobs
from evalcase.forked import split
from evalcase.model import FatalError, FileKind

_DATASET = re.compile(r"^[a-z][a-z0-9_]{0,127}$")


def is_trace_input(path: Path) -> bool:
    """A folder (the collect inbox) or a file holding OTLP traces."""
    return path.is_dir() or sniff(path) is not None


def trace_files(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.glob("*.jsonl") if p.is_file() and not p.is_symlink())
    if not files:
        raise FatalError(f"{path}: no *.jsonl trace file in the folder")
    return files


def read_spans(path: Path) -> tuple[list[Span], list[Skipped]]:
    """Every span of the file or folder, files read in name order, at most MAX_SPANS in
    all: the files in two groups of about equal size, the first read in a forked child
    on a second core (evalcase.forked), each group stopping at the bound as it reads."""
    files = trace_files(path)
    sizes = [_size(file) / 17_000 for file in files]  # about 0.5 ms of reading a unit
    cut = split(sizes)
    parts = [(g, w) for g, w in ((files[:cut], sum(sizes[:cut])), (files[cut:], sum(sizes[cut:])))
             if g]  # fmt: skip
    read = run_jobs([partial(_read_group, g) for g, _ in parts], [w for _, w in parts])
    spans: list[Span] = []
    skipped: list[Skipped] = []
    for more, left in read:
        if len(spans) + len(more) > MAX_SPANS:
            where = more[MAX_SPANS - len(spans)].where
            raise FatalError(f"{TraceError(where, too_many())}; nothing written")
        spans.extend(more)
        skipped.extend(left)
    return spans, skipped


def _read_group(files: list[Path]) -> tuple[list[Span], list[Skipped]]:
    spans: list[Span] = []
    skipped: list[Skipped] = []
    for file in files:
        try:
            more, left = read_file(file, file.name, MAX_SPANS - len(spans))
        except TraceError as exc:
            raise FatalError(f"{exc}; nothing written") from None
        spans.extend(more)
        skipped.extend(left)
    return spans, skipped


def _size(file: Path) -> int:
    try:
        return file.stat().st_size
    except OSError:
        return 0


def conversations(path: Path) -> tuple[list[Conversation], list[Skipped], list[str], int]:
    from evalcase.authoring.traces.conversation import assemble, check_parents, observe

    spans, skipped = read_spans(path)
    kept, cyclic, notes = check_parents(spans)
    skipped.extend(cyclic)
    observed = observe(kept, skipped)
    return assemble(observed, skipped), skipped, notes, len(spans)


def _origin_text(conversation: Conversation) -> str:
    spans = conversation.span_ids
    listed = ", ".join(spans[:_LISTED])
    more = f" and {len(spans) - _LISTED} more" if len(spans) > _LISTED else ""
    traces = ", ".join(conversation.trace_ids)
    return f"OpenTelemetry trace {traces}: spans {listed}{more}"


_LISTED = 12


def plan_trace_import(
    config: Config,
    path: Path,
    dataset_id: str,
    *,
    stem: str | None = None,
    case_types: tuple[str, ...] = (),
    allow_personal_data: bool = False,
) -> TracePlan:
    from evalcase.authoring.ids import case_path, check_stem, next_case_id, used_case_ids
    from evalcase.authoring.import_ import dedupe_key, default_stem, existing_keys
    from evalcase.authoring.new import build

    if (
        not _DATASET.match(dataset_id)
        or not (config.root / "datasets" / dataset_id / "dataset.yaml").is_file()
    ):
        raise FatalError(
            f"no dataset {dataset_id!r}: datasets/<id>/dataset.yaml "
            "(evalcase new-dataset makes one)"
        )
    found, skipped, notes, span_count = conversations(path)
    plan = TracePlan(skipped=skipped, notes=notes, redacted=not allow_personal_data)
    plan.conversations, plan.spans = len(found), span_count
    if not found:
        return plan
    stem = check_stem(stem or default_stem(config, dataset_id), config)
    first = next_case_id(stem, used_case_ids(config))  # then one more per case written
    number = int(first.rsplit("_", 1)[1])
    imported, pins = existing_cases(config)
    seen = existing_keys(config)
    redactor = Redactor(enabled=not allow_personal_data)
    drafts: list[tuple[Conversation, str, dict[str, Any]]] = []
    templates: dict[tuple[str, ...], str] = {}
    calls_by_tool: dict[str, list[ToolCall]] = {}
    for conversation in found:
        if conversation.key in imported:
            plan.already.append((conversation, imported[conversation.key]))
            continue
        case_id = f"{stem}_{number:03d}"
        turns = [
            redactor.text(t, f"{case_id} user turn {i + 1}")
            for i, t in enumerate(conversation.user_turns)
        ]
        system = (
            redactor.text(conversation.system, f"{case_id} system instructions")
            if conversation.system
            else None
        )
        key = dedupe_key(turns[0], {})
        if key in seen:
            plan.duplicates.append((conversation, seen[key]))
            continue
        number += 1
        seen[key] = case_id
        calls = []
        for n, call in enumerate(conversation.calls, 1):
            where = f"{case_id} call {n} ({call.name})"
            red = ToolCall(
                call.name,
                redactor.value(dict(call.arguments), f"{where} arguments"),
                call.call_id,
                call.span_id,
                redactor.value(call.result, f"{where} result"),
                call.error,
                call.answered,
            )
            calls.append(red)
            calls_by_tool.setdefault(call.name, []).append(red)
        answer = (
            redactor.text(conversation.answer, f"{case_id} answer") if conversation.answer else None
        )
        observed: dict[str, object] = {
            "calls": [
                {"tool": c.name, "args": dict(c.arguments)}
                | (
                    {"error": c.error}
                    if c.error is not None
                    else {"result": c.result}
                    if c.answered
                    else {}
                )
                for c in calls
            ],
            "answer": answer,
        }
        types = case_types or (("tool",) if calls else ())
        if types not in templates:  # one draft skeleton per case types, copied per case
            templates[types] = json.dumps(build(config, dataset_id, case_id, types or None))
        data = json.loads(templates[types])
        data["case_id"] = case_id
        data["input"] = turns[0]
        if len(turns) > 1:
            data["interaction"] = [{"role": "user", "content": t} for t in turns]
        if system:
            data["generation_config"] = {"system_prompt": system}
        data["source"] = _origin_text(conversation)
        meta = data["metadata"]
        meta["dataset_role"] = "observation"
        meta["review_status"] = "draft"
        meta["usage_rights_status"] = "pending_review"
        meta["origin"] = {
            "trace_key": conversation.key,
            "trace_ids": list(conversation.trace_ids),
            "span_ids": list(conversation.span_ids),
            "conversation_id": conversation.conversation_id or None,
            "convention": conversation.convention,
            "imported_from": conversation.where,
            "redacted": not allow_personal_data,
            "observed": observed,
            "note": "observed is what the agent did (its calls and answer), kept for "
            "review; what it should have done is for a person to write in the TODO: fields",
        }
        drafts.append((conversation, case_id, data))
    origin = f"imported from {path.name}"
    definitions: dict[str, ToolDefinition] = {}
    for conversation in found:
        for name, declared in conversation.definitions.items():
            if name not in definitions or definitions[name].parameters is None:
                definitions[name] = declared
    jobs, versions = fixture_jobs(
        config, calls_by_tool, origin, not allow_personal_data, plan.notes, definitions
    )
    for conversation, _, data in drafts:
        tools = sorted({c.name for c in conversation.calls})
        if tools:
            data["available_tools"] = tools
            data["tool_schema"] = {t: versions[t] for t in tools}
    # The texts: each draft and fixture rendered from what it was given, about half of
    # the work in a forked child on a second core (evalcase.forked).
    renders: list[Callable[[], tuple[str, tuple[str, ...]]]] = [job.render for job in jobs]
    renders += [partial(_case_text, d) for _, _, d in drafts]
    rendered = run_jobs(renders, [*(job.weight for job in jobs), *([1.0] * len(drafts))])
    for job, (text, said) in zip(jobs, rendered, strict=False):
        plan.notes.extend(said)
        plan.fixtures.append(PlannedFile(job.path, text, job.what))
    for job in jobs:
        tool = job.path.stem
        if job.what.startswith("fixture v") and pins.get(tool):
            plan.notes.append(
                f"{tool} is now {versions[tool]}: the cases that pin an earlier version "
                f"({', '.join(pins[tool])}) get EC309 until a person reviews their "
                "expectations against it and updates the pin"
            )
    for (conversation, case_id, _data), (text, _) in zip(
        drafts, rendered[len(jobs) :], strict=True
    ):
        if len(text.encode("utf-8")) > config.max_file_bytes:
            raise FatalError(
                f"{conversation.where}: the draft of {conversation.key} would hold "
                f"{len(text.encode('utf-8')):,} bytes, over lint's max_file_bytes "
                f"({config.max_file_bytes:,}); nothing written"
            )
        target = case_path(config.root, dataset_id, case_id)
        plan.cases.append(PlannedCase(case_id, conversation, PlannedFile(target, text, "case")))
    plan.replaced = redactor.found
    return plan


def _case_text(data: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A draft's YAML text, in the house's key order."""
    from evalcase.authoring.fmt import canonicalize
    from evalcase.yamlwrite import dump_plain

    canonicalize(data, FileKind.CASE)
    return dump_plain(data, verify=False), ()


def write_trace_plan(config: Config, plan: TracePlan) -> list[PlannedFile]:
    """Write every planned file (each whole, by rename); the paths were built from
    checked IDs and are refused if one would leave the repository."""
    from evalcase.atomic import UnsafePath, write_atomic_many

    files = [*plan.fixtures, *(c.file for c in plan.cases)]
    root = config.root.resolve()
    for item in files:
        if not item.path.resolve().is_relative_to(root):
            raise FatalError(f"refused to write {item.path}: outside the repository")
    try:  # folders made and each file renamed from opened folders, never through a link
        write_atomic_many(((f.path, f.text) for f in files), parents=True, base=config.root)
    except UnsafePath as exc:
        raise FatalError(str(exc)) from None
    return files


__all__ = [
    "PlannedCase",
    "PlannedFile",
    "TracePlan",
    "is_trace_input",
    "json",
    "plan_trace_import",
    "write_trace_plan",
]
