"""Preflight: what would fail every attempt alike is checked once, before the run starts.

A misconfigured agent (``openai:`` without its ``aiohttp`` package, the API key variable
unset, the endpoint not answering, an ``http:`` service accepting no connection, a ``cmd:``
program that does not exist or may not be executed, a ``py:`` function that does not
import, a ``replay:`` run that is not there, a ``loop = "agent"`` entry without its
``upstream``, its key variable or the ``mcp`` package) would otherwise start the run and record the
same error for every attempt. Instead ``evalcase run`` stops with exit status 2 and one
message, and writes no run folder.

Each adapter module may define ``preflight(target, options) -> str | None`` (the problem,
or None); a plugin scheme's entry-point object may carry one as its ``preflight``
attribute. With ``executor = "ray"`` only the checks that do not depend on the machine are
run (the key, the endpoint): the program or module must exist on the workers, not here.

A selected case with a ``user_simulator`` needs ``[run.user_simulator]``: its model
configured, its key variable set, its endpoint answering (:func:`simulator_problem`),
unless the agent is a ``replay:`` (which replays the recorded user turns, no model).

Passing: ``evalcase run DATASET --agent openai:MODEL --base-url http://127.0.0.1:8080/v1``
with the server up. Failing (exit 2, nothing written): the same with the server down.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from evalcase.model import FatalError
from evalcase.run.adapters import ADAPTERS, opener, split_spec
from evalcase.run.agents import AgentChoice

# Schemes whose checks look at this machine (a file, an import): skipped on a cluster.
LOCAL_ONLY = frozenset({"cmd", "py"})

Check = Callable[[str, Mapping[str, Any]], "str | None"]


def _check_of(scheme: str) -> Check | None:
    module = ADAPTERS.get(scheme)
    if module is not None:
        found: Check | None = getattr(importlib.import_module(module), "preflight", None)
        return found
    return getattr(opener(scheme), "preflight", None)


def problem(choice: AgentChoice, outputs_dir: Path, *, local: bool = True) -> str | None:
    """What stops every attempt of this agent before it starts, or None."""
    try:
        scheme, target = split_spec(choice.spec)
        check = _check_of(scheme)
    except ModuleNotFoundError as exc:
        return f"agent {choice.spec!r} needs the module {exc.name!r}, which is not installed"
    except ValueError as exc:
        return str(exc)
    named = f" ([run.agents] {choice.name})" if choice.name else ""
    if choice.options.get("loop") is not None:
        from evalcase.run import owned_loop

        owned = owned_loop.settings_problem(choice.spec, choice.options)
        if owned is not None:
            return f"the agent cannot run{named}: {owned}"
    if check is None or (not local and scheme in LOCAL_ONLY):
        return None
    found = check(target, {**choice.options, "outputs_dir": str(outputs_dir)})
    if found is None:
        return None
    return f"the agent cannot run{named}: {found}"


def check(choice: AgentChoice, outputs_dir: Path, *, local: bool = True) -> None:
    """Raise the :class:`FatalError` that stops the run when :func:`problem` finds one."""
    found = problem(choice, outputs_dir, local=local)
    if found is not None:
        raise FatalError(found)


def simulator_problem(
    choice: AgentChoice, settings: Mapping[str, Any], tasks: Iterable[Any]
) -> str | None:
    """What stops the simulated users of the selected cases, or None. ``tasks``: objects
    with ``case_id`` and ``env`` (an EnvSpec)."""
    from evalcase.run import user_simulator

    try:
        scheme, _ = split_spec(choice.spec)
    except ValueError:
        scheme = ""
    if scheme == "replay":
        return None  # the recorded user turns are replayed: no model is asked
    needed = [t.case_id for t in tasks if t.env.user_simulator is not None]
    return user_simulator.preflight(settings, needed)


def check_simulator(choice: AgentChoice, settings: Mapping[str, Any], tasks: Iterable[Any]) -> None:
    found = simulator_problem(choice, settings, tasks)
    if found is not None:
        raise FatalError(found)
