"""One bad fixture gives findings on that fixture, not a cascade on every case using it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from tests.helpers import REPO_ROOT

TOOL = "fixtures/tool/order_lookup.yaml"
CORPUS = "fixtures/corpus/refund_policy_2026_07.yaml"


def _damage(text: str, how: str) -> str:
    if how == "syntax":
        return text.replace("data:\n", "data: [\n", 1)
    if how == "renamed":
        return text.replace("fixture_id: order_lookup", "fixture_id: order_lookup_new", 1)
    if how == "no_id":
        return text.replace("fixture_id: order_lookup\n", "", 1)
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["syntax", "renamed", "no_id"])
def test_a_broken_tool_fixture_is_reported_once_on_itself(tmp_path: Path, how: str) -> None:
    repo = tmp_path / "repo"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    users = [p for p in (repo / "datasets").rglob("*.yaml") if "order_lookup" in p.read_text()]
    assert len(users) > 3  # the fixture is used widely: a cascade would show
    target = repo / TOOL
    target.write_text(_damage(target.read_text("utf-8"), how), "utf-8")
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    paths = {f.path for f in result.findings if f.code.startswith(("EC0", "EC1", "EC2", "EC3"))}
    assert paths == {TOOL}, sorted((f.path, f.code) for f in result.findings)


def test_a_broken_corpus_does_not_cascade_into_corpus_references(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    target = repo / CORPUS
    target.write_text(target.read_text("utf-8").replace("data:\n", "data: [\n", 1), "utf-8")
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    paths = {f.path for f in result.findings if f.code.startswith(("EC0", "EC1", "EC2", "EC3"))}
    assert paths == {CORPUS}, sorted((f.path, f.code) for f in result.findings)
