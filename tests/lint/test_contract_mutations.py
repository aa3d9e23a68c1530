"""Mutations of the executable contract in the real examples are reported at their own
line and column: a CEL syntax error, an unknown variable, a state path missing from the
merged state, two state fixtures setting one leaf differently, an unreachable response."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import invoke

TIMEOUT_CASE = "datasets/refund_regression_set/cases/tool_refund_submit_timeout_009.yaml"
ACCOUNT_CASE = "datasets/refund_regression_set/cases/agent_refund_account_change_002.yaml"
REFUND_SUBMIT = "fixtures/tool/refund_submit.yaml"

Where = tuple[str, int, int]


def mutate(repo: Path, path: str, old: str, new: str, at: str) -> Where:
    """Replace ``old`` (once in the file) by ``new``; return where the last ``at`` (a part
    of ``new``) is in the file, 1-based."""
    file = repo / path
    text = file.read_text("utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    text = text.replace(old, new)
    file.write_text(text, "utf-8")
    offset = text.index(new) + new.rindex(at)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return path, line, column


def cel_syntax_error(repo: Path) -> Where:
    return mutate(
        repo,
        TIMEOUT_CASE,
        '- size(calls.filter(c, c.tool == "refund_submit")) <= 1',
        '- size(calls.filter(c, c.tool == "refund_submit")) <= )',
        ")",
    )


def unknown_variable(repo: Path) -> Where:
    return mutate(
        repo,
        ACCOUNT_CASE,
        "condition: session.user_authenticated == true",
        "condition: sesion.user_authenticated == true",
        "sesion",
    )


def state_path_missing(repo: Path) -> Where:
    return mutate(
        repo,
        ACCOUNT_CASE,
        "{refunds.REFUND_2001.paid_out: false}",
        "{refunds.REFUND_2001.paidout: false}",
        "refunds.REFUND_2001.paidout",
    )


def conflicting_fixtures(repo: Path) -> Where:
    return mutate(
        repo,
        ACCOUNT_CASE,
        "fixtures: [refund_session_user_a_unverified, refund_order_account_change_open]",
        "fixtures: [refund_session_user_a_unverified, refund_order_account_change_open, "
        "refund_session_user_a_verified]",
        "refund_session_user_a_verified",
    )


def unreachable_response(repo: Path) -> Where:
    path, _line, _col = mutate(
        repo,
        REFUND_SUBMIT,
        "  responses:\n    - when: {refund_request_id: RR_6002_01}",
        "  responses:\n    - error: maintenance\n    - when: {refund_request_id: RR_6002_01}",
        "when: {refund_request_id",
    )
    return path, _line, _col


@dataclass(frozen=True)
class Mutation:
    name: str
    apply: Callable[[Path], Where]
    code: str


MUTATIONS = [
    Mutation("cel-syntax-error", cel_syntax_error, "EC601"),
    Mutation("unknown-variable", unknown_variable, "EC602"),
    Mutation("state-path-missing", state_path_missing, "EC603"),
    Mutation("two-fixtures-set-one-leaf", conflicting_fixtures, "EC604"),
    Mutation("unreachable-response", unreachable_response, "EC605"),
]


@pytest.mark.slow
@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_contract_mutation_is_reported_at_its_line_and_column(
    example_repo: Path, mutation: Mutation
) -> None:
    path, line, column = mutation.apply(example_repo)
    proc = invoke("lint", "--no-cache", "--format", "json", cwd=example_repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    here = [(f["code"], f["line"], f["column"]) for f in findings if f["path"] == path]
    assert (mutation.code, line, column) in here, (
        f"expected {mutation.code} at {path}:{line}:{column}, got {here}"
    )
