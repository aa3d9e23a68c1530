"""The sandbox decision (evalcase.run.isolation.decide) for every combination of the
agent's setting, [run] sandbox, require_sandbox and whether bubblewrap works. The real
conditions (a bwrap that fails its probe, a real run) are in tests/run/hostile/."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcase.run import isolation


def works() -> None:
    return None


def broken() -> str:
    return "bubblewrap cannot create its namespaces here: no user namespaces"


def test_by_default_sandboxed_where_it_works_and_a_warning_where_it_cannot() -> None:
    assert isolation.decide({}, None, False, problem=works) == isolation.Decision(True)
    degraded = isolation.decide({}, None, False, problem=broken)
    assert degraded.sandbox is False and degraded.error is None
    assert degraded.warning and "agents are not isolated" in degraded.warning
    assert "no user namespaces" in degraded.warning
    refused = isolation.decide({}, None, True, problem=broken)
    assert refused.sandbox is False and refused.error and "require_sandbox" in refused.error


@pytest.mark.parametrize(
    ("own", "run_default", "where"),
    [(True, None, "[run.agents]"), (True, False, "[run.agents]"), (None, True, "[run]")],
)
def test_an_explicit_sandbox_true_refuses_to_run_without_it(
    own: bool | None, run_default: bool | None, where: str
) -> None:
    """``sandbox = true`` asks for the sandbox: where it cannot work that is an error,
    not the default's warning."""
    options = {} if own is None else {"sandbox": own}
    assert isolation.decide(options, run_default, False, problem=works) == isolation.Decision(True)
    for require in (False, True):
        refused = isolation.decide(options, run_default, require, problem=broken)
        assert refused.sandbox is False and refused.warning is None
        assert refused.error and "no user namespaces" in refused.error
        assert (where in refused.error) if not require else "require_sandbox" in refused.error
    # A Ray worker probes again: the configured options say it must be sandboxed.
    out, _ = isolation.configure("cmd:x", options, Path("/nowhere"), run_default, [])
    assert out["require_sandbox"] is True
    default, _ = isolation.configure("cmd:x", {}, Path("/nowhere"), None, [])
    assert default["require_sandbox"] is False


@pytest.mark.parametrize(("own", "run_default"), [(False, None), (False, True), (None, False)])
def test_switched_off_is_a_choice_not_a_warning_unless_the_sandbox_is_required(
    own: bool | None, run_default: bool | None
) -> None:
    options = {} if own is None else {"sandbox": own}
    for problem in (works, broken):
        off = isolation.decide(options, run_default, False, problem=problem)
        assert off == isolation.Decision(False)
    refused = isolation.decide(options, run_default, True, problem=works)
    assert refused.error and "sandbox = false" in refused.error


def test_the_agents_own_setting_wins_over_the_runs() -> None:
    assert isolation.decide({"sandbox": True}, False, False, problem=works).sandbox is True
    assert isolation.decide({"sandbox": False}, True, False, problem=works).sandbox is False


def test_the_probe_is_cached_per_process() -> None:
    first = isolation.sandbox_problem()
    assert isolation.sandbox_problem() is first
    assert isolation.sandbox_problem.cache_info().hits >= 1


def test_the_agents_folder_is_one_directory_made_and_removed_with_one_rmdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HOME and TMPDIR are the attempt's folder itself: no ``home`` and ``tmp`` made and
    removed per attempt (0.35 ms of CPU an attempt on ext4 at concurrency 200)."""
    workdir = tmp_path / "evalcase-agent-x"
    workdir.mkdir()
    env = isolation.agent_env(workdir, None, source={"PATH": "/bin"})
    assert env["HOME"] == env["TMPDIR"] == str(workdir)
    assert list(workdir.iterdir()) == []  # nothing made inside
    removed: list[Path] = []
    real = Path.rmdir

    def rmdir(self: Path) -> None:
        removed.append(self)
        real(self)

    monkeypatch.setattr(Path, "rmdir", rmdir)
    isolation.remove_workdir(workdir)
    assert removed == [workdir] and not workdir.exists()
    # What an agent left is removed whole, links not followed.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    workdir.mkdir()
    (workdir / "cache").mkdir()
    (workdir / "cache" / "f").write_text("y")
    (workdir / "link").symlink_to(outside)
    isolation.remove_workdir(workdir)
    assert not workdir.exists() and (outside / "keep").exists()
