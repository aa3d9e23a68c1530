"""The issue's template probes through `evalcase run --timeout 5` and `evalcase lint` on a
real repository (issue 32): each run ends with one clear error naming the limit before
any attempt, and lint reports each probe at its line (EC342)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import commit_all, invoke
from tests.run.prompt_repo import write_prompt_repo

PROBES = {
    "probe_range": "{% for a in range(100000) %}{% for b in range(100000) %}.{% endfor %}"
    "{% endfor %}",
    "probe_lipsum": "{{ lipsum(50000000) }}",
    "probe_repeat": "{{ 'a' * 3000000000 }}",
}
PROMPT = """fixture_id: {id}
fixture_version: v1
kind: prompt
description: A hostile prompt.
source: synthetic
desensitized: true
data:
  system: |
    Labels: refund, other.
    {template}
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("probes") / "repo"
    root.mkdir()
    write_prompt_repo(root)
    for prompt_id, template in PROBES.items():
        (root / "fixtures" / "prompt" / f"{prompt_id}.yaml").write_text(
            PROMPT.format(id=prompt_id, template=template), "utf-8"
        )
    commit_all(root, "hostile prompts")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("prompt_id", PROBES)
def test_run_with_a_probe_ends_with_a_clear_error_before_any_attempt(
    repo: Path, prompt_id: str
) -> None:
    proc = invoke("run", "intents", "--prompt", prompt_id, "--timeout", "5", cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "EC342" in proc.stderr
    assert f"prompt {prompt_id}@v1 system" in proc.stderr
    assert "exceeded a limit" in proc.stderr  # the other cases are not rendered again
    assert not (repo / "outputs").exists()


@pytest.mark.slow
def test_lint_reports_each_probe_at_its_line(repo: Path) -> None:
    proc = invoke("lint", "--format", "json", cwd=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = {
        (Path(f["path"]).stem, f["line"]) for f in json.loads(proc.stdout)
        if f["code"] == "EC342"
    }  # fmt: skip
    assert found == {(prompt_id, 10) for prompt_id in PROBES}
