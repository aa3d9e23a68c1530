"""The trust boundary (docs/untrusted-input.md): a dataset or fixture naming a command or
an import path is a lint error and `evalcase run` refuses it (exit 2) before anything
runs; a handler registered in evalcase.toml runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, commit_all, git, init_repo, invoke, run_cli

MANIFEST = "datasets/refund_regression_set/dataset.yaml"
TOOL = "fixtures/tool/refund_status_lookup.yaml"
CASE = "refund_status_rate_limited_001"  # calls refund_status_lookup


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for folder in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    shutil.copy(REPO_ROOT / "evalcase.toml", root / "evalcase.toml")
    (root / ".gitignore").write_text("/outputs/\n__pycache__/\n", "utf-8")
    init_repo(root)
    commit_all(root, "datasets")
    return root


def _edit(repo: Path, path: str, old: str, new: str) -> None:
    file = repo / path
    text = file.read_text("utf-8")
    assert old in text
    file.write_text(text.replace(old, new, 1), "utf-8")
    commit_all(repo, f"edit {path}")


def _findings(repo: Path, code: str) -> list[dict[str, object]]:
    proc = invoke("lint", "--no-cache", "--format", "json", cwd=repo)
    return [f for f in json.loads(proc.stdout) if f["code"] == code]


@pytest.mark.slow
@pytest.mark.parametrize("cli", [(), ("--agent", "refund_agent")])
def test_a_manifest_naming_a_command_is_a_lint_error_and_never_runs(
    repo: Path, cli: tuple[str, ...]
) -> None:
    pwned = repo / "PWNED"
    _edit(repo, MANIFEST, "agent: refund_agent", f"agent: \"cmd:sh -c 'touch {pwned}'\"")
    [finding] = _findings(repo, "EC330")
    assert finding["path"] == MANIFEST and finding["line"] == 9
    proc = invoke("run", "--no-grade", "refund_regression_set", *cli, cwd=repo)
    assert proc.returncode == 2, proc.stderr
    assert "refusing to run: the manifest's agent" in proc.stderr
    assert "[run.agents]" in proc.stderr and "Traceback" not in proc.stderr
    assert not pwned.exists() and not (repo / "outputs").exists()


@pytest.mark.slow
def test_a_manifest_naming_an_unconfigured_agent_is_reported(repo: Path) -> None:
    _edit(repo, MANIFEST, "agent: refund_agent", "agent: refund_agnet")
    [finding] = _findings(repo, "EC331")
    assert "did you mean 'refund_agent'" in str(finding["message"])
    proc = invoke("run", "--no-grade", "refund_regression_set", cwd=repo)
    assert proc.returncode == 2 and "not defined in [run.agents]" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("handler", ["os:system", "acme_handlers:lookup", "unregistered"])
def test_a_fixture_naming_an_unregistered_handler_is_refused(repo: Path, handler: str) -> None:
    (repo / "acme_handlers.py").write_text(
        "def lookup(args, state):\n    open('PWNED', 'w').close()\n", "utf-8"
    )
    _edit(repo, TOOL, "  side_effect: false\n", f"  side_effect: false\n  handler: {handler}\n")
    [finding] = _findings(repo, "EC332")
    assert finding["path"] == TOOL
    proc = invoke("run", "--no-grade", "refund_regression_set", "--select", CASE, cwd=repo)
    assert proc.returncode == 2, proc.stderr
    assert "refusing to run" in proc.stderr and "fixture refund_status_lookup" in proc.stderr
    assert not (repo / "PWNED").exists() and not (repo / "outputs").exists()


@pytest.mark.slow
def test_a_registered_handler_runs(repo: Path) -> None:
    (repo / "acme_handlers.py").write_text(
        "def lookup(args, state):\n"
        "    return {'order_id': args['order_id'], 'status': 'handled_by_registered'}\n",
        "utf-8",
    )
    _edit(
        repo,
        "evalcase.toml",
        "[run.agents]",
        '[run.handlers]\nrefund_lookup = "acme_handlers:lookup"\n\n[run.agents]',
    )
    _edit(repo, TOOL, "  side_effect: false\n", "  side_effect: false\n  handler: refund_lookup\n")
    assert _findings(repo, "EC332") == []
    # A process: `python -m evalcase` has its current directory on sys.path, which is
    # where acme_handlers is found (invoke's test process has not).
    proc = run_cli("run", "--no-grade", "refund_regression_set", "--select", CASE, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    [attempts] = (repo / "outputs").glob("*/*/attempts.jsonl")
    [record] = [json.loads(line) for line in attempts.read_text("utf-8").splitlines()]
    results = [c["result"] for c in record["calls"] if c["tool"] == "refund_status_lookup"]
    assert {"order_id": "ORDER_0505", "status": "handled_by_registered"} in results or any(
        r and r.get("status") == "handled_by_registered" for r in results
    ), record["calls"]


def test_a_committed_run_folder_is_never_resumed(repo: Path) -> None:
    """--resume starts the agent run.json names: a run folder a pull request force-adds
    must not choose it."""
    run_dir = repo / "outputs" / ("0" * 40) / "20260101T000000Z-abcdef"
    run_dir.mkdir(parents=True)
    meta = {"run_id": run_dir.name, "agent": {"name": None, "spec": "cmd:touch PWNED"}}
    (run_dir / "run.json").write_text(json.dumps(meta), "utf-8")
    (run_dir / "attempts.jsonl").write_text("", "utf-8")
    git(repo, "add", "-f", "outputs")
    commit_all(repo, "a crafted run")
    proc = invoke("run", "--no-grade", "--resume", run_dir.name, cwd=repo)
    assert proc.returncode == 2, proc.stderr
    assert "refusing to resume" in proc.stderr and "Traceback" not in proc.stderr
    assert not (repo / "PWNED").exists()
