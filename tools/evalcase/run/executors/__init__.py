"""Executors: where attempts run. ``local`` (threads in this process) and ``ray``."""

from __future__ import annotations

from collections.abc import Callable

from evalcase.model import FatalError
from evalcase.run.executors.base import AttemptJob, Executor, Limits

__all__ = ["EXECUTORS", "AttemptJob", "Executor", "Limits", "get_executor"]


def _local() -> Executor:
    from evalcase.run.executors.local import LocalExecutor

    return LocalExecutor()


def _ray() -> Executor:
    try:
        from evalcase.run.executors.ray import RayExecutor  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ModuleNotFoundError as exc:
        raise FatalError(f"the ray executor is not available here: {exc}") from exc
    executor: Executor = RayExecutor()
    return executor


EXECUTORS: dict[str, Callable[[], Executor]] = {"local": _local, "ray": _ray}


def get_executor(name: str) -> Executor:
    factory = EXECUTORS.get(name)
    if factory is None:
        raise FatalError(f"unknown executor {name!r}; known: {', '.join(sorted(EXECUTORS))}")
    return factory()
