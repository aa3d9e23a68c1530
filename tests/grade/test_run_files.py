"""run.json and reviews.jsonl are read once into types (evalcase.grade.readers): a value
of the wrong kind is a clear error naming the file and the field, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcase.grade.recorded_run import RunMeta, read_reviews, read_run
from evalcase.model import FatalError


def _run_dir(tmp_path: Path, run: object) -> Path:
    run_dir = tmp_path / "outputs" / "c0ffee" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps(run), "utf-8")
    (run_dir / "attempts.jsonl").write_text("", "utf-8")
    return run_dir


def test_run_json_read_into_its_type(tmp_path: Path) -> None:
    run = {"run_id": "r1", "commit": "abc", "dataset": {"id": "refunds"},
           "skipped": {"datasets/x/cases/a.yaml": ["bad"]}}  # fmt: skip
    record = read_run(_run_dir(tmp_path, run))
    assert isinstance(record.meta, RunMeta)
    assert (record.run_id, record.commit, record.dataset_id) == ("r1", "abc", "refunds")
    assert record.meta.skipped == {"datasets/x/cases/a.yaml": ["bad"]}


def test_older_run_json_and_defaults(tmp_path: Path) -> None:
    record = read_run(_run_dir(tmp_path, {"dataset_id": "old"}))
    assert (record.run_id, record.commit, record.dataset_id) == ("r1", "c0ffee", "old")


@pytest.mark.parametrize(
    ("run", "said"),
    [
        (["not", "an", "object"], "must be an object, not list"),
        ({"dataset": "refunds"}, "dataset: must be an object, not str"),
        ({"skipped": ["a.yaml"]}, "skipped: must be an object, not list"),
    ],
)
def test_a_run_json_of_the_wrong_shape_is_a_clear_error(
    tmp_path: Path, run: object, said: str
) -> None:
    run_dir = _run_dir(tmp_path, run)
    with pytest.raises(FatalError) as caught:
        read_run(run_dir)
    assert str(caught.value).startswith(f"{run_dir / 'run.json'}: {said}")


def test_reviews_read_into_their_type(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, {})
    lines = [
        {"case_id": "a", "case_version": "v1", "attempt": 2, "verdict": "fail",
         "reviewer": "王审核", "reviewed_at": "2026-07-08", "reason": "wrong"},
        {"case_id": "a", "case_version": "v1", "attempt": 2, "verdict": "pass",
         "reviewer": "王审核", "reviewed_at": "2026-07-09"},
        {"case_id": "b", "case_version": "v1", "attempt": 1, "verdict": "maybe"},
    ]  # fmt: skip
    text = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
    (run_dir / "reviews.jsonl").write_text(text, "utf-8")
    got = read_reviews(run_dir)
    assert list(got) == [("a", "v1", 2)]
    assert (got[("a", "v1", 2)].verdict, got[("a", "v1", 2)].reason) == ("pass", "")


def test_a_review_with_a_bad_attempt_is_a_clear_error(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, {})
    line = {"case_id": "a", "case_version": "v1", "attempt": "second", "verdict": "pass"}
    (run_dir / "reviews.jsonl").write_text(json.dumps(line) + "\n", "utf-8")
    with pytest.raises(FatalError, match=r"reviews.jsonl: review 1: attempt: must be a number"):
        read_reviews(run_dir)


def test_a_review_file_item_of_the_wrong_kind_is_named(tmp_path: Path) -> None:
    """The review file a person edits is read into ``Decision`` values: an attempt that
    is not a number is an error naming the item, before anything is recorded."""
    from evalcase.grade import human_verdicts

    path = tmp_path / "review.json"
    item = {"case_id": "a", "case_version": "v1", "attempt": 1, "verdict": "pass"}
    path.write_text(json.dumps({"items": [item, {**item, "verdict": None}]}), "utf-8")
    assert [d.attempt for d in human_verdicts.import_file(path)] == [1]
    path.write_text(json.dumps({"items": [{**item, "attempt": "first"}]}), "utf-8")
    with pytest.raises(FatalError) as caught:
        human_verdicts.record(tmp_path, human_verdicts.import_file(path), "王审核")
    assert str(caught.value) == f"{path}: items[0]: attempt: must be a number, not 'first'"
    assert not (tmp_path / "reviews.jsonl").exists()


def test_json_value_fields_keep_what_the_file_says() -> None:
    # A JSONValue field is read as it is, whatever its kind; a field of a real type still
    # refuses another kind. The judge's answer names the alias as readers.JSONValue (no
    # JSONValue of its own in its module), which must resolve all the same.
    from evalcase.grade import readers
    from evalcase.grade.judge import AnswerItem
    from evalcase.grade.trace_events import events

    item = readers.parse(AnswerItem, {"name": ["odd"], "score": "5", "reason": {"a": 1}})
    assert item == AnswerItem(["odd"], "5", {"a": 1})
    (event,) = events([{"type": "tool_result", "step": 2, "result": [1, {"x": None}]}])
    assert (event.type, event.step, event.result) == ("tool_result", 2, [1, {"x": None}])
    assert str(readers.parse(RunMeta, {"skipped": ["a"]})) == "skipped: must be an object, not list"
