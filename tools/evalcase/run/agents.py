"""Which agent a run uses: ``--agent``, else the manifest's ``agent``, else ``[run]
default_agent``. ``--agent`` and ``default_agent`` (typed by the user, or reviewed as
code) may be a name from ``[run.agents]`` or a spec (``SCHEME:TARGET``); the manifest is
data, so its ``agent`` may only be a ``[run.agents]`` name: a manifest naming a command is
refused even when ``--agent`` would have chosen another agent (evalcase.trust).

``--base-url URL`` points an ``openai:`` agent (named or ad hoc, as in ``--agent
openai:MODEL``) at an OpenAI-compatible server; it overrides ``base_url`` of its
``[run.agents.NAME]`` table and ``OPENAI_BASE_URL``.

``{python}`` in a spec is this interpreter (so ``cmd:{python} agent.py`` works in any
virtual environment); ``cmd:`` agents start in the repository root unless ``cwd`` says
otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcase.config import RunConfig
from evalcase.model import FatalError
from evalcase.run.adapters import known_schemes, split_spec
from evalcase.trust import agent_problem, is_name


@dataclass(frozen=True)
class AgentChoice:
    spec: str
    name: str | None
    options: Mapping[str, Any] = field(default_factory=dict)


def _is_spec(text: str) -> bool:
    scheme, sep, _ = text.partition(":")
    return bool(sep) and scheme in known_schemes()


def _named(run: RunConfig, name: str, root: Path) -> AgentChoice | None:
    entry = run.agents.get(name)
    if entry is None:
        return None
    if isinstance(entry, str):
        return _finish(AgentChoice(entry, name, {}), root)
    options = {k: v for k, v in entry.items() if k != "spec"}
    return _finish(AgentChoice(str(entry["spec"]), name, options), root)


def _finish(choice: AgentChoice, root: Path) -> AgentChoice:
    spec = choice.spec.replace("{python}", sys.executable)
    options = dict(choice.options)
    try:
        scheme, _ = split_spec(spec)
    except ValueError as exc:
        raise FatalError(str(exc)) from None
    if scheme == "cmd":
        cwd = Path(str(options.get("cwd", ".")))
        options["cwd"] = str(cwd if cwd.is_absolute() else (root / cwd).resolve())
    if scheme == "py" and "path" not in options:
        options["path"] = str(root)
    return AgentChoice(spec, choice.name, options)


def resolve(run: RunConfig, root: Path, cli: str | None, manifest: str | None) -> AgentChoice:
    if manifest and not is_name(manifest) and manifest not in run.agents:
        problem = agent_problem(manifest, {"agents": run.agents})
        raise FatalError(f"refusing to run: the manifest's {problem}")
    tried = []
    for source, value in (
        ("--agent", cli),
        ("the manifest's agent", manifest),
        ("[run] default_agent", run.default_agent),
    ):
        if not value:
            continue
        named = _named(run, value, root)
        if named is not None:
            return named
        if source != "the manifest's agent" and _is_spec(value):
            return _finish(AgentChoice(value, None, {}), root)
        if source == "--agent":
            raise FatalError(
                f"--agent {value!r} is neither a [run.agents] name nor a spec "
                f"({', '.join(s + ':...' for s in known_schemes())})"
            )
        tried.append(f"{source} {value!r} is not defined in [run.agents]")
    hint = "; ".join(tried) + "; " if tried else ""
    raise FatalError(
        f"no agent to run: {hint}pass --agent SPEC (for example cmd:python my_agent.py) or set "
        "[run] default_agent"
    )


# Schemes --base-url applies to: the ones that talk to an OpenAI-compatible endpoint.
BASE_URL_SCHEMES = frozenset({"openai"})


def with_base_url(choice: AgentChoice, base_url: str | None) -> AgentChoice:
    """The choice with ``--base-url`` applied (a usage error for other schemes)."""
    if not base_url:
        return choice
    scheme, _ = split_spec(choice.spec)
    if scheme not in BASE_URL_SCHEMES:
        raise FatalError(f"--base-url goes with an openai: agent; the agent is {choice.spec!r}")
    if not base_url.startswith(("http://", "https://")):
        raise FatalError(f"--base-url {base_url!r} must be an http:// or https:// URL")
    return AgentChoice(choice.spec, choice.name, {**choice.options, "base_url": base_url})
