"""For every bundled case, nothing of its answer key (JudgeSpec) or of what only the
environment knows (fault schedules, permissions, tool behaviour, state fixture IDs...)
appears in its serialized AgentView, unless the agent's own fields already say it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract import task as task_model
from evalcase.contract.fields import agent_part
from evalcase.contract.task import Task
from evalcase.index.dataset import load_dataset
from evalcase.loader import load
from tests.helpers import BUNDLED_DATASETS, REPO_ROOT

DATASETS = BUNDLED_DATASETS


# Field names of the task model are its structure, not case data.
STRUCTURE = {
    f.name
    for cls in vars(task_model).values()
    if isinstance(cls, type) and is_dataclass(cls)
    for f in fields(cls)
}


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if str(k) not in STRUCTURE:
                yield str(k)
            yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


def secrets(task: Task) -> set[str]:
    """Values only the judge or the environment may know (4+ characters, not numbers)."""
    env = task.env
    env_only = {
        "tools": [
            {"responses": asdict(b)["responses"], "default": asdict(b)["default"]}
            for b in env.tools.values()
        ],
        "faults": [asdict(f) for f in env.faults],
        "permissions": [asdict(p) for p in env.permissions],
        "state_fixtures": list(env.state_fixtures),
        "initial_state": env.initial_state,
        "corpora": [c.fixture_id for c in env.corpora],
    }
    found = set(strings(asdict(task.judge))) | set(strings(env_only))
    found |= {task.case_id, *task.fixture_versions}
    return {s for s in found if len(s) >= 4 and not s.replace(".", "").isdigit()}


def agent_source(task: Task) -> str:
    """Everything the agent is meant to see, as written in the case and its fixtures."""
    case = load(task.path, (REPO_ROOT / task.path).read_bytes()).data
    parts: list[Any] = [agent_part(case)]
    for card in task.agent.tools:
        parts.append(asdict(card))
    parts.append([asdict(t) for t in task.agent.history])
    return json.dumps(parts, ensure_ascii=False)


def leaks(task: Task) -> list[str]:
    view = json.dumps(asdict(task.agent), ensure_ascii=False)
    source = agent_source(task)
    return sorted(s for s in secrets(task) if s in view and s not in source)


def bundled() -> list[Task]:
    tasks: list[Task] = []
    for dataset_id in DATASETS:
        dataset = load_dataset(REPO_ROOT, dataset_id)
        assert not dataset.problems, dataset.problems
        tasks += dataset.tasks
    return tasks


TASKS = bundled()


@pytest.mark.parametrize("task", TASKS, ids=[t.case_id for t in TASKS])
def test_the_agent_view_holds_no_answer_key_or_environment_value(task: Task) -> None:
    assert leaks(task) == []
    view = json.dumps(asdict(task.agent), ensure_ascii=False)
    # named explicitly: the case ID, fault kinds, state fixture IDs, case types
    assert task.case_id not in view
    for fixture_id in task.env.state_fixtures:
        assert fixture_id not in view
    for fault in task.env.faults:
        assert json.dumps(asdict(fault.when)) not in view
    assert "case_types" not in view and "expected_calls" not in view


def test_the_check_finds_a_leak() -> None:
    task = next(t for t in TASKS if t.env.faults)
    fault = task.env.faults[0]
    leaky = replace(
        task,
        agent=replace(task.agent, params={**task.agent.params, "hint": asdict(fault)}),
    )
    assert leaks(leaky)
    leaky = replace(task, agent=replace(task.agent, system=task.judge.case_id))
    assert task.case_id in leaks(leaky)


def test_every_bundled_case_has_a_task() -> None:
    files = sum(len(list((REPO_ROOT / "datasets" / d / "cases").glob("*.yaml"))) for d in DATASETS)
    assert len(TASKS) == files
    assert Path(TASKS[0].path).suffix == ".yaml"


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_first_user_turn_read_from_the_file_is_the_built_tasks(dataset: str) -> None:
    # import's dedup reads it from each case file without building tasks (first_user_turn)
    from evalcase.contract.build import first_user_turn

    tasks = load_dataset(REPO_ROOT, dataset).tasks
    assert tasks
    for task in tasks:
        path = REPO_ROOT / "datasets" / dataset / "cases" / f"{task.case_id}.yaml"
        data = load(path.name, path.read_bytes()).data
        expected = task.agent.user_turns[0] if task.agent.user_turns else None
        assert first_user_turn(data) == expected, task.case_id
