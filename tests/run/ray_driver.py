"""A runner process for the Ray tests:
``python -m tests.run.ray_driver OUT start|resume EXECUTOR ADDRESS AGENT CASES [RUN_ID]``.

Runs CASES cases x 2 attempts of the cmd: agent ``tests/run/cmd_agents/AGENT.py`` with
concurrency 2 (case_02's question asks the kill_worker agent to crash its worker); prints
the run id first. The runner tests kill this process, or a worker under it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from evalcase.run import driver, outputs
from evalcase.run.executors import get_executor
from tests.run.support import job, task_of, view

SOURCE = driver.Source("ds", "v1", "digest-ds", "d" * 40, False, "WORKTREE")


def question(i: int) -> str:
    return "please crash the worker" if i == 2 else f"question {i}"


def main() -> None:
    out, mode, executor, address, agent, cases = sys.argv[1:7]
    spec = f"cmd:{sys.executable} {Path(__file__).parent / 'cmd_agents' / agent}.py"
    tasks = [
        task_of(job(view(question(i)), case_id=f"case_{i:02d}", timeout=60))
        for i in range(int(cases))
    ]
    chosen = get_executor(executor, {}, address)
    agent_options = {"env": {"MARKS": os.environ["MARKS"]}} if "MARKS" in os.environ else {}
    if mode == "start":
        run_id = driver.new_run_id()
        print(run_id, flush=True)
        options = driver.RunOptions(
            agent=spec, agent_options=agent_options, repeat=2, concurrency=2, timeout_s=60
        )
        driver.start(Path(out), SOURCE, tasks, options, chosen, run_id=run_id)
    else:
        folder = outputs.find(Path(out), sys.argv[7])
        driver.resume(folder, SOURCE, tasks, agent_options, chosen)


if __name__ == "__main__":
    main()
