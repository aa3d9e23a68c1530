"""Fuzzing the loader and the linter (issue 6): whatever a file holds, they never raise,
and every finding is a known rule at a place inside the file.

Inputs are random text and bytes, YAML-shaped noise, and mutations of the repository's
own example cases (keys deleted, values of another type, random Unicode inserted, bytes
flipped), plus every truncation of one real case. Hypothesis runs derandomized (a fixed
seed per test) with a bounded number of examples, so CI runs are repeatable.

A whole lint of an example goes through lint's own per-file cache, as a user's second
lint does: the base repository's files are analysed once (by the first example) and read
back from the store afterwards, the example's file is analysed as it comes, and every
repo rule runs over all the files each time. Without it each example analysed the same
fifteen base files again, four fifths of these tests' CPU. The example file's own
analysis, whose findings are checked too, is the one that lint made (read back from its
store), not a second identical one.
"""

from __future__ import annotations

import atexit
import dataclasses
import io
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcase.config import Config
from evalcase.files import SourceFile, blob_id, classify
from evalcase.lint.linter import Linter, analyze
from evalcase.lint.rules import RULES
from evalcase.loader import iter_paths, load
from evalcase.model import Finding
from tests.helpers import BASE_REPO, REPO_ROOT

# Thousands of examples: run by `pytest --full` (CI), not in a developer's default run.
pytestmark = pytest.mark.slow

CASE_PATH = "datasets/sample_set/cases/refund_eligibility_900.yaml"
FIXTURE_PATH = "fixtures/state/order_900.yaml"
TRUNCATED = REPO_ROOT / "datasets/refund_regression_set/cases/tool_refund_check_008.yaml"
EXAMPLES = [
    TRUNCATED,
    REPO_ROOT / "datasets/refund_regression_set/cases/refund_rag_member_points_001.yaml",
    REPO_ROOT / "datasets/crm_safety_set/cases/crm_safety_bulk_delete_001.yaml",
    BASE_REPO / "fixtures/corpus/refund_policy_2026_07.yaml",
]

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CONFIG = Config(root=BASE_REPO)
# The per-file cache of whole lints: this process's own folder, never the repository's.
_LINT_CACHE = tempfile.mkdtemp(prefix="evalcase-fuzz-cache-")
atexit.register(shutil.rmtree, _LINT_CACHE, True)
LINT_CONFIG = dataclasses.replace(CONFIG, cache_dir=_LINT_CACHE)


def _lines(raw: bytes) -> int:
    return max(1, raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1))


def _check_findings(findings: Iterable[Finding], path: str, raw: bytes) -> None:
    lines = _lines(raw)
    for f in findings:
        assert f.code in RULES, f
        if f.path != path:
            continue
        assert 1 <= f.line <= lines, (f, lines)
        assert f.column >= 1, f


def _source(path: str, raw: bytes) -> SourceFile:
    kind, group = classify(path)
    return SourceFile(path, kind, group, blob_id(raw), size=len(raw))


class _Snapshot:
    """The base repository in memory, with one more file."""

    base: ClassVar[dict[str, bytes]] = {
        p.relative_to(BASE_REPO).as_posix(): p.read_bytes()
        for p in BASE_REPO.rglob("*.yaml")
        if p.is_file()
    }

    def __init__(self, path: str, raw: bytes) -> None:
        self.contents = {**self.base, path: raw}

    def files(self) -> list[SourceFile]:
        return sorted(_source(p, raw) for p, raw in self.contents.items())

    def read(self, paths: Iterable[str]) -> dict[str, bytes]:
        return {p: self.contents[p] for p in paths if p in self.contents}


def check(raw: bytes, path: str = CASE_PATH, *, repo: bool = True) -> None:
    """The loader, one file's analysis and (``repo``) a whole lint never raise, and all
    their findings are known rules inside the file."""
    doc = load(path, raw)
    _check_findings(doc.findings, path, raw)
    for _, _ in iter_paths(doc.data):
        pass
    if not repo:
        result = analyze(_source(path, raw), raw, CONFIG)
        _check_findings(result.findings, path, raw)
        return
    linter = Linter(LINT_CONFIG, _Snapshot(path, raw), jobs=1)
    try:
        lint = linter.run()
        linter.analyzer.save()  # the next example reads the base files' analyses
        # The file's analysis is the one the lint made (the same `analyze` on the same
        # bytes, the same checks), read back from its store, not computed a second time.
        result = linter.analyzer.analyze_files([_source(path, raw)])[path]
    finally:
        linter.close()
    _check_findings(result.findings, path, raw)
    _check_findings(lint.findings, path, raw)


# --- random input -------------------------------------------------------------------------

YAMLISH = st.text(
    alphabet=st.sampled_from(
        [*"{}[]:-,?&*!|>'\"#%@` \n\t\r.~<=", "a", "1", "x", "é", "退", "\u2028", "\x85"]
    ),
    max_size=200,
)


@FUZZ
@given(st.text(max_size=300))
def test_random_text(text: str) -> None:
    check(text.encode("utf-8"), repo=False)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(raw: bytes) -> None:
    check(raw, repo=False)


@FUZZ
@given(YAMLISH, st.sampled_from([CASE_PATH, FIXTURE_PATH]))
def test_yaml_shaped_noise(text: str, path: str) -> None:
    check(text.encode("utf-8"), path)


# --- mutations of real cases ----------------------------------------------------------------


def _dump(data: Any) -> bytes:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue().encode("utf-8")


ANY_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats()
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@FUZZ
@given(st.sampled_from(EXAMPLES), st.data())
def test_mutated_documents(example: Path, data: st.DataObject) -> None:
    doc = load("x.yaml", example.read_bytes())
    assert doc.ok
    tree = doc.data
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        paths = [p for p, _ in iter_paths(tree) if p]
        if not paths:
            break
        *where, key = data.draw(st.sampled_from(paths), label="path")
        parent = tree
        for part in where:
            parent = parent[part]
        if data.draw(st.booleans(), label="delete"):
            del parent[key]
        else:
            parent[key] = data.draw(ANY_VALUE, label="value")
    path = FIXTURE_PATH if "fixtures/" in example.as_posix() else CASE_PATH
    check(_dump(tree), path)


@FUZZ
@given(st.sampled_from(EXAMPLES), st.data())
def test_unicode_inserted(example: Path, data: st.DataObject) -> None:
    text = example.read_text("utf-8")
    for _ in range(data.draw(st.integers(1, 3), label="insertions")):
        at = data.draw(st.integers(0, len(text)), label="offset")
        text = text[:at] + data.draw(st.text(min_size=1, max_size=4), label="text") + text[at:]
    check(text.encode("utf-8"))


@FUZZ
@given(st.sampled_from(EXAMPLES), st.data())
def test_bytes_flipped(example: Path, data: st.DataObject) -> None:
    raw = bytearray(example.read_bytes())
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        at = data.draw(st.integers(0, len(raw) - 1), label="offset")
        raw[at] ^= data.draw(st.integers(1, 255), label="mask")
    check(bytes(raw))


@FUZZ
@given(st.sampled_from(EXAMPLES), st.data())
def test_breaks_git_does_not_count_move_nothing(example: Path, data: st.DataObject) -> None:
    """libyaml also breaks lines at a lone CR, NEL, U+2028 and U+2029; positions are still
    reported in the lines git and editors show, so a comment holding one moves nothing."""
    text = example.read_text("utf-8")
    lines = text.split("\n")
    at = data.draw(st.integers(0, len(lines) - 2), label="line")
    char = data.draw(st.sampled_from(["\r", "\x85", "\u2028", "\u2029"]), label="char")
    lines[at] += f" #{char}#"
    before = load("x.yaml", text.encode())
    after = load("x.yaml", "\n".join(lines).encode())
    assert [(f.code, f.line) for f in after.findings if f.code != "EC011"] == []
    assert [(f.code, f.line) for f in after.findings] == [("EC011", at + 1)]
    moved_to = after.positions  # built on each access: once here, not once per path
    for path, (line, column) in before.positions.items():
        moved = moved_to[path]
        assert moved[0] == line and (line == at + 1 or moved[1] == column), path


def test_every_truncation_of_a_real_case() -> None:
    """A plain loop: the example case cut at every byte (mid-character cuts included)."""
    raw = TRUNCATED.read_bytes()
    for end in range(len(raw) + 1):
        check(raw[:end], repo=False)
