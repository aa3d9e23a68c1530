"""``[lint] max_state_fixture_bytes``: a state fixture over max_file_bytes is refused
(EC005) unless the configuration allows it; other files keep max_file_bytes; a state
fixture written as JSON is read (the JSON parser) with the same data YAML would give."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcase.config import load_config
from evalcase.index.dataset import load_dataset
from evalcase.lint.api import lint_repository
from evalcase.loader import Limits, load
from tests.helpers import commit_all, init_repo

ROWS = 15_000  # about 1.2 MB of JSON


def database() -> dict[str, object]:
    return {
        "flights": {
            f"HAT{i:05d}": {"origin": "JFK", "destination": "SFO", "seats": {"economy": i % 9}}
            for i in range(ROWS)
        }
    }


def fixture(fixture_id: str, kind: str, data: object) -> str:
    return json.dumps({
        "fixture_id": fixture_id, "fixture_version": "v1", "kind": kind,
        "description": "a large database", "source": "synthetic", "desensitized": True,
        "data": data,
    })  # fmt: skip


def repo(tmp_path: Path, config: str) -> Path:
    root = tmp_path / "repo"
    (root / "fixtures" / "state").mkdir(parents=True)
    (root / "fixtures" / "corpus").mkdir(parents=True)
    (root / "evalcase.toml").write_text(config, encoding="utf-8")
    (root / "fixtures" / "state" / "airline_db.yaml").write_text(
        fixture("airline_db", "state", database()), encoding="utf-8"
    )
    init_repo(root)
    commit_all(root, "a large state fixture")
    return root


def too_large(root: Path) -> list[str]:
    result = lint_repository(load_config(root), use_cache=False, jobs=1)
    return [f.path for f in result.findings if f.code == "EC005"]


def test_a_large_state_fixture_is_refused_by_default(tmp_path: Path) -> None:
    root = repo(tmp_path, "")
    assert (root / "fixtures/state/airline_db.yaml").stat().st_size > 1_000_000
    assert too_large(root) == ["fixtures/state/airline_db.yaml"]


def test_the_configuration_allows_large_state_fixtures_only(tmp_path: Path) -> None:
    root = repo(tmp_path, "[lint]\nmax_state_fixture_bytes = 5_000_000\n")
    passages = {"documents": [{"doc_id": "d", "passages": [
        {"passage_id": f"p{i}", "text": "x" * 100} for i in range(ROWS)]}]}  # fmt: skip
    (root / "fixtures/corpus/big_corpus.yaml").write_text(
        fixture("big_corpus", "corpus", passages), encoding="utf-8"
    )
    assert too_large(root) == ["fixtures/corpus/big_corpus.yaml"]  # not a state fixture


def test_a_state_fixture_written_as_json_reads_as_yaml_would(tmp_path: Path) -> None:
    text = fixture("airline_db", "state", {"a": [1, 2.5, None, True, "é\u2028"], "b": {}})
    fast = load("fixtures/state/airline_db.yaml", text.encode("utf-8"))
    # The same text, made YAML-only by a comment: the YAML builder reads it.
    slow = load("fixtures/state/airline_db.yaml", ("# yaml\n" + text).encode("utf-8"))
    assert fast.data == slow.data and not fast.findings
    duplicate = load("x.yaml", b'{"a": 1, "a": 2}')  # left to YAML, which says where
    assert [f.code for f in duplicate.findings] == ["EC002"]
    deep = load("x.yaml", b'{"a": [[[[[[1]]]]]]}', Limits(max_depth=4))
    assert deep.findings  # a limit still holds on the JSON path


def test_the_large_state_reaches_the_case(tmp_path: Path) -> None:
    root = repo(tmp_path, "[lint]\nmax_state_fixture_bytes = 5_000_000\n")
    dataset = root / "datasets" / "big_set"
    (dataset / "cases").mkdir(parents=True)
    (dataset / "dataset.yaml").write_text(
        "dataset_id: big_set\ndataset_version: v1\ntitle: t\ndescription: d\nowner: o\n",
        encoding="utf-8",
    )
    (dataset / "cases" / "tool_lookup_001.yaml").write_text(
        "case_id: tool_lookup_001\ncase_version: v1\ncase_types: [tool]\ninput: hi\n"
        "state: {fixtures: [airline_db]}\n",
        encoding="utf-8",
    )
    commit_all(root, "a case")
    loaded = load_dataset(root, "big_set", config=load_config(root))
    (task,) = loaded.tasks
    assert len(task.env.initial_state["flights"]) == ROWS


def test_a_state_fixtures_leaves_are_encoded_by_one_encoder_not_one_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # json.dumps with options makes an encoder per call: one per leaf (83,715 for tau2
    # airline's database) before. The same leaves, the same JSON text.
    from evalcase.index.expressions import leaves

    data = {"a": {"b": 1, "c": "é", "d": [3, {"z": 1, "y": 2}], "e": {}}, "f": None, "g": 1.5}
    doc = load("fixtures/state/db.json", fixture("db", "state", data).encode(), Limits())
    made: list[object] = []
    init = json.JSONEncoder.__init__

    def counted(self: json.JSONEncoder, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        init(self, *args, **kwargs)

    monkeypatch.setattr(json.JSONEncoder, "__init__", counted)
    found = leaves(doc, ("data",))
    assert made == []
    assert [(p, text) for p, text, _line, _col in found] == [
        ("a.b", "1"), ("a.c", '"é"'), ("a.d", '[3, {"y": 2, "z": 1}]'), ("a.e", "{}"),
        ("f", "null"), ("g", "1.5"),
    ]  # fmt: skip


def test_the_paths_of_a_state_are_every_prefix_of_every_leaf() -> None:
    # lint's state paths: each leaf and every dotted prefix of it, for keys holding dots
    # and empty keys too (the walk up stops at a prefix already known).
    from evalcase.lint.contract_state import _add

    leaves = ["a.b.c", "a.b.d", "a..b", ".x", "y.", "a", "k.l.m.n", "k.l"]
    paths: set[str] = set()
    found: set[str] = set()
    for leaf in leaves:
        _add(paths, found, leaf)
    expected = {
        ".".join(leaf.split(".")[:i]) for leaf in leaves for i in range(1, leaf.count(".") + 2)
    }
    assert paths == expected and found == set(leaves)
