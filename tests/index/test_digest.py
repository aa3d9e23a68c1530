"""The digests lint compares cases by (evalcase.index.digest)."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from evalcase.index.digest import _squeezed, copy_digest


def _squeezed_by_category(text: str) -> str:
    """The definition: NFKC, case-folded, without punctuation, separators, control and
    format characters."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZC")


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=40))
def test_a_squeezed_string_is_its_definition(text: str) -> None:
    assert _squeezed(text) == _squeezed_by_category(text)


def test_copies_that_differ_in_punctuation_spacing_width_and_case_have_one_digest() -> None:
    a = {"input": "请帮我退款，订单 ORDER_1。", "expected_behavior": ["说明政策"]}
    b = {"input": "请帮我退款 订单ＯＲＤＥＲ＿１!!", "expected_behavior": ["说明政策。"]}
    c = {"input": "请帮我退款，订单 ORDER_2。", "expected_behavior": ["说明政策"]}
    assert copy_digest(a, ()) == copy_digest(b, ())
    assert copy_digest(a, ()) != copy_digest(c, ())


def test_remembered_digests_keep_every_type_apart() -> None:
    """memo_digest remembers a digest by the value's marshal bytes: values that JSON
    writes alike (True and 1 and 1.0, 1 and "1" as keys) are remembered apart, and a
    value asked for again gets what computing it gives."""
    from evalcase.index.facts import memo_digest

    memo: dict[bytes, str] = {}
    values = [1, True, 1.0, "1", [1], (1,), {1: 2}, {"1": 2}, {True: 2}, None, [None, "a"]]
    for _ in range(2):
        for value in values:
            assert memo_digest(value, memo, repr) == repr(value)
    assert len(memo) == len(values)  # each remembered apart, once
