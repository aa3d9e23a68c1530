"""An expression the runner cannot evaluate is a recorded error, never "does not hold"
(issue 32): the bundled ``shop_order_cancel`` fixture with its success ``when``
prefixed by 25 terms, and ``when``s and conditions that fail at run time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalcase.run.spec import Permission, ToolError
from tests.helpers import bundled_repo, commit_all, invoke
from tests.run.support import fault, job, run_attempt, tool, view

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "(" + " + ".join(["size(args)"] * 25) + ") * 0 == 0 && "
STATE = {"orders": {"ORDER_1": {"status": "processing"}}}


def _cancel_tool(prefix: str = PREFIX) -> Any:
    data = yaml.safe_load((ROOT / "fixtures/tool/shop_order_cancel.yaml").read_text())["data"]
    responses = [dict(r) for r in data["responses"]]
    assert isinstance(responses[1]["when"], str)  # the success response
    responses[1]["when"] = prefix + responses[1]["when"]
    return tool(
        data["name"],
        side_effect=True,
        schema=data["parameters"],
        responses=tuple(responses),
        default=data["default"],
    )


def _attempt(calls: list[tuple[str, dict[str, Any]]], tools: tuple[Any, ...], **kw: Any) -> Any:
    context = {"script": [[list(c) for c in calls]]}
    return run_attempt(job(view("cancel it", tools=tools, context=context), tools, **kw))


def test_the_25_term_when_is_evaluated_over_every_name_it_reads() -> None:
    cancel = _cancel_tool()
    record = _attempt(
        [("shop_order_cancel", {"order_id": "ORDER_1", "user_confirmed": True})],
        (cancel,),
        state=STATE,
    )
    assert record["status"] == "completed", record["error"]
    [call] = record["calls"]
    assert call["error"] is None
    assert call["result"] == {"order_id": "ORDER_1", "status": "cancelled"}
    assert record["state_diff"][0]["after"] == "cancelled"


def test_a_when_that_fails_at_run_time_is_a_recorded_error_naming_it() -> None:
    # ``orders[args.order_id]`` of an order the state lacks: an evaluation error (CEL's
    # ``||`` keeps it, the other side being false), which used to be "does not hold".
    broken = _cancel_tool(prefix='orders[args.order_id].status == "on_hold" || ')
    record = _attempt(
        [("shop_order_cancel", {"order_id": "ORDER_9", "user_confirmed": True})],
        (broken,),
        state=STATE,
    )
    assert record["status"] == "error"
    assert record["error"]["kind"] == "case_expression"
    assert 'orders[args.order_id].status == "on_hold"' in record["error"]["message"]
    assert record["state_diff"] == []
    assert not [c for c in record["calls"] if (c.get("error") or {}).get("code")]


def test_a_permission_condition_that_fails_is_a_recorded_error_not_a_denial() -> None:
    lookup = tool("order_lookup", responses=({"result": {"ok": True}},))
    policy = Permission(
        "owner_only", ("order_lookup",), "session.user == 'A'", ToolError("denied", "no")
    )
    record = _attempt(
        [("order_lookup", {"order_id": "ORDER_1"})], (lookup,), state={}, permissions=(policy,)
    )
    assert record["status"] == "error"
    assert record["error"]["kind"] == "case_expression"
    assert "owner_only" in record["error"]["message"]
    assert "session.user == 'A'" in record["error"]["message"]


def test_a_fault_condition_that_fails_is_a_recorded_error() -> None:
    lookup = tool("order_lookup", responses=({"result": {"ok": True}},))
    record = _attempt(
        [("order_lookup", {"order_id": "ORDER_1"})],
        (lookup,),
        faults=(fault("order_lookup", "timeout", when="args.missing.deeper == 1"),),
    )
    assert record["status"] == "error"
    assert record["error"]["kind"] == "case_expression"
    assert "args.missing.deeper == 1" in record["error"]["message"]


def test_a_case_expression_error_grades_as_error_never_fail() -> None:
    from evalcase.grade.engine import combine

    attempt = {"status": "error", "error": {"kind": "case_expression", "message": "x"}}
    verdict, _score, _cls = combine(attempt, [])  # type: ignore[arg-type]
    assert verdict == "error"


@pytest.mark.slow
def test_the_bundled_cancellation_case_with_the_25_term_when_lints_clean_and_cancels(
    tmp_path: Path,
) -> None:
    """The issue's check end to end: the bundled repository with the prefixed ``when``
    lints clean (nothing is left out of its names) and its cancellation case cancels."""
    repo = bundled_repo(tmp_path / "repo", ("/outputs/", "/reports/", "/.evalcase/"))
    fixture = repo / "fixtures/tool/shop_order_cancel.yaml"
    old = "    - when: 'args.order_id in orders && orders[args.order_id].status == \"processing\"'"
    text = fixture.read_text("utf-8")
    assert old in text
    fixture.write_text(text.replace(old, f"    - when: '{PREFIX}{old.split(chr(39))[1]}'"), "utf-8")
    commit_all(repo, "a 25-term when")
    lint = invoke("lint", cwd=repo)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    proc = invoke(
        "run", "english_support_set", "--select", "agent_state_order_cancel_confirmed_001",
        "--progress", "none", cwd=repo,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    run_dir = repo / proc.stdout.splitlines()[0].split(" -> ")[-1]
    [record] = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text("utf-8").splitlines()]
    assert record["error"] is None
    assert record["calls"][-1]["result"] == {"order_id": "ORDER_4101", "status": "cancelled"}
