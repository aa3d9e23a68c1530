"""The trust boundary: what data may name, and what only trusted configuration may.

``datasets/`` and ``fixtures/`` are data: anyone with a pull request writes them, and CI
runs them with its secrets. ``evalcase.toml``, Python code and installed plugins are
reviewed as code. So data never names an executable or an import path; it names an entry
that trusted configuration defines:

- a manifest's ``agent`` is a name from ``[run.agents]`` (lint EC330/EC331; ``evalcase
  run`` refuses anything else);
- a tool fixture's ``handler`` is a name registered in ``[run.handlers]`` (NAME =
  "package.module:function") or through the ``evalcase.handlers`` entry-point group (lint
  EC332; ``evalcase run`` refuses anything else).

Lint and the runner both ask this module, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evalcase.plugins import HANDLER_GROUP

__all__ = ["HANDLER_GROUP", "agent_problem", "handler_problem", "is_name", "registered_handlers"]

# What a name in data looks like: the identifier grammar of every other ID.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,127}")


def is_name(value: str) -> bool:
    """A plain name (``refund_agent``), not a spec, a command or an import path."""
    return NAME.fullmatch(value) is not None


def configured_agents(run: Mapping[str, Any]) -> tuple[str, ...]:
    """The names ``[run.agents]`` defines (``run``: the raw [run] table)."""
    agents = run.get("agents")
    return tuple(sorted(agents)) if isinstance(agents, Mapping) else ()


def configured_handlers(run: Mapping[str, Any]) -> dict[str, str]:
    """``[run.handlers]``: handler name -> ``package.module:function``."""
    table = run.get("handlers")
    if not isinstance(table, Mapping):
        return {}
    return {str(k): str(v) for k, v in table.items() if isinstance(v, str)}


def registered_handlers(run: Mapping[str, Any]) -> dict[str, str]:
    """Every handler a fixture may name: ``[run.handlers]`` first, then the entry points of
    the ``evalcase.handlers`` group (discovered from package metadata, never imported)."""
    from evalcase.plugins import plugins

    out = {name: ep.value for name, ep in plugins(HANDLER_GROUP).items()}
    out.update(configured_handlers(run))
    return out


def agent_problem(value: str, run: Mapping[str, Any]) -> str | None:
    """Why a manifest's ``agent`` value cannot be used, or None when it names an entry."""
    names = configured_agents(run)
    if value in names:
        return None
    if not is_name(value):
        return (
            f"agent {_clip(value)!r} is not a name: a manifest is data and never names a "
            "command, a spec or an import path; define the agent in evalcase.toml "
            '([run.agents] NAME = { spec = "..." }) and write its NAME here'
        )
    known = ", ".join(names) if names else "none defined"
    return (
        f"agent {value!r} is not defined in [run.agents] ({known}); define it in evalcase.toml "
        "or name one that is"
    )


def handler_problem(value: str, registered: Mapping[str, str]) -> str | None:
    """Why a tool's ``handler`` value cannot be used, or None when it is registered."""
    if value in registered:
        return None
    known = ", ".join(sorted(registered)) if registered else "none registered"
    if not is_name(value):
        return (
            f"handler {_clip(value)!r} is not a name: a fixture is data and never names code "
            "to import; register the function in evalcase.toml ([run.handlers] NAME = "
            f'"package.module:function") or under the entry-point group {HANDLER_GROUP}, '
            "and write its NAME here"
        )
    return (
        f"handler {value!r} is not registered ({known}); register it in [run.handlers] or "
        f"under the entry-point group {HANDLER_GROUP}"
    )


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
