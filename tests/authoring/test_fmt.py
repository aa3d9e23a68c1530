"""`evalcase fmt`: canonical order, idempotent, comments kept, no value changed."""

from __future__ import annotations

import re
import shutil
from functools import cache
from pathlib import Path

import pytest

from evalcase.authoring.fmt import CASE_ORDER, format_files, format_text
from evalcase.loader import load
from tests.helpers import BASE_REPO, REPO_ROOT, invoke

BUNDLED = sorted(
    p
    for folder in (REPO_ROOT / "datasets", REPO_ROOT / "fixtures", BASE_REPO)
    for p in folder.rglob("*.yaml")
)
_COMMENT = re.compile(r"(?:^|\s)(#.*)$")
# The bundled files are formatted by two tests each (and a canonical file's second
# format is of the same text): on one worker, each text is formatted once.
pytestmark = pytest.mark.xdist_group("tests.authoring.test_fmt")


@cache
def formatted(text: str, path: str) -> tuple[str, str | None]:
    """format_text, which is deterministic, once per text (about 30 ms each)."""
    return format_text(text, path)


def comments(text: str) -> list[str]:
    """Full-line and trailing comments (bundled files have no '#' inside values)."""
    found = []
    for line in text.splitlines():
        match = _COMMENT.search(line)
        if match:
            found.append(match.group(1).strip())
    return sorted(found)


def rel(path: Path) -> str:
    root = BASE_REPO if BASE_REPO in path.parents else REPO_ROOT
    return path.relative_to(root).as_posix()


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: rel(p))
def test_every_bundled_file_keeps_values_and_comments_and_is_idempotent(path: Path) -> None:
    text = path.read_text("utf-8")
    once, error = formatted(text, rel(path))
    assert error is None, error
    twice, error = formatted(once, rel(path))
    assert error is None
    assert twice == once
    assert load("a", text.encode()).data == load("b", once.encode()).data
    assert comments(once) == comments(text)


@pytest.mark.parametrize(
    "path", [p for p in BUNDLED if BASE_REPO not in p.parents], ids=lambda p: rel(p)
)
def test_every_shipped_file_is_already_canonical(path: Path) -> None:
    # A new user's first `evalcase fmt --check` on the bundled repository finds nothing.
    text = path.read_text("utf-8")
    assert formatted(text, rel(path))[0] == text, f"run `evalcase fmt {rel(path)}`"


SCRAMBLED = """\
# evalcase example: keys out of order, comments and blank-line groups
metadata:
  review_status: draft  # not reviewed yet
  dataset_role: iteration
  owner: ai_eval_team
  tags: [refund]
  usage_rights_status: approved_for_evaluation

expected_behavior:
  - 识别为质量问题售后。
# the identity block
case_id: refund_eligibility_001
case_version: v1
dataset_id: sample_set
dataset_version: v1
x-team-note: kept after the known keys
title: "签收超过 7 天"
scenario: 退款申请
user_task: 判断退款资格
ability_tags: [意图理解, {kind: tool}]
risk_level: P2
difficulty: Medium
source: 线上日志改写
input: 'quoted: kept'
context:
    order_status: signed   # four-space indentation becomes two
    signed_days: 10
    missing: null
rubric: refund_policy_faithfulness_v1
evaluator_config:
  judge: {rubric: refund_policy_faithfulness_v1}
  rule_checks: [no_privacy_leak]
"""


def test_scrambled_case_is_put_in_canonical_order_keeping_comments() -> None:
    out, error = format_text(SCRAMBLED, "datasets/sample_set/cases/refund_eligibility_001.yaml")
    assert error is None
    top = [line.split(":")[0] for line in out.splitlines() if re.match(r"^[a-z_-]+:", line)]
    known = [k for k in top if k in CASE_ORDER]
    assert known == sorted(known, key=CASE_ORDER.index)
    assert top[-2:] == ["x-team-note", "metadata"]
    assert top[0] == "case_id"
    meta = out[out.index("metadata:") :]
    assert meta.index("dataset_role") < meta.index("tags") < meta.index("review_status")
    assert "rule_checks" in out and out.index("rule_checks") < out.index("judge:")
    assert comments(out) == comments(SCRAMBLED)
    assert "  order_status: signed" in out and "    order_status" not in out
    assert "input: 'quoted: kept'" in out and 'title: "签收超过 7 天"' in out
    assert "missing: null" in out and "[意图理解, {kind: tool}]" in out
    assert load("a", SCRAMBLED.encode()).data == load("b", out.encode()).data
    assert format_text(out, "datasets/sample_set/cases/refund_eligibility_001.yaml")[0] == out


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("case_id: a\ncase_id: b\n", "EC002"),
        ("case_id: !!python/object:os.system x\n", "EC003"),
        ("case_id: [unclosed\n", "EC001"),
    ],
)
def test_a_file_with_loader_errors_is_left_alone(text: str, why: str) -> None:
    out, error = format_text(text, "datasets/s/cases/a.yaml")
    assert out == text
    assert error is not None and why in error


def test_cli_check_reports_then_fmt_fixes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    case.write_text(SCRAMBLED, "utf-8")
    checked = invoke("fmt", "--check", cwd=repo)
    assert checked.returncode == 1, checked.stderr
    assert "would reformat datasets/sample_set/cases/refund_eligibility_001.yaml" in checked.stdout
    assert case.read_text("utf-8") == SCRAMBLED
    fixed = invoke("fmt", cwd=repo)
    assert fixed.returncode == 0, fixed.stderr
    assert case.read_text("utf-8").startswith("# evalcase example")
    again = invoke("fmt", "--check", cwd=repo)
    assert again.returncode == 0 and "0 files would be reformatted" in again.stderr


def test_broken_file_makes_fmt_fail_without_touching_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    bad = repo / "fixtures/state/broken.yaml"
    bad.write_text("a: 1\na: 2\n", "utf-8")
    results = {r.path: r for r in format_files(repo, [])}
    assert results["fixtures/state/broken.yaml"].error is not None
    assert bad.read_text("utf-8") == "a: 1\na: 2\n"
    proc = invoke("fmt", cwd=repo)
    assert proc.returncode == 1
    assert "fixtures/state/broken.yaml: left alone: EC002" in proc.stderr


def test_the_order_groups_follow_the_contracts_field_classification() -> None:
    from evalcase.authoring.fmt import EXECUTION, IDENTITY, JUDGING
    from evalcase.contract import fields

    top = {f for f in fields.CASE_FIELDS if "." not in f}
    execution = {
        f for f in top if fields.classify(f) in ("agent", "environment")
    } | fields.SPLIT_FIELDS
    assert set(EXECUTION) == execution
    # case_types and risk_level sit with the classification at the top, as in 12.3.
    assert fields.fields_of("judge") - {"case_types", "risk_level"} <= set(JUDGING)
    assert set(IDENTITY) >= fields.IDENTITY_FIELDS
    assert set(IDENTITY) | set(EXECUTION) | set(JUDGING) | {"metadata"} >= top
