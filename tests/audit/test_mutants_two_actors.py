"""Gold mutants with two actors on one state (issue 45, docs/audit.md#two-actors): the
audit plays the user's gold calls as the user (scripted turns), the agent's as the gold
oracle; a drop-one mutant of the user's own call; foreign writes for the agent's write
tools only, on an entity the user's own state does not name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcase.audit.keys import agent_turns, plan_turns, staged
from evalcase.audit.mutants import mutants_for
from evalcase.audit.runner import AuditOptions, audit
from evalcase.config import load_config
from evalcase.index import dataset
from evalcase.run import source
from tests.helpers import commit_all, init_repo, invoke
from tests.run.openai_server import Server, completion
from tests.run.two_actors_repo import USER_TOOL as TOGGLE  # the user's own phone tool

STATE = """fixture_id: phone_and_lines
fixture_version: v1
kind: state
description: The user's phone (airplane mode on) and the provider's customers and lines.
source: synthetic
desensitized: true
data:
  device: {airplane_mode: true, signal: none, number: "0101"}
  customers:
    C1: {customer_id: C1, name: Ann, line_ids: [L1]}
    C2: {customer_id: C2, name: Bob, line_ids: [L2]}
  lines:
    L1: {line_id: L1, status: active, number: "0101"}
    L2: {line_id: L2, status: active, number: "0102"}
"""

FIND = """fixture_id: find_line
fixture_version: v1
kind: tool
description: The provider finds a line by its number.
source: synthetic
desensitized: true
data:
  name: find_line
  side_effect: false
  parameters:
    type: object
    properties: {number: {type: string}}
    required: [number]
    additionalProperties: false
  responses:
    - when: 'lines.exists(k, lines[k].number == args.number)'
      result_from: 'lines.filter(k, lines[k].number == args.number)'
  default: {error: {code: not_found, message: No such line}}
"""

SUSPEND = """fixture_id: suspend_line
fixture_version: v1
kind: tool
description: The provider suspends a customer's line.
source: synthetic
desensitized: true
data:
  name: suspend_line
  side_effect: true
  parameters:
    type: object
    properties:
      customer_id: {type: string}
      line_id: {type: string}
      reason: {type: string, description: Why the line is suspended.}
    required: [customer_id, line_id, reason]
    additionalProperties: false
  responses:
    - when: >-
        !(args.customer_id in customers)
        || !(args.line_id in customers[args.customer_id].line_ids)
      error: {code: not_found, message: No such line for this customer}
    - result_from: '{"suspended": args.line_id}'
      state_change:
        - {set: "lines.{args.line_id}.status", value: suspended}
"""

CASE = """case_id: phone_no_service_001
case_version: v1
dataset_id: phones
dataset_version: v1
title: A phone without service, fixed by the user while the agent finds the line
scenario: no service
user_task: get the phone working again
ability_tags: [tool use]
risk_level: P2
difficulty: Easy
source: synthetic
case_types: [agent, tool]
input: "My phone (number 0101) has no service."
user_simulator:
  instructions: {reason_for_call: Your phone has no service.}
  max_turns: 5
  tools: [toggle_airplane_mode]
initial_state:
  fixtures: [phone_and_lines]
available_tools: [find_line, suspend_line]
tool_schema: {find_line: v1, suspend_line: v1}
expected_calls:
  order: in_order
  calls:
    - {tool: find_line, args: {number: "0101"}}
    - {tool: toggle_airplane_mode, args: {"on": false}, actor: user}
success_criteria: [The phone has service.]
failure_criteria: [The phone is still in airplane mode.]
trace_requirement:
  required_fields: [tool_call, observation, final_state]
final_state_check:
  expected: {device.airplane_mode: false, device.signal: full}
side_effect_policy:
  tool: suspend_line
  precondition: [{args.customer_id: C1}]
  confirmation_required: false
  idempotency_key: [line_id]
  allowed_state_transition: {from: active, to: suspended}
  forbidden_state_transition: [suspend_another_line]
  audit_requirement: [operator, timestamp, tool_args]
expected_behavior:
  - Finds the user's line, has the user turn airplane mode off.
rubric: [The agent finds the line.]
evaluator_config:
  graders:
    - {type: state_match}
    - {type: conversation_end}
metadata:
  dataset_role: iteration
  owner: tests
  tags: [phone]
  review_status: draft
  usage_rights_status: approved_for_evaluation
"""

MANIFEST = """dataset_id: phones
dataset_version: v1
title: Phones
description: Two actors on one state.
owner: tests
agent: gold
"""

CASE_ID = "phone_no_service_001"


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "repo"
    (root / "datasets/phones/cases").mkdir(parents=True)
    for kind in ("state", "tool"):
        (root / "fixtures" / kind).mkdir(parents=True)
    with Server([], default=(200, completion("###STOP###"), {})).running() as server:
        (root / "evalcase.toml").write_text(
            '[run.agents]\ngold = { spec = "py:evalcase.audit.agents:silent" }\n'
            f'[run.user_simulator]\nbase_url = "{server.url}"\nmodel = "sim"\n',
            "utf-8",
        )
        (root / ".gitignore").write_text("/outputs/\n/reports/\n", "utf-8")
        (root / "datasets/phones/dataset.yaml").write_text(MANIFEST, "utf-8")
        (root / f"datasets/phones/cases/{CASE_ID}.yaml").write_text(CASE, "utf-8")
        (root / "fixtures/state/phone_and_lines.yaml").write_text(STATE, "utf-8")
        for name, text in (
            ("toggle_airplane_mode", TOGGLE),
            ("find_line", FIND),
            ("suspend_line", SUSPEND),
        ):
            (root / f"fixtures/tool/{name}.yaml").write_text(text, "utf-8")
        init_repo(root)
        commit_all(root, "two actors")
        yield root


def task_of(root: Path) -> object:
    [task] = source.load(load_config(root), "phones", allow_dirty=True).tasks
    return task


def test_the_users_gold_calls_go_to_the_user_never_to_the_agent(repo: Path) -> None:
    """The gold's plan in two segments (the agent's lookup, then the user's call); the
    agent's answer key holds only its own call; the gold as run scripts the user's turns,
    the second making the user's call before it is sent."""
    lint = invoke("lint", "--no-cache", cwd=repo)
    assert lint.returncode == 0, lint.stdout
    task = task_of(repo)
    turns = plan_turns(task)  # type: ignore[arg-type]
    assert turns == [
        [{"tool": "find_line", "args": {"number": "0101"}}],
        [{"tool": "toggle_airplane_mode", "args": {"on": False}, "actor": "user"}],
    ]
    assert agent_turns(turns) == [[{"tool": "find_line", "args": {"number": "0101"}}], []]
    run = staged(task, turns)  # type: ignore[arg-type]
    assert run.agent.user_turns == ("My phone (number 0101) has no service.", "Done.")
    assert [[c.tool for c in t] for t in run.env.user_calls] == [[], ["toggle_airplane_mode"]]
    assert all(c.actor == "user" for t in run.env.user_calls for c in t)


def test_mutants_of_two_actors(repo: Path) -> None:
    """A drop-one mutant for each actor's call; foreign writes only with the agent's write
    tools (the user's toggle acts on the user's own phone: no entity to move it to), on
    the customer the user's own state does not name (the phone's number is C1's line)."""
    task = task_of(repo)
    found = {m.name: m for m in mutants_for(task)}  # type: ignore[arg-type]
    assert sorted(found) == ["drop1", "drop2", "foreign-suspend_line"]
    assert found["drop2"].actor == "user"
    assert found["drop2"].describe() == "the gold without call 2 (toggle_airplane_mode, the user's)"
    dropped = found["drop2"].task
    assert [[c.tool for c in t] for t in dropped.env.user_calls] in ([], [[], []])
    suspend = found["foreign-suspend_line"]
    assert suspend.entity == "customers/C2"
    assert dict(suspend.args or {}) == {
        "customer_id": "C2",
        "line_id": "L2",
        "reason": "evalcase audit",
    }


@pytest.mark.slow
def test_the_audit_of_two_actors_finds_the_unchecked_lookup_and_the_collateral_damage(
    repo: Path,
) -> None:
    """The gold passes (the user turns airplane mode off); without the user's call it
    fails; without the agent's lookup it still passes (nothing checks it); suspending the
    other customer's line goes unseen by a check of the phone alone (tau2-bench #459)."""
    options = AuditOptions(select=(CASE_ID,), concurrency=2)
    facts = dict(audit(load_config(repo), "phones", options).cases[CASE_ID])
    assert facts["outcomes"]["gold"] == "passes", facts  # type: ignore[index]
    outcomes = {m["mutant"]: m["outcome"] for m in facts["mutants"]}  # type: ignore[attr-defined]
    assert outcomes == {"drop1": "passes", "drop2": "fails", "foreign-suspend_line": "passes"}
    [user_drop] = [m for m in facts["mutants"] if m["mutant"] == "drop2"]  # type: ignore[attr-defined]
    assert user_drop["actor"] == "user"
    reasons = [(f["kind"], f["reason"].split(" passes")[0]) for f in facts["findings"]]  # type: ignore[attr-defined]
    assert reasons == [
        ("drop_passes", "the gold without call 1 (find_line)"),
        ("collateral_damage", "the gold plus suspend_line on customers/C2"),
    ]


def test_a_tasks_mutants_are_drawn_once_however_often_the_audit_asks(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit asks for a task's mutants for its answer keys, its run and its grading,
    and for the skipped writes for its warnings: the foreign writes, drawn from the whole
    state, are worked out once."""
    from evalcase.audit import mutants

    drawn: list[str] = []
    plan = mutants._foreign_plan

    def counted(task: Any) -> Any:
        drawn.append(task.case_id)
        return plan(task)

    monkeypatch.setattr(mutants, "_foreign_plan", counted)
    task = task_of(repo)
    first = mutants_for(task)  # type: ignore[arg-type]
    assert mutants_for(task) == first  # type: ignore[arg-type]
    assert mutants.foreign_skips(task) == []  # type: ignore[arg-type]
    assert [m.name for m in mutants.foreigns(task)] == ["foreign-suspend_line"]  # type: ignore[arg-type]
    assert drawn == [CASE_ID]
    # A load of the same files gives the same task object (the dataset memo is keyed by
    # content); one made afresh is another task, and its mutants are drawn again.
    assert task_of(repo) is task
    dataset._MEMOS.clear()
    assert len(mutants_for(task_of(repo))) == len(first)  # type: ignore[arg-type]
    assert drawn == [CASE_ID, CASE_ID]  # another load, another task object
