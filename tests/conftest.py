from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import BASE_REPO, REPO_ROOT


@pytest.fixture
def base_repo(tmp_path: Path) -> Path:
    """A copy of the small, consistent sample repository (not a git repository)."""
    dest = tmp_path / "repo"
    shutil.copytree(BASE_REPO, dest)
    return dest


@pytest.fixture
def example_repo(tmp_path: Path) -> Path:
    """A copy of this repository's example datasets and fixtures (not a git repository)."""
    dest = tmp_path / "examples"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, dest / part)
    return dest
