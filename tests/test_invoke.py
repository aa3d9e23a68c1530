"""tests.helpers.invoke: evalcase in this process, with run_cli's shape and nothing of the
process left behind (current directory, environment, the cyclic collector)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from tests.helpers import REPO_ROOT, invoke, run_cli


def test_invoke_gives_what_the_process_gives() -> None:
    for args in (("rule", "EC102"), ("rule", "EC999"), ("no-such-command",)):
        here, there = invoke(*args, cwd=REPO_ROOT), run_cli(*args, cwd=REPO_ROOT)
        assert (here.returncode, here.stdout, here.stderr) == (
            there.returncode,
            there.stdout,
            there.stderr,
        ), args


def test_invoke_leaves_the_test_process_as_it_was(tmp_path: Path) -> None:
    before = Path.cwd()
    os.environ["GITHUB_ACTIONS"] = "true"
    try:
        proc = invoke("lint", cwd=tmp_path, env={"EVALCASE_INVOKE_PROBE": "1"})
        assert proc.returncode == 2  # not a case repository: a fatal error, no traceback
        assert "Traceback" not in proc.stderr
        assert Path.cwd() == before
        assert os.environ["GITHUB_ACTIONS"] == "true"  # unset for the call only
        assert "EVALCASE_INVOKE_PROBE" not in os.environ
        assert gc.isenabled()  # the group turns it off for a short-lived process
    finally:
        del os.environ["GITHUB_ACTIONS"]


def test_a_test_that_runs_the_group_with_clicks_runner_leaves_the_collector_on() -> None:
    """Tests that call `CliRunner().invoke(main, ...)` directly (the group turns the
    collector off) left it off for every later test of their worker, so whether
    test_invoke_leaves_the_test_process_as_it_was passed depended on the order the
    workers took the tests in; conftest's _collector_as_found puts it back."""
    from click.testing import CliRunner

    from evalcase.cli import main
    from tests.helpers import collector_as_found

    assert gc.isenabled()
    with collector_as_found():
        assert CliRunner().invoke(main, ["rule", "EC102"]).exit_code == 0
        assert not gc.isenabled()  # what a test calling the runner directly sees
    assert gc.isenabled()
