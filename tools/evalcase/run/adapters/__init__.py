"""Adapters: how the runner reaches an agent. One module each; ``ADAPTERS`` is the registry.

An agent spec is ``SCHEME:TARGET``: ``cmd:python agent.py``, ``py:pkg.mod:func``,
``http://host/agent`` (or ``http:URL``), ``openai:MODEL``, ``replay:RUN_ID``. Other packages
add schemes through the ``evalcase.adapters`` entry-point group (the name is the scheme,
the object an :class:`~evalcase.run.adapters.base.Opener`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from evalcase.run.protocol import AgentFault

if TYPE_CHECKING:
    from evalcase.run.adapters.base import Opener, Session
    from evalcase.run.executors.base import AttemptJob

# scheme -> module holding ``open``; imported only when used (openai is an extra).
ADAPTERS: dict[str, str] = {
    "cmd": "evalcase.run.adapters.cmd",
    "py": "evalcase.run.adapters.py",
    "http": "evalcase.run.adapters.http",
    "https": "evalcase.run.adapters.http",
    "openai": "evalcase.run.adapters.openai",
    "replay": "evalcase.run.adapters.replay",
}
ENTRY_POINT_GROUP = "evalcase.adapters"


def split_spec(spec: str) -> tuple[str, str]:
    """``"cmd:python a.py"`` -> ``("cmd", "python a.py")``; http URLs keep their scheme."""
    scheme, sep, target = spec.partition(":")
    if not sep or not scheme:
        raise ValueError(f"agent spec {spec!r} needs a scheme, such as cmd:PROGRAM or openai:MODEL")
    if scheme in {"http", "https"} and target.startswith("//"):
        return scheme, spec
    return scheme, target


@cache
def _plugins() -> dict[str, Any]:
    from importlib.metadata import entry_points  # slow to import: only for unknown schemes

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_schemes() -> list[str]:
    return sorted(set(ADAPTERS) | set(_plugins()))


def opener(scheme: str) -> Opener:
    """The ``open`` of a scheme's adapter (built-in first, then entry-point plugins)."""
    module = ADAPTERS.get(scheme)
    if module is not None:
        found: Opener = importlib.import_module(module).open
        return found
    plugin = _plugins().get(scheme)
    if plugin is None:
        raise ValueError(f"unknown agent scheme {scheme!r}; known: {', '.join(known_schemes())}")
    loaded: Opener = plugin.load()
    return loaded


def rendering(spec: str) -> str | None:
    """The chat rendering (:mod:`evalcase.run.chat_view`) a scheme's adapter uses, from its
    module's (or plugin object's) ``RENDERING``; None for agents that get the protocol
    request itself (cmd:, py:, http:) or a scheme that cannot be loaded."""
    try:
        scheme, _ = split_spec(spec)
        module = ADAPTERS.get(scheme)
        found = (
            getattr(importlib.import_module(module), "RENDERING", None)
            if module is not None
            else getattr(opener(scheme), "RENDERING", None)
        )
    except (ValueError, ImportError):
        return None
    return found if isinstance(found, str) else None


def open_session(spec: str, options: Mapping[str, Any], job: AttemptJob) -> Session:
    try:
        scheme, target = split_spec(spec)
        return opener(scheme)(target, options, job)
    except AgentFault:
        raise
    except ModuleNotFoundError as exc:
        raise AgentFault("adapter", f"agent {spec!r} needs the module {exc.name!r}") from None
    except ValueError as exc:
        raise AgentFault("adapter", str(exc)) from None
