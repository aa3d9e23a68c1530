"""Looks for the answer key: reports its cwd and environment, walks up from its own
path and from its cwd, and (with --walk) searches the whole file system for a file
holding NEEDLE. Answers with what it found, as JSON.

The walk visits every file, but reads only those outside the system paths and the
interpreter's trees: those are the host's own read-only folders, which cannot hold a
needle made up for one test (the test checks its repository is not under one), and
reading every file of /usr and of a virtualenv with Ray and pandas in it is most of
the test's time."""

import json
import os
import sys
from pathlib import Path

from _reply import requests, say

needle = sys.argv[1].encode()
walk = "--walk" in sys.argv
found, visited, read = [], 0, 0
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
HOST_TREES = tuple({*SYSTEM, sys.prefix, sys.base_prefix})


def look(path):
    global visited, read
    visited += 1
    text = str(path)
    if any(text == top or text.startswith(top.rstrip("/") + "/") for top in HOST_TREES):
        return
    read += 1
    try:
        if path.stat().st_size > 2_000_000:
            return
        if needle in path.read_bytes():
            found.append(str(path))
    except OSError:
        pass


ups = []
for start in (Path.cwd(), Path(__file__).resolve().parent):
    for here in (start, *start.parents):
        for name in ("datasets", "fixtures", "outputs", "evalcase.toml"):
            if (here / name).exists():
                ups.append(str(here / name))
if walk:
    for top, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if str(Path(top) / d) not in ("/proc", "/sys", "/dev")]
        for name in files:
            look(Path(top) / name)
for _request in requests():
    seen = {"cwd": str(Path.cwd()), "env": dict(os.environ), "found": found}
    say(json.dumps({**seen, "visited": visited, "read": read, "ups": ups}))
