"""What the runner records of an attempt, by the names a case's
``trace_requirement.required_fields`` uses.

Each name is a part of the attempt record (``attempts.jsonl``, docs/running.md) the
runner always writes: a trace event type, or a top-level field. A required field the
runner does not record cannot be checked, so lint reports any other name (EC321), with
the nearest known one (a typo such as ``observaton`` is caught before any run).
"""

from __future__ import annotations

# name -> where the runner records it (trace event ``type`` values, or record fields)
TRACE_FIELDS: dict[str, str] = {
    "user": "trace events of type user: each user turn",
    "action": "trace events of type assistant: each reply, with the tool calls it asks for",
    "tool_call": "trace events of type tool_call and the calls list: tool name and arguments",
    "observation": "trace events of type tool_result / tool_error: what each tool answered",
    "error": "trace events of type error / tool_error, and the record's error",
    "state_change": "trace events of type state_change and calls[].changes: path, before, after",
    "retrieved_passages": "trace events of type retrieval and the retrieved list",
    "permission_denied": "trace events of type permission_denied: the policy that refused",
    "fault": "trace events of type fault: the injected fault and whether it applied",
    "audit": "trace events of type audit and calls[].audit: side-effect audit records",
    "initial_state": "the record's initial_state",
    "final_state": "the record's final_state and state_diff",
    "output": "the record's output: the final answer",
    "messages": "the record's messages: the conversation as the agent saw it",
    "usage": "the record's usage: tokens and cost",
    "latency": "the record's latency_ms",
}

# Trace event types the runner writes (run/runner.py, run/environment.py); a test keeps
# this equal to what a real run records.
EVENT_TYPES = frozenset(
    {"system", "user", "assistant", "tool_call", "tool_result", "tool_error", "error",
     "state_change", "retrieval", "permission_denied", "fault", "audit",
     "conversation_end",
     # an agent that runs its own loop (run/owned_loop.py, docs/byo-agent.md); the
     # servers' refusals are proxy_refused and mcp_refused
     "loop", "model_call", "agent_reply", "proposal_unexecuted", "link_ambiguous",
     "late_call", "budget", "proxy_refused", "mcp_refused"}
)  # fmt: skip
