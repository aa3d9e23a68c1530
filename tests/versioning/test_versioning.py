"""The history rules (EC5xx) on real git repositories: bumps against a base, frozen tags."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcase.actions import tag_dataset
from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.model import FatalError, Severity
from tests.crm_rules import RULES, use_crm_rules
from tests.helpers import commit_all, git
from tests.versioning.conftest import (
    CASE,
    CRM,
    CRM_MANIFEST,
    LINT_CONFIG,
    MANIFEST,
    REFUND,
    codes,
    line_of,
    lint,
    replace_in,
)

OLD_INPUT = "但有质量问题，能不能退？"
NEW_INPUT = "但有质量问题，还能退吗？"


def test_content_change_without_bump_is_reported_at_the_case_version_line(repo: Path) -> None:
    replace_in(repo, CASE, OLD_INPUT, NEW_INPUT)
    findings = lint(repo, base="HEAD")
    assert codes(findings) == {("EC501", CASE)}
    (finding,) = findings
    assert finding.line == line_of(repo, CASE, "case_version:")
    assert "input" in finding.message and "v5" in finding.message


def test_a_bumped_change_passes(repo: Path) -> None:
    replace_in(repo, CASE, OLD_INPUT, NEW_INPUT)
    replace_in(repo, CASE, "case_version: v5", "case_version: v6")
    assert lint(repo, base="HEAD") == []


def test_governance_fields_need_no_bump(repo: Path) -> None:
    replace_in(repo, CASE, "title: 签收超过 7 天", "title: 签收已超过 7 天")
    replace_in(repo, CASE, "review_status: approved", "review_status: approved  # checked")
    replace_in(repo, CASE, "failure_mode: 只按", "failure_mode: 仅按")
    assert lint(repo, base="HEAD") == []


def test_the_governance_split_is_configurable(repo: Path) -> None:
    replace_in(repo, CASE, "source: 线上日志改写", "source: 线上日志改写（二次核对）")
    assert codes(lint(repo, base="HEAD")) == {("EC501", CASE)}
    (repo / "evalcase.toml").write_text(
        LINT_CONFIG + '[versioning]\ngovernance_fields = ["title", "metadata", "source"]\n'
    )
    assert lint(repo, base="HEAD") == []


def test_a_bump_without_change_is_a_warning(repo: Path) -> None:
    replace_in(repo, CASE, "case_version: v5", "case_version: v6")
    findings = lint(repo, base="HEAD")
    assert codes(findings) == {("EC503", CASE)}
    assert findings[0].severity is Severity.WARNING


def test_versions_never_go_down_and_compare_by_number(repo: Path) -> None:
    replace_in(repo, CASE, "case_version: v5", "case_version: v10")
    commit_all(repo, "v10")
    replace_in(repo, CASE, "case_version: v10", "case_version: v9")
    replace_in(repo, MANIFEST, "dataset_version: v1", "dataset_version: v0")
    found = codes(lint(repo, base="HEAD"))
    assert ("EC502", CASE) in found
    replace_in(repo, MANIFEST, "dataset_version: v0", "dataset_version: v1")
    replace_in(repo, CASE, "case_version: v9", "case_version: v11")
    replace_in(repo, CASE, OLD_INPUT, NEW_INPUT)
    assert lint(repo, base="HEAD") == []


def test_a_renamed_case_is_the_same_case(repo: Path) -> None:
    renamed = CASE.replace("refund_eligibility_001", "refund_eligibility_quality_001")
    git(repo, "mv", CASE, renamed)
    replace_in(repo, renamed, OLD_INPUT, NEW_INPUT)
    history = {f for f in codes(lint(repo, base="HEAD")) if f[0].startswith("EC5")}
    assert history == {("EC501", renamed)}


def test_a_changed_fixture_needs_its_version_bumped(repo: Path) -> None:
    fixture = "fixtures/state/refund_order_headphone_signed_10d.yaml"
    replace_in(repo, fixture, "signed_days: 10", "signed_days: 11")
    findings = lint(repo, base="HEAD")
    assert codes(findings) == {("EC504", fixture)}
    assert findings[0].line == line_of(repo, fixture, "fixture_version:")
    assert "used by refund_regression_set" in findings[0].message
    replace_in(repo, fixture, "description: 用户A的", "description: 用户 A 的")
    replace_in(repo, fixture, "fixture_version: v1", "fixture_version: v2")
    assert lint(repo, base="HEAD") == []


def test_an_untracked_new_case_is_an_added_case(repo: Path) -> None:
    text = (repo / CASE).read_text("utf-8")
    new = CASE.replace("_001", "_002")
    (repo / new).write_text(
        text.replace("refund_eligibility_001", "refund_eligibility_002")
        .replace(OLD_INPUT, NEW_INPUT)
        .replace("dataset_version: v1", "dataset_version: v2"),
        "utf-8",
    )
    findings = [f for f in lint(repo, base="HEAD") if f.code.startswith("EC5")]
    assert codes(findings) == {("EC506", new)}
    assert findings[0].line == line_of(repo, new, "dataset_version:")


@pytest.mark.slow
def test_staged_mode_reads_the_index_against_pre_commit_from_ref(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replace_in(repo, CASE, OLD_INPUT, NEW_INPUT)
    assert lint(repo, staged=True) == []  # not staged yet
    git(repo, "add", CASE)
    assert codes(lint(repo, staged=True)) == {("EC501", CASE)}
    replace_in(repo, CASE, "case_version: v5", "case_version: v6")  # bumped, not staged
    assert codes(lint(repo, staged=True)) == {("EC501", CASE)}
    git(repo, "add", CASE)
    assert lint(repo, staged=True) == []
    # The hook's base is PRE_COMMIT_FROM_REF when pre-commit sets it.
    first = git(repo, "rev-parse", "HEAD").strip()
    commit_all(repo, "bumped")
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", first)
    replace_in(repo, CASE, "case_version: v6", "case_version: v5")
    git(repo, "add", CASE)
    assert codes(lint(repo, staged=True)) == {("EC501", CASE)}


def test_a_branch_base_means_its_merge_base(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    other = "datasets/refund_regression_set/cases/llm_instruction_001.yaml"
    git(repo, "checkout", "-q", "main")
    replace_in(repo, CASE, OLD_INPUT, NEW_INPUT)
    replace_in(repo, CASE, "case_version: v5", "case_version: v6")
    main_tip = commit_all(repo, "main moves on")
    git(repo, "checkout", "-q", "feature")
    replace_in(repo, other, "case_version: v4", "case_version: v5")
    commit_all(repo, "feature bumps another case")
    # Against the branch, the feature is compared with where it forked: main's later
    # change to another case is not a change made here.
    assert codes(lint(repo, base="main")) == {("EC503", other)}
    # Against main's tip itself, main's change looks reverted (v6 -> v5).
    assert ("EC502", CASE) in codes(lint(repo, base=main_tip))


@pytest.mark.slow
def test_a_released_version_is_frozen_without_any_base(repo: Path) -> None:
    assert tag_dataset(load_config(repo), REFUND) == f"{REFUND}@v1"
    replace_in(repo, CASE, OLD_INPUT, NEW_INPUT)
    replace_in(repo, CASE, "case_version: v5", "case_version: v6")
    findings = lint(repo)
    assert codes(findings) == {("EC505", MANIFEST)}
    (finding,) = findings
    assert finding.line == line_of(repo, MANIFEST, "dataset_version:")
    assert "refund_eligibility_001" in finding.message and "v2" in finding.message
    assert f"{REFUND}@v1" in finding.message
    replace_in(repo, MANIFEST, "dataset_version: v1", "dataset_version: v2")
    # Now the changed case must carry the new dataset version (EC506).
    assert codes(lint(repo)) == {("EC506", CASE)}
    replace_in(repo, CASE, "dataset_version: v1", "dataset_version: v2")
    assert lint(repo) == []
    assert lint(repo, base="HEAD") == []


def test_governance_edits_keep_a_release_frozen_but_clean(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    replace_in(repo, CASE, "title: 签收超过 7 天", "title: 签收已超过 7 天")
    assert lint(repo) == []


@pytest.mark.slow
def test_tags_are_part_of_the_run_cache_key(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    replace_in(repo, CASE, OLD_INPUT, NEW_INPUT)
    config = load_config(repo)
    first = lint_repository(config, jobs=1)
    assert {f.code for f in first.findings} == {"EC505"}
    git(repo, "tag", "-d", f"{REFUND}@v1")
    second = lint_repository(config, jobs=1)
    assert not second.cache_hit
    assert second.findings == []


def test_a_removed_case_changes_the_released_dataset(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    git(repo, "rm", "-q", CASE)
    other = "datasets/refund_regression_set/cases/llm_instruction_001.yaml"
    # pre-commit passes only existing files; the deletion still fails the commit.
    findings = lint(repo, staged=True, paths=[other], cwd=repo)
    assert codes(findings) == {("EC505", MANIFEST)}
    assert "cases removed: refund_eligibility_001" in findings[0].message


@pytest.mark.slow
def test_a_released_id_is_never_reused(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    released = (repo / CASE).read_text("utf-8")
    git(repo, "rm", "-q", CASE)
    replace_in(repo, MANIFEST, "dataset_version: v1", "dataset_version: v2")
    commit_all(repo, "remove refund_eligibility_001")
    assert lint(repo, base="HEAD~1") == []
    tag_dataset(load_config(repo), REFUND)
    # A different case under the released ID.
    (repo / CASE).write_text(
        released.replace(OLD_INPUT, "我要退一个还没发货的订单。").replace(
            "dataset_version: v1", "dataset_version: v3"
        ),
        "utf-8",
    )
    replace_in(repo, MANIFEST, "dataset_version: v2", "dataset_version: v3")
    for options in ({}, {"base": "HEAD"}):
        findings = [f for f in lint(repo, **options) if f.code.startswith("EC5")]
        assert codes(findings) == {("EC507", CASE)}, options
        assert findings[0].line == line_of(repo, CASE, "case_id:")
        assert f"{REFUND}@v1" in findings[0].message
    # Restoring the released case itself is fine.
    (repo / CASE).write_text(released.replace("dataset_version: v1", "dataset_version: v3"))
    assert [f for f in lint(repo, base="HEAD") if f.code.startswith("EC5")] == []


@pytest.mark.slow
def test_a_fixture_shared_by_two_released_datasets_fails_both(repo: Path) -> None:
    config = load_config(repo)
    tag_dataset(config, REFUND)
    tag_dataset(config, CRM)
    fixture = "fixtures/rubric/safety_refusal_v1.yaml"
    replace_in(repo, fixture, "weight: 0.4", "weight: 0.5")
    findings = lint(repo)
    manifests = {f.path for f in findings if f.code == "EC505"}
    assert manifests == {MANIFEST, "datasets/crm_safety_set/dataset.yaml"}
    assert all("safety_refusal_v1" in f.message for f in findings)


@pytest.mark.slow
def test_a_tag_evalcase_did_not_write_is_read_from_its_commit(repo: Path) -> None:
    git(repo, "tag", f"{REFUND}@v1")  # lightweight, no recorded digest
    assert lint(repo) == []
    replace_in(repo, CASE, OLD_INPUT, NEW_INPUT)
    findings = lint(repo)
    assert codes(findings) == {("EC505", MANIFEST)}
    assert "cases modified: refund_eligibility_001" in findings[0].message


def test_the_first_commit_has_no_base(tmp_path: Path) -> None:
    import shutil

    from tests.helpers import REPO_ROOT, init_repo

    repo = init_repo(tmp_path / "empty")
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    git(repo, "add", "-A")
    assert lint(repo, staged=True) == []
    with pytest.raises(FatalError, match="nothing is committed"):
        lint(repo, base="main")


def test_reading_the_base_starts_a_few_git_processes_not_one_per_file(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    started: list[object] = []
    real = subprocess.Popen

    def counting(*args: object, **kwargs: object) -> object:
        started.append(args[0])
        return real(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "Popen", counting)
    cases = sorted((repo / "datasets" / REFUND / "cases").glob("*.yaml"))
    for path in cases:
        text = path.read_text("utf-8")
        path.write_text(text.replace("title: ", "title: （改）", 1), "utf-8")
    findings = lint(repo, base="HEAD")
    assert findings == []
    assert len(started) <= 10, started


def test_split_hook_invocations_each_see_the_whole_index(repo: Path) -> None:
    other = "datasets/refund_regression_set/cases/llm_instruction_001.yaml"
    replace_in(repo, CASE, OLD_INPUT, NEW_INPUT)  # needs a bump
    replace_in(repo, other, "risk_level: ", "risk_level: X")  # a schema error
    git(repo, "add", "-A")
    first = lint(repo, staged=True, paths=[CASE], cwd=repo)
    second = lint(repo, staged=True, paths=[other], cwd=repo)
    assert ("EC501", CASE) in codes(first) and ("EC501", CASE) in codes(second)
    # Other findings stay with the files each invocation was given.
    assert {f.path for f in first if not f.code.startswith("EC5")} <= {CASE}
    assert any(f.path == other and f.code.startswith("EC1") for f in second)
    assert not any(f.path == other and f.code.startswith("EC1") for f in first)


def test_a_changed_shared_cel_definition_needs_its_fixture_and_the_datasets_bumped(
    repo: Path,
) -> None:
    """A cel fixture is versioned like any fixture (EC504), and a released dataset whose
    tools use it changed with it (EC505), though no file of the dataset and no tool did."""
    use_crm_rules(repo)
    commit_all(repo, "crm_export calls a shared definition")
    assert lint(repo, base="HEAD") == []
    tag_dataset(load_config(repo), CRM)
    replace_in(repo, RULES, 'scope == "all"', 'scope in ["all", "everyone"]')
    findings = lint(repo)
    assert codes(findings) == {("EC504", RULES), ("EC505", CRM_MANIFEST)}
    (released,) = [f for f in findings if f.code == "EC505"]
    assert "crm_rules" in released.message
