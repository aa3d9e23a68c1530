"""A simulated user that acts (issue 45, docs/contract.md#user-tools): the user model is
offered its own tools with tau2-bench's tool-aware prompt, and the runner makes its calls on
the shared state as actor ``user`` until it writes a message. The user model is a local
OpenAI-compatible server that decides from the messages and tools it receives only, never
from the answer key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract.task import UserSimulatorSpec
from evalcase.run.executors import AttemptJob
from evalcase.run.executors.base import Limits
from evalcase.run.user_prompt import GUIDELINES_TOOLS, PROMPT_VERSION_TOOLS
from tests.helpers import REPO_ROOT, commit_all, init_repo, invoke
from tests.run import two_actors_repo as repo
from tests.run.openai_server import Server, completion
from tests.run.support import job, run_attempt, tool, view

FIXED = "I turned airplane mode off and my phone has signal now: it is fixed."


def _call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {
        "id": f"u{n}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def phone_user(request: dict[str, Any]) -> dict[str, Any]:
    """A user who, offered toggle_airplane_mode, turns airplane mode off once, then says
    it is fixed, then stops: decided from the request's messages and tools alone."""
    messages = request["messages"]
    offered = [t["function"]["name"] for t in request.get("tools", [])]
    results = [m for m in messages if m["role"] == "tool"]
    if "toggle_airplane_mode" in offered and not results:
        return completion(None, [_call("toggle_airplane_mode", {"on": False}, 1)])
    if messages[-1]["role"] == "tool":
        return completion(FIXED)
    return completion("Thanks. ###STOP###")


CASE = (
    repo.CASE.replace(
        '    content: "My phone has no service. I turned airplane mode off; can you check '
        'line L1?"\n    calls:\n      - {{tool: toggle_airplane_mode, args: {{"on": false}}}}\n',
        '    content: "My phone has no service. Can you check line L1?"\n',
    )
    .replace("max_turns: 3", "max_turns: 4")
    .replace("order: in_order", "order: any_order")
)


def write_repo(root: Path, url: str, case: str = CASE) -> Path:
    (root / "datasets" / "phones" / "cases").mkdir(parents=True)
    for kind in ("state", "tool"):
        (root / "fixtures" / kind).mkdir(parents=True)
    (root / "evalcase.toml").write_text(
        '[run.agents]\nscripted = { spec = "py:tests.run.agents:scripted" }\n'
        f'[run.user_simulator]\nbase_url = "{url}"\nmodel = "sim"\n',
        "utf-8",
    )
    (root / ".gitignore").write_text("/outputs/\n/reports/\n__pycache__/\n", "utf-8")
    (root / "datasets" / "phones" / "dataset.yaml").write_text(repo.MANIFEST, "utf-8")
    (root / "fixtures" / "state" / "phone_and_line.yaml").write_text(repo.STATE, "utf-8")
    (root / "fixtures" / "tool" / "toggle_airplane_mode.yaml").write_text(repo.USER_TOOL, "utf-8")
    (root / "fixtures" / "tool" / "check_line.yaml").write_text(repo.AGENT_TOOL, "utf-8")
    # the agent checks the line on the first turn, and only replies on the second
    script = '[[["check_line", {"line_id": "L1"}]], []]'
    (root / "datasets" / "phones" / "cases" / "phone_user_acts_001.yaml").write_text(
        case.format(case_id="phone_user_acts_001", script=script), "utf-8"
    )
    init_repo(root)
    commit_all(root, "a user who acts")
    return root


@pytest.mark.slow
def test_a_simulated_user_toggles_its_phone_then_says_it_is_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "    calls:" not in CASE and "any_order" in CASE  # the template was rewritten
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the py: agent lives in tests/
    server = Server([], decide=phone_user)
    with server.running():
        write_repo(root, server.url)
        lint = invoke("lint", cwd=root)
        assert lint.returncode == 0, lint.stdout + lint.stderr
        proc = invoke("run", "phones", "--progress", "none", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = root / proc.stdout.splitlines()[0].split(" -> ")[-1]
    [record] = map(json.loads, (run_dir / "attempts.jsonl").read_text("utf-8").splitlines())
    assert record["status"] == "completed", record["error"]
    assert record["conversation"] == {"ended_by": "user_stop", "user_turns": 3}
    # The user's call, made by the user model on the shared state, recorded as the user's.
    agent_call, user_call = record["calls"]
    assert (agent_call["tool"], agent_call.get("actor", "agent")) == ("check_line", "agent")
    assert (user_call["tool"], user_call["actor"], user_call["args"]) == (
        "toggle_airplane_mode",
        "user",
        {"on": False},
    )
    assert [c["path"] for c in user_call["changes"]] == ["device.airplane_mode", "device.signal"]
    assert {d["path"] for d in record["state_diff"]} >= {"device.airplane_mode", "device.signal"}
    # The agent never saw the user's call or its result; it got the user's message.
    agent_side = json.dumps(record["messages"])
    assert "toggle_airplane_mode" not in agent_side and '\\"airplane_mode\\"' not in agent_side
    assert FIXED in [m.get("content") for m in record["messages"] if m["role"] == "user"]
    # The user model was offered its tool, with the tool-aware prompt, and got the result.
    first, second, third = server.requests
    assert record["user_usage"]["completion_tokens"] == 3 * 7
    assert [t["function"]["name"] for t in first["tools"]] == ["toggle_airplane_mode"]
    assert first["messages"][0]["content"].startswith(GUIDELINES_TOOLS)
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "toggle_airplane_mode"
    assert json.loads(second["messages"][-1]["content"]) == {"airplane_mode": False}
    # its call stays in its own history, before the message it led to
    roles = [m["role"] for m in third["messages"]]
    assert roles == ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    meta = json.loads((run_dir / "run.json").read_text("utf-8"))["user_simulator"]
    assert meta["prompt_version_tools"] == PROMPT_VERSION_TOOLS
    simulated = [e for e in record["trace"] if e["type"] == "user" and e.get("simulated")]
    assert {e["prompt_version"] for e in simulated} == {PROMPT_VERSION_TOOLS}
    # Graded: the expected call of the user and the user-side state both pass.
    [grades_file] = (root / "reports").glob("*/*/grades.jsonl")
    grades = [json.loads(x) for x in grades_file.read_text("utf-8").splitlines()]
    assert {g["grader"]: g["verdict"] for g in grades} == {
        "tool_calls": "pass",
        "state_match": "pass",
    }
    # A replay of the run, no model configured nor listening: the user's recorded calls
    # are made again before its recorded turn, so the state and verdicts are the same.
    replayed = _replay(root, run_dir)
    assert replayed["status"] == "completed", replayed["error"]
    assert replayed["conversation"] == record["conversation"]
    assert replayed["messages"] == record["messages"]
    assert [(c["tool"], c.get("actor")) for c in replayed["calls"]] == [
        ("check_line", None),
        ("toggle_airplane_mode", "user"),
    ]
    assert replayed["state_diff"] == record["state_diff"]


def _replay(root: Path, run_dir: Path) -> dict[str, Any]:
    """The one attempt of ``evalcase run --agent replay:RUN`` with no simulator configured."""
    (root / "evalcase.toml").write_text(
        '[run.agents]\nscripted = { spec = "py:tests.run.agents:scripted" }\n', "utf-8"
    )
    run_id = json.loads((run_dir / "run.json").read_text("utf-8"))["run_id"]
    proc = invoke(
        "run", "phones", "--progress", "none", "--allow-dirty", "--agent", f"replay:{run_id}",
        cwd=root,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    again = root / proc.stdout.splitlines()[0].split(" -> ")[-1]
    [replayed] = map(json.loads, (again / "attempts.jsonl").read_text("utf-8").splitlines())
    return dict(replayed)


@pytest.mark.slow
def test_a_run_a_limit_ended_while_the_user_acted_replays_to_the_same_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    limited = CASE.replace("  max_turns: 4\n", "  max_turns: 4\n  max_steps: 6\n")
    assert "max_steps: 6" in limited
    with Server([], decide=busy_user).running() as server:
        write_repo(root, server.url, limited)
        proc = invoke("run", "phones", "--progress", "none", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # no conversation_end grader
    run_dir = root / proc.stdout.splitlines()[0].split(" -> ")[-1]
    [record] = map(json.loads, (run_dir / "attempts.jsonl").read_text("utf-8").splitlines())
    assert record["conversation"] == {"ended_by": "max_steps", "user_turns": 1}
    # the scripted turn, the agent's two replies and its call (4), then 3 user calls: 7 > 6
    assert [c.get("actor") for c in record["calls"]] == [None] + ["user"] * 3
    replayed = _replay(root, run_dir)
    assert replayed["status"] == "completed", replayed["error"]
    assert replayed["conversation"] == record["conversation"]
    assert [c.get("actor") for c in replayed["calls"]] == [None] + ["user"] * 3
    assert replayed["state_diff"] == record["state_diff"]


TOGGLE = tool(
    "toggle_airplane_mode",
    side_effect=True,
    schema={"type": "object", "properties": {"on": {"type": "boolean"}}, "required": ["on"]},
    responses=(
        {
            "when": "true",
            "result_from": '{"airplane_mode": args.on}',
            "state_change": [{"set": "device.airplane_mode", "value_from": "args.on"}],
        },
    ),
)


def _acting_job(url: str, timeout: float = 10.0, **limits: Any) -> AttemptJob:
    simulator = UserSimulatorSpec(
        {"text": "Your phone has no service."},
        max_turns=3,
        tools=("toggle_airplane_mode",),
        **limits,
    )
    base = job(
        view("No service.", context={"script": [[], [], []]}),
        state={"device": {"airplane_mode": True}},
        user_simulator=simulator,
        user_tools={"toggle_airplane_mode": TOGGLE},
        timeout=timeout,
        limits=Limits(max_tool_calls=10**9),  # only the deadline can end a busy user
    )
    settings = {"base_url": url, "model": "sim-model-1", "max_retries": 0, "timeout_s": 5}
    return AttemptJob(**{**base.__dict__, "user_simulator": settings})


def wrong_tool_user(request: dict[str, Any]) -> dict[str, Any]:
    """Calls a tool it was not offered; told it does not exist, it gives up."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return completion(f"I cannot do that ({last['content']}). ###STOP###")
    return completion(None, [_call("reboot_phone", {}, 1)])


def test_a_user_model_calling_a_tool_it_lacks_gets_an_error_result_recorded() -> None:
    server = Server([], decide=wrong_tool_user)
    with server.running():
        record = run_attempt(_acting_job(server.url))
    assert record["status"] == "completed", record["error"]
    assert record["conversation"] == {"ended_by": "user_stop", "user_turns": 2}
    [call] = record["calls"]
    assert (call["tool"], call["actor"], call["valid"]) == ("reboot_phone", "user", False)
    assert call["error"]["code"] == "unknown_tool"
    # the error went back to the user model, not to the agent
    told = json.loads(server.requests[1]["messages"][-1]["content"])
    assert told["error"]["code"] == "unknown_tool"
    assert "reboot_phone" not in json.dumps(record["messages"])


def busy_user(request: dict[str, Any]) -> dict[str, Any]:
    """Toggles airplane mode forever, never writing a message."""
    n = sum(1 for m in request["messages"] if m["role"] == "tool") + 1
    return completion(None, [_call("toggle_airplane_mode", {"on": n % 2 == 0}, n)])


def test_a_user_model_looping_through_calls_is_stopped_by_max_steps() -> None:
    server = Server([], decide=busy_user)
    with server.running():
        record = run_attempt(_acting_job(server.url, max_steps=6))
    assert record["status"] == "completed", record["error"]
    # steps: the user turn and the agent's reply (2), then each user call: 5 of them
    # make 7 > 6, and the user model is not asked again
    assert record["conversation"] == {"ended_by": "max_steps", "user_turns": 1}
    assert [c["actor"] for c in record["calls"]] == ["user"] * 5
    assert len(server.requests) == 5
    assert record["user_usage"]["prompt_tokens"] == 5 * 11  # every user model call counted
    ends = [e for e in record["trace"] if e["type"] == "conversation_end"]
    assert [e["reason"] for e in ends] == ["max_steps"]


def test_a_user_model_failing_its_calls_is_stopped_by_max_tool_errors() -> None:
    server = Server([], decide=lambda request: completion(None, [_call("nope", {}, 1)]))
    with server.running():
        record = run_attempt(_acting_job(server.url, max_tool_errors=3))
    assert record["conversation"] == {"ended_by": "max_tool_errors", "user_turns": 1}
    assert [c["error"]["code"] for c in record["calls"]] == ["unknown_tool"] * 3


def test_a_user_model_looping_without_limits_is_stopped_by_the_attempts_deadline() -> None:
    server = Server([], decide=busy_user)
    with server.running():
        record = run_attempt(_acting_job(server.url, timeout=0.3))
    # never a pass: the attempt errs (the deadline passed while the user acted)
    assert record["status"] == "error"
    assert record["error"]["kind"] in ("timeout", "user_simulator"), record["error"]
    assert {c.get("actor") for c in record["calls"]} <= {"user"}
