"""The package type-checks under mypy --strict and passes ruff: part of the test command,
so CI enforces it exactly as developers run it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_mypy_strict() -> None:
    proc = _run("mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_check() -> None:
    proc = _run("ruff", "check", "tools", "tests", "benchmarks", "examples")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format() -> None:
    proc = _run("ruff", "format", "--check", "tools", "tests", "benchmarks", "examples")
    assert proc.returncode == 0, proc.stdout + proc.stderr
