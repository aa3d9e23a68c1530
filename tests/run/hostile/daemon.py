"""Leaves processes behind: a child in its own process group, and a grandchild that
double-forks and calls setsid (a daemon). Writes their pids to PIDFILE, answers, and
then (with --hang) stops reading and sleeps, or exits at once."""

import os
import sys
import time

from _reply import requests, say

pidfile = sys.argv[1]
pids = []
child = os.fork()
if child == 0:
    time.sleep(1000)
    os._exit(0)
pids.append(child)
read, write = os.pipe()
first = os.fork()
if first == 0:
    os.setsid()
    second = os.fork()
    if second == 0:
        os.close(read)
        os.write(write, str(os.getpid()).encode())
        os.close(write)
        for fd in (0, 1, 2):
            os.close(fd)
        time.sleep(1000)
        os._exit(0)
    os._exit(0)  # the daemon's parent exits: the daemon is orphaned
os.close(write)
os.waitpid(first, 0)
pids.append(int(os.read(read, 64)))
with open(pidfile + ".tmp", "w") as handle:
    handle.write(" ".join(map(str, [os.getpid(), *pids])))
os.replace(pidfile + ".tmp", pidfile)
for _request in requests():
    say("done")
    if "--hang" in sys.argv:
        time.sleep(1000)
