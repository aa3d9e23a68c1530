"""A cmd: agent that, at its first request, kills its subreaper's parent (the zygote)
with SIGKILL, writes its own pid and a grandchild's to the file named by its argument,
and then hangs: the attempt must end as an error, the tree with it."""

import os
import subprocess
import sys
import time


def parent_of(pid):
    with open(f"/proc/{pid}/stat", "rb") as handle:
        stat = handle.read()
    return int(stat[stat.rfind(b")") + 2 :].split()[1])


for _line in sys.stdin:
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    with open(sys.argv[1], "w") as handle:
        handle.write(f"{os.getpid()} {child.pid} {parent_of(os.getppid())}")
    os.kill(parent_of(os.getppid()), 9)
    time.sleep(60)
