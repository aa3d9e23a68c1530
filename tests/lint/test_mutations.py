"""Each mutation of a real example case makes `evalcase lint` fail, with a finding of the
expected rule on the mutated file at the mutated line (issue 3, "Done when")."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import invoke

RAG_GOLDEN = "datasets/refund_regression_set/cases/refund_rag_member_points_001.yaml"
TOOL_CASE = "datasets/refund_regression_set/cases/tool_refund_submit_confirmed_010.yaml"
P0_CASE = "datasets/crm_safety_set/cases/crm_safety_bulk_delete_001.yaml"


def replace_line(repo: Path, path: str, old: str, new: str, at: str = "") -> int:
    """Replace ``old`` on the one line holding it (of those starting with ``at``); return
    that line's number."""
    file = repo / path
    lines = file.read_text("utf-8").splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if old in line and line.startswith(at)]
    assert len(hits) == 1, f"{old!r} is on lines {[h + 1 for h in hits]} of {path}"
    lines[hits[0]] = lines[hits[0]].replace(old, new)
    file.write_text("".join(lines), "utf-8")
    return hits[0] + 1


def last_line(repo: Path, path: str, old: str, new: str) -> int:
    """Replace ``old`` on the last line holding it; return that line's number."""
    file = repo / path
    lines = file.read_text("utf-8").splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if old in line)
    lines[last] = lines[last].replace(old, new)
    file.write_text("".join(lines), "utf-8")
    return last + 1


def line_of(repo: Path, path: str, text: str) -> int:
    lines = (repo / path).read_text("utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def uppercase_id(repo: Path) -> tuple[str, int]:
    return RAG_GOLDEN, replace_line(
        repo, RAG_GOLDEN, "refund_rag_member", "refund_rag_Member", "case_id:"
    )


def model_name_in_id(repo: Path) -> tuple[str, int]:
    line = replace_line(
        repo, RAG_GOLDEN, "case_id: refund_rag_", "case_id: refund_rag_gpt4o_", "case_id:"
    )
    return RAG_GOLDEN, line


def renamed_file(repo: Path) -> tuple[str, int]:
    renamed = RAG_GOLDEN.replace("_001.yaml", "_002.yaml")
    (repo / RAG_GOLDEN).rename(repo / renamed)
    return renamed, line_of(repo, renamed, "case_id:")


def copied_to_other_dataset(repo: Path) -> tuple[str, int]:
    copy = "datasets/crm_safety_set/cases/refund_rag_member_points_001.yaml"
    shutil.copyfile(repo / RAG_GOLDEN, repo / copy)
    return copy, line_of(repo, copy, "case_id:")


def unknown_fixture(repo: Path) -> tuple[str, int]:
    line = replace_line(repo, TOOL_CASE, "refund_order_seven_day_unopened]", "refund_order_7d]")
    return TOOL_CASE, line


def tool_not_available(repo: Path) -> tuple[str, int]:
    line = replace_line(
        repo,
        TOOL_CASE,
        "    - {tool: order_lookup, args: {order_id: ORDER_6001}}",
        "    - {tool: human_handoff, args: {order_id: ORDER_6001}}",
    )
    return TOOL_CASE, line


def argument_of_wrong_type(repo: Path) -> tuple[str, int]:
    line = replace_line(
        repo,
        TOOL_CASE,
        "{tool: order_lookup, args: {order_id: ORDER_6001}}",
        "{tool: order_lookup, args: {order_id: 6001}}",
    )
    return TOOL_CASE, line


def p0_without_negative_behavior(repo: Path) -> tuple[str, int]:
    file = repo / P0_CASE
    text = file.read_text("utf-8")
    start = text.index("negative_behavior:\n")
    end = text.index("rubric:", start)
    file.write_text(text[:start] + text[end:], "utf-8")
    return P0_CASE, line_of(repo, P0_CASE, "risk_level: P0")


def golden_review_rejected(repo: Path) -> tuple[str, int]:
    # The approval of the current version (review records keep the older ones).
    line = last_line(repo, RAG_GOLDEN, "review_result: approved", "review_result: rejected")
    return RAG_GOLDEN, line


@dataclass(frozen=True)
class Mutation:
    name: str
    apply: Callable[[Path], tuple[str, int]]
    code: str


MUTATIONS = [
    Mutation("id-with-uppercase", uppercase_id, "EC201"),
    Mutation("id-with-model-name", model_name_in_id, "EC203"),
    Mutation("file-renamed-away-from-id", renamed_file, "EC204"),
    Mutation("case-copied-into-another-dataset", copied_to_other_dataset, "EC206"),
    Mutation("fixture-reference-to-nothing", unknown_fixture, "EC301"),
    Mutation("expected-tool-not-available", tool_not_available, "EC303"),
    Mutation("expected-argument-of-wrong-type", argument_of_wrong_type, "EC304"),
    Mutation("p0-without-negative-behavior", p0_without_negative_behavior, "EC401"),
    Mutation("golden-case-review-rejected", golden_review_rejected, "EC403"),
]


def lint_json(repo: Path) -> tuple[int, list[dict[str, object]]]:
    proc = invoke("lint", "--no-cache", "--format", "json", cwd=repo)
    assert proc.stdout.strip(), proc.stderr
    findings: list[dict[str, object]] = json.loads(proc.stdout)
    return proc.returncode, findings


@pytest.mark.slow
def test_the_examples_are_clean(example_repo: Path) -> None:
    code, findings = lint_json(example_repo)
    assert (code, findings) == (0, [])


@pytest.mark.slow
@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_mutation_is_caught_where_it_was_made(example_repo: Path, mutation: Mutation) -> None:
    path, line = mutation.apply(example_repo)
    code, findings = lint_json(example_repo)
    assert code == 1, findings
    here = [(f["code"], f["line"]) for f in findings if f["path"] == path]
    assert (mutation.code, line) in here, f"expected {mutation.code} at {path}:{line}, got {here}"
