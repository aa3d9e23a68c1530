"""tests/xdist_groups.py: under ``-n 2 --dist loadgroup`` a module's tests that share a
module fixture run on one worker, which builds the fixture once; other tests still
spread over both workers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

SHARED = """
import json, os, pytest

@pytest.fixture(scope="module")
def built():
    with open(os.environ["BUILT_LOG"], "a") as log:
        log.write(json.dumps([__name__, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
    return 1

@pytest.mark.parametrize("n", range(6))
def test_uses_the_fixture(built, n):
    assert built == 1
"""
LOOSE = """
import json, os, time, pytest

@pytest.mark.parametrize("n", range(12))
def test_alone(n):
    time.sleep(0.05)  # long enough that both workers take some
    with open(os.environ["RAN_LOG"], "a") as log:
        log.write(json.dumps(os.environ["PYTEST_XDIST_WORKER"]) + "\\n")
"""


@pytest.mark.slow
def test_a_module_fixture_is_built_once_and_loose_tests_spread(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("test_one.py", "test_two.py"):
        (suite / name).write_text(SHARED, "utf-8")
    (suite / "test_loose.py").write_text(LOOSE, "utf-8")
    built, ran = tmp_path / "built.jsonl", tmp_path / "ran.jsonl"
    # Its own base temporary folder: in the shared one (/tmp/pytest-of-USER) the inner
    # pytest would clean up earlier runs' folders, a whole suite's of files (up to 30 s
    # here), and those of another test run on the machine.
    env = {**os.environ, "BUILT_LOG": str(built), "RAN_LOG": str(ran)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
         "-p", "tests.xdist_groups", "-p", "no:cacheprovider", "-c", os.devnull,
         "--basetemp", str(tmp_path / "inner-temp"), "--rootdir", str(suite), str(suite)],
        cwd=suite, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "24 passed" in proc.stdout, proc.stdout
    builds = [json.loads(line)[0] for line in built.read_text("utf-8").splitlines()]
    assert sorted(builds) == ["test_one", "test_two"]  # once each, not once per worker
    workers = {json.loads(line) for line in ran.read_text("utf-8").splitlines()}
    assert workers == {"gw0", "gw1"}
