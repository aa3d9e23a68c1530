"""Runs: the run folder, append-only records, resume after a kill -9, refusal when the
dataset changed, selection."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalcase.model import FatalError
from evalcase.run import driver, outputs
from evalcase.run.executors import get_executor
from evalcase.run.select import SelectionError, select
from tests.helpers import REPO_ROOT
from tests.run.support import RunTask, job, task_of, view

SOURCE = driver.Source("ds", "v1", "digest-ds", "b" * 40, False, "WORKTREE")


def tasks(n: int) -> list[RunTask]:
    return [
        task_of(job(view(f"q{i}"), case_id=f"case_{i}", agent="py:tests.run.agents:echo"))
        for i in range(n)
    ]


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (path / "attempts.jsonl").read_text("utf-8").splitlines()]


def test_a_run_writes_run_json_and_one_line_per_attempt(tmp_path: Path) -> None:
    options = driver.RunOptions(
        agent="py:tests.run.agents:echo", repeat=3, concurrency=4, suites=("s",)
    )
    result = driver.start(tmp_path, SOURCE, tasks(4), options, get_executor("local"))
    assert result.path.parent == tmp_path / SOURCE.commit
    lines = records(result.path)
    assert sorted((r["case_id"], r["attempt"]) for r in lines) == [
        (f"case_{i}", a) for i in range(4) for a in (1, 2, 3)
    ]
    meta = json.loads((result.path / "run.json").read_text("utf-8"))
    assert meta["status"] == "completed" and meta["counts"] == {"attempts": 12, "errors": 0}
    assert meta["commit"] == SOURCE.commit and meta["dirty"] is False
    assert meta["dataset"] == {"id": "ds", "version": "v1", "digest": "digest-ds"}
    assert set(meta["cases"]) == {f"case_{i}" for i in range(4)}
    assert meta["options"]["repeat"] == 3 and meta["options"]["suites"] == ["s"]
    assert {"hostname", "platform", "python"} <= set(meta["host"])
    assert meta["started_at"] <= meta["ended_at"]
    seeds = {(r["case_id"], r["attempt"]): r["seed"] for r in lines}
    assert seeds[("case_0", 1)] == driver.seed_for(0, "case_0", 1) != seeds[("case_0", 2)]


def test_resume_runs_only_what_is_missing_and_refuses_a_changed_dataset(tmp_path: Path) -> None:
    options = driver.RunOptions(agent="py:tests.run.agents:echo", repeat=2)
    ts = tasks(3)
    result = driver.start(tmp_path, SOURCE, ts, options, get_executor("local"))
    path = result.path / "attempts.jsonl"
    lines = path.read_text("utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][:25], "utf-8")  # two kept, one torn
    folder = outputs.find(tmp_path, result.run_id)
    resumed = driver.resume(folder, SOURCE, ts, {}, get_executor("local"))
    assert resumed.new == 4 and resumed.attempts == 6
    keys = [(r["case_id"], r["attempt"]) for r in records(result.path)]
    assert len(keys) == len(set(keys)) == 6
    again = driver.resume(folder, SOURCE, ts, {}, get_executor("local"))
    assert again.new == 0
    changed = [
        RunTask(t.case_id, t.case_version, t.agent, t.env, digest="other")
        if t.case_id == "case_1"
        else t
        for t in ts
    ]
    with pytest.raises(FatalError, match="case case_1 changed"):
        driver.resume(folder, SOURCE, changed, {}, get_executor("local"))
    other = driver.Source("ds", "v1", "digest-2", SOURCE.commit, False, "WORKTREE")
    with pytest.raises(FatalError, match="dataset changed"):
        driver.resume(folder, other, ts, {}, get_executor("local"))


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_gives_the_same_attempt_set(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT / 'tools'}{os.pathsep}{REPO_ROOT}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.run.run_driver", str(tmp_path), "start"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    attempts = tmp_path / ("c" * 40) / run_id / "attempts.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if attempts.exists() and attempts.read_bytes().count(b"\n") >= 4:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = attempts.read_bytes().count(b"\n")
    assert 4 <= killed < 24, "the kill must land mid-run"
    meta = json.loads((attempts.parent / "run.json").read_text("utf-8"))
    assert meta["status"] == "running"  # the killed run never wrote its end
    subprocess.run(
        [sys.executable, "-m", "tests.run.run_driver", str(tmp_path), "resume", run_id],
        cwd=REPO_ROOT, env=env, check=True, timeout=300,
    )  # fmt: skip
    keys = [(r["case_id"], r["attempt"]) for r in outputs.read_attempts(attempts)]
    assert sorted(keys) == sorted((f"case_{i:02d}", a) for i in range(12) for a in (1, 2))
    assert len(keys) == len(set(keys))
    meta = json.loads((attempts.parent / "run.json").read_text("utf-8"))
    assert meta["status"] == "completed" and meta["counts"]["attempts"] == 24


def test_selectors_combine_as_documented() -> None:
    base = tasks(4)
    metas = [
        {
            "tags": ["smoke"],
            "risk_level": "P0",
            "dataset_roles": ["golden"],
            "case_types": ["agent"],
        },
        {"tags": ["smoke"], "risk_level": "P2", "dataset_roles": ["risk"], "case_types": ["llm"]},
        {"tags": [], "risk_level": "P0", "dataset_roles": ["red_team"], "case_types": ["agent"]},
        {
            "tags": ["tool_fault"],
            "risk_level": "P1",
            "dataset_roles": ["golden"],
            "case_types": ["tool"],
        },
    ]
    ts = [
        RunTask(t.case_id, t.case_version, t.agent, t.env, meta=m)
        for t, m in zip(base, metas, strict=True)
    ]
    suites = {
        "smoke": {"description": "x", "tags": ["smoke"]},
        "safety": {"dataset_roles": ["risk", "red_team"]},
        "p0_agents": {"risk_levels": ["P0"], "case_types": ["agent"]},  # every criterion must hold
        "all": {},
    }

    def ids(suite_names: tuple[str, ...] = (), patterns: tuple[str, ...] = ()) -> list[str]:
        return [t.case_id for t in select(ts, suites, suite_names, patterns)]

    assert ids() == ["case_0", "case_1", "case_2", "case_3"]
    assert ids(("smoke",)) == ["case_0", "case_1"]
    assert ids(("p0_agents",)) == ["case_0", "case_2"]
    assert ids(("smoke", "safety")) == ["case_0", "case_1", "case_2"]  # suites: union
    assert ids(patterns=("risk:P0", "tag:tool_fault")) == [
        "case_0",
        "case_2",
        "case_3",
    ]  # selects: union
    assert ids(("safety",), ("risk:P0",)) == ["case_2"]  # suite and select: intersection
    assert ids(patterns=("case_[13]",)) == ["case_1", "case_3"]
    assert ids(patterns=("role:gold*", "type:llm")) == ["case_0", "case_1", "case_3"]
    assert ids(("all",)) == ids()
    with pytest.raises(SelectionError, match="no suite 'nightly'"):
        ids(("nightly",))
    with pytest.raises(SelectionError, match="unknown facet 'owner'"):
        ids(patterns=("owner:me",))
    with pytest.raises(SelectionError, match="selects no case"):
        ids(("smoke",), ("risk:P1",))


def test_a_run_collects_its_cyclic_garbage_in_fewer_larger_passes(tmp_path: Path) -> None:
    """An attempt's objects (its sockets, servers, sessions, records) live for the attempt
    and form cycles: at the default threshold (700 allocations) the young collections
    traversed 200 attempts' live objects about 0.4 times an attempt and the full ones
    found 70 cyclic objects an attempt, 0.7 ms of the runner's CPU an attempt at
    concurrency 200. During a run the young threshold is driver.GC_YOUNG_THRESHOLD;
    after it, what it was."""
    import gc

    before = gc.get_threshold()
    many = [
        task_of(job(view("q"), case_id=f"case_{i}", agent="py:tests.run.agents:gc_threshold"))
        for i in range(3)
    ]
    options = driver.RunOptions(agent="py:tests.run.agents:gc_threshold", concurrency=2)
    result = driver.start(tmp_path, SOURCE, many, options, get_executor("local"))
    assert gc.get_threshold() == before
    outputs_ = records(result.path)
    assert {r["output"] for r in outputs_} == {str(driver.GC_YOUNG_THRESHOLD)}
    assert before[0] < driver.GC_YOUNG_THRESHOLD
