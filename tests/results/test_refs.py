"""Run references over real folders and a real git repository: run IDs first, latest~N,
DATASET@vN, branches, tags and commits, narrowed by dataset and to graded runs, and a
clear error for what matches nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.model import FatalError
from evalcase.report.gradings import UNVERSIONED, list_gradings
from evalcase.results.refs import find
from tests.helpers import commit_all, git, init_repo
from tests.results.folders import write_grading, write_run


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, str | Path]:
    root = init_repo(tmp_path / "repo")
    (root / "evalcase.toml").write_text("[lint]\n", "utf-8")
    (root / "datasets").mkdir()
    (root / ".gitignore").write_text("/outputs/\n/reports/\n", "utf-8")
    first = commit_all(root, "one")
    git(root, "tag", "v-one")
    (root / "README").write_text("two\n", "utf-8")
    second = commit_all(root, "two")
    write_run(root, "r1", {"a": "p"}, commit=first, started_at="2026-12-01T10:00:00+00:00")
    write_grading(root, "r1", "g1", {"a": "p"}, commit=first)
    write_run(root, "r2", {"a": "f"}, commit=second, started_at="2026-12-01T11:00:00+00:00",
              dataset="set_b")  # fmt: skip
    write_grading(root, "r2", "g2", {"a": "f"}, commit=second)
    write_run(root, "r3", {"a": "p"}, commit=second, started_at="2026-12-01T12:00:00+00:00",
              version="v2")  # fmt: skip
    return {"root": root, "first": first, "second": second}


def ids(repo: dict[str, str | Path], ref: str, **kw: object) -> str:
    return find(load_config(Path(repo["root"])), ref, **kw).run_id  # type: ignore[arg-type]


def test_each_kind_of_reference(repo: dict[str, str | Path]) -> None:
    assert ids(repo, "r2") == "r2"
    assert ids(repo, "latest") == "r3"
    assert ids(repo, "latest~0") == "r3"
    assert ids(repo, "latest~2") == "r1"
    assert ids(repo, "latest", graded=True) == "r2"  # r3 has no report
    assert ids(repo, "latest", dataset="set_a", graded=True) == "r1"
    assert ids(repo, "set_a") == "r3"
    assert ids(repo, "set_a@v1") == "r1"
    assert ids(repo, "set_a@v2") == "r3"
    assert ids(repo, "main") == "r3"
    assert ids(repo, "main", dataset="set_b") == "r2"
    assert ids(repo, "HEAD~1") == "r1"
    assert ids(repo, "v-one") == "r1"
    assert ids(repo, str(repo["first"])[:8]) == "r1"
    folder = next(Path(repo["root"]).glob("reports/*/r2/gradings/g2"))
    found = find(load_config(Path(repo["root"])), str(folder), graded=True)
    assert (found.run_id, found.report) == ("r2", folder / "report.json")


@pytest.mark.parametrize(
    ("ref", "kw", "message"),
    [
        ("latest~5", {}, "there are 3 run(s), so no run 5 before the newest"),
        ("set_a@v9", {}, "no run of set_a at version v9"),
        ("HEAD~1", {"dataset": "set_b"}, "which has no run of dataset set_b"),
        ("nowhere", {}, "not a run ID, latest[~N], DATASET[@vN], branch, tag or commit"),
        ("r3", {"graded": True}, "run r3 has no report (run `evalcase grade r3` first)"),
    ],
)
def test_what_matches_nothing_is_a_clear_error(
    repo: dict[str, str | Path], ref: str, kw: dict[str, object], message: str
) -> None:
    with pytest.raises(FatalError) as err:
        ids(repo, ref, **kw)
    assert message in str(err.value)


def test_a_report_from_before_gradings_is_one_grading(tmp_path: Path) -> None:
    folder = write_grading(tmp_path, "r1", "g1", {"a": "p"}).parent.parent
    import shutil

    shutil.rmtree(folder / "gradings")
    (gradings,) = list_gradings(folder)
    assert (gradings.grading_id, gradings.path) == (UNVERSIONED, folder)


def test_a_compare_reference_passes_over_dirty_incomplete_and_untagged_runs(
    tmp_path: Path,
) -> None:
    """DATASET@vN picks the newest clean, complete run with the release tag's content;
    the runs it passes over are named, with why; a run ID means that run."""
    import json

    from evalcase.results.refs import Usable, list_runs, resolve

    def run(run_id: str, hour: int, **meta: object) -> None:
        folder = write_run(tmp_path, run_id, {"a": "p"}, started_at=f"2026-12-01T{hour}:00:00Z")
        data = json.loads((folder / "run.json").read_text("utf-8"))
        data.update({"planned": 1, "counts": {"attempts": 1, "errors": 0}, **meta})
        (folder / "run.json").write_text(json.dumps(data), "utf-8")

    run("tagged", 10)
    run("moved", 11, dataset={"id": "set_a", "version": "v1", "digest": "e" * 32})
    run("dirty", 12, dirty=True)
    run("cut", 13, counts={"attempts": 0, "errors": 0})
    runs = list_runs(tmp_path / "outputs", tmp_path / "reports")

    def tag(dataset: str, version: str) -> str:
        return "d" * 32

    def pick(ref: str, usable: Usable | None) -> str:
        return resolve(ref, runs, usable=usable, release_digest=tag).run_id

    assert pick("set_a@v1", None) == "cut"  # grade, review: as before
    assert pick("set_a@v1", Usable()) == "tagged"
    assert pick("set_a", Usable()) == "moved"  # no version asked: no tag to match
    assert pick("set_a@v1", Usable(allow_dirty=True)) == "dirty"
    assert pick("cut", Usable()) == "cut"
    with pytest.raises(FatalError) as err:
        pick("latest", Usable(agent="agent_b"))
    assert "no clean, complete run of agent agent_b" in str(err.value)
    with pytest.raises(FatalError) as err:
        resolve("set_a@v1", runs[1:], usable=Usable(), release_digest=tag)
    message = str(err.value)
    assert "no clean, complete run of set_a at version v1; passed over:" in message
    assert "moved (content eeeeeeeeeeee is not the release tag's dddddddddddd)" in message
    assert "dirty (dirty: uncommitted dataset changes, --allow-dirty compares it)" in message
    assert "cut (incomplete: 0 of 1 planned attempts recorded)" in message


def test_the_same_grading_named_two_ways_is_a_run_compared_with_itself(
    repo: dict[str, str | Path],
) -> None:
    """42.1 as docs/grading.md states it: two gradings of one run are two sides; the
    run's default grading named by its folder and by the run ID is one side twice."""
    from evalcase.results.refs import find_pair

    root, first = Path(repo["root"]), str(repo["first"])
    write_grading(root, "r1", "g9", {"a": "f"}, commit=first, graded_at="2026-12-01T12:00:00Z")
    config = load_config(root)
    gradings = root / "reports" / first / "r1" / "gradings"
    base, new = find_pair(config, str(gradings / "g1"), "r1")  # an older grading: two sides
    assert (base.run_id, new.run_id) == ("r1", "r1")
    with pytest.raises(FatalError, match="same run"):
        find_pair(config, str(gradings / "g9"), "r1")  # the default grading, twice
    with pytest.raises(FatalError, match="same run"):
        find_pair(config, "r1", str(gradings / "g9" / "report.json"))
