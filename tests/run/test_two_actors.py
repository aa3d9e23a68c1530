"""Two actors on one state (issue 45, docs/contract.md#user-tools), as a user runs them: a
real repository whose scripted user turn calls the user's own tool, a real ``evalcase run``
(a py: agent, a local OpenAI-compatible server playing the user's last word), graded; and
the conversation limits tau2-bench's orchestrator has (``max_steps``, ``max_tool_errors``),
each its own ending, which ``conversation_end`` fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract.attempt import ToolCallRecord
from evalcase.contract.task import CallPlan, ExpectedCall, UserSimulatorSpec
from evalcase.grade.graders import tool_calls
from evalcase.index.dataset import load_dataset
from tests.helpers import REPO_ROOT, invoke
from tests.run.openai_server import Server, completion
from tests.run.support import job, run_attempt, tool, view
from tests.run.two_actors_repo import write_two_actors_repo

Ran = tuple[Path, dict[str, Any], list[Any]]  # the repository, records by case, grades


@pytest.fixture(scope="module")
def ran(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, dict[str, Any], list[Any]]]:
    root = tmp_path_factory.mktemp("two_actors") / "repo"
    root.mkdir()
    patch = pytest.MonkeyPatch()
    patch.setenv("PYTHONPATH", str(REPO_ROOT))  # the py: agent lives in tests/
    with Server([(200, completion("Thanks, it works. ###STOP###"), {})] * 4).running() as server:
        write_two_actors_repo(root, server.url)
        lint = invoke("lint", cwd=root)
        assert lint.returncode == 0, lint.stdout + lint.stderr
        proc = invoke("run", "phones", "--progress", "none", cwd=root)
    patch.undo()
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the second case errs
    run_dir = root / proc.stdout.splitlines()[0].split(" -> ")[-1]
    lines = (run_dir / "attempts.jsonl").read_text("utf-8").splitlines()
    records = {r["case_id"]: r for r in map(json.loads, lines)}
    [grades_file] = (root / "reports").glob("*/*/grades.jsonl")
    grades = [json.loads(x) for x in grades_file.read_text("utf-8").splitlines()]
    yield root, records, grades


def _verdicts(grades: list[Any], case_id: str) -> dict[str, str]:
    return {g["grader"]: g["verdict"] for g in grades if g["case_id"] == case_id}


@pytest.mark.slow
def test_a_scripted_user_turn_calls_the_users_tool_recorded_as_the_user(
    ran: Ran,
) -> None:
    _, records, grades = ran
    record = records["phone_no_service_001"]
    assert record["status"] == "completed", record["error"]
    assert record["conversation"] == {"ended_by": "user_stop", "user_turns": 2}
    user_call, agent_call = record["calls"]
    assert (user_call["tool"], user_call["actor"]) == ("toggle_airplane_mode", "user")
    assert [c["path"] for c in user_call["changes"]] == ["device.airplane_mode", "device.signal"]
    assert agent_call["tool"] == "check_line" and "actor" not in agent_call  # agent: default
    # The user acts before speaking; the trace says who called.
    trace = [(e["type"], e.get("actor")) for e in record["trace"]]
    assert trace.index(("tool_call", "user")) < trace.index(("user", None))
    # Results go to the user only: the agent's messages carry none of the user's call.
    agent_side = json.dumps(record["messages"])
    assert "toggle_airplane_mode" not in agent_side and 'airplane_mode\\": false' not in agent_side
    assert [m["role"] for m in record["messages"]] == ["user", "assistant", "tool", "assistant"]
    # The expected call of the user matches the user's call; the state the user changed
    # is asserted like any other.
    assert _verdicts(grades, "phone_no_service_001") == {
        "tool_calls": "pass",
        "state_match": "pass",
    }


@pytest.mark.slow
def test_the_agent_is_never_offered_the_users_tool(
    ran: Ran,
) -> None:
    root, records, grades = ran
    loaded = load_dataset(root, "phones")
    [task] = [t for t in loaded.tasks if t.case_id == "phone_no_service_001"]
    assert [c.name for c in task.agent.tools] == ["check_line"]
    assert sorted(task.env.tools) == ["check_line"]
    assert sorted(task.env.user_tools) == ["toggle_airplane_mode"]
    # An agent calling it meets an unknown tool, as for any tool the case does not offer.
    record = records["phone_agent_takes_user_tool_002"]
    assert record["error"]["kind"] == "unknown_tool"
    assert [c.get("actor", "agent") for c in record["calls"]] == ["user", "agent"]
    assert record["calls"][1]["error"] is None and not record["calls"][1]["valid"]
    assert _verdicts(grades, "phone_agent_takes_user_tool_002")["tool_calls"] == "fail"


def _call(tool: str, actor: Any, step: int) -> ToolCallRecord:
    return ToolCallRecord(
        step=step, id=f"c{step}", tool=tool, args={"on": False}, valid=True, result=None,
        error=None, fault=None, denied_by=None, side_effect=True, user_confirmed=False,
        changes=(), latency_ms=None, ok=True, audit=None, actor=actor,
    )  # fmt: skip


def test_an_expected_call_is_matched_by_its_own_actor_only() -> None:
    by_user = [_call("toggle_airplane_mode", "user", 0)]
    by_agent = [_call("toggle_airplane_mode", "agent", 0)]
    for order in ("exact", "in_order", "any_order"):
        users = CallPlan(order, (ExpectedCall("toggle_airplane_mode", {"on": False}, "user"),))  # type: ignore[arg-type]
        agents = CallPlan(order, (ExpectedCall("toggle_airplane_mode", {"on": False}),))  # type: ignore[arg-type]
        assert tool_calls.check(users, by_user)[0], order
        assert not tool_calls.check(users, by_agent)[0], order
        assert not tool_calls.check(agents, by_user)[0], order
        assert tool_calls.check(agents, by_agent)[0], order


@pytest.mark.slow
def test_the_gold_replay_makes_each_expected_call_as_its_actor(
    ran: Ran,
) -> None:
    from evalcase.run.gold_replay import replay_expected

    root, _, _ = ran
    [task] = [t for t in load_dataset(root, "phones").tasks if t.case_id == "phone_no_service_001"]
    assert task.judge.expected_calls is not None
    [plan] = task.judge.expected_calls.any_of
    gold = replay_expected(task.env, plan)
    assert gold.error is None and gold.state is not None
    assert gold.state["device"] == {"airplane_mode": False, "signal": "full"}
    # The user's tool made by the agent is not the gold: no such agent tool.
    as_agent = CallPlan(plan.order, (ExpectedCall("toggle_airplane_mode", {"on": False}),))
    assert "unknown_tool" in str(replay_expected(task.env, as_agent).error)


@pytest.mark.slow
def test_each_export_says_whether_it_carries_the_users_tools(ran: Ran) -> None:
    from evalcase.authoring.exports import FORMATS, export
    from evalcase.authoring.exports.openai_evals import LEFT_OUT
    from evalcase.config import load_config

    root, _, _ = ran
    for fmt in FORMATS:
        rendered = export(load_config(root), "phones", fmt)[1]
        missing = rendered.not_carried.get("user tools", ())
        if fmt == "jsonl":  # the environment, user tools included, in each line
            assert missing == (), fmt
            line = json.loads(rendered.text.splitlines()[0])
            assert "toggle_airplane_mode" in line["environment"]["user_tools"]
            assert [t["name"] for t in line["agent_view"]["tools"]] == ["check_line"]
        else:  # every case says it lost them, or is left out of the file whole
            whole = set(rendered.not_carried.get(LEFT_OUT, ()))
            cases = {"phone_no_service_001", "phone_agent_takes_user_tool_002"}
            assert set(missing) | whole == cases and not set(missing) & whole, fmt
            assert rendered.lossy, fmt


LOOKUP = tool(
    "check_line",
    schema={"type": "object", "properties": {"line_id": {"type": "string"}}},
    responses=({"when": "args.line_id in lines", "result_from": "lines[args.line_id]"},),
    default={"error": {"code": "not_found", "message": "No such line"}},
)


def _limited(script: list[list[Any]], **limits: Any) -> dict[str, Any]:
    """One attempt of a scripted agent under the user_simulator's limits (no model is
    asked: the limits end the conversation during the first turn)."""
    simulator = UserSimulatorSpec({"text": "Your phone has no service."}, **limits)
    v = view("No service on L1.", tools=(LOOKUP,), context={"script": script})
    return run_attempt(job(v, (LOOKUP,), state={"lines": {"L1": {}}}, user_simulator=simulator))


def test_the_tool_error_limit_ends_the_conversation_as_its_own_reason() -> None:
    bad = ["check_line", {"line_id": "L9"}]
    record = _limited([[bad, bad, bad, bad]], max_tool_errors=3)
    assert record["status"] == "completed", record["error"]
    assert record["conversation"] == {"ended_by": "max_tool_errors", "user_turns": 1}
    assert len(record["calls"]) == 3  # the third error ends it: the agent is not asked again
    ends = [e for e in record["trace"] if e["type"] == "conversation_end"]
    assert [e["reason"] for e in ends] == ["max_tool_errors"]


def test_the_step_limit_ends_the_conversation_as_its_own_reason() -> None:
    good = ["check_line", {"line_id": "L1"}]
    # steps: the user turn, then each reply and each call (1 + 2 + 2 = 5 > 4)
    record = _limited([[good, good, good]], max_steps=4)
    assert record["conversation"] == {"ended_by": "max_steps", "user_turns": 1}
    assert [c["error"] for c in record["calls"]] == [None, None]


def test_a_conversation_ended_by_a_limit_fails_conversation_end_and_a_stop_passes() -> None:
    from evalcase.grade.graders import conversation_end

    spec: Any = None
    bad = ["check_line", {"line_id": "L9"}]
    limited = _limited([[bad, bad]], max_tool_errors=2)
    grade = conversation_end.grade(spec, {**limited, "initial_state": {"lines": {"L1": {}}}})
    assert grade.verdict == "fail" and "max_tool_errors" in grade.reason


@pytest.mark.slow
def test_the_html_report_says_which_calls_the_user_made(ran: Ran) -> None:
    root, _, _ = ran
    [html] = (root / "reports").glob("*/*/report.html")
    text = html.read_text("utf-8")
    # the failing case: its user's call is marked, the agent's is not
    assert text.count('<span class="actor-user"') == 1
    marked = text.split('<span class="actor-user"', 1)[1]
    assert marked.split("</td>", 1)[0].endswith("user:</span> toggle_airplane_mode ⚑")
