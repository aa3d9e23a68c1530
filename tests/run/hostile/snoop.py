"""Looks for the answer key: reports its cwd and environment, walks up from its own
path and from its cwd, and (with --walk) searches the whole file system for a file
holding NEEDLE. Answers with what it found, as JSON."""

import json
import os
import sys

from _reply import requests, say

needle = sys.argv[1].encode()
walk = "--walk" in sys.argv
found, visited = [], 0


def look(path):
    global visited
    visited += 1
    try:
        if os.path.getsize(path) > 2_000_000:
            return
        with open(path, "rb") as handle:
            if needle in handle.read():
                found.append(path)
    except OSError:
        pass


ups = []
for start in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
    here = start
    while True:
        for name in ("datasets", "fixtures", "outputs", "evalcase.toml"):
            if os.path.exists(os.path.join(here, name)):
                ups.append(os.path.join(here, name))
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
if walk:
    for top, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys", "/dev")]
        for name in files:
            look(os.path.join(top, name))
for _request in requests():
    say(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ), "found": found,
                    "visited": visited, "ups": ups}))
