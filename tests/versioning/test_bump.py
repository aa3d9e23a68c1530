"""`evalcase bump`: writes what lint asks for, in place, and only once."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcase.actions import bump, tag_dataset
from evalcase.config import load_config
from evalcase.yamlwrite import set_scalars
from tests.helpers import git, invoke
from tests.versioning.conftest import (
    CASE,
    CRM,
    CRM_MANIFEST,
    MANIFEST,
    REFUND,
    SHARED_FIXTURE,
    lint,
    replace_in,
)


def test_set_scalars_changes_only_the_values() -> None:
    text = (
        "# header comment\n"
        "case_id: x_001   # the ID\n"
        'case_version: "v3"  # quoted\n'
        "dataset_version: 'v1'\n"
        "nested:\n"
        "  fixture_version: v9 # plain\n"
        "  list: [a,   b]\n"
        "z_last: 1\n"
    )
    out = set_scalars(
        text,
        {
            ("case_version",): "v4",
            ("dataset_version",): "v2",
            ("nested", "fixture_version"): "v10",
        },
    )
    assert out == (
        "# header comment\n"
        "case_id: x_001   # the ID\n"
        'case_version: "v4"  # quoted\n'
        "dataset_version: 'v2'\n"
        "nested:\n"
        "  fixture_version: v10 # plain\n"
        "  list: [a,   b]\n"
        "z_last: 1\n"
    )
    assert set_scalars(text, {}) == text


def test_set_scalars_falls_back_to_a_round_trip_dump() -> None:
    text = 'a: "v\\x31"  # escaped\nb: [1, 2]\n'
    out = set_scalars(text, {("a",): "v2"})
    assert out.startswith('a: "v2"') and "# escaped" in out


@pytest.mark.slow
def test_bump_writes_case_and_dataset_versions_once(repo: Path) -> None:
    before = (repo / CASE).read_text("utf-8")
    replace_in(repo, CASE, "但有质量问题", "但是有质量问题")
    edits = bump(load_config(repo))
    assert [(e.path, e.field, e.old, e.new, e.reason) for e in edits] == [
        (CASE, "case_version", "v5", "v6", "EC501")
    ]
    after = (repo / CASE).read_text("utf-8")
    assert after == before.replace("但有质量问题", "但是有质量问题").replace(
        "case_version: v5", "case_version: v6", 1
    )
    assert bump(load_config(repo)) == []
    assert (repo / CASE).read_text("utf-8") == after
    assert lint(repo, base="HEAD") == []


@pytest.mark.slow
def test_bump_after_a_release_bumps_the_manifests_and_the_changed_cases(repo: Path) -> None:
    config = load_config(repo)
    tag_dataset(config, REFUND)
    tag_dataset(config, CRM)
    replace_in(repo, SHARED_FIXTURE, "weight: 0.4", "weight: 0.5")
    replace_in(repo, CASE, "但有质量问题", "但是有质量问题")
    dry = bump(config, dry_run=True)
    assert git(repo, "status", "--porcelain").count("\n") == 2  # nothing written
    assert {(e.path, e.field, e.new) for e in dry} == {
        (MANIFEST, "dataset_version", "v2"),
        (CRM_MANIFEST, "dataset_version", "v2"),
        (SHARED_FIXTURE, "fixture_version", "v2"),
        (CASE, "case_version", "v6"),
        (CASE, "dataset_version", "v2"),
    }
    proc = invoke("bump", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert "bumped 5 versions" in proc.stdout
    assert invoke("bump", cwd=repo).stdout.strip() == "nothing to bump"
    assert lint(repo) == []
    assert lint(repo, base="HEAD") == []
    proc = invoke("lint", "--no-cache", "--base", "HEAD", cwd=repo)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.slow
def test_bump_staged_compares_the_index(repo: Path) -> None:
    replace_in(repo, CASE, "但有质量问题", "但是有质量问题")
    assert bump(load_config(repo), staged=True) == []
    git(repo, "add", CASE)
    edits = bump(load_config(repo), staged=True)
    assert [(e.field, e.new) for e in edits] == [("case_version", "v6")]
    git(repo, "add", CASE)
    assert lint(repo, staged=True) == []
