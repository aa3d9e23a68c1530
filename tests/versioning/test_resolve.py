"""Resolving a case's fixture references."""

from __future__ import annotations

from evalcase.index.resolve import FixtureCatalog, resolve_case

FIXTURES = {
    "order_lookup": {
        "fixture_id": "order_lookup",
        "kind": "tool",
        "data": {"name": "order_lookup"},
    },
    "order_123": {"fixture_id": "order_123", "kind": "state", "data": {"orders": {}}},
    "rubric_a": {"fixture_id": "rubric_a", "kind": "rubric", "data": {}},
    "policy_2026_01": {
        "fixture_id": "policy_2026_01",
        "kind": "corpus",
        "data": {"knowledge_base": "policy", "corpus_version": "policy_2026_01"},
    },
    "policy_2026_07": {
        "fixture_id": "policy_2026_07",
        "kind": "corpus",
        "data": {"knowledge_base": "policy", "corpus_version": "policy_2026_07"},
    },
}


def test_every_reference_kind_resolves() -> None:
    case = {
        "case_id": "refund_eligibility_001",
        "case_version": "v3",
        "context": {"fixtures": ["order_123"]},
        "environment": {"tools": ["order_lookup"], "knowledge_base": "policy"},
        "rubric": "rubric_a",
        "forbidden_tools": ["refund_submit"],
    }
    out = resolve_case(case, FIXTURES)
    assert out["case"] is case and out["case_id"] == "refund_eligibility_001"
    assert sorted(out["fixtures"]) == [
        "order_123",
        "order_lookup",
        "policy_2026_01",
        "policy_2026_07",
        "rubric_a",
    ]
    assert out["unresolved"] == ["forbidden_tools: refund_submit"]


def test_a_corpus_version_resolves_to_that_corpus_only() -> None:
    catalog = FixtureCatalog.of(FIXTURES)
    case = {"environment_requirements": {"corpus_version": "policy_2026_07"}}
    assert list(resolve_case(case, catalog)["fixtures"]) == ["policy_2026_07"]
