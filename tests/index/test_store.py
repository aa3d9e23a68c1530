"""The lint store is closed by the command that opened it, not by the garbage collector:
a store left in a reference cycle with its transaction open held SQLite's lock, and the
next command in the same process waited out the 10 s busy timeout and lost its cache
write (issue 43)."""

from __future__ import annotations

import gc
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalcase.cli import main
from evalcase.index.store import FILE_NAME
from tests.helpers import GIT_ENV, bundled_repo


def _command(repo: Path, *args: str) -> int:
    """One command in this process, with nothing collected after it (as ``invoke`` did)."""
    previous = Path.cwd()
    os.chdir(repo)
    try:
        result = CliRunner().invoke(main, list(args), env=dict(GIT_ENV))
    finally:
        os.chdir(previous)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code


@pytest.mark.slow
def test_two_commands_in_a_row_both_write_their_cache(tmp_path: Path) -> None:
    repo = bundled_repo(tmp_path / "repo")
    enabled = gc.isenabled()
    gc.disable()
    try:
        # tag lints what is staged and reads the release through lint's analyzer: both
        # open the store; lint next writes its run to it.
        assert _command(repo, "tag", "english_support_set") == 0
        assert _command(repo, "lint") == 0
        with sqlite3.connect(repo / ".evalcase_cache" / FILE_NAME, timeout=0) as db:
            # No transaction of the tag's is still open (a write would wait), and lint's
            # run and the files' results are stored.
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")
            assert db.execute("SELECT count(*) FROM runs").fetchone()[0] >= 1
            assert db.execute("SELECT count(*) FROM results").fetchone()[0] > 100
    finally:
        if enabled:
            gc.enable()
