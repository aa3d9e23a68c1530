"""The field chains of a CEL expression (evalcase.contract.selections), read from the
parsed tree: what EC328 checks against the states a tool meets."""

from __future__ import annotations

import pytest

from evalcase.contract.selections import INDEX, selections


def chains(source: str) -> dict[tuple[str, ...], tuple[tuple[int, int], ...]]:
    return {s.parts: s.places for s in selections(source) if not s.guarded}


def test_an_index_then_a_field_is_one_chain_with_each_parts_place() -> None:
    found = chains('accounts[args.account_id].ownr == "x"')
    assert found[("accounts", INDEX, "ownr")] == ((1, 1), (1, 9), (1, 27))
    assert ("args", "account_id") in found  # the index is read too


def test_places_count_lines_of_a_multiline_expression() -> None:
    found = chains("size(o) > 0 &&\n  orders[args.x].sku")
    assert found[("orders", INDEX, "sku")][-1] == (2, 18)


@pytest.mark.parametrize(
    "source",
    [
        "has(accounts[args.id].nick) && accounts[args.id].nick == 1",
        '"nick" in accounts[args.id] && accounts[args.id].nick == 1',
    ],
)
def test_a_tested_field_is_guarded(source: str) -> None:
    [guarded] = [s for s in selections(source) if s.parts == ("accounts", INDEX, "nick")]
    assert guarded.guarded


def test_names_a_comprehension_or_bind_introduces_are_not_free() -> None:
    found = chains("accounts.exists(a, a.owner == 1) && cel.bind(o, orders[1], o.total > 1)")
    assert set(found) == {("accounts",), ("orders", INDEX)}


def test_literals_and_calls_are_walked() -> None:
    found = chains('{"a": orders[args.x].total, "b": [size(x.y.z)]}')
    assert {("orders", INDEX, "total"), ("x", "y", "z")} <= set(found)


def test_an_expression_that_does_not_parse_has_no_chain() -> None:
    assert selections("1 +") == ()


def test_places_count_characters_not_bytes() -> None:
    source = '"退款" == x && orders[a].ownr'
    [_line, column] = chains(source)[("orders", INDEX, "ownr")][-1]
    assert source[column - 1 :] == "ownr"
