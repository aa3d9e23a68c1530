"""evalcase.actions: lint's analyzer shared with versioning, and its cache left committed."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from evalcase import actions
from evalcase.config import Config, load_config
from tests.helpers import REPO_ROOT, commit_all, init_repo

REFUND = "refund_regression_set"


def _writable_at_once(config: Config) -> bool:
    """Whether another connection can write the lint cache without waiting: no store of
    the action's is left open in a transaction (a second lint in the same process would
    wait the busy timeout, 10 s, on its commit and then lose its writes)."""
    db = sqlite3.connect(config.root / config.cache_dir / "lint.sqlite", timeout=0)
    try:
        db.execute("CREATE TABLE IF NOT EXISTS probe (x)")
        db.commit()
        db.execute("DROP TABLE probe")
        db.commit()
    except sqlite3.OperationalError as exc:
        assert "locked" in str(exc), exc
        return False
    finally:
        db.close()
    return True


@pytest.mark.slow
def test_each_action_commits_and_closes_the_lint_cache(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    (repo / "evalcase.toml").write_text('[lint]\nignore = ["EC411", "EC419"]\n', "utf-8")
    init_repo(repo)
    commit_all(repo, "examples")
    config = load_config(repo)
    steps: list[tuple[str, Callable[[], object]]] = [
        ("tag_dataset", lambda: actions.tag_dataset(config, REFUND)),
        ("list_datasets", lambda: actions.list_datasets(config)),
        ("bump", lambda: actions.bump(config, dry_run=True)),
        ("diff", lambda: actions.diff(config, f"{REFUND}@v1", REFUND)),
        ("export_dataset", lambda: actions.export_dataset(config, f"{REFUND}@v1")),
    ]
    for name, step in steps:
        step()
        assert _writable_at_once(config), f"{name} left the lint cache locked"
