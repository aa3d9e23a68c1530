"""The initial state: fixtures merged in order, conflicts as values, inline on top."""

from __future__ import annotations

from typing import Any

from evalcase.contract.state import INLINE, Conflict, inline_state, merge


def test_mappings_merge_deeply_in_order() -> None:
    merged = merge(
        [
            ("session_a", {"session": {"current_user_id": "USER_A"}}),
            ("order_2001", {"orders": {"ORDER_2001": {"status": "closed"}}}),
            ("session_flags", {"session": {"user_authenticated": True}}),
        ]
    )
    assert merged.document == {
        "session": {"current_user_id": "USER_A", "user_authenticated": True},
        "orders": {"ORDER_2001": {"status": "closed"}},
    }
    assert merged.conflicts == ()
    assert merged.sources["session.user_authenticated"] == "session_flags"


def test_the_same_leaf_set_differently_is_a_conflict_naming_both() -> None:
    merged = merge(
        [
            ("verified", {"session": {"user_authenticated": True}}),
            ("unverified", {"session": {"user_authenticated": False}}),
        ]
    )
    assert merged.conflicts == (
        Conflict("session.user_authenticated", "verified", "unverified", True, False),
    )
    assert merged.document["session"]["user_authenticated"] is False  # the later wins


def test_equal_values_and_lists_do_not_conflict_but_lists_replace() -> None:
    merged = merge([("a", {"x": [1, 2], "y": 1}), ("b", {"y": 1}), ("c", {"x": [1, 2]})])
    assert merged.conflicts == ()
    merged = merge([("a", {"x": [1, 2]}), ("b", {"x": [3]})])
    assert merged.document == {"x": [3]}
    assert [c.path for c in merged.conflicts] == ["x"]


def test_a_mapping_against_a_value_is_a_conflict() -> None:
    merged = merge([("a", {"x": {"y": 1}}), ("b", {"x": 5})])
    assert [(c.first, c.second) for c in merged.conflicts] == [("a", "b")]


def test_inline_state_overrides_without_conflict() -> None:
    block = {"fixtures": ["a"], "session": {"user_authenticated": True}}
    merged = merge([("a", {"session": {"user_authenticated": False}})], inline_state(block))
    assert merged.conflicts == ()
    assert merged.document["session"]["user_authenticated"] is True
    assert merged.sources["session.user_authenticated"] == INLINE


def test_inputs_are_not_modified() -> None:
    part = {"a": {"b": 1}}
    merge([("x", part), ("y", {"a": {"c": 2}})])
    assert part == {"a": {"b": 1}}


def test_a_single_fixture_without_inline_state_is_its_document_not_a_copy() -> None:
    # Nothing writes into a merged document or a fixture's data (both are shared read
    # only), so one fixture's state is not copied: tau2 airline's 3 MB database was deep
    # copied once per load. Top-level keys become strings as a merge makes them; the
    # sources are the same as a merge records.
    users = {"U1": {"name": "Ada", "tags": []}, "U2": {}}
    data: dict[Any, Any] = {"users": users, 7: {"n": 1}, "empty": {}}
    merged = merge([("db", data)])
    assert merged.document == {"users": users, "7": {"n": 1}, "empty": {}}
    assert merged.document["users"] is users and merged.conflicts == ()
    assert merged.sources == {
        "users.U1.name": "db", "users.U1.tags": "db", "users.U2": "db", "7.n": "db", "empty": "db"
    }  # fmt: skip
    # keys that are one string apart (7 and "7") merge as two parts would
    clash = merge([("db", {7: {"a": 1}, "7": {"b": 2}})])
    assert clash.document == {"7": {"a": 1, "b": 2}} and clash.conflicts == ()
    assert data == {"users": users, 7: {"n": 1}, "empty": {}}
