"""A ``user_simulator`` without instructions the simulated user can follow.

The model behind ``[run.user_simulator]`` plays the user from the case's instructions
alone (docs/contract.md#simulated-users): without them, or with neither a reason for the
call nor task instructions, it has nothing to ask for and invents a conversation no one
wrote, and the attempt measures the simulator rather than the agent.

Passing::

    user_simulator:
      instructions:
        reason_for_call: You want to cancel reservation EHGLP3.
        task_instructions: Ask for a refund; accept a voucher if refused.

Failing::

    user_simulator:
      max_turns: 10                 # no instructions
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC613"
NAME = "user-simulator-instructions"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None or not isinstance(data.get("user_simulator"), dict):
        return
    instructions = data["user_simulator"].get("instructions")
    if isinstance(instructions, str) and instructions.strip():
        return
    if isinstance(instructions, dict):
        if any(
            isinstance(instructions.get(k), str) and instructions[k].strip()
            for k in ("reason_for_call", "task_instructions")
        ):
            return
        line, col = doc.locate(("user_simulator", "instructions"))
        yield report(
            doc.path,
            line,
            col,
            "the simulated user's instructions have neither reason_for_call nor "
            "task_instructions: say why the user calls and what they want",
        )
        return
    line, col = doc.locate_key(("user_simulator",))
    yield report(
        doc.path,
        line,
        col,
        "user_simulator has no instructions: add instructions (persona, reason_for_call, "
        "known_info, unknown_info, task_instructions, or one text)",
    )
