"""Done-when checks on the bundled datasets.

- The Task of every bundled case is built from a git revision, without a checkout and
  without constructing a Linter (in a fresh process, so "not imported" is checked).
- Every precondition, permission condition and final-state assertion of the bundled
  cases evaluates against the case's initial state without error. The results are
  printed as data (``pytest -s`` shows them), not asserted true: whether a precondition
  holds at the start is the scenario, not a property of the contract.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract import cel
from evalcase.contract.task import Task
from tests.contract.test_agent_view import DATASETS, TASKS
from tests.helpers import REPO_ROOT, commit_all, git, init_repo

BUILD = """
import json, sys
from pathlib import Path
from evalcase.index.dataset import load_dataset
out = {}
for dataset_id in sys.argv[2:]:
    d = load_dataset(Path(sys.argv[1]), dataset_id, revision="HEAD")
    problems = {k: [p.message for p in v] for k, v in d.problems.items()}
    out[dataset_id] = {"tasks": len(d.tasks), "problems": problems, "commit": d.commit}
higher = ("evalcase.lint", "evalcase.versioning")
out["modules"] = sorted(m for m in sys.modules if m.startswith(higher))
print(json.dumps(out))
"""


def test_every_bundled_task_builds_from_a_revision_without_checkout_or_linter(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    init_repo(repo)
    commit_all(repo, "bundled datasets")
    head = git(repo, "rev-parse", "HEAD").strip()
    counts = {d: len(list((repo / "datasets" / d / "cases").glob("*.yaml"))) for d in DATASETS}
    # The work tree no longer has any of it: only the commit does.
    shutil.rmtree(repo / "datasets")
    shutil.rmtree(repo / "fixtures")
    proc = subprocess.run(
        [sys.executable, "-c", BUILD, str(repo), *DATASETS],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["modules"] == []  # no Linter, no versioning
    for dataset_id, count in counts.items():
        assert out[dataset_id]["problems"] == {}
        assert out[dataset_id]["tasks"] == count > 0
        assert out[dataset_id]["commit"] == head
    assert git(repo, "status", "--porcelain").strip()  # nothing was checked out again


def call_args(task: Task, tool: str) -> dict[str, Any]:
    """The arguments of the case's expected call of ``tool``; for a tool the case expects
    not to be called, the context's values the tool takes, confirmed."""
    if task.judge.expected_calls is not None:
        for plan in task.judge.expected_calls.any_of:
            for call in plan.calls:
                if call.tool == tool:
                    return dict(call.args)
    behaviour = task.env.tools.get(tool)
    params = behaviour.parameters.get("properties", {}) if behaviour is not None else {}
    args = {k: v for k, v in task.agent.context.items() if k in params}
    if "user_confirmed" in params:
        args["user_confirmed"] = True
    return args


def expressions(task: Task) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(kind, tool or "", CEL, variables) for every precondition, permission and assertion."""
    state = dict(task.env.initial_state)
    out: list[tuple[str, str, str, dict[str, Any]]] = []
    for policy in task.judge.side_effect_policies:
        call = {"tool": policy.tool, "n": 1, "index": 0}
        variables = cel.variables(
            "precondition", state, args=call_args(task, policy.tool), call=call, calls=[]
        )
        out += [("precondition", policy.tool, text, variables) for text in policy.preconditions]
    for permission in task.env.permissions:
        for tool in permission.tools:
            call = {"tool": tool, "n": 1, "index": 0}
            variables = cel.variables(
                "permission", state, args=call_args(task, tool), call=call, calls=[]
            )
            out.append(("permission " + permission.name, tool, permission.condition, variables))
    if task.judge.final_state_check is not None:
        variables = cel.variables("assert", state, initial=state, calls=[], output="")
        for expectation in task.judge.final_state_check.any_of:
            out += [("assert", "", text, variables) for text in expectation.asserts]
    return out


EXPRESSIONS = [(t.case_id, *e) for t in TASKS for e in expressions(t)]


def test_the_bundled_cases_use_every_kind_of_expression() -> None:
    kinds = {kind.split()[0] for _case, kind, _tool, _text, _vars in EXPRESSIONS}
    assert kinds == {"precondition", "permission", "assert"}
    assert len(EXPRESSIONS) > 50


@pytest.mark.parametrize(
    ("case_id", "kind", "tool", "text", "variables"),
    EXPRESSIONS,
    ids=[f"{e[0]}:{e[1]}:{i}" for i, e in enumerate(EXPRESSIONS)],
)
def test_expression_evaluates_against_the_initial_state(
    case_id: str, kind: str, tool: str, text: str, variables: dict[str, Any]
) -> None:
    value = cel.evaluate(text, variables)
    print(
        json.dumps(
            {"case": case_id, "kind": kind, "tool": tool, "cel": text, "value": repr(value)},
            ensure_ascii=False,
        )
    )
    assert not isinstance(value, (cel.EvalError, cel.CelError)), value
