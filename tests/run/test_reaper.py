"""The reaper (evalcase.run.reaper): what it loads at its start, and that it still ends an
agent's whole tree. Every ``cmd:`` agent starts under it, so its start is paid once per
attempt: at concurrency 200 on two cores its imports were most of an attempt's CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalcase.run import isolation

# Modules the reaper must not import: each costs milliseconds per attempt (signal pulls
# in enum, ctypes pulls in struct and functools); the C modules under them are enough.
HEAVY = {"ctypes", "signal", "enum", "collections", "functools", "struct", "re"}


def test_the_reaper_starts_without_the_heavy_modules(tmp_path: Path) -> None:
    argv = isolation.reaper_argv(["/bin/true"])
    assert argv[:3] == [sys.executable, "-I", "-S"]
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "_ctypes" in imported  # prctl is still called
    assert not imported & HEAVY, sorted(imported & HEAVY)


def test_an_orphan_in_its_own_session_is_still_ended_with_the_agent(tmp_path: Path) -> None:
    """The subreaper (prctl through _ctypes): a process that left the agent's session and
    was orphaned is re-parented to the reaper, which kills it when the agent exits."""
    pidfile = tmp_path / "pid"
    script = (
        f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 60' & "
        f"while [ ! -s {pidfile} ]; do :; done; exit 3"
    )
    done = subprocess.run(
        isolation.reaper_argv(["/bin/sh", "-c", script]), capture_output=True, timeout=30
    )
    assert done.returncode == 3  # the agent's status
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):  # killed and waited before the reaper exited
        os.kill(pid, 0)


def test_libc_prctl_is_made_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its three classes and the dlopen cost 40 us a call (a subreaper calls it twice);
    made once, the zygote's forks inherit it made."""
    import _ctypes

    from evalcase.run import reaper

    opened = []
    real = _ctypes.dlopen

    def dlopen(*args: object) -> object:
        opened.append(args)
        return real(*args)

    monkeypatch.setattr(_ctypes, "dlopen", dlopen)
    monkeypatch.setattr(reaper, "_PRCTL", [])
    for _ in range(3):
        reaper.prctl(3, 0)  # PR_GET_DUMPABLE: changes nothing
    assert len(opened) == 1
