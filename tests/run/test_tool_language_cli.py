"""The tool language end to end, as a user writes it: YAML fixtures in a real git
repository, `evalcase lint` clean, `evalcase run` with a real subprocess agent."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.helpers import REPO_ROOT, commit_all, init_repo, invoke

SAMPLES = Path(__file__).parents[1] / "rules" / "samples"
AGENT = Path(__file__).parent / "cmd_agents" / "transfer_agent.py"
CASE = """\
case_id: agent_state_transfer_human_006
case_version: v1
dataset_id: english_support_set
dataset_version: v1
title: Transfer a customer who asks for a human, then stop
scenario: transfer to a human agent
user_task: speak to a human
ability_tags: [tool use]
risk_level: P2
difficulty: Easy
source: written for the tool-language test; synthetic
case_types: [agent, tool]
input: "Please get me a human."
interaction:
  - {role: user, content: "Please get me a human."}
  - {role: user, content: "Hello? Anyone?"}
initial_state:
  inline: {transfers: 0}
available_tools: [transfer_to_human_agents]
tool_schema: {transfer_to_human_agents: v1}
expected_calls:
  order: in_order
  calls:
    - {tool: transfer_to_human_agents, args: {summary: "Please get me a human."}}
success_criteria:
  - The customer is transferred to a human agent.
failure_criteria:
  - The agent keeps the customer talking after the transfer.
trace_requirement:
  required_fields: [action, tool_call, observation]
rubric: support_answer_quality_en_v1
final_state_check:
  type: state_match
  expected: {transfers: 0}
expected_behavior:
  - Transfers the customer to a human agent.
negative_behavior:
  - Keeps the customer talking after the transfer.
evaluator_config:
  graders:
    - {type: tool_calls, weight: 1.0}
metadata:
  dataset_role: [iteration]
  tags: [tool, english]
  owner: ai_eval_team
  review_status: draft
  usage_rights_status: approved_for_evaluation
"""


def test_ends_conversation_from_yaml_through_lint_and_run(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    for folder in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    shutil.copy(REPO_ROOT / "evalcase.toml", root / "evalcase.toml")
    (root / ".gitignore").write_text("/outputs/\n/reports/\n", "utf-8")
    sample = SAMPLES / "EC609" / "good" / "transfer_to_human_agents.yaml"
    text = sample.read_text("utf-8").split("\n", 1)[1]  # without the sample header
    (root / "fixtures" / "tool" / "transfer_to_human_agents.yaml").write_text(text, "utf-8")
    case = root / "datasets" / "english_support_set" / "cases"
    (case / "agent_state_transfer_human_006.yaml").write_text(CASE, "utf-8")
    init_repo(root)
    commit_all(root, "a case with a transfer")

    lint = invoke("lint", cwd=root)
    assert lint.returncode == 0, lint.stdout + lint.stderr

    proc = invoke(
        "run", "--no-grade", "english_support_set", "--select", "agent_state_transfer_human_006",
        "--agent", f"cmd:{sys.executable} {AGENT}", "--progress", "none", cwd=root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = root / proc.stdout.strip().splitlines()[-1].split(" -> ")[-1]
    (record,) = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert record["status"] == "completed"
    assert [c["tool"] for c in record["calls"]] == ["transfer_to_human_agents"]
    types = [e["type"] for e in record["trace"]]
    assert types.count("user") == 1  # the second user turn was never sent
    assert types[-1] == "conversation_end"
    assert record["output"] == "Transferring you."


HANDOFF = """\
fixture_id: handoff
fixture_version: v1
kind: cel
description: What every transfer tool says and checks.
source: synthetic
desensitized: true
data:
  definitions:
    blank:
      params: [text]
      expr: 'size(text.trim()) == 0'
    receipt:
      params: [text, queue]
      expr: '"Transfer successful (" + queue + "): " + text'
"""
SHARED_TRANSFER = """\
fixture_id: transfer_to_human_agents
fixture_version: v1
kind: tool
description: Transfers the customer to a human agent; the conversation ends.
source: synthetic, after tau2-bench's airline transfer_to_human_agents
desensitized: true
data:
  name: transfer_to_human_agents
  side_effect: false
  uses: [handoff]
  parameters:
    type: object
    properties:
      summary: {type: string}
    required: [summary]
    additionalProperties: false
  responses:
    - when: 'blank(args.summary)'
      error: {code: invalid, message: "Say why the customer needs a human"}
    - result_from: 'receipt(args.summary, "general")'
      ends_conversation: true
"""


def test_a_shared_cel_definition_from_yaml_through_lint_and_run(tmp_path: Path) -> None:
    """A tool whose expressions call a cel fixture's definitions lints clean and runs as
    written out (the receipt is the definition's); a wrong call is EC619, exit 1."""
    root = tmp_path / "repo"
    root.mkdir()
    for folder in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    shutil.copy(REPO_ROOT / "evalcase.toml", root / "evalcase.toml")
    (root / ".gitignore").write_text("/outputs/\n/reports/\n", "utf-8")
    tool = root / "fixtures" / "tool" / "transfer_to_human_agents.yaml"
    tool.write_text(SHARED_TRANSFER, "utf-8")
    (root / "fixtures" / "cel").mkdir()
    (root / "fixtures" / "cel" / "handoff.yaml").write_text(HANDOFF, "utf-8")
    case = root / "datasets" / "english_support_set" / "cases"
    (case / "agent_state_transfer_human_006.yaml").write_text(CASE, "utf-8")
    init_repo(root)
    commit_all(root, "a case whose tool uses shared definitions")

    lint = invoke("lint", cwd=root)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    proc = invoke(
        "run", "--no-grade", "english_support_set", "--select", "agent_state_transfer_human_006",
        "--agent", f"cmd:{sys.executable} {AGENT}", "--progress", "none", cwd=root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = root / proc.stdout.strip().splitlines()[-1].split(" -> ")[-1]
    (record,) = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert record["status"] == "completed"
    (call,) = record["calls"]
    assert call["result"] == "Transfer successful (general): Please get me a human."
    assert record["trace"][-1]["type"] == "conversation_end"

    tool.write_text(SHARED_TRANSFER.replace('"general")', '"general", 2)'), "utf-8")
    lint = invoke("lint", cwd=root)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert "EC619" in lint.stdout and "takes 2 argument(s)" in lint.stdout
