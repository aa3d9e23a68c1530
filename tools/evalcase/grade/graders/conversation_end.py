"""The conversation ended by a stop signal, not by a limit.

tau2-bench gives reward 0 to a conversation its orchestrator ended prematurely: too many
steps, too many tool errors, the user's turn limit. This grader reads how the record says
the conversation ended (``conversation.ended_by``, docs/contract.md#user-tools) and
passes only on a stop signal: ``user_stop``, ``user_transfer``, ``user_out_of_scope``
(the simulated user's tokens) or ``ends_conversation`` (a tool response that ends it,
tau2's agent stop). Every other ending fails with its own reason: ``max_steps`` and
``max_tool_errors`` (the case's ``user_simulator`` limits), ``max_turns``, ``script_end``
(the script ran out with no stop), ``error``.

Configuration::

    user_simulator: {instructions: ..., max_steps: 200, max_tool_errors: 10}
    evaluator_config:
      graders:
        - {type: conversation_end}

Passing: the simulated user wrote ``###STOP###``. Failing: the tenth tool error ended the
conversation (``max_tool_errors``). A record that says nothing of how its conversation
ended (a case with neither a simulated user nor a reactive script) is an error.
"""

from __future__ import annotations

from evalcase.contract.records import Observed
from evalcase.contract.task import STOP_SIGNALS
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.model import Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec

NAME = "conversation_end"
VERSION = "1"

# Why each premature end fails (the record's ended_by -> the reason's words).
PREMATURE = {
    "max_steps": "it reached user_simulator.max_steps",
    "max_tool_errors": "it reached user_simulator.max_tool_errors tool errors",
    "max_turns": "the user reached max_turns without a stop signal",
    "script_end": "the script ran out without a stop signal",
    "error": "the attempt ended in an error",
}


def needs(spec: JudgeSpec) -> str | None:
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    ended = attempt.record.conversation
    if ended is None:
        return error(
            "the record says nothing of how its conversation ended (a case with a "
            "user_simulator or a reactive script records conversation.ended_by)"
        )
    how = ended.ended_by
    if how in STOP_SIGNALS:
        return passed(f"the conversation ended by a stop signal ({how})")
    why = PREMATURE.get(how or "", "it had not ended when the attempt stopped")
    return failed(f"premature end ({how}): {why}", ended_by=how)
