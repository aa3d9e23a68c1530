"""The runner process of the kill -9 test: ``python -m tests.run.run_driver OUT MODE [RUN]``.

Runs 12 cases x 2 attempts of the slow cmd: agent; prints the run id first."""

from __future__ import annotations

import sys
from pathlib import Path

from evalcase.run import driver, outputs
from evalcase.run.executors import get_executor
from tests.run.support import job, task_of, view

AGENT = f"cmd:{sys.executable} {Path(__file__).parent / 'cmd_agents' / 'slow.py'}"
TASKS = [task_of(job(view(f"question {i}"), case_id=f"case_{i:02d}")) for i in range(12)]
SOURCE = driver.Source("ds", "v1", "digest-ds", "c" * 40, False, "WORKTREE")


def main() -> None:
    out, mode = Path(sys.argv[1]), sys.argv[2]
    if mode == "start":
        run_id = driver.new_run_id()
        print(run_id, flush=True)
        options = driver.RunOptions(agent=AGENT, repeat=2, concurrency=2)
        driver.start(out, SOURCE, TASKS, options, get_executor("local"), run_id=run_id)
    else:
        folder = outputs.find(out, sys.argv[3])
        driver.resume(folder, SOURCE, TASKS, {}, get_executor("local"))


if __name__ == "__main__":
    main()
