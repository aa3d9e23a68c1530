"""The first hour: every command init and its files print works as printed, and the
generated CI workflow's steps pass in a fresh repository with no package index involved
for evalcase itself."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from evalcase.authoring.init import Hooks, init_repository
from tests.helpers import GIT_ENV, commit_all, git, init_repo, run_cli

_TICKED = re.compile(r"`((?:evalcase|git|pre-commit) [^`]+)`")


def _source_repo(tmp_path: Path) -> tuple[Path, str]:
    """A real git repository standing for evalcase's own, with one commit."""
    src = init_repo(tmp_path / "evalcase_src")
    (src / "README.md").write_text("evalcase\n", "utf-8")
    return src, commit_all(src, "evalcase")


def _env(tmp_path: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        **GIT_ENV,
        "HOME": str(tmp_path),
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        # Nothing below may reach a package index.
        "PIP_NO_INDEX": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "tools"),
    }


def _shell(command: str, cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if command.startswith("evalcase "):
        return run_cli(*shlex.split(command)[1:], cwd=cwd, env={"HOME": str(tmp_path)})
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=_env(tmp_path), capture_output=True, text=True
    )


@pytest.mark.slow
def test_every_printed_hint_runs_as_printed(tmp_path: Path) -> None:
    src, rev = _source_repo(tmp_path)
    proc = run_cli("init", "cases", "--hooks-repo", str(src), "--hooks-rev", rev, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    root = tmp_path / "cases"
    hint = next(line for line in proc.stdout.splitlines() if line.startswith("next:"))
    commands = _TICKED.findall(hint)
    assert commands[0] == "git init -b main" and any(
        c.startswith("evalcase new ") for c in commands
    )
    for command in commands:
        done = _shell(command, root, tmp_path)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
    # The README and the example manifest name commands too: each works in a fresh copy.
    printed = []
    for name in ("README.md", "datasets/support_regression_set/dataset.yaml"):
        text = re.sub(r"\s*\n\s*", " ", (root / name).read_text("utf-8"))
        printed += _TICKED.findall(text)
    assert len(printed) >= 5, printed
    for i, command in enumerate(printed):
        fresh = tmp_path / f"copy{i}"
        init_repository(fresh, hooks=Hooks(str(src), rev))
        done = _shell(command, fresh, tmp_path)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        if command.startswith("evalcase new-dataset"):
            linted = run_cli("lint", cwd=fresh)
            assert linted.returncode == 0, linted.stdout  # new-dataset's manifest lints clean
            follow = re.search(r"`(evalcase new [^`]+)`", done.stderr)
            assert follow is not None, done.stderr
            again = _shell(follow.group(1), fresh, tmp_path)
            assert again.returncode == 0, (follow.group(1), again.stderr)


@pytest.mark.slow
def test_the_workflow_pins_a_commit_and_its_steps_pass_in_a_fresh_repository(
    tmp_path: Path,
) -> None:
    src, rev = _source_repo(tmp_path)
    root = tmp_path / "cases"
    init_repository(root, hooks=Hooks(str(src), rev))
    workflow = yaml.safe_load((root / ".github/workflows/evalcase.yml").read_text("utf-8"))
    init_repo(root)
    commit_all(root, "init")
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")  # what actions/checkout fetches

    def steps(job: str) -> list[str]:
        return [s["run"] for s in workflow["jobs"][job]["steps"] if "run" in s]

    for job in ("lint", "smoke"):
        for step in workflow["jobs"][job]["steps"]:
            if "run" not in step:
                continue
            command = step["run"]
            if "pip install" in command:
                # The requirement comes from the repository variable, else the default init
                # wrote: none here, since this hooks repository is a path of this machine.
                ((variable, value),) = step["env"].items()
                default = re.search(r"\|\| '([^']*)'", value)
                assert default is not None and default.group(1) == "", value
                unset = _shell(command, root, tmp_path)
                assert unset.returncode == 1, (unset.stdout, unset.stderr)
                assert f"set the repository variable {variable}" in unset.stdout
                # What the team sets: a commit of evalcase's git repository, never a name on
                # a package index; pip's first step for such a URL: the commit is there.
                req = Requirement(f"evalcase @ git+{src.as_uri()}@{rev}")
                assert req.name == "evalcase" and req.url and not str(req.specifier)
                url, _, pinned = req.url.removeprefix("git+").rpartition("@")
                assert pinned == rev and re.fullmatch(r"[0-9a-f]{40}", pinned)
                fetch = subprocess.run(
                    ["git", "fetch", "-q", url, pinned],
                    cwd=src,
                    env=_env(tmp_path),
                    capture_output=True,
                    text=True,
                )
                assert fetch.returncode == 0, fetch.stderr
                continue
            command = command.replace("${{ github.base_ref || 'main' }}", "main")
            done = _shell(command, root, tmp_path)
            assert done.returncode == 0, (job, command, done.stdout, done.stderr)
            if job == "smoke":
                assert "no agent configured" in done.stderr  # lint decides until then
                assert not (root / "outputs").exists()
    # Once an agent is configured the smoke step runs the suite for real.
    agent = Path(__file__).resolve().parents[1] / "run" / "cmd_agents" / "echo.py"
    with (root / "evalcase.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[run]\ndefault_agent = "cmd:{sys.executable} {agent}"\n')
    commit_all(root, "an agent")
    (smoke,) = [c for c in steps("smoke") if c.startswith("evalcase run")]
    done = _shell(smoke, root, tmp_path)
    assert done.returncode in (0, 1), done.stderr  # 1: the echo agent fails the smoke gate
    assert "no agent configured" not in done.stderr
    assert list((root / "outputs").rglob("attempts.jsonl"))


def test_pip_spec_is_never_a_package_name(tmp_path: Path) -> None:
    for repo in ("https://github.com/o/evalcase", "git@github.com:o/evalcase.git", str(tmp_path)):
        spec = Hooks(repo, "a" * 40).pip_spec
        req = Requirement(spec)
        assert req.url and req.url.startswith("git+") and req.url.endswith("@" + "a" * 40), spec
    shutil.rmtree(tmp_path, ignore_errors=True)
