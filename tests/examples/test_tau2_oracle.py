"""examples/tau2_common/tau2_oracle.py's own plumbing, without tau2 (fast)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import module_from

ROOT = Path(__file__).resolve().parents[2]


def test_a_checks_evalcase_run_keeps_the_callers_pythonpath_after_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The repository's handlers module first, then what the caller put on the path (a
    # test suite's tools/: the evalcase under test, not the one installed in the venv).
    oracle = module_from(ROOT / "examples/tau2_common/tau2_oracle.py", "tau2_oracle")
    seen: dict[str, Any] = {}

    def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.update(kwargs)
        (tmp_path / "outputs/abc/20261207T000000Z-000000").mkdir(parents=True)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(oracle.subprocess, "run", run)
    monkeypatch.setenv("PYTHONPATH", "/the/tree/tools")
    folder, verdicts = oracle.run(tmp_path, "tau2_airline", "tau2_replay", None)
    assert folder.name == "20261207T000000Z-000000" and verdicts == {}
    assert seen["cwd"] == tmp_path
    assert seen["env"]["PYTHONPATH"].split(os.pathsep) == [str(tmp_path), "/the/tree/tools"]
    assert seen["env"][oracle.KEY_ENV] == "unused"
    monkeypatch.delenv("PYTHONPATH")
    seen.clear()
    for folder in (tmp_path / "outputs").glob("*/*"):
        folder.rename(folder.with_name("20261207T000000Z-old"))
    oracle.run(tmp_path, "tau2_airline", "tau2_replay", None)
    assert seen["env"]["PYTHONPATH"] == str(tmp_path)
