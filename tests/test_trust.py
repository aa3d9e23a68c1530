"""evalcase.trust: what data may name. The end-to-end refusals are in tests/run/test_trust.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcase import plugins
from evalcase.trust import agent_problem, handler_problem, is_name, registered_handlers


@pytest.fixture
def fresh_plugins() -> Iterator[None]:
    plugins._declared_groups.cache_clear()
    plugins._plugins.cache_clear()
    yield
    plugins._declared_groups.cache_clear()
    plugins._plugins.cache_clear()


def test_names_and_what_is_not_one() -> None:
    assert is_name("refund_agent") and is_name("crm-assistant")
    for spec in ("cmd:sh -c 'id'", "py:pkg.mod:main", "http://127.0.0.1/agent", "a b", ""):
        assert not is_name(spec)
    run = {"agents": {"refund_agent": {"spec": "cmd:x"}}}
    assert agent_problem("refund_agent", run) is None
    assert "not a name" in str(agent_problem("cmd:sh -c 'id'", run))
    assert "not defined in [run.agents] (refund_agent)" in str(agent_problem("other", run))


def test_handlers_come_from_the_configuration_and_entry_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None
) -> None:
    dist = tmp_path / "site" / "acme_eval-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme_eval\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[evalcase.handlers]\nreserve = acme_eval.tools:r\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])
    registered = registered_handlers({"handlers": {"lookup": "acme_eval.tools:lookup"}})
    assert registered == {"reserve": "acme_eval.tools:r", "lookup": "acme_eval.tools:lookup"}
    assert handler_problem("reserve", registered) is None
    assert "not a name" in str(handler_problem("os:system", registered))
    assert "not registered" in str(handler_problem("reserv", registered))
