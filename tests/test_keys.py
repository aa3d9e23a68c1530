"""Keys read once (evalcase.keys): while a run holds them, a process it starts inherits
none, and the readers of keys (the openai: adapter, the record scrubber) still find them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from evalcase import keys, scrub
from evalcase.run.adapters import openai


def child_sees(name: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", f"import os; print(os.environ.get({name!r}, '<none>'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_a_held_key_is_out_of_the_environment_of_children_but_read_by_evalcase(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HELD_TEST_KEY", "sk-held-0123456789")
    monkeypatch.setenv("OTHER_VARIABLE", "stays")
    assert child_sees("HELD_TEST_KEY") == "sk-held-0123456789"  # the check can fail
    with keys.held(["HELD_TEST_KEY", "NOT_SET_AT_ALL"]) as taken:
        assert taken == ["HELD_TEST_KEY"]
        assert child_sees("HELD_TEST_KEY") == "<none>"
        assert child_sees("OTHER_VARIABLE") == "stays"
        assert "HELD_TEST_KEY" not in os.environ
        assert keys.get("HELD_TEST_KEY") == "sk-held-0123456789"
        assert openai.Settings({"api_key_env": "HELD_TEST_KEY"}).api_key == "sk-held-0123456789"
        masked = scrub.build(scrub.Sources(variables=frozenset({"HELD_TEST_KEY"})))
        assert "sk-held-0123456789" not in str(masked.data({"out": "sk-held-0123456789"}))
    assert os.environ["HELD_TEST_KEY"] == "sk-held-0123456789"  # back where it was
    assert keys.get("NOT_SET_AT_ALL") is None
