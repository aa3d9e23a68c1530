"""`evalcase run` of a case with a simulated user, as a user runs it: a real repository,
a real local OpenAI-compatible server playing the user, preflight stopping a run that
cannot simulate, run.json naming the simulator, and a replay of both sides without it."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcase.run.user_prompt import PROMPT_VERSION
from tests.helpers import REPO_ROOT, commit_all, init_repo, invoke
from tests.run.openai_server import Server, completion

CASE = "agent_state_order_cancel_confirmed_001"
CASE_FILE = Path("datasets/english_support_set/cases") / f"{CASE}.yaml"
SIMULATOR = """user_simulator:
  instructions:
    persona: A busy customer who answers in one short sentence.
    reason_for_call: You ordered a desk lamp (ORDER_4101) and no longer need it.
    known_info: Your order is ORDER_4101.
    task_instructions: Confirm the cancellation when the agent asks; then end the call.
  max_turns: 5
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("usersim") / "repo"
    root.mkdir()
    for folder in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    shutil.copy(REPO_ROOT / "evalcase.toml", root / "evalcase.toml")
    case = root / CASE_FILE
    text = case.read_text("utf-8")
    text = text.replace('  - {role: user, content: "Yes, please cancel it.", confirms: true}\n', "")
    case.write_text(text + SIMULATOR, "utf-8")
    (root / ".gitignore").write_text("/outputs/\n", "utf-8")
    init_repo(root)
    commit_all(root, "a case with a simulated user")
    return root


@pytest.fixture(autouse=True)
def agents_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the py: agent lives in tests/


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def configure(repo: Path, section: str) -> None:
    base = (REPO_ROOT / "evalcase.toml").read_text("utf-8")
    (repo / "evalcase.toml").write_text(base + section, "utf-8")


def run(repo: Path, out: Path, *args: str, **env: str) -> Any:
    return invoke(
        "run", "--no-grade", "english_support_set", "--select", CASE, "--outputs", str(out),
        "--progress", "none", "--agent", "py:tests.run.agents:echo", "--allow-dirty", *args,
        cwd=repo, env=env,
    )  # fmt: skip


def stopped(proc: Any, out: Path, *expected: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalcase: error: "), proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    assert not out.exists()


def test_a_case_needing_a_simulator_without_one_configured_stops_the_run(
    repo: Path, tmp_path: Path
) -> None:
    configure(repo, "")
    out = tmp_path / "outputs"
    stopped(run(repo, out), out, "[run.user_simulator]", CASE, "not configured")


def test_an_unset_key_variable_stops_the_run(repo: Path, tmp_path: Path) -> None:
    with Server([]).running() as server:
        configure(
            repo,
            f'\n[run.user_simulator]\nbase_url = "{server.url}"\nmodel = "sim"\n'
            'api_key_env = "EVALCASE_TEST_SIM_KEY_UNSET"\n',
        )
        out = tmp_path / "outputs"
        stopped(run(repo, out), out, "EVALCASE_TEST_SIM_KEY_UNSET", "is not set")
        assert server.gets == []


def test_a_simulator_that_does_not_answer_stops_the_run(
    repo: Path, tmp_path: Path, closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    configure(repo, f'\n[run.user_simulator]\nbase_url = "{url}"\nmodel = "sim"\n')
    out = tmp_path / "outputs"
    stopped(run(repo, out), out, "does not answer", url)


def test_a_simulated_run_is_recorded_and_replays_both_sides_without_a_model(
    repo: Path, tmp_path: Path
) -> None:
    script = [
        (200, completion("Yes, please cancel it."), {}),
        (200, completion("Thank you, goodbye. ###STOP###"), {}),
    ]
    out = tmp_path / "outputs"
    with Server(script).running() as server:
        configure(
            repo, f'\n[run.user_simulator]\nbase_url = "{server.url}"\nmodel = "sim-model-1"\n'
        )
        proc = run(repo, out)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = out.glob("*/*")
    meta = json.loads((run_dir / "run.json").read_text("utf-8"))
    assert meta["user_simulator"]["model"] == "sim-model-1"
    assert meta["user_simulator"]["prompt_version"] == PROMPT_VERSION
    (record,) = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert record["status"] == "completed", record["error"]
    assert record["conversation"] == {"ended_by": "user_stop", "user_turns": 3}
    turns = [e for e in record["trace"] if e["type"] == "user"]
    assert [e.get("simulated", False) for e in turns] == [False, True, True]
    # the agent's requests never carried the instructions
    assert "busy customer" not in json.dumps(record["messages"])

    # Replay: no simulator configured, nothing listening; the recorded turns are sent again.
    configure(repo, "")
    again = tmp_path / "again"
    shutil.copytree(out, again)
    proc = invoke(
        "run", "english_support_set", "--select", CASE, "--outputs",
        str(again), "--progress", "none", "--allow-dirty", "--agent", f"replay:{meta['run_id']}",
        cwd=repo,
    )  # fmt: skip
    # graded as any run (no judge configured: its rubric grade is pending, exit 1)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    assert (repo / "reports").is_dir() and list((repo / "reports").rglob("report.json"))
    replayed_dir = next(p for p in again.glob("*/*") if p.name != meta["run_id"])
    (replayed,) = [
        json.loads(x) for x in (replayed_dir / "attempts.jsonl").read_text().splitlines()
    ]
    assert replayed["status"] == "completed", replayed["error"]
    assert replayed["messages"] == record["messages"]
    assert replayed["conversation"] == record["conversation"]
    again_turns = [e for e in replayed["trace"] if e["type"] == "user"]
    assert [e["content"] for e in again_turns] == [e["content"] for e in turns]
    assert all(e["replayed"] for e in again_turns)
    assert again_turns[1]["model"] == "sim-model-1"
