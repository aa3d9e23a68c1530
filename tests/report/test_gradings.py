"""Gradings side by side (evalcase.report.gradings): the newest is the one made last."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from evalcase.config import load_config
from evalcase.report import gradings
from evalcase.report.pipeline import grade_and_report
from tests.grade.runs import check_008, duplicate_003, refund_repo, write_run

INSTANT = datetime(2026, 12, 7, 3, 15, 0, 500000, tzinfo=UTC)


def test_ids_made_in_one_instant_order_as_they_were_made() -> None:
    """A frozen clock: each new ID still sorts after every earlier one, by its time (one
    microsecond later) and its sequence, never by a random part."""
    made: list[str] = []
    for _ in range(30):
        made.append(gradings.new_grading_id(made, INSTANT))
    assert sorted(made) == made
    assert len(set(made)) == 30
    assert made[0] == "20261207T031500_500000Z-0001"
    assert made[1] == "20261207T031500_500001Z-0002"
    assert {gradings.graded_at_of(g) for g in made} == {"2026-12-07T03:15:00Z"}


def test_a_clock_set_back_still_makes_a_later_id() -> None:
    first = gradings.new_grading_id([], INSTANT)
    behind = gradings.new_grading_id([first], datetime(2026, 1, 1, tzinfo=UTC))
    assert behind > first
    assert gradings.graded_at_of(behind) >= gradings.graded_at_of(first)


def test_ids_of_before_are_read_and_a_new_one_sorts_after_them() -> None:
    """IDs of earlier versions (seconds and a random suffix) keep parsing; a new grading in
    their very second sorts after them, and its sequence continues from 0."""
    old = ["20261207T031500Z-ffffff", "20261207T031500Z-000000"]
    assert gradings.id_parts(old[0]) == (datetime(2026, 12, 7, 3, 15, tzinfo=UTC), 0)
    assert gradings.id_parts(gradings.UNVERSIONED) is None
    new = gradings.new_grading_id(old, datetime(2026, 12, 7, 3, 15, tzinfo=UTC))
    assert new == "20261207T031500_000001Z-0001"
    assert max([*old, new]) == new


def test_two_gradings_in_one_second_the_second_is_the_default(tmp_path: Path) -> None:
    """`grade` twice within one second (the clock frozen): the second grading is the newest
    and its files are the run's default report, every time."""
    repo, commit = refund_repo(tmp_path)
    run_dir = write_run(repo, commit, "run-s", [check_008(True, 1), duplicate_003(False, 1)])
    config = load_config(repo)
    folder = repo / "reports" / commit / "run-s"
    seen = []
    for redact in (True, False, True, False):
        grade_and_report(config, run_dir, redact=redact, environ={}, clock=lambda: INSTANT)
        report = json.loads((folder / "report.json").read_text("utf-8"))
        seen.append(report["grading"]["grading_id"])
        assert report["run"]["redacted"] is redact
    listed = gradings.list_gradings(folder)
    assert [g.grading_id for g in listed] == seen
    assert seen == sorted(seen) and seen[-1].endswith("-0004")


def test_an_old_report_folder_keeps_its_gradings(tmp_path: Path) -> None:
    """A run graded by an earlier version (IDs with a random suffix): its gradings still
    list, and a new grading made in the same second is the newest."""
    repo, commit = refund_repo(tmp_path)
    run_dir = write_run(repo, commit, "run-o", [check_008(True, 1)])
    config = load_config(repo)
    folder = repo / "reports" / commit / "run-o"
    second = datetime(2026, 12, 7, 3, 15, tzinfo=UTC)
    grade_and_report(config, run_dir, environ={}, clock=lambda: second)
    [made] = gradings.list_gradings(folder)
    old_id = "20261207T031500Z-fedcba"
    made.path.rename(made.path.with_name(old_id))
    meta_path = folder / "gradings" / old_id / "grading.json"
    meta = json.loads(meta_path.read_text("utf-8"))
    meta_path.write_text(json.dumps({**meta, "grading_id": old_id}), "utf-8")
    assert [g.grading_id for g in gradings.list_gradings(folder)] == [old_id]
    assert gradings.find_grading(folder, "20261207T031500Z-fe") is not None
    grade_and_report(config, run_dir, environ={}, clock=lambda: second)
    listed = [g.grading_id for g in gradings.list_gradings(folder)]
    assert listed[0] == old_id and len(listed) == 2
    report = json.loads((folder / "report.json").read_text("utf-8"))
    assert report["grading"]["grading_id"] == listed[-1]
    assert report["grading"]["earlier"] == [old_id]
