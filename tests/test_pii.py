"""The personal-data detectors shared by lint (EC410), the no_privacy_leak grader and --redact."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _normalised_per_character(text: str) -> tuple[str, list[int]]:
    """The definition of pii.normalise, one character at a time."""
    import unicodedata

    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch.isdecimal() and not ch.isascii():
            piece = str(unicodedata.decimal(ch))
        else:
            piece = unicodedata.normalize("NFKC", ch)
        out.append(piece)
        where.extend([i] * len(piece))
    return "".join(out), [*where, len(text)]


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=30))
def test_normalise_takes_its_shortcuts_only_where_nothing_changes(text: str) -> None:
    """normalise skips the per-character walk for text already in NFKC without other
    scripts' digits: the same text and positions as the walk."""
    from evalcase.pii import normalise

    assert normalise(text) == _normalised_per_character(text)


@pytest.mark.parametrize(
    "text",
    [
        "（第 3 号变体）１３８",  # full-width: one character each (the translate path)
        "ﬁle ① ½ Ⅻ",  # ligature and compatibility forms: several characters each
        "e\u0301 가 ｶﾞ",  # combining marks stay where they are, one character at a time
        "٣٤ 电话１３９",  # other scripts' digits
    ],
)
def test_normalise_with_its_table_is_the_walk(text: str) -> None:
    """normalise remembers each character's piece and translates a text at once; twice,
    so the second pass reads only remembered pieces."""
    from evalcase.pii import normalise

    assert normalise(text) == _normalised_per_character(text)
    assert normalise(text) == _normalised_per_character(text)


def test_a_date_is_no_reason_to_ask_libphonenumber() -> None:
    """Every review record has a date; libphonenumber costs the commit hook 40 ms to
    import. A date alone is no hint, a number beside one still is."""
    from evalcase.pii import _PHONE_HINT

    for text in ("2026-12-01", "reviewed 2024/6/1", "(1999.12.31 签收)", "2026-12-01T10:00:00"):
        assert _PHONE_HINT.search(text) is None, text
    for text in ("2026-12-01 13800138000", "+2026-12-01", "20261201 0101"):
        assert _PHONE_HINT.search(text) is not None, text
    assert [m.kind for m in find_personal_data("2026-12-01 致电 13800138000")] == [MOBILE]


@pytest.mark.slow
def test_libphonenumber_finds_no_number_in_a_date() -> None:
    """What lets the hint skip dates: libphonenumber's matcher (leniency VALID, the default
    region) finds no number in a date of 1900-2099 written with "-", "/" or ".", zero-padded
    or not. It needs a valid number for the whole group of digits (a date's inner groups
    are too short for one), so only dates whose digits are a valid number need asking:
    1,180 of the 132,000 distinct digit strings, fixed-line numbers that the matcher
    refuses without their "0"."""
    import phonenumbers

    from evalcase.pii import DEFAULT_REGION

    dates = [
        (f"{year}", f"{month:{pad}}", f"{day:{pad}}")
        for year in range(1900, 2100)
        for month in range(1, 13)
        for day in range(1, 32)
        for pad in ("02d", "d")
    ]
    valid = [
        d
        for d in dates
        if phonenumbers.is_valid_number(phonenumbers.parse("".join(d), DEFAULT_REGION))
    ]
    assert valid, "the shortcut above is worth nothing if no date's digits are a number"
    found = [
        m.raw_string
        for d in valid
        for sep in "-/."
        for m in phonenumbers.PhoneNumberMatcher(
            sep.join(d), DEFAULT_REGION, leniency=phonenumbers.Leniency.VALID
        )
    ]
    assert found == []


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
