"""The personal-data detectors shared by lint (EC410), the no_privacy_leak grader and --redact."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.pii import (
    ADDRESS,
    BANK_CARD,
    EMAIL,
    MOBILE,
    PHONE,
    RESIDENT_ID,
    find_personal_data,
    luhn_valid,
    redact_text,
    resident_id_valid,
)
from tests.helpers import BASE_REPO

FOUND = [
    ("请联系 13800138000", MOBILE),
    ("+86 138-0013-8000", MOBILE),
    ("手机：199 1234 5678。", MOBILE),
    ("身份证 11010519491231002X", RESIDENT_ID),
    ("身份证 11010519491231002x", RESIDENT_ID),
    ("卡号 6222 0212 3456 7890 128", BANK_CARD),
    ("卡号6222021234567890128", BANK_CARD),
    ("邮箱 zhang.san@corp.cn", EMAIL),
    # every region, through libphonenumber
    ("call +1 415 555 0134 today", PHONE),
    ("UK office +44 20 7946 0958", PHONE),
    ("座机 010-62345678", PHONE),
    # NFKC first: full-width digits, plus sign and spaces, and a full-width at sign
    ("手机 １３９８７６５４３２１", PHONE),
    ("＋１　４１５　５５５　０１３４", PHONE),
    ("邮箱 zhang.san＠corp.cn", EMAIL),
    ("他住在朝阳区建国路88号3单元", ADDRESS),
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
    "金额 1,234,567.00 元",  # an amount
    "2026-07-08 12:00:00",  # a time
    "ORDER_14155550134",  # glued to an order prefix
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


def test_positions_are_of_the_original_text() -> None:
    text = "电话：１３９８７６５４３２１。"
    (match,) = find_personal_data(text)
    assert text[match.start : match.end] == "１３９８７６５４３２１"
    assert match.value == "13987654321" and match.normalised == "+8613987654321"
    assert redact_text(text) == "电话：139****4321。"


def test_one_number_written_three_ways_is_one_number() -> None:
    ways = ["13800138000", "+86 138-0013-8000", "１３８ ００１３ ８０００"]
    assert len({find_personal_data(w)[0].normalised for w in ways}) == 1


@pytest.mark.parametrize("leak", ["+1 415 555 0134", "１３９８７６５４３２１"])
def test_lint_ec410_finds_them(tmp_path: Path, leak: str) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    case = repo / "datasets" / "sample_set" / "cases" / "refund_eligibility_001.yaml"
    lines = case.read_text("utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("input:"))
    lines[at] = f'input: "我的电话是 {leak}，帮我查订单"'
    case.write_text("\n".join(lines) + "\n", "utf-8")
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    found = [(f.code, f.line) for f in result.findings if f.code == "EC410"]
    assert found == [("EC410", at + 1)]
    message = next(f.message for f in result.findings if f.code == "EC410")
    assert "a phone number" in message and leak not in message
