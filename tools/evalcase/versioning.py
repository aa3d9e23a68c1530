"""Git-native versioning: version-bump rules against a base, frozen release tags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalcase.config import Config


def is_git_repository(root: Path) -> bool:
    return (root / ".git").exists()


def history_for(config: Config, *, base: str | None, staged: bool) -> Any:
    """The history checks for this run (filled in by the versioning work)."""
    return None
