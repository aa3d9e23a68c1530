"""What the user-simulator rules (EC613-EC616) share: a case's scripted user turns."""

from __future__ import annotations

from typing import Any


def script(data: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The scripted user turns (index in ``interaction``, turn): the user turns after the
    last assistant turn; those before it are history."""
    turns = data.get("interaction")
    if not isinstance(turns, list):
        return []
    last = max(
        (i for i, t in enumerate(turns) if isinstance(t, dict) and t.get("role") == "assistant"),
        default=-1,
    )
    return [
        (i, t)
        for i, t in enumerate(turns)
        if i > last and isinstance(t, dict) and t.get("role") == "user"
    ]
