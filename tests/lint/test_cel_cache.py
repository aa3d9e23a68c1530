"""A warm lint never imports the CEL library: expressions are analysed when their file is,
and the results travel with the file's cached facts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

LLM_CASE = "datasets/refund_regression_set/cases/llm_instruction_001.yaml"
CEL_CASE = "datasets/refund_regression_set/cases/tool_refund_submit_timeout_009.yaml"

LINT = """
import json, sys
from pathlib import Path
from evalcase.config import load_config
from evalcase.lint.api import lint_repository
result = lint_repository(load_config(Path(sys.argv[1])), jobs=1)
codes = sorted({f.code for f in result.findings})
print(json.dumps({"cel": "cel_expr_python" in sys.modules, "hit": result.cache_hit,
                  "analysed": result.files_analysed, "codes": codes}))
"""


def lint(repo: Path) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", LINT, str(repo)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    )
    out: dict[str, object] = json.loads(proc.stdout)
    return out


@pytest.mark.slow
def test_warm_lint_does_not_import_cel(example_repo: Path) -> None:
    cold = lint(example_repo)
    assert cold["cel"] is True and cold["codes"] == []  # the examples hold CEL
    warm = lint(example_repo)
    assert warm == {"cel": False, "hit": True, "analysed": 0, "codes": []}
    # A changed file without CEL: only it is analysed, CEL is still not needed.
    case = example_repo / LLM_CASE
    case.write_text(case.read_text("utf-8").replace("title: ", "title: 改 ", 1), "utf-8")
    edited = lint(example_repo)
    assert edited["cel"] is False and edited["analysed"] == 1 and edited["hit"] is False
    # A changed file with CEL needs it, and reports what it finds.
    case = example_repo / CEL_CASE
    text = case.read_text("utf-8").replace('"refund_submit")) <= 1', '"refund_submit")) <= )', 1)
    case.write_text(text, "utf-8")
    broken = lint(example_repo)
    # EC419 too: the case's latest approval is bound to the content it reviewed.
    assert broken["cel"] is True and broken["codes"] == ["EC419", "EC601"]
