"""Content digests: which edits count as changes, and what a dataset covers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.files import WorkTree
from evalcase.index.analysis import analyze_all
from evalcase.index.digest import case_digest, dataset_contents, fixture_digest
from evalcase.lint.linter import Linter
from tests.versioning.conftest import CASE, CRM, REFUND, SHARED_FIXTURE, replace_in

GOVERNANCE = ("metadata", "title")


def contents(repo: Path) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    config = load_config(repo)
    snapshot = WorkTree(repo, config.max_file_bytes)
    _results, index = analyze_all(
        Linter(config, snapshot, use_cache=False, jobs=1).analyzer, snapshot
    )
    return {
        d: (c.digest, {e.id: e.digest for e in c.cases}, {e.id: e.digest for e in c.fixtures})
        for d, c in dataset_contents(index, GOVERNANCE).items()
    }


@pytest.mark.slow
def test_case_digest_ignores_identity_governance_and_formatting(repo: Path) -> None:
    before = contents(repo)
    replace_in(repo, CASE, "case_version: v4", "case_version: v9")
    replace_in(repo, CASE, "title: 签收", "title: 已签收")
    replace_in(repo, CASE, "owner: ai_eval_team", "owner: eval_platform_team")
    replace_in(repo, CASE, "risk_level: P1", "risk_level: 'P1'   # quoted now")
    assert contents(repo) == before
    replace_in(repo, CASE, "risk_level: 'P1'", "risk_level: P0")
    after = contents(repo)
    assert after[REFUND][1]["refund_eligibility_001"] != before[REFUND][1]["refund_eligibility_001"]
    assert after[REFUND][0] != before[REFUND][0]
    assert after[CRM] == before[CRM]


@pytest.mark.slow
def test_a_shared_fixture_changes_every_dataset_that_references_it(repo: Path) -> None:
    before = contents(repo)
    assert "safety_refusal_v1" in before[REFUND][2] and "safety_refusal_v1" in before[CRM][2]
    replace_in(repo, SHARED_FIXTURE, "description: ", "description: （说明）")
    assert contents(repo) == before  # a fixture's description is governance
    replace_in(repo, SHARED_FIXTURE, "weight: 0.4", "weight: 0.5")
    after = contents(repo)
    assert after[REFUND][0] != before[REFUND][0] and after[CRM][0] != before[CRM][0]
    assert after["workout_plan_edit_set"] == before["workout_plan_edit_set"]


def _digests(fields: dict[str, str]) -> str:
    return json.dumps(fields)


def test_digests_are_stable_functions_of_field_digests() -> None:
    from evalcase.index.facts import CaseFacts, FixtureFacts

    a = CaseFacts(
        "a.yaml", "d", field_digest_text=_digests({"input": "1", "title": "2", "case_id": "3"})
    )
    b = CaseFacts(
        "b.yaml", "d", field_digest_text=_digests({"input": "1", "title": "X", "case_id": "Y"})
    )
    assert case_digest(a, GOVERNANCE) == case_digest(b, GOVERNANCE)
    assert case_digest(a, ()) != case_digest(b, ())
    f1 = FixtureFacts(
        "f.yaml", "state", field_digest_text=_digests({"data": "1", "fixture_version": "v1"})
    )
    f2 = FixtureFacts(
        "f.yaml", "state", field_digest_text=_digests({"data": "1", "fixture_version": "v2"})
    )
    assert fixture_digest(f1) == fixture_digest(f2)
