"""The [run] section: parsed, validated, and hashed apart from what lint caches on."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.model import FatalError
from evalcase.run.agents import resolve


def test_a_run_section_change_keeps_the_lint_digest(tmp_path: Path) -> None:
    base = load_config(_write(tmp_path / "a", '[lint]\nignore = ["EC1"]\n'))
    with_run = load_config(
        _write(
            tmp_path / "b",
            '[lint]\nignore = ["EC1"]\n[run]\nconcurrency = 9\ndefault_agent = "x"\n',
        )
    )
    other_lint = load_config(_write(tmp_path / "c", '[lint]\nignore = ["EC2"]\n'))
    assert base.digest == with_run.digest != other_lint.digest
    assert base.section_digest("run") != with_run.section_digest("run")
    assert with_run.run.concurrency == 9 and with_run.run.default_agent == "x"


def test_what_data_may_name_is_part_of_the_lint_digest(tmp_path: Path) -> None:
    """EC330-EC332 read the agent names and the registered handlers: those, and nothing
    else of [run.agents], change lint's cache key."""
    a = load_config(_write(tmp_path / "a", '[run.agents]\nx = "cmd:a"\n'))
    b = load_config(_write(tmp_path / "b", '[run.agents]\nx = "cmd:b"\n'))
    c = load_config(_write(tmp_path / "c", '[run.agents]\ny = "cmd:a"\n'))
    d = load_config(
        _write(tmp_path / "d", '[run.agents]\nx = "cmd:a"\n[run.handlers]\nh = "m:f"\n')
    )
    assert a.digest == b.digest and len({a.digest, c.digest, d.digest}) == 3


def _write(root: Path, text: str) -> Path:
    root.mkdir()
    (root / "evalcase.toml").write_text(text, "utf-8")
    return root


def test_bad_run_settings_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FatalError, match=r"run\.concurrency"):
        load_config(_write(tmp_path / "a", "[run]\nconcurrency = 0\n"))
    with pytest.raises(FatalError, match="run"):
        load_config(_write(tmp_path / "b", "[run]\nagents = {x = {cwd = 'a'}}\n"))


def test_agent_resolution_order(tmp_path: Path) -> None:
    config = load_config(
        _write(
            tmp_path / "r",
            '[run]\ndefault_agent = "fallback"\n'
            '[run.agents]\nfallback = "py:m:f"\n'
            'refund_agent = {spec = "cmd:{python} agent.py", env = {MODE = "strict"}}\n',
        )
    )
    run = config.run
    root = config.root
    named = resolve(run, root, None, "refund_agent")
    assert (
        named.name == "refund_agent"
        and named.spec.endswith(" agent.py")
        and "{python}" not in named.spec
    )
    assert named.options["cwd"] == str(root.resolve()) and named.options["env"] == {
        "MODE": "strict"
    }
    assert resolve(run, root, "openai:m", "refund_agent").spec == "openai:m"  # --agent wins
    assert resolve(run, root, None, "unknown_agent").name == "fallback"  # then default_agent
    assert resolve(run, root, None, None).spec == "py:m:f"
    with pytest.raises(FatalError, match=r"neither a \[run\.agents\] name nor a spec"):
        resolve(run, root, "nonsense", None)
    bare = load_config(_write(tmp_path / "bare", "[lint]\n"))
    with pytest.raises(FatalError, match="no agent to run"):
        resolve(bare.run, bare.root, None, "refund_agent")
