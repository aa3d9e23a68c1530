"""Trace events and messages are read into types (evalcase.grade.trace_events) and the
judge's prompt is rendered from them."""

from __future__ import annotations

from evalcase.grade.trace_events import Message, TraceEvent, events, messages


def test_trace_objects_become_events_and_the_rest_is_skipped() -> None:
    raw = [
        {"type": "assistant", "step": 1, "content": "checking",
         "tool_calls": [{"tool": "get_order"}], "finish_reason": "stop"},
        "not an object",
        {"type": "fault", "step": 2, "tool": "refund", "kind": "timeout", "applied": True,
         "extra": "kept out"},
    ]  # fmt: skip
    got = events(raw)
    assert got == (
        TraceEvent(type="assistant", step=1, content="checking",
                   tool_calls=[{"tool": "get_order"}], finish_reason="stop"),
        TraceEvent(type="fault", step=2, tool="refund", kind="timeout", applied=True),
    )  # fmt: skip
    assert messages([{"role": "user", "content": "hi"}, 3]) == (Message("user", "hi"),)
