"""Runs with prompts through the driver: one job per case, prompt and attempt, numbered
across prompts; resume finishes a prompted run and refuses when a prompt changed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract.prompt import Prompt
from evalcase.model import FatalError
from evalcase.run import driver, outputs
from evalcase.run.executors import get_executor
from tests.run.support import RunTask, job, task_of, view

SOURCE = driver.Source("ds", "v1", "digest-ds", "d" * 40, False, "WORKTREE")
PROMPTS = {
    "polite": Prompt("polite", "v1", "Be polite. Context: {{ context.channel }}"),
    "short": Prompt("short", "v2", "Be short.", user="({{ turn }})"),
}


def tasks(n: int) -> list[RunTask]:
    return [
        task_of(
            job(
                view(f"q{i}", context={"channel": "app"}),
                case_id=f"case_{i}",
                agent="py:tests.run.agents:echo",
            )
        )
        for i in range(n)
    ]


def records(path: Path) -> list[dict[str, Any]]:
    lines = (path / "attempts.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_each_case_runs_once_per_prompt_and_resume_keeps_the_prompts(tmp_path: Path) -> None:
    options = driver.RunOptions(
        agent="py:tests.run.agents:echo", repeat=2, prompts=("polite", "short")
    )
    result = driver.start(
        tmp_path, SOURCE, tasks(3), options, get_executor("local"), prompts=PROMPTS
    )
    lines = records(result.path)
    got = sorted((r["case_id"], r["attempt"], r["prompt"]) for r in lines)
    assert got == sorted(
        (f"case_{i}", a, p)
        for i in range(3)
        for a, p in ((1, "polite@v1"), (2, "polite@v1"), (3, "short@v2"), (4, "short@v2"))
    )
    by_key = {(r["case_id"], r["attempt"]): r for r in lines}
    assert by_key[("case_0", 1)]["seed"] == by_key[("case_0", 3)]["seed"]
    assert by_key[("case_0", 1)]["seed"] != by_key[("case_0", 2)]["seed"]
    assert by_key[("case_0", 1)]["messages"][0]["content"] == "Be polite. Context: app"
    assert by_key[("case_0", 3)]["output"] == "echo: (q0)"
    meta = json.loads((result.path / "run.json").read_text("utf-8"))
    assert meta["prompts"] == {"polite": "v1", "short": "v2"} and meta["planned"] == 12
    # Cut the run short, then resume: the missing attempts come back with their prompt.
    kept = [r for r in lines if r["attempt"] != 4]
    (result.path / "attempts.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in kept), "utf-8"
    )
    folder = outputs.find(tmp_path, result.run_id)
    resumed = driver.resume(folder, SOURCE, tasks(3), {}, get_executor("local"), prompts=PROMPTS)
    assert resumed.new == 3 and resumed.attempts == 12
    again = [r for r in records(result.path) if r["attempt"] == 4]
    assert {r["prompt"] for r in again} == {"short@v2"}
    # A prompt whose version changed since the run began: refused, nothing appended.
    bumped = {**PROMPTS, "short": replace(PROMPTS["short"], version="v3")}
    (result.path / "attempts.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in kept), "utf-8"
    )
    with pytest.raises(FatalError, match="its prompts changed"):
        driver.resume(folder, SOURCE, tasks(3), {}, get_executor("local"), prompts=bumped)
    assert len(records(result.path)) == len(kept)


def test_a_case_prompt_applies_without_chosen_prompts_and_an_unknown_one_stops(
    tmp_path: Path,
) -> None:
    own = [replace(t, meta={"prompt": "short"}) for t in tasks(2)]
    options = driver.RunOptions(agent="py:tests.run.agents:echo")
    result = driver.start(tmp_path, SOURCE, own, options, get_executor("local"), prompts=PROMPTS)
    assert {(r["attempt"], r["prompt"]) for r in records(result.path)} == {(1, "short@v2")}
    with pytest.raises(FatalError, match="unknown prompt"):
        driver.start(
            tmp_path / "x", SOURCE, tasks(1),
            replace(options, prompts=("nope",)), get_executor("local"), prompts=PROMPTS,
        )  # fmt: skip
    assert not (tmp_path / "x").exists()
