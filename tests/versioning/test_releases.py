"""Version labels and release tag messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcase.config import Config
from evalcase.gitio import Tag
from evalcase.index.digest import DatasetContent, Entry
from evalcase.index.facts import ManifestFacts
from evalcase.versioning.tags import (
    Releases,
    format_message,
    next_version,
    parse_message,
    tag_pattern,
    version_number,
)


def test_versions_compare_by_number() -> None:
    assert version_number("v10") == 10 and version_number("v9") == 9
    assert version_number("v0") is None and version_number("10") is None
    assert version_number(None) is None and version_number("v1.2") is None
    assert next_version("v9") == "v10"
    assert next_version("v3", "v12", None) == "v13"
    assert next_version() == "v1"


def content() -> DatasetContent:
    return DatasetContent(
        dataset_id="refund_regression_set",
        dataset_dir="refund_regression_set",
        version="v2",
        manifest=ManifestFacts("datasets/refund_regression_set/dataset.yaml", "x"),
        cases=(Entry("a_case_001", "v3", "d1", "p1"), Entry("b case", "", "d2", "p2")),
        fixtures=(Entry("order_lookup", "v1", "f1", "p3"),),
        digest="abc",
    )


def test_the_tag_message_round_trips() -> None:
    message = format_message(content(), ("title", "metadata"), "refund_regression_set@v2")
    assert message.splitlines()[0] == "refund_regression_set v2: 2 cases, 1 fixture"
    digest, governance, cases, fixtures = parse_message(message)
    assert digest == "abc"
    assert governance == ("metadata", "title")
    assert cases == {"a_case_001": ("v3", "d1"), "b case": ("", "d2")}
    assert fixtures == {"order_lookup": ("v1", "f1")}
    assert parse_message("a tag somebody wrote by hand\n") == (None, None, None, None)


def test_release_tags_are_recognised_by_the_tag_format() -> None:
    config = Config(root=Path(), tag_format="ds/{dataset_id}/{dataset_version}")
    pattern = tag_pattern(config)
    match = pattern.fullmatch("ds/refund_regression_set/v12")
    assert match and match.group("dataset_id") == "refund_regression_set"
    assert pattern.fullmatch("refund_regression_set@v1") is None
    tags = [
        Tag("ds/a/v2", "c2", "digest: x\n"),
        Tag("ds/a/v10", "c10", "hand-written\n"),
        Tag("ds/a/v1", "c1", "digest: y\n"),
        Tag("unrelated", "c0", ""),
    ]
    releases = Releases.from_tags(tags, config)
    assert [r.version for r in releases.of("a")] == ["v1", "v2", "v10"]
    assert releases.highest("a") == "v10"
    latest = releases.latest("a", up_to="v9")
    assert latest is not None and latest.version == "v2"
    assert releases.get("a", "v10") is not None and not releases.get("a", "v10").parsed  # type: ignore[union-attr]
    assert Releases.from_tags(tags[:1], config).key != releases.key


def test_a_release_message_longer_than_a_command_line_is_tagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release of many cases lists every one in the tag message: megabytes at 100,000
    cases, more than one command-line argument may hold (128 KiB on Linux)."""
    from evalcase.gitio import Repo
    from tests.helpers import GIT_ENV, commit_all, git, init_repo

    repo_path = init_repo(tmp_path / "repo")
    (repo_path / "a.txt").write_text("a\n", "utf-8")
    commit_all(repo_path, "first")
    message = "".join(f"case_{i:06d} {i:024x}\n" for i in range(8_000))  # about 300 KB
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)  # the tagger's identity
    repo = Repo(repo_path)
    try:
        repo.create_annotated_tag("set@v1", message)
    finally:
        repo.close()
    assert git(repo_path, "cat-file", "-p", "set@v1").endswith(message)
