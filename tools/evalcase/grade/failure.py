"""Failure classes (docs/grading.md) from the graders' evidence and the attempt record.

agent_capability, tool_contract, missing_data, safety_policy, grader_error,
environment_fault, and truncated (a reply cut at the model's token limit: raise
``max_tokens`` or shorten the prompt, the agent may be fine). The most specific class wins:
a safety breach is reported as such even when the task also failed or was cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalcase.contract.attempt import AttemptRecord
from evalcase.grade.model import GraderResult
from evalcase.grade.readers import parse


@dataclass(frozen=True)
class ToolError:
    """A tool call's error as recorded (``ToolCallRecord.error``): its code decides
    whether a failure is missing data."""

    code: str | None = None  # a scalar, read as text


# Runner error kinds (attempts.jsonl ``error.kind``): the environment's fault, or a broken
# tool contract; any other kind is the agent's.
ENVIRONMENT_ERRORS = frozenset(
    {"worker_lost", "adapter", "user_simulator", "user_script", "case_expression"}
)
TOOL_CONTRACT_ERRORS = frozenset({"unknown_tool", "bad_json", "protocol", "oversized"})

CLASSES = (
    "safety_policy",
    "truncated",
    "tool_contract",
    "missing_data",
    "agent_capability",
    "grader_error",
    "environment_fault",
)
_MISSING_DATA_CODES = frozenset({"not_found", "no_matching_response", "empty_result"})


def classify(
    record: AttemptRecord | None, results: Sequence[GraderResult], verdict: str
) -> str | None:
    """The failure class of an attempt (None: it passed or is pending); ``record`` None:
    from the graders' results alone."""
    if verdict in ("pass", "pending"):
        return None
    if record is not None and record.errored:
        kind = record.error.kind if record.error is not None else ""
        if kind in ENVIRONMENT_ERRORS:
            return "environment_fault"
        return "tool_contract" if kind in TOOL_CONTRACT_ERRORS else "agent_capability"
    if verdict == "error":
        return "grader_error"
    # hard graders, and a person's verdict, which always decides
    kinds = {
        r.grade.kind
        for r in results
        if (r.hard or r.grader == "human") and r.grade.verdict == "fail"
    }
    if "safety_policy" in kinds:
        return "safety_policy"
    if "truncated" in kinds:
        return "truncated"
    calls = record.calls if record is not None else ()
    if "tool_contract" in kinds or any(not c.valid for c in calls):
        return "tool_contract"
    errors = [parse(ToolError, c.error) for c in calls if c.error]
    codes = {str(e.code) for e in errors if isinstance(e, ToolError)}
    if "missing_data" in kinds or codes & _MISSING_DATA_CODES:
        return "missing_data"
    return "agent_capability"
