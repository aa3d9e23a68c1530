"""`evalcase diff`: the changelog between two versions, commits or the working tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcase.actions import diff, tag_dataset
from evalcase.config import load_config
from evalcase.model import FatalError
from evalcase.versioning.changelog import render_markdown
from tests.helpers import commit_all, git, invoke
from tests.versioning.conftest import CASE, MANIFEST, REFUND, SHARED_FIXTURE, replace_in

OTHER = "datasets/refund_regression_set/cases/llm_instruction_001.yaml"
REMOVED = "datasets/refund_regression_set/cases/refund_policy_edge_001.yaml"


@pytest.fixture
def two_versions(repo: Path) -> Path:
    """refund_regression_set@v1, then v2: one case changed, one governance-only edit, one
    removed, one added, and the shared rubric changed."""
    tag_dataset(load_config(repo), REFUND)
    replace_in(repo, CASE, "但有质量问题", "但是有质量问题")
    replace_in(repo, CASE, "case_version: v5", "case_version: v6")
    replace_in(repo, CASE, "dataset_version: v1", "dataset_version: v2")
    replace_in(repo, OTHER, "title: ", "title: （改写）")
    git(repo, "rm", "-q", REMOVED)
    added = CASE.replace("refund_eligibility_001", "refund_eligibility_002")
    text = (repo / CASE).read_text("utf-8")
    (repo / added).write_text(
        text.replace("refund_eligibility_001", "refund_eligibility_002")
        .replace("case_version: v6", "case_version: v1")
        .replace("但是有质量问题", "有质量问题但没有发票"),
        "utf-8",
    )
    replace_in(repo, SHARED_FIXTURE, "weight: 0.4", "weight: 0.5")
    replace_in(repo, SHARED_FIXTURE, "fixture_version: v1", "fixture_version: v2")
    replace_in(repo, MANIFEST, "dataset_version: v1", "dataset_version: v2")
    commit_all(repo, "v2")
    tag_dataset(load_config(repo), REFUND)
    return repo


@pytest.mark.slow
def test_diff_lists_exactly_the_cases_changed_between_releases(two_versions: Path) -> None:
    log = diff(load_config(two_versions), f"{REFUND}@v1", f"{REFUND}@v2")
    assert [(c.id, c.new_version) for c in log.added] == [("refund_eligibility_002", "v1")]
    assert [(c.id, c.old_version) for c in log.removed] == [("refund_policy_edge_001", "v3")]
    modified = {c.id: c for c in log.modified}
    assert set(modified) == {"refund_eligibility_001", "llm_instruction_001"}
    changed = modified["refund_eligibility_001"]
    assert (changed.old_version, changed.new_version, changed.fields) == ("v5", "v6", ("input",))
    assert changed.content_changed
    governance = modified["llm_instruction_001"]
    assert governance.fields == ("title",) and not governance.content_changed
    assert [(f.id, f.old_version, f.new_version) for f in log.fixtures_modified] == [
        ("safety_refusal_v1", "v1", "v2")
    ]
    assert (log.old.version, log.new.version) == ("v1", "v2")


@pytest.mark.slow
def test_diff_renders_text_markdown_and_json(two_versions: Path) -> None:
    proc = invoke("diff", f"{REFUND}@v1", f"{REFUND}@v2", cwd=two_versions)
    assert proc.returncode == 0, proc.stderr
    assert "~ refund_eligibility_001 v5 -> v6: input" in proc.stdout
    assert "+ refund_eligibility_002 v1" in proc.stdout
    assert "- refund_policy_edge_001 v3" in proc.stdout
    assert "~ llm_instruction_001 v4: title (governance only)" in proc.stdout
    md = invoke("diff", f"{REFUND}@v1", "@v2", "--format", "md", cwd=two_versions).stdout
    assert md.startswith(f"### Dataset `{REFUND}`")
    assert "| `refund_eligibility_001` | v5 → v6 | input |" in md
    data = json.loads(
        invoke("diff", f"{REFUND}@v1", f"{REFUND}@v2", "--format", "json", cwd=two_versions).stdout
    )
    assert data["dataset_id"] == REFUND
    assert [c["id"] for c in data["added"]] == ["refund_eligibility_002"]


@pytest.mark.slow
def test_either_side_may_be_a_commit_or_the_working_tree(two_versions: Path) -> None:
    config = load_config(two_versions)
    assert diff(config, f"{REFUND}@v2", REFUND).empty
    assert diff(config, f"{REFUND}@HEAD", f"{REFUND}@WORKTREE").empty
    replace_in(two_versions, OTHER, "title: （改写）", "title: （再次改写）")
    log = diff(config, f"{REFUND}@HEAD~1", REFUND)
    assert {c.id for c in log.modified} >= {"refund_eligibility_001", "llm_instruction_001"}
    assert "working tree" in log.new.label
    md = render_markdown(diff(config, f"{REFUND}@v2", "@v2"))
    assert "No changes." in md


@pytest.mark.slow
def test_unknown_versions_and_datasets_are_errors(two_versions: Path) -> None:
    config = load_config(two_versions)
    with pytest.raises(FatalError, match="no release tag"):
        diff(config, f"{REFUND}@v1", f"{REFUND}@v9")
    with pytest.raises(FatalError, match="no dataset 'nope'"):
        diff(config, "nope@HEAD", "nope")
