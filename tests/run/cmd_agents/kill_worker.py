"""Kills the Ray worker running the attempt whenever the question asks for it, after
noting the try in $MARKS; answers other questions after a short think. Used to lose a
worker on purpose, the same way every time. The agent runs under evalcase's reaper
(evalcase/run/reaper.py), so the worker is its parent's parent."""

import json
import os
import signal
import sys
import time


def worker_pid() -> int:
    with open(f"/proc/{os.getppid()}/stat") as stat:  # the reaper's own parent
        return int(stat.read().rsplit(")", 1)[1].split()[1])


for line in sys.stdin:
    request = json.loads(line)
    question = request["messages"][-1]["content"]
    if "crash the worker" in question:
        with open(os.environ["MARKS"], "a") as marks:
            marks.write(f"{question}\n")
        os.kill(worker_pid(), signal.SIGKILL)
        time.sleep(30)  # the worker is gone; the runner will never read this agent again
    time.sleep(0.2)
    print(json.dumps({"role": "assistant", "content": f"answer to {question}"}), flush=True)
