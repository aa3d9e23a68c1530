"""``py:package.module:function``: an in-process Python agent, sync or async.

The function receives the request (the whole conversation, see
:mod:`evalcase.run.protocol`) as a dict and returns the reply dict. It runs in the
runner's process, so it is the cheapest adapter (the benchmark's null agent uses it),
but a sync function that hangs cannot be stopped: it is abandoned at the deadline and
the attempt records ``timeout``.

Passing: ``def agent(request): return {"role": "assistant", "content": "hi"}``.
Failing: the function raises (recorded as ``agent_exit`` with the exception).

A function with a second positional parameter (``def agent(request, options)``) also
receives the agent's options (its ``[run.agents]`` table, as the runner was given them):
one function serves several configurations, as ``evalcase audit``'s panel does.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
import time
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from evalcase.run.protocol import AgentFault, Reply, parse_reply

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob


@lru_cache(maxsize=64)
def load(target: str, path: str | None) -> Callable[..., Any]:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise AgentFault("adapter", f"py: needs package.module:function, got {target!r}")
    if path and path not in sys.path:
        sys.path.insert(0, path)
    try:
        func: Callable[..., Any] = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise AgentFault("adapter", f"cannot load {target!r}: {exc}") from None
    return func


@lru_cache(maxsize=64)
def takes_options(func: Callable[..., Any]) -> bool:
    """Whether ``func`` has a second positional parameter (for the agent's options).
    Asked for every attempt's session, answered once per function: reading a signature
    was a tenth of an in-process attempt's cost (benchmarks/run_bench.py, row 1)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)


class PySession:
    def __init__(
        self,
        func: Callable[..., Any],
        limit: int,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.limit = limit
        self.is_async = inspect.iscoroutinefunction(func)
        if options is not None and takes_options(func):
            bound = dict(options)
            self.func: Callable[..., Any] = lambda request: func(request, bound)
        else:
            self.func = func

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        remaining = deadline - time.monotonic()
        if self.is_async:
            import asyncio

            try:
                result = asyncio.run(asyncio.wait_for(self.func(dict(request)), remaining))
            except TimeoutError:
                raise AgentFault("timeout", "no reply before the attempt's deadline") from None
            except Exception as exc:
                raise AgentFault("agent_exit", f"the agent raised {exc!r}") from None
        else:
            result = self._sync(dict(request), remaining)
        return parse_reply(result)

    def _sync(self, request: dict[str, Any], remaining: float) -> Any:
        box: list[Any] = []
        failure: list[BaseException] = []

        def target() -> None:
            try:
                box.append(self.func(request))
            except BaseException as exc:  # reported below as the agent's fault
                failure.append(exc)

        if remaining <= 0:
            raise AgentFault("timeout", "no reply before the attempt's deadline")
        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        worker.join(remaining)
        if worker.is_alive():
            raise AgentFault("timeout", "no reply before the attempt's deadline")
        if failure:
            raise AgentFault("agent_exit", f"the agent raised {failure[0]!r}")
        if not box:
            raise AgentFault("timeout", "no reply before the attempt's deadline")
        return box[0]

    def close(self) -> None:
        return None


class InlineSession(PySession):
    """No thread per reply: for agents marked ``inline = true`` (benchmarks, trusted code)."""

    def _sync(self, request: dict[str, Any], remaining: float) -> Any:
        try:
            return self.func(request)
        except Exception as exc:
            raise AgentFault("agent_exit", f"the agent raised {exc!r}") from None


def preflight(target: str, options: Mapping[str, Any]) -> str | None:
    """Before the run: the module imports and has the function (an agent runs in-process,
    so this is the import every attempt would do)."""
    path = options.get("path")
    try:
        func = load(target, None if path is None else str(path))
    except AgentFault as fault:
        return fault.message if fault.message.startswith("py:") else f"py: {fault.message}"
    except Exception as exc:  # importing the agent's module ran its code: anything goes
        return f"py: importing {target!r} failed: {type(exc).__name__}: {exc}"
    if not callable(func):
        return f"py: {target!r} is not a function"
    return None


def open(target: str, options: Mapping[str, Any], job: AttemptJob) -> PySession:
    path = options.get("path")
    func = load(target, None if path is None else str(path))
    cls = InlineSession if options.get("inline") else PySession
    return cls(func, job.limits.max_reply_bytes, options)
