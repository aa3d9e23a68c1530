"""The results store: a real DuckDB file indexed from run and report folders, kept up to
date incrementally (new, changed and removed folders), equal to a rebuild, reading the
attempts as grading reads them (damaged lines skipped, the first record of an attempt
winning), and a clear error when DuckDB is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.results.queries import flaky, history, trend
from evalcase.results.store import open_store, rebuild, store_path
from tests.helpers import REPO_ROOT
from tests.results.folders import write_grading, write_run


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "evalcase.toml").write_text("[lint]\n", "utf-8")
    (tmp_path / "datasets").mkdir()
    return tmp_path


@pytest.mark.slow
def test_incremental_updates_equal_a_rebuild(root: Path) -> None:
    config = load_config(root)
    write_run(root, "r1", {"a": "pp", "b": "pf"}, started_at="2026-12-01T10:00:00+00:00")
    write_grading(root, "r1", "g1", {"a": "pp", "b": "pf"})
    with open_store(config) as store:
        assert store.counts() == {
            "runs": 1, "attempts": 4, "gradings": 1, "verdicts": 4, "case_verdicts": 2
        }  # fmt: skip
        assert store.update().runs == 0  # nothing changed: nothing indexed again
    assert store_path(config).is_file()
    # A second run, then a re-grade of the first (the newest grading is the default).
    write_run(root, "r2", {"a": "pf", "b": "ff"}, started_at="2026-12-01T11:00:00+00:00")
    write_grading(root, "r2", "g2", {"a": "pf", "b": "ff"})
    write_grading(root, "r1", "g3", {"a": "pp", "b": "pp"}, graded_at="2026-12-01T12:00:00Z")
    with open_store(config) as store:
        newest = store.con.execute(
            "SELECT run_id, grading_id FROM gradings WHERE newest ORDER BY run_id"
        ).fetchall()
        assert newest == [("r1", "g3"), ("r2", "g2")]
        rows = history(store, "b")
        assert [(r.run_id, r.grading_id, r.newest, r.verdicts) for r in rows] == [
            ("r1", "g1", False, ("pass", "fail")),
            ("r1", "g3", True, ("pass", "pass")),
            ("r2", "g2", True, ("fail", "fail")),
        ]
        assert [(f.case_id, f.passes, f.attempts) for f in flaky(store)] == [
            ("a", 3, 4),
            ("b", 2, 4),
        ]
        incremental = {
            t: sorted(store.con.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
            for t in ("runs", "case_digests", "attempts", "gradings", "verdicts", "case_verdicts")
        }
    # A removed run folder is dropped.
    stats = rebuild(config)
    assert (stats.runs, stats.gradings, stats.attempts) == (2, 3, 8)
    with open_store(config) as store:
        for table, rows_before in incremental.items():
            rows_after = sorted(store.con.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            assert rows_after == rows_before, table
    import shutil

    shutil.rmtree(root / "outputs" / ("a" * 40) / "r2")
    shutil.rmtree(root / "reports" / ("a" * 40) / "r2")
    with open_store(config) as store:
        assert store.counts()["runs"] == 1
        assert (
            store.con.execute("SELECT count(*) FROM verdicts WHERE run_id = 'r2'").fetchone()[0]
            == 0
        )
        assert flaky(store) == []


def test_a_case_content_change_is_marked_and_never_flaky(root: Path) -> None:
    config = load_config(root)
    write_run(root, "r1", {"a": "pp"}, started_at="2026-12-01T10:00:00+00:00")
    write_grading(root, "r1", "g1", {"a": "pp"})
    write_run(root, "r2", {"a": "ff"}, started_at="2026-12-01T11:00:00+00:00",
              digests={"a": "changed"})  # fmt: skip
    write_grading(root, "r2", "g2", {"a": "ff"})
    with open_store(config) as store:
        rows = history(store, "a")
        assert [(r.digest, r.case_changed) for r in rows] == [("dg-a", False), ("changed", True)]
        assert flaky(store) == []  # pass then fail, but of two different cases


def test_pending_and_errors_are_not_flakiness_and_graders_are_kept_apart(root: Path) -> None:
    config = load_config(root)
    write_run(root, "r1", {"a": "p?e", "b": "pp"}, started_at="2026-12-01T10:00:00+00:00")
    write_grading(root, "r1", "g1", {"a": "p?e", "b": "pp"}, config_digest="judge-1")
    write_run(root, "r2", {"a": "pp", "b": "ff"}, started_at="2026-12-01T11:00:00+00:00")
    write_grading(root, "r2", "g2", {"a": "pp", "b": "ff"}, config_digest="judge-2")
    with open_store(config) as store:
        # b passed under one graders' configuration and failed under another: not luck.
        assert flaky(store) == []


def test_damaged_lines_and_duplicate_records_read_as_grading_reads_them(root: Path) -> None:
    config = load_config(root)
    run = write_run(root, "r1", {"a": "pp"})
    with (run / "attempts.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
        first = json.loads((run / "attempts.jsonl").read_text("utf-8").splitlines()[0])
        handle.write(json.dumps({**first, "latency_ms": 999.0}) + "\n")  # a second copy
    with open_store(config) as store:
        rows = store.con.execute(
            "SELECT case_id, attempt, latency_ms FROM attempts ORDER BY attempt"
        ).fetchall()
    assert rows == [("a", 1, 100.0), ("a", 2, 200.0)]


def test_trend_per_commit_and_agent(root: Path) -> None:
    config = load_config(root)
    write_run(root, "r1", {"a": "pp", "b": "pf"}, commit="1" * 40, agent="x",
              started_at="2026-12-01T10:00:00+00:00")  # fmt: skip
    write_grading(root, "r1", "g1", {"a": "pp", "b": "pf"}, commit="1" * 40)
    write_run(root, "r2", {"a": "pp", "b": "pp"}, commit="2" * 40, agent="y",
              started_at="2026-12-01T11:00:00+00:00")  # fmt: skip
    write_grading(root, "r2", "g2", {"a": "pp", "b": "pp"}, commit="2" * 40)
    with open_store(config) as store:
        by_commit = trend(store, "set_a", slice_key="risk_level")
        by_agent = trend(store, "set_a", by="agent")
    assert [(r.key, r.runs, r.pass_at_1) for r in by_commit] == [
        ("1" * 40, 1, 0.75),
        ("2" * 40, 1, 1.0),
    ]
    assert by_commit[0].slices == {"P0": 0.5}
    assert by_commit[0].cost == pytest.approx(0.004)
    assert [r.key for r in by_agent] == ["x", "y"]


@pytest.mark.slow
def test_without_duckdb_the_store_commands_say_how_to_install_it(root: Path) -> None:
    """A Python where `import duckdb` fails (a base dependency, so a broken environment):
    the store's commands exit 2 saying to reinstall evalcase, no extra to name, and the
    rest of evalcase (runs, compare) does not need it."""
    blocker = root / "block"
    blocker.mkdir()
    (blocker / "duckdb.py").write_text("raise ImportError('no duckdb here')\n", "utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(REPO_ROOT / "tools")])}
    for args in (["flaky"], ["history", "a"], ["store", "rebuild"]):
        proc = subprocess.run([sys.executable, "-m", "evalcase", *args], cwd=root, env=env,
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert "cannot import DuckDB" in proc.stderr and "reinstall evalcase" in proc.stderr
        assert "needs DuckDB" not in proc.stderr and "evalcase[" not in proc.stderr
        assert "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "evalcase", "runs"], cwd=root, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_runs_newest_first_narrowed_and_paged(root: Path) -> None:
    config = load_config(root)
    write_run(root, "r1", {"a": "pp"}, agent="x", started_at="2026-12-01T10:00:00+00:00")
    write_grading(root, "r1", "g1", {"a": "pf"})
    write_run(root, "r2", {"a": "p"}, agent="y", started_at="2026-12-01T11:00:00+00:00")
    from evalcase.results.queries import runs

    with open_store(config) as store:
        assert [(r.run_id, r.grading_id, r.attempts) for r in runs(store)] == [
            ("r2", None, 1),
            ("r1", "g1", 2),
        ]
        assert [r.run_id for r in runs(store, agent="x")] == ["r1"]
        assert [r.run_id for r in runs(store, limit=1, offset=1)] == ["r1"]
        assert runs(store, commit="a" * 7, agent="x")[0].to_dict()["pass@1"] == 0.5
        assert runs(store, commit="b") == []


def test_unreadable_files_cost_only_themselves(root: Path) -> None:
    """outputs/ and reports/ are data anyone can write: a malformed report, a report of
    the wrong shape, garbage attempt lines and a run.json that is not an object are left
    out (and listed), the rest is indexed, and nothing is read again until it changes."""
    config = load_config(root)
    write_run(root, "r1", {"a": "pp"})
    write_grading(root, "r1", "g1", {"a": "pp"})
    write_run(root, "r2", {"a": "pp"})
    bad = write_grading(root, "r2", "g2", {"a": "pp"})
    (bad / "report.json").write_text("{not json", "utf-8")
    run = write_run(root, "r3", {"a": "pp"})
    (run / "attempts.jsonl").write_bytes(b"\xff\xfe garbage\n[1, 2]\n")
    (run / "run.json").write_text("[]", "utf-8")
    shape = write_grading(root, "r3", "g3", {"a": "pp"})
    (shape / "report.json").write_text('{"attempts": "nope"}', "utf-8")
    with open_store(config, update=False) as store:
        stats = store.update()
        assert {p for p, _ in stats.problems} == {
            str(bad / "report.json"),
            str(shape / "report.json"),
        }
        assert [(r.run_id, r.verdicts) for r in history(store, "a")] == [("r1", ("pass", "pass"))]
        assert store.counts()["runs"] == 3
        assert store.update().gradings == 0  # not retried until the file changes
        assert len(store.problems()) == 2
    (bad / "report.json").write_text((root / "reports").joinpath(
        "a" * 40, "r1", "report.json").read_text("utf-8").replace("r1", "r2"), "utf-8")  # fmt: skip
    with open_store(config) as store:
        assert [p for p, _ in store.problems()] == [str(shape / "report.json")]
        assert [r.run_id for r in history(store, "a")] == ["r1", "r2"]
