"""What a release freezes beyond case content, on real repositories with real tags:
grouping (tags, roles, risk levels, suites, gates, coverage; not the agent that runs it),
fixture versions
whatever the base, and case IDs across datasets."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcase.actions import bump, tag_dataset
from evalcase.config import load_config
from evalcase.model import Finding
from tests.helpers import commit_all, git
from tests.versioning.conftest import (
    CASE,
    CRM,
    MANIFEST,
    REFUND,
    codes,
    line_of,
    lint,
    replace_in,
)


def _history(findings: list[Finding]) -> set[tuple[str, str]]:
    return {c for c in codes(findings) if c[0].startswith("EC5")}


@pytest.mark.slow
def test_a_tag_added_after_release_needs_a_dataset_version_bump(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    replace_in(repo, CASE, "  tags:\n", "  tags:\n    - smoke\n")
    findings = lint(repo)
    assert _history(findings) == {("EC505", MANIFEST)}
    (finding,) = [f for f in findings if f.code == "EC505"]
    assert "regrouped" in finding.message and "refund_eligibility_001" in finding.message
    assert finding.line == line_of(repo, MANIFEST, "dataset_version:")
    # The case's own task did not change: no case_version bump is asked for.
    assert not [f for f in lint(repo, base="HEAD") if f.code == "EC501"]
    edits = bump(load_config(repo), dry_run=False)
    assert {(e.path, e.field, e.new) for e in edits} >= {(MANIFEST, "dataset_version", "v2")}
    assert not [e for e in edits if e.field == "case_version"]
    assert _history(lint(repo)) == set()


def test_promoting_an_observation_case_after_release_is_a_regrouping(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    replace_in(repo, CASE, "dataset_role: [golden, regression]", "dataset_role: [golden]")
    assert _history(lint(repo)) == {("EC505", MANIFEST)}


@pytest.mark.slow
def test_loosening_a_gate_after_release_needs_a_bump(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    replace_in(
        repo,
        MANIFEST,
        "{name: overall, suite: full, min_pass_rate: 0.85}",
        "{name: overall, suite: full, min_pass_rate: 0.5}",
    )
    findings = lint(repo)
    assert _history(findings) == {("EC505", MANIFEST)}
    assert "gates" in next(f for f in findings if f.code == "EC505").message
    replace_in(repo, MANIFEST, "dataset_version: v1", "dataset_version: v2")
    assert _history(lint(repo)) == set()


@pytest.mark.slow
def test_the_manifest_title_is_not_grouping(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    replace_in(repo, MANIFEST, "title: 客服退款 Agent 回归评测集", "title: 客服退款 Agent 回归集")
    assert _history(lint(repo)) == set()


@pytest.mark.slow
def test_the_agent_that_runs_a_dataset_is_not_its_content(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    replace_in(repo, MANIFEST, "agent: refund_agent\n", "agent: refund_agent_v2\n")
    assert _history(lint(repo)) == set()
    assert _history(lint(repo, base="HEAD")) == set()
    assert not bump(load_config(repo), dry_run=True)


def test_a_release_that_recorded_the_agent_is_not_regrouped_by_it() -> None:
    from evalcase.versioning.history import compare_grouping

    # Releases written before the agent left the grouping fields list it.
    old = {"manifest:agent": "a1", "manifest:gates": "g1", "case:x_y_001": "c1"}
    assert compare_grouping(old, {"manifest:gates": "g1", "case:x_y_001": "c1"}) == ((), ())
    assert compare_grouping(old, {"manifest:gates": "g2", "case:x_y_001": "c1"}) == (
        (),
        ("gates",),
    )


def test_the_release_message_records_grouping(repo: Path) -> None:
    tag = tag_dataset(load_config(repo), REFUND)
    message = git(repo, "tag", "-l", "--format=%(contents)", tag)
    assert "group manifest:gates " in message
    assert "group case:refund_eligibility_001 " in message


@pytest.mark.slow
def test_a_fixture_deleted_and_re_added_under_its_released_version(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    fixture = "fixtures/tool/order_lookup.yaml"
    original = (repo / fixture).read_text("utf-8")
    git(repo, "rm", "-q", fixture)
    commit_all(repo, "drop order_lookup")
    (repo / fixture).write_text(original.replace("data:", "data:\n  handler: acme:lookup", 1))
    commit_all(repo, "re-add order_lookup with other content")
    for options in ({}, {"base": "HEAD"}, {"base": "HEAD~1"}):
        found = {c for c in codes(lint(repo, **options)) if c[0] == "EC504"}
        assert found == {("EC504", fixture)}, options


def test_a_released_case_id_reused_in_an_unreleased_dataset(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    # A new dataset, never released, holding a changed copy of a released case.
    new_dir = repo / "datasets" / "refund_copy_set"
    (new_dir / "cases").mkdir(parents=True)
    manifest = (repo / MANIFEST).read_text("utf-8").replace(REFUND, "refund_copy_set")
    (new_dir / "dataset.yaml").write_text(manifest, "utf-8")
    copy = (repo / CASE).read_text("utf-8").replace(REFUND, "refund_copy_set")
    copy = copy.replace("但有质量问题，能不能退？", "我要退一个还没发货的订单。")
    git(repo, "rm", "-q", CASE)
    replace_in(repo, MANIFEST, "dataset_version: v1", "dataset_version: v2")
    (new_dir / "cases" / "refund_eligibility_001.yaml").write_text(copy, "utf-8")
    commit_all(repo, "move and change a released case")
    target = "datasets/refund_copy_set/cases/refund_eligibility_001.yaml"
    found = [f for f in lint(repo) if f.code == "EC507"]
    assert {(f.code, f.path) for f in found} == {("EC507", target)}
    assert "never released it" in found[0].message


@pytest.mark.slow
def test_crm_is_unaffected_by_refund_grouping(repo: Path) -> None:
    config = load_config(repo)
    tag_dataset(config, REFUND)
    tag_dataset(config, CRM)
    replace_in(repo, CASE, "  tags:\n", "  tags:\n    - smoke\n")
    assert _history(lint(repo)) == {("EC505", MANIFEST)}
