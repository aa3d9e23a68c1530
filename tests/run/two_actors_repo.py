"""A small real repository with two actors on one state (docs/contract.md#user-tools): the
simulated user turns their phone's airplane mode off with a tool of their own, and the
agent checks the line with the provider's tool; a case per way of getting it wrong."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import commit_all, init_repo

STATE = """fixture_id: phone_and_line
fixture_version: v1
kind: state
description: A customer's phone (airplane mode on) and their line at the provider.
source: synthetic
desensitized: true
data:
  device: {airplane_mode: true, signal: none}
  lines: {L1: {status: active, customer: C1}, L2: {status: active, customer: C2}}
"""

USER_TOOL = """fixture_id: toggle_airplane_mode
fixture_version: v1
kind: tool
description: The user turns airplane mode on or off on their own phone.
source: synthetic
desensitized: true
data:
  name: toggle_airplane_mode
  side_effect: true
  parameters:
    type: object
    properties: {on: {type: boolean}}
    required: ["on"]
    additionalProperties: false
  responses:
    - when: 'true'
      result_from: '{"airplane_mode": args.on}'
      state_change:
        - {set: device.airplane_mode, value_from: args.on}
        - {set: device.signal, value_from: 'args.on ? "none" : "full"'}
"""

AGENT_TOOL = """fixture_id: check_line
fixture_version: v1
kind: tool
description: The provider looks a line up.
source: synthetic
desensitized: true
data:
  name: check_line
  side_effect: false
  parameters:
    type: object
    properties: {line_id: {type: string}}
    required: [line_id]
    additionalProperties: false
  responses:
    - when: 'args.line_id in lines'
      result_from: 'lines[args.line_id]'
  default: {error: {code: not_found, message: No such line}}
"""

CASE = """case_id: {case_id}
case_version: v1
dataset_id: phones
dataset_version: v1
title: A phone without service, fixed by the user while the agent checks the line
scenario: no service
user_task: get the phone working again
ability_tags: [tool use]
risk_level: P2
difficulty: Easy
source: synthetic
case_types: [agent, tool]
interaction:
  - role: user
    content: "My phone has no service. I turned airplane mode off; can you check line L1?"
    calls:
      - {{tool: toggle_airplane_mode, args: {{"on": false}}}}
user_simulator:
  instructions: {{reason_for_call: Your phone has no service.}}
  max_turns: 3
  tools: [toggle_airplane_mode]
context:
  script: {script}
initial_state:
  fixtures: [phone_and_line]
available_tools: [check_line]
tool_schema: {{check_line: v1}}
expected_calls:
  order: in_order
  calls:
    - {{tool: toggle_airplane_mode, args: {{"on": false}}, actor: user}}
    - {{tool: check_line, args: {{line_id: L1}}}}
success_criteria: [The phone has service.]
failure_criteria: [The phone is still in airplane mode.]
trace_requirement:
  required_fields: [tool_call, observation, final_state]
final_state_check:
  expected: {{device.airplane_mode: false, device.signal: full}}
expected_behavior:
  - Checks the line the user names.
rubric: [The agent checks the line.]
evaluator_config:
  graders:
    - {{type: tool_calls}}
    - {{type: state_match}}
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
agent: scripted
"""

# case id -> the agent's script (context.script: the tool calls of each user turn)
CASES = {
    "phone_no_service_001": '[[["check_line", {"line_id": "L1"}]]]',
    # the agent reaches for the user's tool: it is not offered, so unknown_tool
    "phone_agent_takes_user_tool_002": '[[["toggle_airplane_mode", {"on": false}]]]',
}


def write_two_actors_repo(root: Path, simulator_url: str) -> Path:
    (root / "datasets" / "phones" / "cases").mkdir(parents=True)
    for kind in ("state", "tool"):
        (root / "fixtures" / kind).mkdir(parents=True)
    (root / "evalcase.toml").write_text(
        '[run.agents]\nscripted = { spec = "py:tests.run.agents:scripted" }\n'
        f'[run.user_simulator]\nbase_url = "{simulator_url}"\nmodel = "sim"\n',
        "utf-8",
    )
    (root / ".gitignore").write_text("/outputs/\n/reports/\n__pycache__/\n", "utf-8")
    (root / "datasets" / "phones" / "dataset.yaml").write_text(MANIFEST, "utf-8")
    (root / "fixtures" / "state" / "phone_and_line.yaml").write_text(STATE, "utf-8")
    (root / "fixtures" / "tool" / "toggle_airplane_mode.yaml").write_text(USER_TOOL, "utf-8")
    (root / "fixtures" / "tool" / "check_line.yaml").write_text(AGENT_TOOL, "utf-8")
    for case_id, script in CASES.items():
        (root / "datasets" / "phones" / "cases" / f"{case_id}.yaml").write_text(
            CASE.format(case_id=case_id, script=script), "utf-8"
        )
    init_repo(root)
    commit_all(root, "two actors on one state")
    return root
