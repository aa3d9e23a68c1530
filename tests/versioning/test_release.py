"""`evalcase tag` and `evalcase datasets` as whole processes on real repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcase.actions import tag_dataset
from evalcase.config import load_config
from evalcase.model import FatalError
from evalcase.versioning.tags import parse_message
from tests.helpers import commit_all, git, invoke
from tests.versioning.conftest import (
    CASE,
    CRM,
    CRM_MANIFEST,
    LINT_CONFIG,
    MANIFEST,
    REFUND,
    SHARED_FIXTURE,
    replace_in,
)


def tag_target(repo: Path, tag: str) -> str:
    return git(repo, "rev-parse", f"{tag}^{{commit}}").strip()


@pytest.mark.slow
def test_a_shared_fixture_freezes_both_datasets_until_both_are_bumped(repo: Path) -> None:
    for dataset in (REFUND, CRM):
        proc = invoke("tag", dataset, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        assert f"{dataset}@v1" in proc.stdout
    v1 = tag_target(repo, f"{REFUND}@v1")

    replace_in(repo, SHARED_FIXTURE, "weight: 0.4", "weight: 0.5")
    replace_in(repo, SHARED_FIXTURE, "fixture_version: v1", "fixture_version: v2")
    proc = invoke("lint", "--no-cache", cwd=repo)
    assert proc.returncode == 1
    for manifest in (MANIFEST, CRM_MANIFEST):
        assert f"{manifest}:2:18: EC505" in proc.stdout
    assert proc.stdout.count("fixtures modified: safety_refusal_v1") == 2

    for manifest in (MANIFEST, CRM_MANIFEST):
        replace_in(repo, manifest, "dataset_version: v1", "dataset_version: v2")
    proc = invoke("lint", "--no-cache", cwd=repo)
    assert proc.returncode == 0, proc.stdout
    commit_all(repo, "safety rubric v2")

    for dataset in (REFUND, CRM):
        proc = invoke("tag", dataset, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        assert tag_target(repo, f"{dataset}@v2") == git(repo, "rev-parse", "HEAD").strip()

    again = invoke("tag", REFUND, cwd=repo)
    assert again.returncode == 2
    assert f"{REFUND}@v2 already exists" in again.stderr
    assert tag_target(repo, f"{REFUND}@v1") == v1


def test_the_tag_message_records_cases_versions_and_digest(repo: Path) -> None:
    name = tag_dataset(load_config(repo), REFUND)
    message = git(repo, "for-each-ref", "--format=%(contents)", f"refs/tags/{name}")
    cases = sorted((repo / "datasets" / REFUND / "cases").glob("*.yaml"))
    assert message.startswith(f"{REFUND} v1: {len(cases)} cases, ")
    digest, governance, case_map, fixtures = parse_message(message)
    assert digest is not None and len(digest) == 32
    assert governance == ("metadata", "title")
    assert case_map is not None and fixtures is not None
    assert case_map["refund_eligibility_001"][0] == "v5"
    assert len(case_map) == len(cases)
    assert "safety_refusal_v1" in fixtures
    assert git(repo, "cat-file", "-t", name).strip() == "tag"  # annotated


def test_tag_refuses_a_dirty_tree_lint_errors_and_unknown_datasets(repo: Path) -> None:
    config = load_config(repo)
    (repo / "notes.txt").write_text("wip\n")
    with pytest.raises(FatalError, match="not clean"):
        tag_dataset(config, REFUND)
    (repo / "notes.txt").unlink()
    replace_in(repo, CASE, "risk_level: P1", "risk_level: P9")
    commit_all(repo, "broken")
    with pytest.raises(FatalError, match="does not lint clean"):
        tag_dataset(config, REFUND)
    git(repo, "revert", "--no-edit", "HEAD")
    with pytest.raises(FatalError, match="no dataset 'nope'"):
        tag_dataset(config, "nope")
    assert git(repo, "tag").strip() == ""


@pytest.mark.slow
def test_tag_format_is_configurable(repo: Path) -> None:
    (repo / "evalcase.toml").write_text(
        LINT_CONFIG + '[versioning]\ntag_format = "datasets/{dataset_id}/{dataset_version}"\n'
    )
    commit_all(repo, "config")
    config = load_config(repo)
    assert tag_dataset(config, REFUND) == f"datasets/{REFUND}/v1"
    replace_in(repo, CASE, "但有质量问题", "但是有质量问题")
    proc = invoke("lint", "--no-cache", cwd=repo)
    assert proc.returncode == 1 and f"tag datasets/{REFUND}/v1" in proc.stdout


@pytest.mark.slow
def test_datasets_lists_version_latest_tag_count_and_status(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    tag_dataset(load_config(repo), CRM)
    replace_in(repo, CASE, "但有质量问题", "但是有质量问题")
    replace_in(repo, CRM_MANIFEST, "dataset_version: v1", "dataset_version: v2")
    proc = invoke("datasets", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["DATASET", "VERSION", "LATEST", "TAG", "CASES", "STATUS"]
    rows = {line.split()[0]: line.split(None, 4) for line in lines[1:]}
    cases = len(list((repo / "datasets" / REFUND / "cases").glob("*.yaml")))
    assert rows[REFUND] == [REFUND, "v1", f"{REFUND}@v1", str(cases), "changed since tag"]
    assert rows[CRM][1:3] == ["v2", f"{CRM}@v1"] and rows[CRM][4] == "untagged"
    workouts = len(list((repo / "datasets" / "workout_plan_edit_set" / "cases").glob("*.yaml")))
    assert rows["workout_plan_edit_set"][2:] == ["-", str(workouts), "untagged"]
    as_json = json.loads(invoke("datasets", "--format", "json", cwd=repo).stdout)
    statuses = {d["dataset_id"]: d["status"] for d in as_json}
    assert statuses == {
        REFUND: "changed since tag",
        CRM: "untagged",
        "workout_plan_edit_set": "untagged",
        "english_support_set": "untagged",
    }
    replace_in(repo, CASE, "但是有质量问题", "但有质量问题")
    as_json = json.loads(invoke("datasets", "--format", "json", cwd=repo).stdout)
    assert {d["dataset_id"]: d["status"] for d in as_json}[REFUND] == "clean"
