"""evalcase.atomic: a file is replaced whole or not at all, by any number of writers."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from evalcase.atomic import replacing, write_atomic


@pytest.mark.parametrize(
    ("data", "expected"),
    [("héllo\n", "héllo\n".encode()), (b"\x00\xffbytes", b"\x00\xffbytes"), ("", b"")],
)
def test_text_is_utf8_and_bytes_are_kept(
    tmp_path: Path, data: str | bytes, expected: bytes
) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    write_atomic(target, data, durable=True)
    assert target.read_bytes() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_permissions_follow_the_umask_like_open(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "report.md", "x")
        (tmp_path / "plain.md").write_text("x")
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp_path / "report.md").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "plain.md").stat().st_mode) == 0o640


def test_missing_folders_only_with_parents(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "run.json"
    with pytest.raises(FileNotFoundError):
        write_atomic(deep, "{}")
    write_atomic(deep, "{}", parents=True)
    assert deep.read_text() == "{}"


def test_a_failed_rename_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report"
    target.mkdir()  # renaming a file over a folder fails
    (target / "kept").write_text("old")
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert (target / "kept").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_concurrent_writers_and_readers_never_see_a_mix(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    payloads = [bytes([65 + k]) * 200_000 for k in range(6)]
    write_atomic(target, payloads[0])
    seen: list[bytes] = []
    stop = threading.Event()

    def write(k: int) -> None:
        for _ in range(30):
            write_atomic(target, payloads[k])

    def read() -> None:
        while not stop.is_set():
            seen.append(target.read_bytes())

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(k,)) for k in range(len(payloads))]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    reader.join()
    assert seen, "the reader never read"
    assert all(data in payloads for data in seen)
    assert target.read_bytes() in payloads
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_block_that_raises_replaces_nothing(tmp_path: Path) -> None:
    target = tmp_path / "attempts.jsonl"
    target.write_text("old\n")
    with pytest.raises(ValueError, match="record 2"), replacing(target) as handle:
        handle.write(b"new 1\n")
        raise ValueError("record 2 cannot be redacted")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attempts.jsonl"]
    with replacing(target, durable=True) as handle:
        handle.write(b"new 1\n")
        handle.write(b"new 2\n")
    assert target.read_text() == "new 1\nnew 2\n"


def test_a_run_folder_is_never_created_through_a_committed_link(tmp_path: Path) -> None:
    """`outputs/<commit> -> elsewhere` (committed by a pull request): creating the run
    folder is refused, naming the link, and nothing is written outside."""
    from evalcase.atomic import UnsafePath
    from evalcase.run import outputs

    root, outside = tmp_path / "repo", tmp_path / "outside"
    (root / "outputs").mkdir(parents=True)
    outside.mkdir()
    (root / "outputs" / "trapcommit").symlink_to(outside)
    with pytest.raises(UnsafePath, match="trapcommit is a symbolic link"):
        outputs.create(root / "outputs", "trapcommit", "run-1", {"run_id": "run-1"}, base=root)
    assert list(outside.iterdir()) == []


def test_an_attempts_file_link_is_never_appended_to(tmp_path: Path) -> None:
    from evalcase.atomic import UnsafePath
    from evalcase.run import outputs

    root = tmp_path / "repo"
    folder = outputs.create(root / "outputs", "c", "run-1", {"run_id": "run-1"}, base=root)
    secret = tmp_path / "bashrc"
    secret.write_text("keep me", "utf-8")
    folder.attempts_file.unlink()
    folder.attempts_file.symlink_to(secret)
    with pytest.raises(UnsafePath, match="symbolic link"):
        folder.open_for_append()
    assert secret.read_text("utf-8") == "keep me"


def test_a_refused_link_is_a_clear_error_not_an_internal_one(tmp_path: Path) -> None:
    """A command that meets a link under outputs/ says so and exits 2, no internal error."""
    import click
    from click.testing import CliRunner

    from evalcase.atomic import UnsafePath
    from evalcase.commands.common import fatal_errors

    @click.command()
    @fatal_errors
    def cmd() -> None:
        raise UnsafePath(tmp_path / "outputs" / "c", tmp_path / "outputs" / "c", "a symbolic link")

    result = CliRunner().invoke(cmd, [])
    assert result.exit_code == 2
    assert "evalcase: error:" in result.output
    assert "internal error" not in result.output


def test_many_files_are_written_folder_by_folder_and_a_linked_one_is_refused(
    tmp_path: Path,
) -> None:
    from evalcase.atomic import UnsafePath, write_atomic_many

    root, outside = tmp_path / "repo", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    files = [(root / "a" / "b" / f"{n}.yaml", f"n: {n}\n") for n in range(3)]
    files.append((root / "c" / "d.yaml", b"d: 1\n"))
    write_atomic_many(files, base=root, parents=True)
    assert [(p.read_text("utf-8")) for p, _ in files] == ["n: 0\n", "n: 1\n", "n: 2\n", "d: 1\n"]
    assert sorted(p.name for p in (root / "a" / "b").iterdir()) == ["0.yaml", "1.yaml", "2.yaml"]
    (root / "c" / "d.yaml").unlink()
    (root / "c" / "d.yaml").symlink_to(outside / "secret")
    (root / "e").symlink_to(outside)
    with pytest.raises(UnsafePath, match=r"d\.yaml is a symbolic link"):
        write_atomic_many([(root / "c" / "d.yaml", "x")], base=root)
    with pytest.raises(UnsafePath, match="e is a symbolic link"):
        write_atomic_many([(root / "e" / "f.yaml", "x")], base=root, parents=True)
    assert list(outside.iterdir()) == []
