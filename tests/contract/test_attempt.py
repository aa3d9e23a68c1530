"""The attempt record: one typed definition, its schema, the upgrade of earlier versions,
and the check the suite runs on every record its runs write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcase.attempt_check import CHECK_VARIABLE, check_written, problems
from evalcase.contract import attempt
from evalcase.contract.attempt import AttemptRecord
from evalcase.run.runner import lost_record
from tests.conftest import record_check_results
from tests.run.support import job, run_attempt, tool, view

LOOKUP = tool(
    "order_lookup",
    responses=({"when": "true", "result": {"status": "signed"}},),
)


def _recorded() -> dict[str, object]:
    """A real record: one attempt through the py: adapter and the environment."""
    v = view("where is my order", tools=(LOOKUP,),
             context={"script": [[["order_lookup", {"order_id": "A"}]]]})  # fmt: skip
    return run_attempt(job(v, (LOOKUP,), state={"orders": {}}))


def test_what_the_runner_records_is_valid_and_reads_back_the_same() -> None:
    record = _recorded()
    assert record["record_version"] == attempt.RECORD_VERSION == 3
    assert problems(record) == []
    typed = AttemptRecord.from_json(record)
    assert typed.status == "completed" and typed.calls[0].tool == "order_lookup"
    assert typed.to_json() == record
    assert list(typed.to_json()) == list(record)  # the same fields in the same order


def test_an_error_record_is_valid_too() -> None:
    v = view("hi", tools=())
    record = lost_record(job(v, ()), "the worker died").to_json()
    assert problems(record) == []
    assert AttemptRecord.from_json(record).error == attempt.AttemptError(
        "worker_lost", "the worker died"
    )


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"status": "done"}, "status"),
        ({"attempt": 0}, "attempt"),
        ({"usage": {"prompt_tokens": -1, "completion_tokens": 0, "cost": None}}, "usage"),
        ({"answer": "extra field"}, "(record)"),
        ({"record_version": 2}, "record_version"),
    ],
)
def test_the_schema_refuses_what_the_runner_never_writes(
    change: dict[str, object], where: str
) -> None:
    record = {**_recorded(), **change}
    found = problems(record)
    assert found and found[0].startswith(where), found


def test_records_of_earlier_versions_are_read_through_the_upgrade() -> None:
    v1 = {
        "case_id": "c", "case_version": "v1", "attempt": 1, "seed": 0, "status": "completed",
        "error": None, "output": "ok", "messages": [], "trace": [],
        "calls": [{"tool": "t", "state_before": {"n": 0}, "changes": []}],
        "initial_state": {"n": 0}, "final_state": {"n": 1},
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "cost": None},
    }  # fmt: skip
    typed = attempt.read(v1)
    assert typed.record_version == 1  # still says what it was
    assert typed.retrieved == () and typed.state_diff == () and typed.initial_state_digest is None
    assert typed.legacy == {"initial_state": {"n": 0}, "final_state": {"n": 1}}
    assert typed.usage.tokens == 7
    v2 = {k: v for k, v in v1.items() if k != "final_state"} | {"record_version": 2}
    assert attempt.read(v2).legacy == {"initial_state": {"n": 0}}
    # A record of anyone's making reads without raising, each wrong value as nothing.
    odd = attempt.read({"attempt": "x", "usage": "lots", "calls": "none", "error": 3})
    assert (odd.attempt, odd.usage, odd.calls, odd.error) == (0, attempt.Usage(), (), None)


def test_the_check_logs_each_written_record_and_what_breaks_the_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CHECK_VARIABLE, str(tmp_path))
    good = _recorded()
    check_written(good)
    check_written({**good, "status": "done"})
    check_written({"case_id": "old", "initial_state": {}})  # version 1, as redaction keeps it
    checked, bad, earlier = record_check_results(tmp_path)
    assert (checked, len(bad), earlier) == (2, 1, 1)
    assert json.loads(bad[0])["problems"][0].startswith("status: 'done' is not one of")


def test_each_call_reads_back_as_a_typed_record_and_writes_the_same() -> None:
    record = _recorded()
    typed = AttemptRecord.from_json(record)
    (call,) = typed.calls
    assert isinstance(call, attempt.ToolCallRecord)
    assert (call.tool, call.arguments, call.valid, call.ok, call.actor) == (
        "order_lookup", {"order_id": "A"}, False, False, "agent",
    )  # fmt: skip
    assert call.error is not None and call.error["code"] == "invalid_arguments"
    assert not call.succeeded and call.changes == () and call.step == 2
    assert call.to_json() == record["calls"][0]  # type: ignore[index]
    assert "actor" not in record["calls"][0]  # type: ignore[index]  # agent: not written


def test_a_calls_actor_and_unknown_fields_survive_and_the_schema_knows_the_actor() -> None:
    raw = {"step": 3, "id": "c1", "tool": "toggle", "args": {}, "valid": True, "result": None,
           "error": None, "fault": None, "denied_by": None, "side_effect": False,
           "user_confirmed": False, "changes": [{"op": "set", "path": "a.b", "before": 1,
           "after": 2}], "ok": True, "actor": "user", "proposal": "p-7"}  # fmt: skip
    call = attempt.ToolCallRecord.from_json(raw)
    assert call is not None and call.actor == "user" and call.extra == {"proposal": "p-7"}
    assert call.changes == (attempt.StateChange("set", "a.b", None, 1, 2),)
    assert call.changes[0].parts == ("a", "b")
    assert call.to_json() == raw
    record = {**_recorded(), "calls": [raw]}
    assert problems(record) == []
    assert problems({**record, "calls": [{**raw, "actor": "robot"}]})[0].startswith("calls")


def test_version_1_calls_keep_their_state_before_in_one_place() -> None:
    from evalcase.contract.records import Observed

    v1 = {"case_id": "c", "calls": [{"tool": "t", "state_before": {"n": 5}, "changes": []}]}
    typed = attempt.read(v1)
    assert typed.calls[0].legacy_state_before == {"n": 5}
    observed = Observed.of(typed)
    assert observed.has_state_before(0) and observed.state_before(0) == {"n": 5}
    assert not observed.has_state_before(1) and observed.final_state() is None
