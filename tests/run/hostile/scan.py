"""A hostile agent after the runner's keys and the answer key, the way an attacker's
agent of a few lines would go about it (docs/untrusted-input.md):

- reads ``/proc/<pid>/environ`` of every process it can see, looking for a value that
  starts with MARK (the keys the test gives the runner all do);
- follows ``/proc/<pid>/cwd`` of every process, and walks up from its own path and from
  its working directory, looking for a repository of cases (a ``datasets/`` folder with a
  readable ``dataset.yaml``), and tries to write a file into its ``datasets/`` (removed
  at once);
- tries to connect to the loopback port PORT (0: no try).

It answers with what it found as JSON: pids and paths, never a value (so the record's
scrubber has nothing to mask and the test sees exactly what was reached). Standard
library only and one file: in the sandbox it is all the agent has.

Usage: scan.py MARK PORT
"""

import json
import os
import socket
import sys
from pathlib import Path

MARK = sys.argv[1].encode()
PORT = int(sys.argv[2])


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return int(stat[stat.rfind(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def repository(folder):
    """``folder`` (or a parent) as a repository of cases whose files can be read."""
    for here in (folder, *folder.parents):
        datasets = here / "datasets"
        try:
            for manifest in datasets.glob("*/dataset.yaml"):
                manifest.read_bytes()
                return str(here)
        except OSError:
            continue
    return None


def scan():
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    environ, cwd, repos = {}, {}, set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                values = [item.partition(b"=")[2] for item in handle.read().split(b"\0")]
            environ[pid] = "key" if any(v.startswith(MARK) for v in values) else "no key"
        except OSError as exc:
            environ[pid] = type(exc).__name__
        try:
            target = Path(f"/proc/{pid}/cwd").readlink()
            cwd[pid] = "read"
            found = repository(target)
            if found:
                repos.add(found)
        except OSError as exc:
            cwd[pid] = type(exc).__name__
    for start in (Path(__file__).resolve().parent, Path.cwd()):
        found = repository(start)
        if found:
            repos.add(found)
    writable = []
    for repo in sorted(repos):
        probe = Path(repo) / "datasets" / ".scan_probe"
        try:
            probe.write_text("written by the agent")
            probe.unlink()
            writable.append(repo)
        except OSError:
            pass
    port = "not tried"
    if PORT:
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
            port = "open"
        except OSError:
            port = "closed"
    reaper = os.getppid()
    ancestors = [reaper]
    while len(ancestors) < 8 and ancestors[-1] > 1:
        above = parent_of(ancestors[-1])
        if not isinstance(above, int) or above <= 0:
            break
        ancestors.append(above)
    return {
        "pid": os.getpid(),
        "reaper": reaper,
        "runner": parent_of(reaper),
        "ancestors": ancestors,
        "pids": len(pids),
        "environ": environ,
        "cwd": cwd,
        "keys": sorted(pid for pid, seen in environ.items() if seen == "key"),
        "repos": sorted(repos),
        "writable": writable,
        "port": port,
    }


for line in sys.stdin:
    json.loads(line)
    print(json.dumps({"role": "assistant", "content": json.dumps(scan())}), flush=True)
