"""Executors: where attempts run. ``local`` (threads in this process) and ``ray``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evalcase.model import FatalError
from evalcase.run.executors.base import AttemptJob, Executor, Limits

__all__ = ["EXECUTORS", "AttemptJob", "Executor", "Limits", "get_executor"]


def _local(config: Mapping[str, Any], address: str | None) -> Executor:
    from evalcase.run.executors.local import LocalExecutor

    return LocalExecutor()


def _ray(config: Mapping[str, Any], address: str | None) -> Executor:
    from evalcase.run.executors.ray import RayExecutor, RaySettings

    executor = RayExecutor(RaySettings.from_config(config, address))
    executor.preflight()  # before the run folder exists: a missing extra or address
    return executor


# name -> factory(its config section, e.g. [run.ray]; the --ray-address given, if any)
EXECUTORS: dict[str, Callable[[Mapping[str, Any], str | None], Executor]] = {
    "local": _local,
    "ray": _ray,
}


def get_executor(
    name: str, config: Mapping[str, Any] | None = None, address: str | None = None
) -> Executor:
    """The executor ``name``, set up from its config section (``[run.ray]`` for ray)."""
    factory = EXECUTORS.get(name)
    if factory is None:
        raise FatalError(f"unknown executor {name!r}; known: {', '.join(sorted(EXECUTORS))}")
    return factory(config or {}, address)
