"""Gold mutants on small real repositories (issue 45.3): the gold without one expected
call, and the gold plus one foreign write, must fail the case's graders."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalcase.audit.runner import AuditOptions, audit
from evalcase.config import load_config
from tests.helpers import BASE_REPO, commit_all, init_repo, invoke

LOOKUP = """\
fixture_id: account_lookup
fixture_version: v1
kind: tool
description: Looks an account up.
source: written for this test
desensitized: true
data:
  name: account_lookup
  side_effect: false
  parameters:
    type: object
    properties:
      account_id: {type: string}
    required: [account_id]
    additionalProperties: false
  responses:
    - when: 'args.account_id in accounts'
      result_from: 'accounts[args.account_id]'
  default: {error: {code: not_found, message: "No such account"}}
"""

FREEZE = """\
fixture_id: account_freeze
fixture_version: v1
kind: tool
description: Freezes an account.
source: written for this test
desensitized: true
data:
  name: account_freeze
  side_effect: true
  parameters:
    type: object
    properties:
      account_id: {type: string}
    required: [account_id]
    additionalProperties: false
  responses:
    - when: 'args.account_id in accounts'
      result_from: '{"frozen": true}'
      state_change:
        - {set: "accounts.{args.account_id}.frozen", value: true}
  default: {error: {code: not_found, message: "No such account"}}
"""

STATE = """\
fixture_id: accounts_ab
fixture_version: v1
kind: state
description: two accounts of two customers
source: synthetic
desensitized: true
data:
  accounts:
    ACC_1: {owner: user_a, frozen: false}
    ACC_2: {owner: user_b, frozen: false}
"""

CASE = """\
case_id: tool_account_freeze_001
case_version: v1
dataset_id: sample_set
dataset_version: v1
title: freeze one account
scenario: 账户
user_task: 冻结账户
ability_tags: [工具编排]
risk_level: P2
difficulty: Easy
source: 专家构造
case_types: [tool]
input: "Please freeze my account ACC_1."
state:
  fixtures: [accounts_ab]
available_tools: [account_lookup, account_freeze]
tool_schema: {account_lookup: v1, account_freeze: v1}
expected_calls:
  order: in_order
  calls:
    - {tool: account_lookup, args: {account_id: ACC_1}}
    - {tool: account_freeze, args: {account_id: ACC_1}}
final_state_check:
  type: state_match
  expected: {accounts.ACC_1.frozen: true}
side_effect_policy:
  tool: account_freeze
  precondition: [{args.account_id: ACC_1}]
  confirmation_required: false
  idempotency_key: [account_id]
  allowed_state_transition: {from: false, to: true}
  forbidden_state_transition: [freeze_other_account]
  audit_requirement: [operator, timestamp, tool_args]
expected_behavior:
  - 冻结账户。
rubric: refund_policy_faithfulness_v1
evaluator_config:
  graders: [{type: state_match}]
metadata:
  dataset_role: iteration
  tags: [account]
  owner: ai_eval_team
  review_status: draft
  usage_rights_status: approved_for_evaluation
"""
CASE_ID = "tool_account_freeze_001"
CASE_PATH = f"datasets/sample_set/cases/{CASE_ID}.yaml"


def make(tmp_path: Path, case: str = CASE) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    (repo / "fixtures/tool/account_lookup.yaml").write_text(LOOKUP, "utf-8")
    (repo / "fixtures/tool/account_freeze.yaml").write_text(FREEZE, "utf-8")
    (repo / "fixtures/state/accounts_ab.yaml").write_text(STATE, "utf-8")
    (repo / CASE_PATH).write_text(case, "utf-8")
    (repo / ".gitignore").write_text("/outputs/\n/reports/\n/.evalcase/\n", "utf-8")
    init_repo(repo)
    commit_all(repo, "an account case")
    return repo


def facts(repo: Path) -> dict[str, object]:
    options = AuditOptions(select=(CASE_ID,), concurrency=2)
    return dict(audit(load_config(repo), "sample_set", options).cases[CASE_ID])


def kinds(found: dict[str, object]) -> list[tuple[str, str]]:
    return [(f["kind"], f["reason"].split(" passes")[0]) for f in found["findings"]]  # type: ignore[attr-defined, index]


def mutants(found: dict[str, object]) -> dict[str, str]:
    return {m["mutant"]: m["outcome"] for m in found["mutants"]}  # type: ignore[attr-defined, index]


@pytest.mark.slow
def test_a_dropped_call_that_still_passes_and_a_foreign_write_are_findings(
    tmp_path: Path,
) -> None:
    """Only the end state is checked: the lookup is not needed, and freezing the other
    customer's account goes unseen (collateral damage, tau2-bench #459's hole)."""
    found = facts(make(tmp_path))
    assert found["outcomes"]["gold"] == "passes"  # type: ignore[index]
    assert mutants(found) == {
        "drop1": "passes",
        "drop2": "fails",
        "foreign-account_freeze": "passes",
    }
    assert kinds(found) == [
        ("drop_passes", "the gold without call 1 (account_lookup)"),
        ("collateral_damage", "the gold plus account_freeze on accounts/ACC_2"),
    ]
    assert found["status"] == "findings"


@pytest.mark.slow
def test_a_declared_redundant_call_and_unchanged_entities_leave_no_finding(
    tmp_path: Path,
) -> None:
    case = CASE.replace(
        "  expected: {accounts.ACC_1.frozen: true}\n",
        "  expected: {accounts.ACC_1.frozen: true}\n  unchanged: [accounts.ACC_2]\n",
    ).replace(
        "metadata:\n",
        "audit:\n  redundant_calls: [account_lookup]\n"
        "  reason: the freeze itself says whether the account exists\nmetadata:\n",
    )
    repo = make(tmp_path, case)
    lint = invoke("lint", "--no-cache", cwd=repo).stdout
    assert " EC1" not in lint, lint  # the declaration is part of the contract
    found = facts(repo)
    assert mutants(found) == {"drop2": "fails", "foreign-account_freeze": "fails"}
    assert found["findings"] == []
    assert found["status"] == "passed"
    assert found["redundant_calls"] == ["account_lookup"]


@pytest.mark.slow
def test_a_redundant_call_declaration_is_linted(tmp_path: Path) -> None:
    """It names tools (a string list, like may_pass's agents); a tool no expected call
    makes is a warning of the audit: the declaration can go."""
    bad = CASE.replace(
        "metadata:\n", "audit:\n  redundant_calls: account_lookup\n  reason: x\nmetadata:\n"
    )
    repo = make(tmp_path, bad)
    assert "EC103" in invoke("lint", "--no-cache", cwd=repo).stdout  # not a list
    unused = CASE.replace(
        "metadata:\n", "audit:\n  redundant_calls: [logistics_track]\n  reason: x\nmetadata:\n"
    )
    (repo / CASE_PATH).write_text(unused, "utf-8")
    commit_all(repo, "a tool the gold never calls")
    found = facts(repo)
    assert any("redundant_calls declares logistics_track" in w for w in found["warnings"])  # type: ignore[attr-defined]


@pytest.mark.slow
def test_tag_refuses_a_release_with_a_mutant_finding(tmp_path: Path) -> None:
    repo = make(tmp_path)
    done = invoke("audit", "sample_set", "--select", CASE_ID, "--progress", "none", cwd=repo)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "mutants: collateral_damage (state_match)" in done.stdout
    refused = invoke("tag", "sample_set", cwd=repo)
    assert refused.returncode == 2
    assert f"{CASE_ID}: mutants: collateral_damage (state_match)" in refused.stderr
    assert f"{CASE_ID}: mutants: drop_passes (state_match)" in refused.stderr


@pytest.mark.slow
def test_a_foreign_write_never_made_is_inconclusive_not_a_finding(tmp_path: Path) -> None:
    """The gold's freeze ends the conversation (like tau2's transfer), so the foreign
    write after it is never made: that proves nothing, whatever the gold's own call did."""
    repo = make(tmp_path)
    freeze = repo / "fixtures/tool/account_freeze.yaml"
    freeze.write_text(
        FREEZE.replace(
            "      result_from: '{\"frozen\": true}'\n",
            "      result_from: '{\"frozen\": true}'\n      ends_conversation: true\n",
        ),
        "utf-8",
    )
    commit_all(repo, "the freeze ends the conversation")
    found = facts(repo)
    assert mutants(found)["foreign-account_freeze"] == "inconclusive"
    assert [k for k, _ in kinds(found)] == ["drop_passes"]
    assert any("changed nothing" in w for w in found["warnings"])  # type: ignore[attr-defined]


CLOSE = """\
fixture_id: account_close
fixture_version: v1
kind: tool
description: Closes an account.
source: written for this test
desensitized: true
data:
  name: account_close
  side_effect: true
  parameters:
    type: object
    properties:
      account: {type: string, pattern: '^ACC_[0-9]+$'}
      reason: {type: string, enum: [requested, fraud]}
      note: {type: string}
    required: [account, reason]
    additionalProperties: false
  responses:
    - when: 'args.account in accounts'
      result_from: '{"closed": true}'
      state_change:
        - {set: "accounts.{args.account}.closed", value: true}
  default: {error: {code: not_found, message: "No such account"}}
"""


def with_close(case: str = CASE, close: str = CLOSE) -> tuple[str, str]:
    """The case offers account_close too, a write its gold never calls."""
    case = case.replace(
        "available_tools: [account_lookup, account_freeze]",
        "available_tools: [account_lookup, account_freeze, account_close]",
    ).replace(
        "tool_schema: {account_lookup: v1, account_freeze: v1}",
        "tool_schema: {account_lookup: v1, account_freeze: v1, account_close: v1}",
    )
    return case, close


def make_with_close(tmp_path: Path, case: str = CASE, close: str = CLOSE) -> Path:
    case, close = with_close(case, close)
    repo = make(tmp_path, case)
    (repo / "fixtures/tool/account_close.yaml").write_text(close, "utf-8")
    commit_all(repo, "a write tool the gold never calls")
    return repo


@pytest.mark.slow
def test_a_write_tool_the_gold_never_calls_is_tried_on_another_entity(tmp_path: Path) -> None:
    """tau2-bench #459: closing an uninvolved customer's account, when the gold closes
    nothing, goes unseen by a check of ACC_1 alone. The account is ID-like by its schema
    pattern (every key of accounts matches it), the reason comes from its enum, the
    optional note is left out."""
    found = facts(make_with_close(tmp_path))
    assert mutants(found)["foreign-account_close"] == "passes"
    [close] = [m for m in found["mutants"] if m["mutant"] == "foreign-account_close"]  # type: ignore[attr-defined]
    assert close["entity"] == "accounts/ACC_2"
    assert close["args"] == {"account": "ACC_2", "reason": "requested"}
    assert ("collateral_damage", "the gold plus account_close on accounts/ACC_2") in kinds(found)


@pytest.mark.slow
def test_a_whole_state_check_sees_the_write_the_gold_never_makes(tmp_path: Path) -> None:
    case = CASE.replace(
        "  expected: {accounts.ACC_1.frozen: true}\n", "  from_expected_calls: true\n"
    )
    found = facts(make_with_close(tmp_path, case))
    assert mutants(found)["foreign-account_close"] == "fails"
    assert mutants(found)["foreign-account_freeze"] == "fails"
    assert "collateral_damage" not in [k for k, _ in kinds(found)]


@pytest.mark.slow
def test_a_write_whose_arguments_cannot_be_drawn_is_a_warning_not_a_finding(
    tmp_path: Path,
) -> None:
    """A required list of notes with nothing to draw it from (no enum, default or examples,
    no gold call passes notes, the entity has no such field, neither free text nor an
    amount): the mutant is skipped, and says why."""
    close = CLOSE.replace(
        "      note: {type: string}\n",
        "      notes: {type: array, items: {type: string}}\n",
    ).replace("required: [account, reason]", "required: [account, reason, notes]")
    found = facts(make_with_close(tmp_path, close=close))
    assert "foreign-account_close" not in mutants(found)
    assert "collateral_damage (account_close)" not in str(found["findings"])
    assert all("account_close" not in f["reason"] for f in found["findings"])  # type: ignore[attr-defined]
    assert any(
        "no foreign write with account_close, which the gold never calls" in w
        and "required parameter notes" in w
        for w in found["warnings"]  # type: ignore[attr-defined]
    ), found["warnings"]


@pytest.mark.slow
def test_a_required_free_text_gets_a_placeholder(tmp_path: Path) -> None:
    """tau2-bench #459's suspend_line takes a free-text reason: a required note (a string
    without enum, pattern or format, nothing to draw it from) is the text ``evalcase
    audit``, so the write is tried rather than skipped."""
    close = CLOSE.replace("required: [account, reason]", "required: [account, reason, note]")
    found = facts(make_with_close(tmp_path, close=close))
    [drawn] = [m for m in found["mutants"] if m["mutant"] == "foreign-account_close"]  # type: ignore[attr-defined]
    assert drawn["args"] == {"account": "ACC_2", "reason": "requested", "note": "evalcase audit"}
    assert drawn["outcome"] == "passes"
    assert ("collateral_damage", "the gold plus account_close on accounts/ACC_2") in kinds(found)


CANCEL = """\
fixture_id: order_cancel
fixture_version: v1
kind: tool
description: Cancels an order and refunds it to the order's own payment method.
source: written for this test
desensitized: true
data:
  name: order_cancel
  side_effect: true
  parameters:
    type: object
    properties:
      order_id: {type: string}
      payment_method_id: {type: string}
    required: [order_id, payment_method_id]
    additionalProperties: false
  responses:
    - when: '!(args.order_id in orders)'
      error: {code: not_found, message: "No such order"}
    - when: 'orders[args.order_id].payment_method_id != args.payment_method_id'
      error: {code: invalid_argument, message: "Not this order's payment method"}
    - result_from: '{"cancelled": true}'
      state_change:
        - {set: "orders.{args.order_id}.status", value: cancelled}
"""

ORDERS = """\
fixture_id: orders_abc
fixture_version: v1
kind: state
description: three orders, three payment methods
source: synthetic
desensitized: true
data:
  orders:
    O1: {order_id: O1, payment_method_id: PM_A, status: pending}
    O2: {order_id: O2, payment_method_id: PM_C, status: pending}
  payment_methods:
    PM_A: {kind: card}
    PM_B: {kind: card}
    PM_C: {kind: gift_card}
"""


@pytest.mark.slow
def test_a_gold_write_moved_to_another_entity_takes_that_entitys_related_ids(
    tmp_path: Path,
) -> None:
    """The gold cancels O1 with its payment method PM_A. The foreign write cancels O2 with
    O2's own payment method (PM_C, a field of O2), not the first unconcerned one (PM_B),
    which the tool refuses: so the write goes through and its collateral is tested."""
    case = (
        CASE.replace("account_freeze", "order_cancel")
        .replace("tool_order_cancel_001", CASE_ID)
        .replace("accounts_ab", "orders_abc")
        .replace(
            "    - {tool: account_lookup, args: {account_id: ACC_1}}\n"
            "    - {tool: order_cancel, args: {account_id: ACC_1}}\n",
            "    - {tool: order_cancel, args: {order_id: O1, payment_method_id: PM_A}}\n",
        )
        .replace("accounts.ACC_1.frozen: true", "orders.O1.status: cancelled")
        .replace("[{args.account_id: ACC_1}]", "[{args.order_id: O1}]")
        .replace("idempotency_key: [account_id]", "idempotency_key: [order_id]")
        .replace("{from: false, to: true}", "{from: pending, to: cancelled}")
    )
    repo = make(tmp_path, case)
    (repo / "fixtures/tool/order_cancel.yaml").write_text(CANCEL, "utf-8")
    (repo / "fixtures/state/orders_abc.yaml").write_text(ORDERS, "utf-8")
    commit_all(repo, "an order case")
    lint = invoke("lint", "--no-cache", cwd=repo).stdout
    assert " EC" not in lint, lint
    found = facts(repo)
    assert found["outcomes"]["gold"] == "passes", found  # type: ignore[index]
    [cancel] = [m for m in found["mutants"] if m["kind"] == "foreign"]  # type: ignore[attr-defined]
    assert cancel["args"] == {"order_id": "O2", "payment_method_id": "PM_C"}
    assert cancel["outcome"] == "passes"
    assert ("collateral_damage", "the gold plus order_cancel on orders/O2") in kinds(found)


@pytest.mark.slow
def test_a_drawn_write_that_leaves_every_value_as_it_was_is_inconclusive(
    tmp_path: Path,
) -> None:
    """The owner is drawn from the entity's own field, so the write sets it to what it
    was: a write was recorded, nothing changed, and nothing is proven."""
    close = (
        CLOSE.replace(
            "      note: {type: string}\n",
            "      note: {type: string}\n      owner: {type: string}\n",
        )
        .replace("required: [account, reason]", "required: [account, owner]")
        .replace(
            '        - {set: "accounts.{args.account}.closed", value: true}\n',
            '        - {set: "accounts.{args.account}.owner", value_from: "args.owner"}\n',
        )
    )
    found = facts(make_with_close(tmp_path, close=close))
    [drawn] = [m for m in found["mutants"] if m["mutant"] == "foreign-account_close"]  # type: ignore[attr-defined]
    assert drawn["args"] == {"account": "ACC_2", "owner": "user_b"}
    assert drawn["outcome"] == "inconclusive"
    assert all("account_close" not in f["reason"] for f in found["findings"])  # type: ignore[attr-defined]
