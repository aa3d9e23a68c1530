"""Spans to conversations: one a trace, or one a session or conversation ID across traces.

Spans are read in start order (then span ID); the parent tree is checked, not needed: a
span whose parent is not in the import is kept (noted), spans whose parents form a cycle
are skipped. The user's turns are the user messages of the model calls, each once, in
order; the system instructions the first a model call was sent; the calls are the tool
executions (``execute_tool``, ``TOOL`` spans) with their results, or, in a trace with
none, the calls the model made paired with the tool messages that answered them; the
answer is the last model call's last assistant text (an agent span's output when there
is no model call).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from evalcase.authoring.traces import genai, openinference
from evalcase.authoring.traces.model import (
    Conversation,
    Observed,
    Skipped,
    Span,
    ToolCall,
    ToolDefinition,
)
from evalcase.authoring.traces.values import BadValue

# A tool name becomes a fixture ID and a file name: lower snake case ASCII only.
TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,127}$")


def check_parents(spans: list[Span]) -> tuple[list[Span], list[Skipped], list[str]]:
    """(spans kept, spans in a cycle of parents, notes on missing parents)."""
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    state: dict[tuple[str, str], int] = {}  # 1 on the current path, 2 done, 3 in a cycle
    cyclic: set[tuple[str, str]] = set()
    missing: set[str] = set()
    for span in spans:
        path: list[tuple[str, str]] = []
        key = (span.trace_id, span.span_id)
        while key in by_id and key not in state:
            state[key] = 1
            path.append(key)
            parent = by_id[key].parent_id
            if not parent:
                key = ("", "")
                break
            nxt = (key[0], parent)
            if nxt not in by_id:
                missing.add(by_id[key].span_id)
            key = nxt
        if state.get(key) == 1:  # back on this path: the path from there is a cycle
            cyclic.update(path[path.index(key) :])
        for k in path:
            state[k] = 3 if k in cyclic else 2
    kept = [s for s in spans if (s.trace_id, s.span_id) not in cyclic]
    skipped = [
        Skipped(s.where, s.span_id, "its parents form a cycle (a span is its own ancestor)")
        for s in spans
        if (s.trace_id, s.span_id) in cyclic
    ]
    notes = [f"{len(missing)} span(s) whose parent is not in the import (kept)"] if missing else []
    return kept, skipped, notes


def observe(spans: Iterable[Span], skipped: list[Skipped]) -> list[Observed]:
    out = []
    for span in spans:
        reader = openinference if openinference.recognizes(span) else genai
        if reader is genai and not genai.recognizes(span):
            continue
        try:
            out.append(reader.observe(span))
        except BadValue as exc:
            skipped.append(Skipped(span.where, span.span_id, str(exc)))
    return out


def assemble(observed: list[Observed], skipped: list[Skipped]) -> list[Conversation]:
    by_trace: dict[str, list[Observed]] = defaultdict(list)
    for item in observed:
        by_trace[item.span.trace_id].append(item)
    groups: dict[str, list[Observed]] = defaultdict(list)
    for trace_id, items in by_trace.items():
        cid = next((i.conversation_id for i in items if i.conversation_id), "")
        groups[f"conversation {cid}" if cid else f"trace {trace_id}"].extend(items)
    conversations = []
    for key, items in groups.items():
        items.sort(key=lambda i: (i.span.start, i.span.span_id))
        conversation = _conversation(key, items, skipped)
        if conversation is not None:
            conversations.append(conversation)
    conversations.sort(key=lambda c: c.where)
    return conversations


def _merge(turns: list[str], new: list[str]) -> None:
    if new[: len(turns)] == turns:
        turns.extend(new[len(turns) :])
    else:
        turns.extend(t for t in new if t not in turns)


def _conversation(key: str, items: list[Observed], skipped: list[Skipped]) -> Conversation | None:
    llm = [i for i in items if i.kind == "llm"]
    agents = [i for i in items if i.kind == "agent"]
    turns: list[str] = []
    for item in llm:
        _merge(turns, [m.content for m in item.inputs if m.role == "user" and m.content])
    if not turns:
        for item in agents:
            _merge(turns, [m.content for m in item.inputs if m.role == "user" and m.content])
    if not turns:
        where = items[0].span.where
        skipped.append(Skipped(where, items[0].span.span_id, f"{key}: no user message"))
        return None
    system = next((s for i in (*llm, *agents) for s in i.system if s), None)
    proposals: dict[str, ToolCall] = {}
    for item in llm:
        for message in (*item.inputs, *item.outputs):
            for call in message.tool_calls if message.role == "assistant" else ():
                if call.call_id:
                    proposals.setdefault(call.call_id, call)
    calls: list[ToolCall | None] = [
        _named(i.tool, proposals) for i in items if i.kind == "tool" and i.tool
    ]
    if not any(i.kind == "tool" for i in items):
        calls = _from_messages(llm, proposals)
    kept = []
    for maybe in calls:
        if maybe is None:
            continue
        call = maybe
        if not TOOL_NAME.match(call.name):
            shown = call.name[:80] or "(none)"
            skipped.append(
                Skipped(
                    items[0].span.where,
                    call.span_id,
                    f"tool name {shown!r} is not a fixture ID (lower snake case ASCII, "
                    "128 characters at most); the call is left out",
                )
            )
            continue
        kept.append(call)
    answer = None
    for item in reversed(llm or agents):
        texts = [m.content for m in item.outputs if m.role in ("assistant", "") and m.content]
        if texts:
            answer = texts[-1]
            break
    definitions: dict[str, ToolDefinition] = {}
    for item in items:
        for declared in item.definitions:
            known = definitions.get(declared.name)
            if known is None or (known.parameters is None and declared.parameters is not None):
                definitions[declared.name] = declared
    trace_ids = tuple(dict.fromkeys(i.span.trace_id for i in items))
    spans = tuple(i.span.span_id for i in items)
    convention = (
        "openinference"
        if any(openinference.recognizes(i.span) for i in items)
        else "opentelemetry genai"
    )
    return Conversation(
        key,
        trace_ids,
        spans,
        system,
        tuple(turns),
        tuple(kept),
        answer,
        items[0].span.where,
        next((i.conversation_id for i in items if i.conversation_id), ""),
        convention,
        definitions,
    )


def _named(call: ToolCall, proposals: dict[str, ToolCall]) -> ToolCall:
    """A tool execution with the name and arguments of the model's call it answers when
    the span lacks them."""
    proposal = proposals.get(call.call_id) if call.call_id else None
    if proposal is None:
        return call
    return ToolCall(
        call.name or proposal.name,
        call.arguments or proposal.arguments,
        call.call_id,
        call.span_id,
        call.result,
        call.error,
        call.answered,
    )


def _from_messages(llm: list[Observed], proposals: dict[str, ToolCall]) -> list[ToolCall | None]:
    answers: dict[str, tuple[ToolCall, str]] = {}
    for item in llm:
        for message in item.inputs:
            if message.role == "tool" and message.call_id and message.tool_calls:
                answers.setdefault(message.call_id, (message.tool_calls[0], item.span.span_id))
    out: list[ToolCall | None] = []
    for call_id, call in proposals.items():
        if call_id in answers:
            answer, span_id = answers[call_id]
            out.append(
                ToolCall(call.name, call.arguments, call_id, span_id, answer.result, None, True)
            )
    return out
