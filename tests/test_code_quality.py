"""The package type-checks under mypy --strict and passes ruff: part of the test command,
so CI enforces it exactly as developers run it.

mypy keeps its incremental cache in the tests' shared cache (tests/peer_tools.py's
folder), not in the checkout, so a clean clone's run (CI's) does not check the standard
library's and the dependencies' stubs again: about 16 s of CPU cold, 0.5 s warm. mypy
still checks every module of the package and reuses a module's cached result only for the
same source (a change in any clone is found as in a cold run); one run at a time uses the
folder (a file lock).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from filelock import FileLock

from tests.helpers import REPO_ROOT
from tests.peer_tools import CACHE

MYPY_CACHE = CACHE.parent / "mypy"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_mypy_strict() -> None:
    MYPY_CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(str(MYPY_CACHE.with_suffix(".lock")), timeout=1800):
        proc = _run("mypy", env={**os.environ, "MYPY_CACHE_DIR": str(MYPY_CACHE)})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_check() -> None:
    proc = _run("ruff", "check", "tools", "tests", "benchmarks", "examples")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format() -> None:
    proc = _run("ruff", "format", "--check", "tools", "tests", "benchmarks", "examples")
    assert proc.returncode == 0, proc.stdout + proc.stderr
