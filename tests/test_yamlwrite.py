"""`yamlwrite.dump_plain`: libyaml's speed, the round-trip dumper's text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from evalcase.loader import load
from evalcase.yamlwrite import dump_plain, round_trip_dump
from tests.helpers import REPO_ROOT


def test_dump_plain_writes_every_bundled_case_and_fixture_as_round_trip_dump_does() -> None:
    paths = sorted(REPO_ROOT.glob("datasets/*/cases/*.yaml"))[::3]
    paths += sorted(REPO_ROOT.glob("fixtures/*/*.yaml"))
    paths += sorted(REPO_ROOT.glob("tests/rules/samples/EC0*/good/*.yaml"))
    checked = 0
    for path in paths:
        data = load(path.name, path.read_bytes()).data
        if isinstance(data, dict):
            assert dump_plain(data) == round_trip_dump(data), path
            checked += 1
    assert checked > 100


def test_what_libyaml_would_write_otherwise_goes_through_the_round_trip_dumper() -> None:
    odd = {
        "multi": "line one\nline two",
        "quote": "it's: here",
        "plain_quote": "it's",
        "yes": "yes",
        "date": "2026-07-08",
        "number_text": "0123",
        "matrix": [[1, 2], [3]],
        "none": None,
        "float": 59.0,
        "list": [{"a": 1, "b": [True, "x"]}],
    }
    assert dump_plain(odd) == round_trip_dump(odd)
    assert load("x.yaml", dump_plain(odd).encode()).data == odd


_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=30
) | st.sampled_from(
    ["", "yes", "no", "null", "~", "true", "0", "0x1F", "1e5", ".5", "-1", "2026-07-08",
     "it's", "'q'", '"d"', "a: b", "- x", "#c", "&a", "*b", "!t", "%p", "@x", "`y", "{}", "[]",
     "x #y", " lead", "trail ", "TODO: x", "1:20", ">", "|", "?", "<EMAIL_1>", "ORDER_123"]
)  # fmt: skip
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: (
        st.lists(st.dictionaries(_TEXT, inner, max_size=4), max_size=4)
        | st.dictionaries(_TEXT, inner, max_size=5)
    ),
    max_leaves=30,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_TEXT, _VALUES, min_size=1, max_size=6))
@example({"<<": None})  # found by CI: libyaml wrote the key plain, a merge key read back
def test_dump_plain_without_its_check_reads_back_as_the_same_data(data: dict[str, Any]) -> None:
    from evalcase.yamlwrite import _plain

    assume(_plain(data) is not None)  # the rest goes through the round-trip dumper
    text = dump_plain(data, verify=False)
    back = load("x.yaml", text.encode("utf-8"))
    assert not back.findings and back.data == data, text
