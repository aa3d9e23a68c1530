"""Kills the Ray worker running the attempt whenever the question asks for it, after
noting the try in $MARKS; answers other questions after a short think. Used to lose a
worker on purpose, the same way every time. The agent runs under evalcase's reaper
(evalcase/run/reaper.py or a subreaper forked by evalcase/run/zygote.py), so the worker
is found among its ancestors by its command line."""

import json
import os
import signal
import sys
import time


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def is_ray_worker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            argv = cmdline.read()
    except OSError:  # a process closed to the agent (the zygote, a subreaper)
        return False
    return argv.startswith(b"ray::") or b"default_worker.py" in argv


def worker_pid() -> int:
    """The nearest ancestor that is a Ray worker: above the agent are its subreaper and,
    under the zygote (evalcase/run/zygote.py), the zygote, then the worker."""
    pid = parent_of(os.getpid())
    while pid > 1 and not is_ray_worker(pid):
        pid = parent_of(pid)
    if pid <= 1:
        raise SystemExit("no Ray worker above this agent")
    return pid


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
