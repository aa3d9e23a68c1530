"""A damaged results store (issue 41.5): the store is derived from outputs/ and reports/,
so a file DuckDB calls damaged (truncated to half, blocks overwritten, zero bytes) is set
aside as ``results.duckdb.damaged-<time>`` and rebuilt, with a warning; `run` exits with
its gate's status, `history` and the viewer answer, never an internal error or a 500."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalcase.cli import main
from tests.grade.runs import check_008, duplicate_003, refund_repo, write_run
from tests.helpers import bundled_repo
from tests.helpers import invoke as invoke_cli
from tests.results.folders import copy_without_store

pytest.importorskip("duckdb")

KINDS = ("truncated", "overwritten", "empty")
STORE = Path(".evalcase_cache") / "results.duckdb"


def damage(path: Path, kind: str) -> None:
    """Truncate the store to half, overwrite its blocks past the file headers with random
    bytes (a fixed seed), or empty it."""
    size = path.stat().st_size
    if kind == "truncated":
        os.truncate(path, size // 2)
    elif kind == "overwritten":
        header = 3 * 4096  # DuckDB's file header and its two database headers
        with path.open("r+b") as handle:
            handle.seek(header)
            handle.write(random.Random(41).randbytes(size - header))
    else:
        os.truncate(path, 0)


def set_aside(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / STORE).parent.glob("results.duckdb.damaged-*"))


def invoke(repo: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "--root", str(repo)])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def graded_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with two graded runs, made once for the module (grading is the
    cost: about 0.8 s); each test gets its own copy (``graded``)."""
    repo, commit = refund_repo(tmp_path_factory.mktemp("graded"))
    for run_id in ("run-1", "run-2"):
        write_run(repo, commit, run_id, [check_008(True, 1), duplicate_003(run_id == "run-1")])
        assert invoke(repo, "grade", run_id)[0] in (0, 1)
    return repo


@pytest.fixture
def graded(graded_runs: Path, tmp_path: Path) -> Path:
    """Two graded runs and their store, built: a copy of the module's repository (its
    files, times and git folder) whose store is built here, in the copy (the store holds
    its sources' absolute paths, so it is never copied)."""
    repo = copy_without_store(graded_runs, tmp_path / "repo")
    code, _, err = invoke(repo, "store", "rebuild")
    assert code == 0, err
    assert (repo / STORE).stat().st_size > 0
    return repo


@pytest.mark.parametrize("kind", KINDS)
def test_history_sets_a_damaged_store_aside_and_answers(graded: Path, kind: str) -> None:
    damage(graded / STORE, kind)
    code, out, err = invoke(graded, "history", "tool_refund_check_008", "--format", "json")
    assert code == 0, out + err
    assert "internal error" not in err
    assert '"run-1"' in out and '"run-2"' in out
    assert "the results store was damaged" in err and "set aside as results.duckdb.damaged-" in err
    assert len(set_aside(graded)) == 1
    # The new store is healthy: the next question has nothing to say about damage.
    code, _, err = invoke(graded, "history", "tool_refund_check_008")
    assert code == 0 and "damaged" not in err


@pytest.mark.parametrize("kind", KINDS)
def test_the_viewer_answers_over_a_damaged_store(graded: Path, kind: str) -> None:
    from starlette.testclient import TestClient

    from evalcase.config import load_config
    from evalcase.results.view_pages import make_app

    warnings: list[str] = []
    app = make_app(load_config(graded), warn=warnings.append)
    damage(graded / STORE, kind)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        page = client.get("/")
    assert page.status_code == 200, page.text
    assert "run-1" in page.text and "run-2" in page.text
    assert len(set_aside(graded)) == 1
    assert warnings and "set aside as results.duckdb.damaged-" in warnings[0]


RUN = ("run", "refund_regression_set", "--select", "tool_refund_check_008")


@pytest.fixture(scope="module")
def run_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The bundled repository after one `evalcase run` over a healthy store, and its exit
    status: made once for the module, copied by each kind of damage."""
    repo = bundled_repo(
        tmp_path_factory.mktemp("run") / "repo",
        ignored=("/outputs/", "/reports/", ".evalcase_cache/"),
    )
    first = invoke_cli(*RUN, cwd=repo)
    assert first.returncode in (0, 1), first.stderr
    assert "damaged" not in first.stderr
    return repo, first.returncode


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_run_over_a_damaged_store_exits_with_its_gate(
    run_once: tuple[Path, int], tmp_path: Path, kind: str
) -> None:
    """`evalcase run` records and grades, finds the store damaged when it indexes the run:
    the store is set aside and rebuilt, and the exit status is the gates' (as over a
    healthy store), not 2. The first run is the module's (``run_once``), in a copy of
    its repository whose store this test damages."""
    first_repo, first_code = run_once
    repo = tmp_path / "repo"
    shutil.copytree(first_repo, repo, symlinks=True)
    assert not set_aside(repo)
    damage(repo / STORE, kind)
    second = invoke_cli(*RUN, cwd=repo)
    assert second.returncode == first_code, second.stdout + second.stderr
    assert "internal error" not in second.stderr
    assert "set aside as results.duckdb.damaged-" in second.stderr
    assert len(set_aside(repo)) == 1
    code, out, _ = invoke(repo, "history", "tool_refund_check_008", "--format", "json")
    assert code == 0 and out.count('"run_id"') == 2


def test_damage_found_by_a_question_sets_the_store_aside_and_asks_again(graded: Path) -> None:
    """Damage that shows only when a question reads a damaged block (after the store
    opened and updated): the file is set aside and the question asked of a rebuilt one."""
    import duckdb

    from evalcase.config import load_config
    from evalcase.results.store import Store, asking, open_store

    config = load_config(graded)
    asked: list[int] = []
    warnings: list[str] = []

    def ask(store: Store) -> dict[str, int]:
        asked.append(1)
        if len(asked) == 1:
            raise duckdb.Error("Corrupt database file: computed checksum 1 does not match")
        return store.counts()

    counts = asking(lambda: open_store(config, warn=warnings.append), ask)
    assert counts["runs"] == 2 and len(asked) == 2
    assert len(set_aside(graded)) == 1 and len(warnings) == 1


def test_any_other_error_is_not_damage(graded: Path) -> None:
    import duckdb

    from evalcase.config import load_config
    from evalcase.results.store import open_store

    with pytest.raises(duckdb.CatalogException), open_store(load_config(graded)) as store:
        store.con.execute("SELECT * FROM no_such_table")
    assert set_aside(graded) == []


@pytest.mark.slow
def test_a_store_another_process_holds_is_a_clear_error_never_rebuilt(
    graded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's lock held by another process ("Could not set lock ... Conflicting lock"):
    waited for, then a clear error; the store is never set aside under its holder. Each
    pause between the attempts is cut to at most 0.02 s (the six attempts as before, not
    3.75 s of waiting): what is tested is what the last attempt leads to, not how long
    the pauses are."""
    import subprocess
    import sys
    import time

    from evalcase.results import store

    pauses: list[float] = []
    sleep = time.sleep

    def short_sleep(seconds: float) -> None:
        pauses.append(seconds)
        sleep(min(seconds, 0.02))

    monkeypatch.setattr(store.time, "sleep", short_sleep)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
         "sys.stdin.read()", str(graded / STORE)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, _, err = invoke(graded, "history", "tool_refund_check_008")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert code == 2, err
    assert len(pauses) >= 2  # it waited before giving up
    assert "the results store cannot be opened" in err and "lock" in err
    assert "internal error" not in err and "damaged" not in err
    assert set_aside(graded) == []
