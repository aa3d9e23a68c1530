"""Side-effect policies declared once, in the tool's fixture: every case offering the tool
is graded with it (a case's own policy for the tool replaces it), on real runs through
the real environment; lint and the grader resolve them with the same function."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcase.config import load_config
from evalcase.grade.tasks import load_dataset
from evalcase.lint.api import lint_repository
from tests.grade.gold_repo import TOOLS, case, write_repo
from tests.helpers import REPO_ROOT, invoke

POLICY = {
    "tool": "cancel_reservation",
    "precondition": ["reservations[args.reservation_id].status == 'active'"],
    "confirmation_required": True,
    "allowed_state_transition": [
        {
            "path": "reservations.{args.reservation_id}.status",
            "from": ["active"],
            "to": ["cancelled"],
        }
    ],
    "forbidden_state_transition": ["cancel_without_confirmation"],
    "audit_requirement": ["operator", "timestamp", "tool_args"],
}
CANCEL = ["cancel_reservation", {"reservation_id": "EHGLP3"}]


def _case(case_id: str, **fields: Any) -> dict[str, Any]:
    graders = {"graders": [{"type": "side_effect_policy"}]}
    return case(case_id, [CANCEL], evaluator_config=graders, final_state_check=None, **fields)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("policy") / "repo"
    root.mkdir()
    tools = {
        **TOOLS,
        "cancel_reservation": {**TOOLS["cancel_reservation"], "side_effect_policy": POLICY},
    }
    own = {**POLICY, "confirmation_required": False}
    return write_repo(
        root,
        [
            _case("airline_inherit_001"),  # the tool's policy: confirmation required
            _case("airline_override_002", side_effect_policy=own),  # the case's replaces it
        ],
        tools,
    )


def test_a_tool_policy_governs_every_case_unless_the_case_gives_its_own(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = load_dataset(load_config(repo), "airline_set", None)
    inherited = dataset.cases["airline_inherit_001"].spec.side_effect_policies
    assert [(p.tool, p.confirmation_required) for p in inherited] == [("cancel_reservation", True)]
    own = dataset.cases["airline_override_002"].spec.side_effect_policies
    assert [(p.tool, p.confirmation_required) for p in own] == [("cancel_reservation", False)]
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    proc = invoke("run", "airline_set", "--agent", "py:tests.run.agents:scripted", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = sorted((repo / "reports").glob("*/*/grades.jsonl"))
    lines = [json.loads(line) for line in found[-1].read_text("utf-8").splitlines()]
    grades = {ln["case_id"]: ln for ln in lines if ln["grader"] == "side_effect_policy"}
    assert grades["airline_inherit_001"]["verdict"] == "fail"
    assert "without the user's confirmation" in grades["airline_inherit_001"]["reason"]
    assert grades["airline_override_002"]["verdict"] == "pass", grades["airline_override_002"]
    # EC305 counts the tool's own policy: add_bags (side effects, no policy) is reported
    # for both cases, cancel_reservation for neither.
    findings = lint_repository(load_config(repo)).findings
    ec305 = sorted(
        (Path(f.path).stem, f.message.split("'")[1]) for f in findings if f.code == "EC305"
    )
    assert ec305 == [("airline_inherit_001", "add_bags"), ("airline_override_002", "add_bags")]


POLICY_TEXT = """# Airline Agent Policy

- Before taking consequential actions (booking, modifying, cancelling), obtain explicit
  user confirmation ("yes") to proceed.
- Literal braces stay text: {{ not a variable }} {% not a tag %}.
"""


def test_one_policy_document_is_the_system_prompt_of_every_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tau2's policy.md, once: a prompt fixture (its text kept literal with raw) named by
    the manifest's prompts, never copied into the cases."""
    import yaml

    root = tmp_path / "repo"
    root.mkdir()
    (root / "fixtures" / "prompt").mkdir(parents=True)
    prompt = {
        "fixture_id": "airline_policy", "fixture_version": "v1", "kind": "prompt",
        "description": "the airline policy document", "source": "synthetic", "desensitized": True,
        "data": {"system": "{% raw %}" + POLICY_TEXT + "{% endraw %}"},
    }  # fmt: skip
    (root / "fixtures" / "prompt" / "airline_policy.yaml").write_text(
        yaml.safe_dump(prompt, allow_unicode=True), "utf-8"
    )
    write_repo(root, [_case("airline_inherit_001"), _case("airline_inherit_002")])
    manifest = root / "datasets" / "airline_set" / "dataset.yaml"
    data = yaml.safe_load(manifest.read_text("utf-8"))
    manifest.write_text(yaml.safe_dump({**data, "prompts": ["airline_policy"]}), "utf-8")
    from tests.helpers import commit_all

    commit_all(root, "one policy for every case")
    record = tmp_path / "requests.jsonl"
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    proc = invoke(
        "run", "airline_set", "--no-grade", "--agent", "py:tests.run.recording_agent:agent",
        cwd=root, env={"EVALCASE_RECORD_TO": str(record)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    requests = [json.loads(line) for line in record.read_text("utf-8").splitlines()]
    systems = {
        r["messages"][0]["content"] for r in requests if r["messages"][0]["role"] == "system"
    }
    assert systems == {POLICY_TEXT} and len(requests) == 2
