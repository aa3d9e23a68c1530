"""This process's memo of per-file analyses (evalcase.index.analysis.MEMO): a file already
analysed with the same content and settings is not analysed again, whoever asks, and
nothing else is shared."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalcase.config import load_config
from evalcase.files import WorkTree
from evalcase.index import analysis
from evalcase.index.analysis import MEMO, Analyzer, _Analyses
from evalcase.lint.api import lint_repository
from tests.helpers import bundled_repo

CASE = "datasets/refund_regression_set/cases/refund_eligibility_001.yaml"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths analysed from now on (a fresh memo: what earlier tests left is gone)."""
    MEMO.clear()
    seen: list[str] = []
    real = analysis.analyze

    def counting(source: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(source.path)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(analysis, "analyze", counting)
    yield seen
    MEMO.clear()


def _results(root: Path, **settings: Any) -> dict[str, Any]:
    config = load_config(root)
    if settings:
        config = replace(config, **settings)
    snapshot = WorkTree(root, config.max_file_bytes)
    return Analyzer(config, snapshot, jobs=1).analyze_files(snapshot.files())


def test_a_second_repository_with_the_same_files_is_not_analysed_again(
    tmp_path: Path, counted: list[str]
) -> None:
    one, two = bundled_repo(tmp_path / "one"), bundled_repo(tmp_path / "two")
    first = _results(one)
    assert CASE in counted and len(counted) == len(first)
    counted.clear()
    (two / CASE).write_text((two / CASE).read_text("utf-8") + "# edited\n", "utf-8")
    second = _results(two)
    assert counted == [CASE]  # only the changed file; every other one is remembered
    assert {p: r for p, r in second.items() if p != CASE} == {
        p: r for p, r in first.items() if p != CASE
    }


def test_other_settings_or_no_cache_analyse_afresh(tmp_path: Path, counted: list[str]) -> None:
    repo = bundled_repo(tmp_path / "repo")
    _results(repo)
    counted.clear()
    # A configuration made in code, without raw sections: its setting still tells it apart.
    deep = _results(repo, max_depth=3)
    assert CASE in counted
    assert any(f.code == "EC006" for f in deep[CASE].findings)
    counted.clear()
    lint_repository(load_config(repo), use_cache=False, jobs=1)
    assert CASE in counted  # --no-cache: nothing remembered is used


def test_a_lint_through_the_memo_fills_its_store_and_finds_the_same(
    tmp_path: Path, counted: list[str]
) -> None:
    one, two = bundled_repo(tmp_path / "one"), bundled_repo(tmp_path / "two")
    cold = lint_repository(load_config(one), jobs=1)
    assert CASE in counted
    counted.clear()
    through_memo = lint_repository(load_config(two), jobs=1)
    assert counted == [] and through_memo.files_checked == cold.files_checked > 100
    assert through_memo.findings == cold.findings
    MEMO.clear()
    warm = lint_repository(load_config(two), jobs=1)
    assert counted == []  # answered by the store the memo's answers filled
    assert warm.findings == cold.findings


def test_the_memo_is_bounded() -> None:
    memo = _Analyses()
    columns: Any = ("case", None, None, [], ("", "", ""))
    memo.put(("big",), (b"x" * (_Analyses.ENTRY_MAX + 1), columns))
    assert memo.get(("big",)) is None
    entry = b"y" * _Analyses.ENTRY_MAX
    count = _Analyses.TOTAL_MAX // _Analyses.ENTRY_MAX
    for i in range(count + 2):
        memo.put((i,), (entry, columns))
    assert memo.get((0,)) is None and memo.get((1,)) is None  # the oldest were dropped
    assert memo.get((count + 1,)) is not None
    assert sum(memo.get((i,)) is not None for i in range(count + 2)) == count
