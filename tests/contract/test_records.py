"""Attempt records as files: strict JSON, JSON Lines split on newlines only, damaged lines
reported, one record per attempt key, state rebuilt from diffs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from evalcase.contract import records


def test_non_finite_floats_are_written_as_null() -> None:
    text = records.dumps({"a": math.nan, "b": [math.inf, -math.inf, 1.5]})
    assert json.loads(text) == {"a": None, "b": [None, None, 1.5]}


@pytest.mark.parametrize("text", ['{"x": NaN}', '{"x": -Infinity}', '{"x": 1e999}'])
def test_strict_loading_refuses_out_of_range_numbers(text: str) -> None:
    with pytest.raises(records.OutOfRange):
        records.loads_strict(text)


def test_jsonl_is_split_on_newlines_only_and_damage_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    good = records.dumps({"case_id": "c", "attempt": 1, "output": "a\u2028b\u2029c\u0085d"})
    path.write_text(f'{good}\n{{torn\n[1]\n\n{good}\n{{"last": ', "utf-8")
    damaged: list[records.Damaged] = []
    back = list(records.read_jsonl(path, damaged))
    assert [r["output"] for r in back] == ["a\u2028b\u2029c\u0085d"] * 2
    assert [(d.line, d.message) for d in damaged][1] == (3, "not a JSON object")
    assert [d.line for d in damaged] == [2, 3]  # the torn last line is not damage
    assert str(damaged[0]).startswith(f"{path}:2: skipped a damaged line")


def test_one_record_per_attempt_key_the_first_wins() -> None:
    first = {"case_id": "c", "case_version": "v1", "attempt": 1, "n": 1}
    kept = records.dedup([first, {**first, "n": 2}, {**first, "attempt": 2}])
    assert [(r["attempt"], r["n"]) for r in kept] == [(1, 1), (2, 1)]


def test_state_is_rebuilt_from_the_initial_state_and_the_changes() -> None:
    attempt = {
        "initial_state": {"orders": {"O.1": {"status": "open"}}, "log": [], "gone": 1},
        "calls": [
            {"changes": [{"op": "set", "path": "orders.O.1.status",
                          "keys": ["orders", "O.1", "status"], "before": "open",
                          "after": "refunded"}]},
            {"changes": [{"op": "append", "path": "log", "keys": ["log"], "before": None,
                          "after": {"id": 1}},
                         {"op": "delete", "path": "gone", "keys": ["gone"], "before": 1,
                          "after": None}]},
        ],
    }  # fmt: skip
    assert records.state_before(attempt, 0) == attempt["initial_state"]
    assert records.state_before(attempt, 1)["orders"]["O.1"]["status"] == "refunded"
    assert records.final_state(attempt) == {
        "orders": {"O.1": {"status": "refunded"}},
        "log": [{"id": 1}],
    }
    assert attempt["initial_state"]["log"] == []  # never changed in place


def test_version_1_records_keep_their_own_copies() -> None:
    old = {"initial_state": {"a": 1}, "final_state": {"a": 2},
           "calls": [{"state_before": {"a": 5}, "changes": []}]}  # fmt: skip
    assert records.final_state(old) == {"a": 2}
    assert records.state_before(old, 0) == {"a": 5}
    assert records.final_state({"calls": []}) is None


def test_graders_get_the_cases_initial_state_never_the_records() -> None:
    case_state = {"orders": {"O1": {"status": "open"}}}
    changes = [{"op": "set", "path": "orders.O1.status", "after": "closed"}]
    record = {
        "initial_state_digest": records.state_digest(case_state),
        "calls": [{"changes": changes}],
    }
    trusted, problem = records.with_initial_state(record, case_state)
    assert problem is None and trusted["initial_state"] == case_state
    assert records.final_state(trusted) == {"orders": {"O1": {"status": "closed"}}}
    assert case_state["orders"]["O1"]["status"] == "open"  # rebuilt on a copy
    # A record of version 2 carried its own initial state: the case's is used instead.
    forged = {"initial_state": {"orders": {"O1": {"status": "paid"}}}, "calls": []}
    trusted, problem = records.with_initial_state(forged, case_state)
    assert problem is None and trusted["initial_state"] == case_state
    # A record that ran on another state gets none (graders that need it answer error).
    other = {**record, "initial_state_digest": records.state_digest({"orders": {}})}
    trusted, problem = records.with_initial_state(other, case_state)
    assert trusted["initial_state"] is None and records.final_state(trusted) is None
    assert problem is not None and "another initial state" in problem


def test_one_definition_of_an_attempts_key_for_records_and_their_json() -> None:
    from evalcase.contract import attempt

    odd: list[dict[str, object]] = [
        {"case_id": "c", "case_version": "v2", "attempt": 3},
        {"case_id": "c", "case_version": "v2", "attempt": "3"},
        {"case_id": "c", "attempt": True},
        {"case_id": "c", "attempt": "x"},
        {},
    ]
    for raw in odd:
        assert attempt.key_of(raw) == attempt.read(raw).key, raw
    first = {"case_id": "c", "case_version": "v1", "attempt": True, "n": 1}
    # attempt: true is not an attempt number (0), as the typed record reads it
    assert records.dedup([first, {**first, "attempt": 0, "n": 2}]) == [first]
    assert not hasattr(records, "attempt_key")
