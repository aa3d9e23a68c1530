"""The paths a from_expected_calls failure names: every differing leaf, found by walking
only the subtrees that differ, the same as flattening both states and comparing."""

from __future__ import annotations

import copy
import random
from typing import Any

from evalcase.grade.expr import MISSING, get_path
from evalcase.grade.graders.state_match import _differences


def flat(doc: Any, prefix: str = "") -> dict[str, Any]:
    """The reference (the grader's earlier code): every leaf by dotted path (an empty
    mapping is a leaf)."""
    if isinstance(doc, dict) and doc:
        out: dict[str, Any] = {}
        for key, value in doc.items():
            out.update(flat(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: doc}


def reference(final: dict[str, Any], gold: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for root in sorted(set(final) | set(gold), key=str):
        got, want = get_path(final, root), get_path(gold, root)  # as the grader reads a root
        if got == want:
            continue
        if isinstance(got, dict) and isinstance(want, dict):
            mine, theirs = flat(got, root), flat(want, root)
            out += sorted(
                p for p in set(mine) | set(theirs) if mine.get(p, MISSING) != theirs.get(p, MISSING)
            )
        else:
            out.append(root)
    return out


def test_one_changed_reservation_among_many() -> None:
    initial = {
        "reservations": {
            f"R{i}": {"status": "ok", "flights": [i], "extra": {}} for i in range(500)
        },
        "users": {"u": {"name": "A"}},
    }
    final = copy.deepcopy(initial)
    final["reservations"]["R7"]["status"] = "cancelled"
    final["reservations"]["R9"]["extra"] = {"bags": 2}
    del final["reservations"]["R11"]
    final["reservations"]["R900"] = {"status": "new"}
    assert _differences(final, initial, []) == [
        "reservations.R11.extra",
        "reservations.R11.flights",
        "reservations.R11.status",
        "reservations.R7.status",
        "reservations.R9.extra",
        "reservations.R9.extra.bags",
        "reservations.R900.status",
    ]
    assert _differences(final, initial, []) == reference(final, initial)
    assert _differences(final, initial, ["users"]) == []
    assert _differences(final, initial, ["reservations.R7"]) == ["reservations.R7.status"]


def test_the_same_paths_as_flattening_dotted_keys_included() -> None:
    rnd = random.Random(7)
    keys = ["a", "b", "c", "a.b", "x.y", "y", "10"]

    def document(depth: int) -> Any:
        if depth > 3 or rnd.random() < 0.3:
            return rnd.choice([1, 2, "s", None, [1], [], {}, True])
        return {k: document(depth + 1) for k in rnd.sample(keys, rnd.randint(0, 4))}

    def changed(doc: dict[str, Any]) -> dict[str, Any]:
        doc = copy.deepcopy(doc)
        for _ in range(rnd.randint(0, 3)):
            node = doc
            while node and rnd.random() < 0.6:
                nxt = node[rnd.choice(list(node))]
                if not isinstance(nxt, dict):
                    break
                node = nxt
            key = rnd.choice(keys[:4])
            if key in node and rnd.random() < 0.3:
                del node[key]
            else:
                node[key] = document(2)
        return doc

    compared = 0
    for _ in range(3000):
        final = document(0)
        if not isinstance(final, dict):
            continue
        gold = changed(final)
        assert _differences(final, gold, []) == reference(final, gold), (final, gold)
        compared += 1
    assert compared > 1000
