"""The real `evalcase view` process for tests: started on a free port, its address read
from its stderr, and plain HTTP GETs against it."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

ADDRESS = re.compile(r"(http://127\.0\.0\.1:\d+/)")


def start_view(
    cwd: Path, env: dict[str, str], *args: str
) -> tuple[subprocess.Popen[str], str, list[str]]:
    """`evalcase view --port 0 ARGS` in ``cwd``: the process, its address, and the stderr
    lines it printed before the address (what --from-remote fetched, say)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcase", "view", "--port", "0", *args],
        cwd=cwd,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    before: list[str] = []
    while True:
        line = proc.stderr.readline()
        match = ADDRESS.search(line)
        if match:
            return proc, match.group(1), before
        if not line or len(before) > 20:
            proc.terminate()
            proc.wait(timeout=30)
            raise AssertionError("the viewer printed no address:\n" + "".join(before))
        before.append(line)


def http_get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    """(status, body, headers) of a GET; an HTTP error status is an answer, not a raise."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)
