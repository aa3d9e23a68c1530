"""Contained by default (docs/untrusted-input.md#running-untrusted-agents): a real
`evalcase run` with keys in the runner's environment and a hostile `cmd:` agent
(scan.py) that reads every /proc/<pid>/environ, follows every /proc/<pid>/cwd, walks up
from its own path and knocks on a loopback port.

With bubblewrap working and no sandbox setting it finds nothing. With ``sandbox = false``
the runner's own /proc entry stays closed (the runner is non-dumpable) and no process the
runner started holds a key (the keys are held out of its environment), while what the
docs say an unsandboxed agent still reaches is reached: another process of the user and
its environment, a repository through that process's cwd, a loopback port.

As root, the runner, the agent and the bystander run without capabilities (setpriv):
root's CAP_SYS_PTRACE reads any process, so only an unprivileged process of the same
user shows what the protection is worth (and the CI user, not root, is one)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from evalcase.run import isolation
from tests.helpers import GIT_ENV, POLL, REPO_ROOT, bundled_repo, commit_all

HERE = Path(__file__).parent
MARK = "sk-HOSTILE-"
CASE = "tool_refund_submit_confirmed_010"
SETPRIV = shutil.which("setpriv")
# Root's capabilities read any process: drop them all (for the runner and the agent it
# starts, and for the bystander), so that each is an ordinary process of the same user.
UNPRIVILEGED = (
    [SETPRIV, "--bounding-set", "-all", "--inh-caps", "-all", "--ambient-caps", "-all", "--"]
    if os.geteuid() == 0 and SETPRIV
    else []
)
needs_unprivileged = pytest.mark.skipif(
    os.geteuid() == 0 and not SETPRIV, reason="as root, needs setpriv to drop capabilities"
)


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, port: int) -> Path:
    root = bundled_repo(tmp_path_factory.mktemp("contained") / "repo", ("/outputs/", "/reports/"))
    # Beside datasets/, as examples/refund_agent/ is.
    (root / "agent").mkdir()
    shutil.copy(HERE / "scan.py", root / "agent" / "scan.py")
    (root / "agent" / "env_echo.py").write_text(
        "import json, os, sys\n"
        "for line in sys.stdin:\n"
        "    seen = {k: os.environ.get(k) for k in ('AGENT_MODE', 'FIXED', 'UNLISTED')}\n"
        "    print(json.dumps({'role': 'assistant', 'content': json.dumps(seen)}), flush=True)\n",
        "utf-8",
    )
    spec = f"cmd:{{python}} agent/scan.py {MARK} {port}"
    with (root / "evalcase.toml").open("a", encoding="utf-8") as toml:
        toml.write(
            f'scan = {{ spec = "{spec}" }}\n'
            f'scan_loose = {{ spec = "{spec}", sandbox = false }}\n'
            'env_listed = { spec = "cmd:{python} agent/env_echo.py", env = ["AGENT_MODE"] }\n'
            'env_fixed = { spec = "cmd:{python} agent/env_echo.py", env = { FIXED = "f1" } }\n'
            "\n[run.user_simulator]\n"
            'base_url = "http://127.0.0.1:9/v1"\nmodel = "sim"\napi_key_env = "SIM_KEY"\n'
            "\n[grade.judge]\n"
            'base_url = "http://127.0.0.1:9/v1"\nmodel = "judge"\napi_key_env = "JUDGE_KEY"\n'
        )
    commit_all(root, "hostile agents")
    return root


def runner_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **GIT_ENV, "PYTHONPATH": str(REPO_ROOT / "tools"), **extra}
    env.pop("GITHUB_ACTIONS", None)
    keys = ("OPENAI_API_KEY", "EVALCASE_JUDGE_API_KEY", "JUDGE_KEY", "SIM_KEY")
    return {**env, **{name: MARK + name + os.urandom(6).hex() for name in keys}}


def evalcase_run(
    repo: Path, agent: str, prefix: Sequence[str] = (), **env: str
) -> tuple[subprocess.CompletedProcess[str], int]:
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "evalcase", "run", "refund_regression_set",
         "--select", CASE, "--agent", agent, "--no-grade", "--progress", "none"],
        cwd=repo, env=runner_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


def output(repo: Path, proc: subprocess.CompletedProcess[str]) -> str:
    """The answer of the run's one attempt."""
    assert proc.returncode == 0, proc.stderr
    run_dir = repo / proc.stdout.strip().splitlines()[-1].split(" -> ")[-1]
    (record,) = [json.loads(line) for line in (run_dir / "attempts.jsonl").open("rb")]
    assert record["status"] == "completed", record["error"]
    return str(record["output"])


def seen_by(repo: Path, proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(output(repo, proc))
    return seen


@pytest.fixture(scope="module")
def other_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another repository of cases of the user's, which no agent is started from."""
    root = tmp_path_factory.mktemp("other") / "checkout"
    (root / "datasets" / "private_set").mkdir(parents=True)
    (root / "datasets" / "private_set" / "dataset.yaml").write_text("id: private\n", "utf-8")
    return root


@pytest.fixture()
def bystander(other_checkout: Path) -> Iterator[int]:
    """Another process of the user, as a shell is: a key in its environment, another
    repository of cases as its working directory."""
    proc = subprocess.Popen(
        [*UNPRIVILEGED, sys.executable, "-c", "import sys; sys.stdin.read()"],
        cwd=other_checkout,
        env={"PATH": os.environ.get("PATH", ""), "BYSTANDER_KEY": MARK + "bystander"},
        stdin=subprocess.PIPE,
    )
    yield proc.pid
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.skipif(isolation.sandbox_problem() is not None, reason="needs bubblewrap")
def test_by_default_the_agent_finds_no_key_no_case_and_no_port(repo: Path, bystander: int) -> None:
    proc, runner = evalcase_run(repo, "scan")
    assert "not isolated" not in proc.stderr
    seen = seen_by(repo, proc)
    # A PID namespace of its own: its processes only (bwrap, the agent), not the runner's,
    # nor the bystander's.
    assert seen["pids"] <= 3 and str(runner) not in seen["environ"], seen["environ"]
    assert str(bystander) not in seen["environ"]
    assert seen["keys"] == [] and seen["repos"] == [] and seen["writable"] == []
    assert bystander  # running meanwhile, holding a key and another checkout as its cwd
    assert seen["port"] == "closed"


@pytest.mark.slow
@needs_unprivileged
def test_unsandboxed_the_runners_proc_entry_is_closed_but_the_users_other_processes_are_not(
    repo: Path, bystander: int, other_checkout: Path
) -> None:
    proc, runner = evalcase_run(repo, "scan_loose", UNPRIVILEGED)
    assert "not isolated" not in proc.stderr  # sandbox = false is a choice, not a warning
    seen = seen_by(repo, proc)
    # It did find the runner: above its subreaper and the zygote that forked it.
    ancestors = seen["ancestors"]
    assert runner in ancestors and len(ancestors[: ancestors.index(runner)]) == 2, ancestors
    # The zygote and the subreaper it forked are non-dumpable, as the runner is: what they
    # hold of other attempts (their requests: environments, tokens) is closed to the agent.
    for pid in ancestors[: ancestors.index(runner)]:
        assert seen["environ"][str(pid)] == "PermissionError", pid
    # The runner is non-dumpable: its environment, memory and cwd are closed to the agent.
    assert seen["environ"][str(runner)] == "PermissionError"
    assert seen["cwd"][str(runner)] == "PermissionError"
    # No process the runner started holds a key (git, CEL workers, the reaper): the only
    # key found is the bystander's, which shows the scan reads what it may.
    assert seen["keys"] == [bystander], seen["environ"]
    # What an unsandboxed agent still reaches (docs/untrusted-input.md): the repository it
    # is started from (walking up from its own path; it can write there), another one
    # through the bystander's cwd, and loopback ports.
    assert str(repo) in seen["repos"] and str(repo) in seen["writable"]
    assert seen["cwd"][str(bystander)] == "read" and str(other_checkout) in seen["repos"]
    assert seen["port"] == "open"


def _fake_bwrap(tmp_path: Path) -> Path:
    """A bubblewrap that cannot create its namespaces, as in a container without user
    namespaces: first on PATH, it fails the probe for real."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n", "utf-8"
    )
    fake.chmod(0o755)
    return folder


@pytest.mark.slow
def test_without_a_working_bwrap_the_run_says_once_that_agents_are_not_isolated(
    repo: Path, tmp_path: Path
) -> None:
    path = f"{_fake_bwrap(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}"
    proc, _ = evalcase_run(repo, "scan", PATH=path)
    assert proc.stderr.count("agents are not isolated") == 1, proc.stderr
    assert "No permissions to create new namespace" in proc.stderr
    # It was not isolated: it found the repository.
    assert str(repo) in seen_by(repo, proc)["repos"]


@pytest.mark.parametrize("agent", ["scan", "scan_loose"])
def test_require_sandbox_refuses_a_run_without_one(repo: Path, tmp_path: Path, agent: str) -> None:
    config = (repo / "evalcase.toml").read_text("utf-8")
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns("outputs", "reports"))
    (copy / "evalcase.toml").write_text(
        config.replace("[run]\n", "[run]\nrequire_sandbox = true\n", 1), "utf-8"
    )
    commit_all(copy, "require the sandbox")
    path = f"{_fake_bwrap(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}"
    proc, _ = evalcase_run(copy, agent, PATH=path)
    assert proc.returncode == 2, proc.stderr
    assert "require_sandbox = true" in proc.stderr and "Traceback" not in proc.stderr
    if agent == "scan":
        assert "cannot work here" in proc.stderr and "No permissions" in proc.stderr
    else:
        assert "sandbox = false" in proc.stderr
    assert not (copy / "outputs").exists()  # refused before any run folder


def _no_bwrap(tmp_path: Path) -> Path:
    """A PATH folder without bubblewrap: only git, which the run needs."""
    folder = tmp_path / "nobwrap"
    folder.mkdir()
    git = shutil.which("git")
    assert git is not None
    (folder / "git").symlink_to(git)
    return folder


@pytest.mark.parametrize("bwrap", ["broken", "missing"])
@pytest.mark.parametrize("setting", ["run", "agent"])
def test_an_explicit_sandbox_true_refuses_a_run_without_one(
    repo: Path, tmp_path: Path, setting: str, bwrap: str
) -> None:
    """``[run] sandbox = true`` or an agent's own ``sandbox = true`` asks for the sandbox:
    without a working bubblewrap the run is refused (exit 2) before any run folder, never
    run unsandboxed with the default's warning."""
    config = (repo / "evalcase.toml").read_text("utf-8")
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns("outputs", "reports"))
    if setting == "run":
        config = config.replace("[run]\n", "[run]\nsandbox = true\n", 1)
        agent = "scan"
    else:
        spec = f"cmd:{{python}} agent/scan.py {MARK} 9"
        config = config.replace(
            "scan = {", f'scan_strict = {{ spec = "{spec}", sandbox = true }}\nscan = {{', 1
        )
        agent = "scan_strict"
    (copy / "evalcase.toml").write_text(config, "utf-8")
    commit_all(copy, "ask for the sandbox")
    if bwrap == "broken":
        path = f"{_fake_bwrap(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}"
    else:
        path = str(_no_bwrap(tmp_path))
    proc, _ = evalcase_run(copy, agent, PATH=path)
    assert proc.returncode == 2, proc.stderr
    assert "sandbox = true" in proc.stderr and "cannot work here" in proc.stderr
    assert ("No permissions" if bwrap == "broken" else "not installed") in proc.stderr
    assert "agents are not isolated" not in proc.stderr and "Traceback" not in proc.stderr
    assert not (copy / "outputs").exists()  # refused before any run folder


@pytest.mark.slow
@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("env_listed", {"AGENT_MODE": "strict", "FIXED": None, "UNLISTED": None}),
        ("env_fixed", {"AGENT_MODE": None, "FIXED": "f1", "UNLISTED": None}),
    ],
)
def test_env_as_a_list_of_names_or_a_table_of_values(
    repo: Path, agent: str, expected: dict[str, Any]
) -> None:
    proc, _ = evalcase_run(repo, agent, AGENT_MODE="strict", UNLISTED="runner-only")
    assert json.loads(output(repo, proc)) == expected
