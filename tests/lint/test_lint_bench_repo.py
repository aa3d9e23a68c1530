"""The repository benchmarks/lint_bench.py generates is one lint accepts: every figure it
prints is of a clean lint (its runs stop at the first unexpected exit), so a generator the
rules have outgrown (a copied approval naming the template's content, EC419) would leave
the benchmark measuring nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, invoke, module_from

pytestmark = pytest.mark.slow


def test_the_generated_repository_lints_clean(tmp_path: Path) -> None:
    bench = module_from(REPO_ROOT / "benchmarks/lint_bench.py", "lint_bench")
    repo = tmp_path / "repo"
    # Twice the templates: every template once as itself and once as a variant.
    templates = len(list(REPO_ROOT.glob("datasets/refund_regression_set/cases/*.yaml")))
    paths = bench.generate(repo, 2 * templates, "refund_regression_set")
    assert len(paths) == 2 * templates
    # The approval of each variant's content names it quoted (the generator writes it;
    # an all-digit digest with one "e" would be a YAML float).
    last = [
        text.rsplit("content_digest: ", 1)[1][:1]
        for text in ((repo / rel).read_text("utf-8") for rel in paths)
        if "content_digest: " in text
    ]
    assert last and set(last) == {'"'}, last
    for args in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost",
         "commit", "-qm", "generated"],
        check=True,
    )  # fmt: skip
    proc = invoke("lint", "--no-cache", cwd=repo)
    assert proc.returncode == 0, proc.stdout[-3000:]
