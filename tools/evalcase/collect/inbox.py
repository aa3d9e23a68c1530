"""The inbox folder ``evalcase collect`` appends to and ``evalcase import`` reads.

Files ``traces-NNNNNN.jsonl``, each line one ExportTraceServiceRequest in OTLP/JSON.
Append-only: a line is written whole with one ``write`` on a file opened for appending,
flushed and fsynced before the sender hears 200; files are never rewritten; a file over
``max_file_bytes`` is closed and the next line starts a new one, and so does each new
``collect`` process, so a line torn by a kill is the last line of its file and never has
the next request glued to it. :func:`read_inbox` skips a line that is not a complete JSON
object (a torn last line) and says so. The folder is bounded: past ``max_bytes`` in all,
an append is refused (:class:`Full`) until files are taken away. One process at a time
(a lock file beside the files).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcase.model import FatalError

_NAME = re.compile(r"^traces-(\d{6,})\.jsonl$")


class Full(Exception):
    """The inbox is at its bound: nothing was written."""


def inbox_files(folder: Path) -> list[Path]:
    """The inbox's files, oldest first."""
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found)]


class Inbox:
    def __init__(self, folder: Path, max_bytes: int, max_file_bytes: int) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.max_file_bytes = max_file_bytes
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._lock = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise FatalError(f"cannot use the inbox {folder}: {exc.strerror}") from exc
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock)
            raise FatalError(
                f"the inbox {folder} is in use by another evalcase collect: stop it, or give "
                "this one another --inbox"
            ) from None
        files = inbox_files(folder)
        self._seq = int(_NAME.match(files[-1].name).group(1)) if files else 0  # type: ignore[union-attr]
        self._fd: int | None = None
        self._file_bytes = 0
        self.size = self._measure()

    def _measure(self) -> int:
        return sum(p.stat().st_size for p in inbox_files(self.folder))

    def append(self, request: dict[str, Any]) -> int:
        """``request`` written as one line, durable when this returns; its size."""
        line = (json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        if self.size + len(line) > self.max_bytes:
            self.size = self._measure()  # an import may have taken files away
            if self.size + len(line) > self.max_bytes:
                raise Full(
                    f"the inbox {self.folder} holds {self.size} bytes (bound {self.max_bytes})"
                )
        if self._fd is None or self._file_bytes + len(line) > self.max_file_bytes:
            self._rotate()
        assert self._fd is not None
        os.write(self._fd, line)
        os.fsync(self._fd)
        self._file_bytes += len(line)
        self.size += len(line)
        return len(line)

    def _rotate(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._seq += 1
        path = self.folder / f"traces-{self._seq:06d}.jsonl"
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        self._file_bytes = 0
        dir_fd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the new file's name survives a crash too
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        os.close(self._lock)


@dataclass(frozen=True)
class Skipped:
    path: Path
    line: int
    reason: str


def read_inbox(folder: Path) -> Iterator[tuple[Path, int, dict[str, Any]] | Skipped]:
    """Each request of the inbox (file, line number, request), or a :class:`Skipped` for
    a line that is not a whole JSON object (a line torn by a kill)."""
    for path in inbox_files(folder):
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                if not raw.endswith(b"\n"):
                    yield Skipped(path, number, "an incomplete last line (torn by a kill)")
                    continue
                try:
                    data = json.loads(raw)
                except ValueError as exc:
                    yield Skipped(path, number, f"not JSON: {exc}")
                    continue
                if isinstance(data, dict):
                    yield path, number, data
                else:
                    yield Skipped(path, number, "not a JSON object")


def default_inbox(folder: Path) -> Path | None:
    """``.git/evalcase/inbox`` of the git repository holding ``folder`` (the common git
    directory: outside the tracked tree, shared by its work trees, like the audit's
    facts); None outside a git repository."""
    from evalcase import gitio

    common = gitio.common_dir(folder.resolve())
    return None if common is None else common / "evalcase" / "inbox"


def parse_size(text: str) -> int:
    """``8M``, ``512K``, ``1G`` or a number of bytes; ValueError otherwise."""
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    value = text.strip().lower().removesuffix("b").removesuffix("i")
    scale = units.get(value[-1:], 1)
    number = value[:-1] if value[-1:] in units else value
    if not number.isdigit() or int(number) <= 0:
        raise ValueError(f"{text!r} is not a size (a number of bytes, or 512K, 8M, 1G)")
    return int(number) * scale
