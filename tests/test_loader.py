"""The loader: positions, YAML 1.2 semantics, and errors as findings."""

from __future__ import annotations

import re
import sys

import pytest

from evalcase.loader import Limits, load


def codes(raw: bytes) -> list[tuple[str, int, int]]:
    return [(f.code, f.line, f.column) for f in load("x.yaml", raw).findings]


def test_positions_of_keys_and_values_are_one_based() -> None:
    doc = load("x.yaml", b"a: 1\nb:\n  - x\n  - {c: d}\n")
    assert doc.data == {"a": 1, "b": ["x", {"c": "d"}]}
    assert doc.locate(("a",)) == (1, 4)
    assert doc.locate_key(("a",)) == (1, 1)
    assert doc.locate(("b", 0)) == (3, 5)
    assert doc.locate(("b", 1, "c")) == (4, 9)
    assert doc.locate_key(("b", 1, "c")) == (4, 6)
    # An unknown path falls back to its nearest located ancestor.
    assert doc.locate(("b", 1, "missing")) == (4, 5)


def test_yaml_1_2_core_schema() -> None:
    doc = load(
        "x.yaml",
        b"on: yes\noff: no\nd: 2026-07-08\no: 0o17\nh: 0x1F\nf: 1.5e3\nn: ~\nt: True\ns: '1'\n",
    )
    assert doc.data == {
        "on": "yes",  # YAML 1.1 would say True
        "off": "no",
        "d": "2026-07-08",  # timestamps stay strings
        "o": 15,
        "h": 31,
        "f": 1500.0,
        "n": None,
        "t": True,
        "s": "1",
    }
    assert doc.findings == []


def test_duplicate_key_names_both_lines() -> None:
    doc = load("x.yaml", b"risk_level: P1\ntitle: t\nrisk_level: P0\n")
    (finding,) = doc.findings
    assert (finding.code, finding.line) == ("EC002", 3)
    assert "line 1" in finding.message and "line 3" in finding.message
    assert finding.related == (("x.yaml", 1, 1),)
    assert doc.data["risk_level"] == "P1"


def test_tags_are_never_constructed() -> None:
    doc = load("x.yaml", b"a: !!python/object/apply:os.system ['echo pwned']\n")
    assert [f.code for f in doc.findings] == ["EC003"]
    assert doc.data == {"a": ["echo pwned"]}


def test_standard_tags_are_honoured() -> None:
    doc = load("x.yaml", b"a: !!str 123\nb: !!int '7'\n")
    assert doc.data == {"a": "123", "b": 7}
    assert doc.findings == []


def test_limits_are_configurable() -> None:
    nested = b"a: " + b"[" * 10 + b"]" * 10 + b"\n"
    assert codes(nested) == []
    tight = load("x.yaml", nested, Limits(max_depth=5))
    assert [f.code for f in tight.findings] == ["EC006"]
    assert tight.data is None
    big = b"a: " + b"x" * 200 + b"\n"
    assert [f.code for f in load("x.yaml", big, Limits(max_bytes=100)).findings] == ["EC005"]


def test_alias_expansion_is_counted() -> None:
    layers = [b"a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        refs = ", ".join(f"*a{i - 1}" for _ in range(10)).encode()
        layers.append(f"a{i}: &a{i} [".encode() + refs + b"]")
    doc = load("x.yaml", b"\n".join(layers) + b"\n")
    assert [f.code for f in doc.findings] == ["EC006"]


def test_small_aliases_are_fine() -> None:
    doc = load("x.yaml", b"a: &t [x, y]\nb: *t\n")
    assert doc.data == {"a": ["x", "y"], "b": ["x", "y"]}
    assert doc.findings == []


def test_findings_stay_inside_the_file() -> None:
    for raw in (b"a: [1,\n", b"a: 'open\n", b"a: 1\n  b: 2\n", b"\n\n\na: {"):
        doc = load("x.yaml", raw)
        assert doc.findings
        for f in doc.findings:
            assert 1 <= f.line <= doc.line_count
            assert f.column >= 1


def test_a_complex_key_does_not_move_a_literal_key_of_the_same_name() -> None:
    """A mapping used as a key is reported and dropped; what is inside it must not take
    the place of a real key spelled like the loader's internal marker."""
    text = '"<complex key>":\n  x: 1\n? {x: 2}\n: 3\n'
    doc = load("c.yaml", text.encode())
    assert doc.locate(("<complex key>", "x")) == (2, 6)
    assert doc.locate_key(("<complex key>",)) == (1, 1)


def test_ruamel_yaml_parses_alike_without_pyyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML's binding is used when installed (faster); without it ruamel.yaml's binding
    of the same C parser gives the same data, positions and findings."""
    from evalcase import loader

    texts = [
        b"case_id: a\nlist: [1, 2.5, true, null]\nnested:\n  - {k: v}\n",
        b"key: [unclosed\n",
        b"a: 1\na: 2\n",
        b"x: &anchor {y: 1}\nz: *anchor\n",
    ]

    def results() -> list[object]:
        loader._libyaml.cache_clear()
        out = []
        for raw in texts:
            doc = load("f.yaml", raw)
            out.append((doc.data, [(f.line, f.column, f.code, f.message) for f in doc.findings],
                        doc.locate(("case_id",))))  # fmt: skip
        return out

    with_pyyaml = results()
    assert loader._libyaml().events.__name__ == "yaml.events"
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "yaml", None)  # import yaml raises ImportError
        without = results()
        assert loader._libyaml().events.__name__ == "ruamel.yaml.events"
    loader._libyaml.cache_clear()
    assert without == with_pyyaml
    assert any(findings for _, findings, _ in with_pyyaml)  # the broken texts were found


def test_the_resolver_table_is_ruamel_yamls() -> None:
    """Plain scalars resolve by a copy of ruamel.yaml's YAML 1.2 table (importing ruamel
    for it would cost the commit hook 20 ms): the copy must stay the library's table."""
    from ruamel.yaml.resolver import VersionedResolver

    from evalcase.loader import _resolver_table

    def shape(table: dict[object, list[tuple[object, re.Pattern[str]]]]) -> dict[object, object]:
        return {k: [(str(tag), rx.pattern, rx.flags) for tag, rx in v] for k, v in table.items()}

    theirs = shape(VersionedResolver(version=(1, 2)).versioned_resolver)
    assert shape(_resolver_table()) == theirs  # type: ignore[arg-type]


def test_mapping_keys_are_every_key_at_any_depth() -> None:
    """Document.mapping_keys: the keys of every mapping (what EC106 asks before walking a
    case); None for a file read as JSON, which keeps no tables."""
    doc = load("x.yaml", b"a: 1\nb:\n  - c: {d: 2}\n  - [e]\nf: {g: x}\n")
    assert doc.mapping_keys() == {"a", "b", "c", "d", "f", "g"}
    assert load("x.yaml", b'{"a": {"b": 1}}').mapping_keys() is None
