"""The personal-data detectors shared by lint (EC410) and the no_privacy_leak grader."""

from __future__ import annotations

import pytest

from evalcase.pii import (
    BANK_CARD,
    EMAIL,
    MOBILE,
    RESIDENT_ID,
    find_personal_data,
    luhn_valid,
    resident_id_valid,
)

FOUND = [
    ("请联系 13800138000", MOBILE),
    ("+86 138-0013-8000", MOBILE),
    ("手机：199 1234 5678。", MOBILE),
    ("身份证 11010519491231002X", RESIDENT_ID),
    ("身份证 11010519491231002x", RESIDENT_ID),
    ("卡号 6222 0212 3456 7890 128", BANK_CARD),
    ("卡号6222021234567890128", BANK_CARD),
    ("邮箱 zhang.san@corp.cn", EMAIL),
]

CLEAN = [
    "138****0001",
    "110101********1234",
    "6222 **** **** 0001",
    "z***@corp.cn",
    "buyer@example.com",
    "agent@shop.test",
    "ORDER_2001 over_2000 金额 2000 元",
    "trace 20260708120000",
    "订单号 202607081234567890",  # 18 digits, but no valid check digit or date
    "11010519491231002Y",  # wrong check digit
    "4111111111111111",  # a test card made of two digits
    "12800138000",  # not a mobile prefix
    "138001380001",  # 12 digits: part of a longer number
]


@pytest.mark.parametrize(("text", "kind"), FOUND)
def test_found(text: str, kind: str) -> None:
    kinds = [m.kind for m in find_personal_data(text)]
    assert kinds == [kind]
    match = find_personal_data(text)[0]
    assert "*" in match.masked
    assert match.masked not in text


@pytest.mark.parametrize("text", CLEAN)
def test_clean(text: str) -> None:
    assert find_personal_data(text) == []


def test_positions_are_of_the_value() -> None:
    text = "电话 13800138000 邮箱 a.b@corp.cn"
    found = find_personal_data(text)
    assert [text[m.start : m.end] for m in found] == ["13800138000", "a.b@corp.cn"]


def test_checksums() -> None:
    assert luhn_valid("79927398713")
    assert not luhn_valid("79927398710")
    assert resident_id_valid("11010519491231002X")
    assert not resident_id_valid("11010519491331002X")  # month 13
