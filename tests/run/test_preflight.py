"""Preflight: a misconfigured agent stops `evalcase run` before the first attempt, with
exit status 2, one message and no run folder. A real repository, a real local server (and
a real port with nothing listening on it); the command in the test process
(tests.helpers.invoke), but for the missing package, which needs a process whose imports
a ``sitecustomize`` blocks."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GIT_ENV, POLL, REPO_ROOT, commit_all, init_repo, invoke
from tests.run.openai_server import Server, completion

CASE = "llm_instruction_001"
BLOCKER = '''
import importlib.abc, os, sys

BLOCKED = set(os.environ["EVALCASE_TEST_BLOCK_IMPORT"].split(","))


class Blocker(importlib.abc.MetaPathFinder):
    """As if the packages were not installed in this environment."""

    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("preflight") / "repo"
    root.mkdir()
    for folder in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    config = (REPO_ROOT / "evalcase.toml").read_text("utf-8")
    config += (
        'keyed = { spec = "openai:local-model", api_key_env = "EVALCASE_PREFLIGHT_KEY" }\n'
        'not_executable = { spec = "cmd:./examples/agent_without_x_bit.sh" }\n'
    )
    (root / "evalcase.toml").write_text(config, "utf-8")
    (root / "examples" / "agent_without_x_bit.sh").write_text("#!/bin/sh\n", "utf-8")
    (root / ".gitignore").write_text("/outputs/\n", "utf-8")
    init_repo(root)
    commit_all(root, "datasets")
    return root


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound on 127.0.0.1 that does not listen: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def _run(
    repo: Path, out: Path, *args: str, block: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    unset = [n for n in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "EVALCASE_PREFLIGHT_KEY")
             if n not in env]  # fmt: skip
    command = ["run", "refund_regression_set", "--no-grade", "--select", CASE,
               "--outputs", str(out), "--progress", "none", *args]  # fmt: skip
    if not block:
        overrides: dict[str, str | None] = {**env, **dict.fromkeys(unset)}
        return invoke(*command, cwd=repo, env=overrides)
    full = {**os.environ, **GIT_ENV, **env}
    for name in unset:
        full.pop(name, None)
    hook = out.parent / "import_hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(BLOCKER, "utf-8")
    full["EVALCASE_TEST_BLOCK_IMPORT"] = block
    full["PYTHONPATH"] = os.pathsep.join([str(hook), str(REPO_ROOT / "tools")])
    return subprocess.run(
        [sys.executable, "-m", "evalcase", *command],
        cwd=repo, env=full, capture_output=True, text=True, check=False,
    )  # fmt: skip


def _stopped(proc: subprocess.CompletedProcess[str], out: Path, *expected: str) -> None:
    """Exit 2, one line on stderr naming the problem, nothing written."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalcase: error: "), proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists(), sorted(out.rglob("*"))


@pytest.mark.slow
def test_an_unreachable_base_url_stops_the_run(
    repo: Path, tmp_path: Path, closed_port: int
) -> None:
    out = tmp_path / "outputs"
    url = f"http://127.0.0.1:{closed_port}/v1"
    proc = _run(repo, out, "--agent", "openai:local-model", "--base-url", url)
    _stopped(proc, out, "does not answer", f"GET {url}/models", "--base-url")


@pytest.mark.slow
def test_an_unreachable_openai_base_url_from_the_environment_stops_the_run(
    repo: Path, tmp_path: Path, closed_port: int
) -> None:
    out = tmp_path / "outputs"
    url = f"http://127.0.0.1:{closed_port}/v1"
    proc = _run(repo, out, "--agent", "openai:local-model", OPENAI_BASE_URL=url)
    _stopped(proc, out, "does not answer", url)


@pytest.mark.slow
def test_a_missing_api_key_stops_the_run(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    proc = _run(repo, out, "--agent", "openai:gpt-4o-mini")
    _stopped(proc, out, "OPENAI_API_KEY", "is not set")


@pytest.mark.slow
def test_a_named_key_variable_that_is_unset_stops_the_run_even_with_a_local_server(
    repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "outputs"
    server = Server([])
    with server.running():
        proc = _run(repo, out, "--agent", "keyed", "--base-url", server.url)
    _stopped(proc, out, "[run.agents] keyed", "EVALCASE_PREFLIGHT_KEY")
    assert server.requests == []


@pytest.mark.slow
def test_a_key_the_endpoint_refuses_stops_the_run(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    server = Server([], models_status=401)
    with server.running():
        proc = _run(
            repo, out, "--agent", "keyed", "--base-url", server.url,
            EVALCASE_PREFLIGHT_KEY="sk-wrong-key-never-printed",
        )  # fmt: skip
    _stopped(proc, out, "refuses the key in EVALCASE_PREFLIGHT_KEY", "HTTP 401")
    assert "sk-wrong-key-never-printed" not in proc.stderr
    assert server.gets == ["/v1/models"] and server.requests == []


def test_a_missing_transport_package_stops_the_run(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    proc = _run(
        repo, out, "--agent", "openai:local-model", "--base-url", "http://127.0.0.1:9/v1",
        block="aiohttp",
    )  # fmt: skip
    _stopped(proc, out, "needs the 'aiohttp' package", "reinstall evalcase (pip install evalcase)")


def test_a_missing_plugin_module_stops_the_run(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    proc = _run(repo, out, "--agent", "py:no_such_agent_module:agent")
    _stopped(proc, out, "no_such_agent_module")


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("cmd:no-such-agent-program-3f9a", "no program 'no-such-agent-program-3f9a' on PATH"),
        ("cmd:./examples/no_such_agent.py", "does not exist"),
        ("not_executable", "is not executable"),
    ],
)
def test_a_cmd_program_that_cannot_start_stops_the_run(
    repo: Path, tmp_path: Path, agent: str, expected: str
) -> None:
    out = tmp_path / "outputs"
    _stopped(_run(repo, out, "--agent", agent), out, expected)


def test_base_url_is_for_openai_agents_only(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    proc = _run(repo, out, "--agent", "refund_agent", "--base-url", "http://127.0.0.1:9/v1")
    _stopped(proc, out, "--base-url goes with an openai: agent")


@pytest.mark.slow
def test_an_ad_hoc_openai_agent_with_base_url_runs_and_records_it(
    repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "outputs"
    server = Server([(200, completion("Done."), {})] * 8)
    with server.running():
        proc = _run(repo, out, "--agent", "openai:local-model", "--base-url", server.url)
    assert proc.returncode == 0, proc.stderr
    assert server.gets == ["/v1/models"]  # the preflight, once, before the attempts
    assert server.requests and server.requests[0]["model"] == "local-model"
    (run_json,) = out.glob("*/*/run.json")
    meta = json.loads(run_json.read_text("utf-8"))
    assert meta["agent"]["spec"] == "openai:local-model"
    assert meta["agent"]["options"]["base_url"] == server.url
    assert meta["counts"] == {"attempts": 1, "errors": 0}


def test_an_http_agent_that_accepts_no_connection_stops_the_run(
    repo: Path, tmp_path: Path, closed_port: int
) -> None:
    out = tmp_path / "outputs"
    url = f"http://127.0.0.1:{closed_port}/agent"
    _stopped(_run(repo, out, "--agent", url), out, "does not accept connections", url)


def test_an_http_agent_that_listens_passes_the_preflight_without_being_sent_anything(
    repo: Path, tmp_path: Path
) -> None:
    """The check only connects: the first request the service sees is the attempt's."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Agent(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(
                json.loads(self.rfile.read(int(self.headers["Content-Length"])))["protocol"]
            )
            body = json.dumps({"role": "assistant", "content": "已为您查询。"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    thread = threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    try:
        out = tmp_path / "outputs"
        proc = _run(repo, out, "--agent", f"http://127.0.0.1:{server.server_port}/agent")
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr
    assert seen and set(seen) == {"evalcase-agent/1"}  # only attempts: no probe request
    (run_json,) = out.glob("*/*/run.json")
    assert json.loads(run_json.read_text("utf-8"))["counts"]["errors"] == 0
