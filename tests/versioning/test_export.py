"""`evalcase export`: a release read straight from its tag, as JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcase.actions import export_dataset, tag_dataset
from evalcase.config import load_config
from tests.helpers import commit_all, git, invoke
from tests.versioning.conftest import CASE, MANIFEST, REFUND, replace_in

V1_INPUT = "我这个耳机签收十天了，但有质量问题，能不能退？"


@pytest.mark.slow
def test_export_reads_the_frozen_version_after_later_commits(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    replace_in(repo, CASE, "但有质量问题", "但是有质量问题")
    replace_in(repo, CASE, "case_version: v5", "case_version: v6")
    replace_in(repo, CASE, "dataset_version: v1", "dataset_version: v2")
    replace_in(repo, MANIFEST, "dataset_version: v1", "dataset_version: v2")
    commit_all(repo, "v2")
    replace_in(repo, CASE, "但是有质量问题", "可能有质量问题")  # and an uncommitted edit
    head = git(repo, "rev-parse", "HEAD").strip()

    out = repo.parent / "v1.jsonl"
    proc = invoke("export", f"{REFUND}@v1", "-o", str(out), cwd=repo)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    cases = len(list((repo / "datasets" / REFUND / "cases").glob("*.yaml")))
    assert len(records) == cases
    by_id = {r["case_id"]: r for r in records}
    record = by_id["refund_eligibility_001"]
    assert record["agent_view"]["user_turns"] == [V1_INPUT]
    assert record["case_version"] == "v5" and record["dataset_version"] == "v1"
    assert record["release"] == f"{REFUND}@v1"
    assert record["commit"] == git(repo, "rev-parse", f"{REFUND}@v1^{{commit}}").strip()
    # Fixtures are resolved: tools, state, rubric, and the knowledge base's corpora.
    fixtures = record["fixture_versions"]
    assert {"order_lookup", "refund_eligibility_check", "refund_policy_faithfulness_v1"} <= set(
        fixtures
    )
    assert {"refund_policy_2026_01", "refund_policy_2026_07"} <= set(fixtures)
    assert "order_lookup" in {t["name"] for t in record["agent_view"]["tools"]}
    assert "order_lookup" in record["environment"]["tools"]
    assert record["answer_key"]["rubric"]["id"] == "refund_policy_faithfulness_v1"
    assert record["problems"] == []
    # The agent's part holds nothing of the answer key or the environment.
    agent_text = json.dumps(record["agent_view"], ensure_ascii=False)
    assert "refund_policy_faithfulness_v1" not in agent_text
    assert record["case_id"] not in agent_text
    # Nothing was checked out.
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert "可能有质量问题" in (repo / CASE).read_text("utf-8")

    now = export_dataset(load_config(repo), REFUND)
    now_record = {r["case_id"]: r for r in now.records}["refund_eligibility_001"]
    assert now_record["agent_view"]["user_turns"] != [V1_INPUT]
    assert now.digest_matches is None
    release = export_dataset(load_config(repo), f"{REFUND}@v1")
    assert release.digest_matches is True


@pytest.mark.slow
def test_export_to_standard_output_is_one_case_a_line(repo: Path) -> None:
    tag_dataset(load_config(repo), REFUND)
    proc = invoke("export", f"{REFUND}@v1", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(json.loads(line)["dataset_id"] == REFUND for line in lines)
    assert len(lines) == len(list((repo / "datasets" / REFUND / "cases").glob("*.yaml")))


@pytest.mark.slow
def test_an_export_of_a_release_is_headed_by_the_release_version(repo: Path) -> None:
    """42.12c: after release v1, one changed case bumped and release v2, the other cases
    still say `dataset_version: v1` (the version in which they last changed); the export of
    v2 is headed `v2`, its cases labelled v2, each keeping its own field apart."""
    from evalcase.actions import bump
    from evalcase.authoring.exports import export

    tag_dataset(load_config(repo), REFUND)
    replace_in(repo, CASE, "但有质量问题", "但是有质量问题")
    bump(load_config(repo))
    commit_all(repo, "v2: one case changed")
    assert tag_dataset(load_config(repo), REFUND) == f"{REFUND}@v2"
    others = [p for p in (repo / "datasets" / REFUND / "cases").glob("*.yaml")
              if p.name != Path(CASE).name]  # fmt: skip
    assert others and all("dataset_version: v1" in p.read_text("utf-8") for p in others)

    result, rendered = export(load_config(repo), f"{REFUND}@v2", "promptfoo")
    assert result.version == "v2"
    assert rendered.text.startswith(f"description: evalcase export of {REFUND} v2\n")
    assert "v1, v2" not in rendered.text
    _, inspect = export(load_config(repo), f"{REFUND}@v2", "inspect")
    samples = [json.loads(line) for line in inspect.text.splitlines() if line.strip()]
    labels = {s["metadata"]["case_id"]: s["metadata"] for s in samples}
    assert {m["dataset_version"] for m in labels.values()} == {"v2"}
    assert labels["refund_eligibility_001"]["case_dataset_version"] == "v2"
    assert {m["case_dataset_version"] for m in labels.values()} == {"v1", "v2"}
