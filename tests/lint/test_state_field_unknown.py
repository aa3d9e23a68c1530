"""EC328 on real repositories: a tool's expression reads a field no state it meets has
(issue 42.11: ``accounts[args.account_id].ownr`` passed lint and ended the attempt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalcase.commands.lint import lint
from tests.helpers import BASE_REPO, commit_all, init_repo

CASES = BASE_REPO / "datasets/sample_set/cases"

TOOL = """\
fixture_id: account_lookup
fixture_version: v1
kind: tool
description: Looks an account up for its owner.
source: written for this test
desensitized: true
data:
  name: account_lookup
  side_effect: false
  parameters:
    type: object
    properties:
      account_id: {{type: string}}
      customer_id: {{type: string}}
    required: [account_id, customer_id]
    additionalProperties: false
  responses:
    - when: 'args.account_id in accounts && {when}'
      result_from: '{{"account_id": args.account_id}}'
  default: {{error: {{code: not_found, message: "No such account"}}}}
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


def state(fixture_id: str, accounts: str) -> str:
    return (
        f"fixture_id: {fixture_id}\nfixture_version: v1\nkind: state\n"
        "description: accounts\nsource: synthetic\ndesensitized: true\n"
        f"data:\n  accounts:\n{accounts}"
    )


def case(case_id: str, fixture: str, tools: str) -> str:
    text = (CASES / "refund_tool_submit_001.yaml").read_text("utf-8")
    return (
        text.replace("refund_tool_submit_001", case_id)
        .replace("fixtures: [order_123]", f"fixtures: [order_123, {fixture}]")
        .replace("available_tools: [order_lookup, refund_submit]", f"available_tools: [{tools}]")
    )


def make(tmp_path: Path, when: str, *, offered: bool = True, freeze: bool = False) -> Path:
    repo = tmp_path / "repo"
    import shutil

    shutil.copytree(BASE_REPO, repo)
    fixtures = repo / "fixtures"
    (fixtures / "tool/account_lookup.yaml").write_text(TOOL.format(when=when), "utf-8")
    (fixtures / "tool/account_freeze.yaml").write_text(FREEZE, "utf-8")
    # two cases, two states: only ACC_2's account has a nickname
    (fixtures / "state/accounts_a.yaml").write_text(
        state("accounts_a", "    ACC_1: {owner: user_a, balance: 10}\n"), "utf-8"
    )
    (fixtures / "state/accounts_b.yaml").write_text(
        state("accounts_b", "    ACC_2: {owner: user_b, balance: 5, nickname: savings}\n"),
        "utf-8",
    )
    tools = "order_lookup, refund_submit"
    if offered:
        tools += ", account_lookup" + (", account_freeze" if freeze else "")
    for i, fixture in ((2, "accounts_a"), (3, "accounts_b")):
        case_id = f"refund_tool_submit_00{i}"
        (repo / f"datasets/sample_set/cases/{case_id}.yaml").write_text(
            case(case_id, fixture, tools), "utf-8"
        )
    init_repo(repo)
    commit_all(repo, "accounts")
    return repo


def ec328(repo: Path) -> list[tuple[str, int, int, str]]:
    result = CliRunner().invoke(
        lint, ["--no-cache", "--format", "json", "--root", str(repo)], catch_exceptions=False
    )
    assert result.exit_code in (0, 1), result.output
    found = json.loads(result.stdout)
    return [
        (f["path"], f["line"], f["column"], f["message"]) for f in found if f["code"] == "EC328"
    ]


def test_a_misspelt_field_in_a_tools_when_is_an_error_at_its_place(tmp_path: Path) -> None:
    """The probe: ``accounts[args.account_id].ownr`` in a tool's when."""
    repo = make(tmp_path, "accounts[args.account_id].ownr == args.customer_id")
    [(path, line, column, message)] = ec328(repo)
    assert (path, line) == ("fixtures/tool/account_lookup.yaml", 18)
    text = (repo / path).read_text("utf-8").splitlines()[line - 1]
    assert text[column - 1 :].startswith("ownr ==")
    assert "'ownr'" in message and "did you mean 'owner'?" in message


def test_a_field_some_state_has_is_optional_not_a_finding(tmp_path: Path) -> None:
    """nickname is in accounts_b only: a state that could reach the expression has it."""
    assert ec328(make(tmp_path, 'accounts[args.account_id].nickname == "savings"')) == []


@pytest.mark.parametrize(
    "when",
    [
        'has(accounts[args.account_id].nicknam) && accounts[args.account_id].nicknam == "x"',
        '"nicknam" in accounts[args.account_id] && accounts[args.account_id].nicknam == "x"',
        'state.accounts[args.account_id].nicknam == "x"',
        'accounts.all(k, accounts[k].owner != "") && accounts.exists(a, a == args.account_id)',
    ],
    ids=["has", "in", "through-state", "comprehension"],
)
def test_a_guarded_or_bound_read_is_not_a_finding(tmp_path: Path, when: str) -> None:
    assert ec328(make(tmp_path, when)) == []


def test_a_field_a_tool_of_the_case_writes_is_not_a_finding(tmp_path: Path) -> None:
    when = "accounts[args.account_id].frozen == false"
    assert len(ec328(make(tmp_path, when))) == 1  # no tool of these cases writes it
    assert ec328(make(tmp_path / "w", when, freeze=True)) == []


def test_a_tool_no_case_offers_meets_no_known_state(tmp_path: Path) -> None:
    assert ec328(make(tmp_path, "accounts[args.account_id].ownr == 1", offered=False)) == []


def test_the_field_is_checked_below_an_index_in_every_state(tmp_path: Path) -> None:
    """A nested chain: the first part no state has is the one reported."""
    repo = make(tmp_path, "accounts[args.account_id].owner.name.first == args.customer_id")
    assert ec328(repo) == []  # owner is a string (a leaf): below it is not known
    repo = make(tmp_path / "b", "accounts[args.account_id].balanse > 0")
    [(_path, _line, _column, message)] = ec328(repo)
    assert "'balanse'" in message and "did you mean 'balance'?" in message


def test_the_commit_hook_reports_a_staged_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``lint --staged`` (the hook) with only the tool staged still meets its cases' states."""
    from tests.helpers import git

    repo = make(tmp_path, "accounts[args.account_id].owner == args.customer_id")
    tool = repo / "fixtures/tool/account_lookup.yaml"
    tool.write_text(TOOL.format(when="accounts[args.account_id].ownr == 1"), "utf-8")
    git(repo, "add", "-A")
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(
        lint, ["--staged", "--format", "json", "fixtures/tool/account_lookup.yaml"]
    )
    found = [(f["code"], f["path"], f["line"]) for f in json.loads(result.stdout)]
    assert ("EC328", "fixtures/tool/account_lookup.yaml", 18) in found


def _freeze_by_handler(tmp_path: Path, side_effect: bool) -> Path:
    """The freeze tool done by a handler (its own set step gone), declaring ``side_effect``."""
    repo = make(tmp_path, "accounts[args.account_id].frozen == false", freeze=True)
    freeze = repo / "fixtures/tool/account_freeze.yaml"
    declared = f"  side_effect: {str(side_effect).lower()}\n  handler: freeze_account\n"
    text = freeze.read_text("utf-8")
    freeze.write_text(
        text.replace(
            '{set: "accounts.{args.account_id}.frozen", value: true}', '{delete: "x"}'
        ).replace("  side_effect: true\n", declared),
        "utf-8",
    )
    commit_all(repo, "a handler")
    return repo


def test_a_tool_with_a_handler_may_write_anything(tmp_path: Path) -> None:
    """A handler (registered Python) changes the state as it likes: nothing is known."""
    repo = _freeze_by_handler(tmp_path, side_effect=True)
    assert [f for f in ec328(repo) if "frozen" in f[3]] == []


def test_the_tools_own_policy_preconditions_are_read_too(tmp_path: Path) -> None:
    repo = make(tmp_path, "true")
    tool = repo / "fixtures/tool/account_lookup.yaml"
    text = tool.read_text("utf-8").replace(
        "  side_effect: false\n",
        "  side_effect: false\n  side_effect_policy:\n    tool: account_lookup\n"
        "    precondition: ['accounts[args.account_id].balanse > 0']\n",
    )
    tool.write_text(text, "utf-8")
    commit_all(repo, "a policy")
    [(_path, line, _column, message)] = ec328(repo)
    assert line == 12 and "'balanse'" in message


def test_a_handler_declared_without_side_effects_writes_nothing(tmp_path: Path) -> None:
    """tau2's calculate: a handler with side_effect: false (EC317 holds it to that)."""
    # (its delete step is EC317's: a declared side_effect: false is what lint holds to)
    repo = _freeze_by_handler(tmp_path, side_effect=False)
    assert len([f for f in ec328(repo) if "frozen" in f[3]]) == 1
