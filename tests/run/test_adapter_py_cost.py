"""The py: adapter's per-attempt cost: what depends only on the agent's function (does it
take options?) is worked out once per function, not once per attempt (43.5)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from evalcase.run.adapters import py


def agent(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    return {"content": "ok", "options": options}


def plain(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": "ok"}


def test_a_functions_signature_is_read_once_for_all_its_sessions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    getattr(py.takes_options, "cache_clear", lambda: None)()  # a fresh count
    seen: list[object] = []
    real = inspect.signature

    def counting(func: Any, *args: Any, **kwargs: Any) -> inspect.Signature:
        seen.append(func)
        return real(func, *args, **kwargs)

    monkeypatch.setattr(py.inspect, "signature", counting)
    for _ in range(5):
        with_options = py.PySession(agent, 1000, {"k": 1})
        without = py.PySession(plain, 1000, {"k": 1})
    assert seen.count(agent) == 1 and seen.count(plain) == 1
    # The answers are still each function's own.
    assert with_options.func({}) == {"content": "ok", "options": {"k": 1}}
    assert without.func is plain
