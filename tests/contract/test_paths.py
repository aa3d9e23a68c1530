"""Dotted state paths: parsing, {CEL} segments, and the four operations."""

from __future__ import annotations

from typing import Any

from evalcase.contract import paths
from evalcase.contract.paths import Expr, PathError


def doc() -> dict[str, Any]:
    return {"orders": {"ORDER_1": {"status": "open", "attempts": 0, "items": [{"sku": "A"}]}}}


def test_parse_keeps_braced_expressions_whole() -> None:
    assert paths.parse("refunds.{args.refund_id}.status") == (
        "refunds",
        Expr("args.refund_id"),
        "status",
    )
    assert paths.parse('a.{m["k.x"]}') == ("a", Expr('m["k.x"]'))
    for bad in ("", "a..b", "a.{b", "a.{}", "a.{b}c"):
        assert isinstance(paths.parse(bad), PathError), bad


def test_resolve_evaluates_segments() -> None:
    segments = paths.parse("orders.{args.id}.status")
    assert not isinstance(segments, PathError)
    assert paths.resolve(segments, lambda src: "ORDER_1") == ("orders", "ORDER_1", "status")
    assert isinstance(paths.resolve(segments, lambda src: None), PathError)
    assert isinstance(paths.resolve(segments, None), PathError)


def test_get_follows_mappings_and_list_indexes() -> None:
    d = doc()
    assert paths.get(d, ("orders", "ORDER_1", "items", "0", "sku")) == "A"
    assert paths.get(d, ("orders", "ORDER_2")) is paths.MISSING
    assert not paths.exists(d, ("orders", "ORDER_1", "status", "x"))


def test_operations_change_the_document_and_say_what_they_did() -> None:
    d = doc()
    change = paths.set_(d, ("orders", "ORDER_1", "status"), "refund_submitted")
    assert change == paths.Change("set", "orders.ORDER_1.status", "open", "refund_submitted")
    assert d["orders"]["ORDER_1"]["status"] == "refund_submitted"
    assert paths.set_(d, ("refunds", "R1", "status"), "new").after == "new"  # type: ignore[union-attr]
    assert d["refunds"] == {"R1": {"status": "new"}}
    assert paths.increment(d, ("orders", "ORDER_1", "attempts"), 2).after == 2  # type: ignore[union-attr]
    paths.append(d, ("audit_log",), {"op": "x"})
    paths.append(d, ("audit_log",), {"op": "y"})
    assert [e["op"] for e in d["audit_log"]] == ["x", "y"]
    removed = paths.delete(d, ("refunds", "R1"))
    assert removed == paths.Change("delete", "refunds.R1", {"status": "new"}, None)
    assert "R1" not in d["refunds"]


def test_impossible_operations_are_errors_not_exceptions() -> None:
    d = doc()
    assert isinstance(paths.increment(d, ("orders", "ORDER_1", "status"), 1), PathError)
    assert isinstance(paths.append(d, ("orders", "ORDER_1", "status"), 1), PathError)
    assert isinstance(paths.delete(d, ("orders", "ORDER_9")), PathError)
    assert isinstance(paths.set_(d, ("orders", "ORDER_1", "status", "x"), 1), PathError)
    assert isinstance(paths.set_(d, ("orders", "ORDER_1", "items", "5"), 1), PathError)
