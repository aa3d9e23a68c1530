"""Real git repositories holding the example datasets, and small helpers to change them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.model import Finding
from tests.helpers import REPO_ROOT, commit_all, init_repo, invoke

LINT_CONFIG = '[lint]\nignore = ["EC411", "EC419"]\n'
REFUND = "refund_regression_set"
CRM = "crm_safety_set"
CASE = "datasets/refund_regression_set/cases/refund_eligibility_001.yaml"
MANIFEST = "datasets/refund_regression_set/dataset.yaml"
CRM_MANIFEST = "datasets/crm_safety_set/dataset.yaml"
# A rubric both the refund and the CRM datasets reference.
SHARED_FIXTURE = "fixtures/rubric/safety_refusal_v1.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with the example datasets and fixtures, committed."""
    path = tmp_path / "repo"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, path / part)
    # These tests change and bump reviewed cases without reviewing them again; that an
    # approval then no longer covers the case (EC411), or no longer matches its content
    # (EC419), is tested in tests/authoring/test_case_review.py.
    (path / "evalcase.toml").write_text(LINT_CONFIG, "utf-8")
    init_repo(path)
    commit_all(path, "examples")
    return path


def lint(repo: Path, **options: object) -> list[Finding]:
    result = lint_repository(load_config(repo), use_cache=False, jobs=1, **options)  # type: ignore[arg-type]
    return result.findings


def codes(findings: list[Finding]) -> set[tuple[str, str]]:
    return {(f.code, f.path) for f in findings}


def replace_in(repo: Path, rel: str, old: str, new: str, count: int = 1) -> None:
    path = repo / rel
    text = path.read_text("utf-8")
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, count), "utf-8")


def line_of(repo: Path, rel: str, prefix: str) -> int:
    lines = (repo / rel).read_text("utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(prefix))


# The approval the bundled golden/regression cases carry, given again for a bumped version.
REVIEW_AGAIN = ("--reviewer", "退款业务专家", "--result", "approved", "--for", "golden,regression")


def review_again(case: str, cwd: Path, *options: str) -> None:
    """Record a new approval of ``case`` at its current version (`evalcase review-case`)."""
    proc = invoke("review-case", case, *REVIEW_AGAIN, *options, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
