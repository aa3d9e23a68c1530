"""The run folder: ``outputs/<commit>/<run_id>/run.json`` and ``attempts.jsonl``.

``attempts.jsonl`` is append-only: one JSON line per finished attempt, flushed as it is
written, so a run killed at any moment keeps every attempt it finished. A line torn by
the kill is cut off before anything is appended again. ``run.json`` is replaced
atomically (write, then rename), never edited in place. Both are strict JSON
(:mod:`evalcase.contract.records`). ``.lock`` is the writer's lock (``flock``).

Every file and folder here is written through :mod:`evalcase.atomic`'s checked paths, from
the folder the writer trusts (``base``: the repository root, or the folder of runs when
none is given) down: a committed ``outputs/<commit> -> elsewhere`` is refused
(:class:`evalcase.atomic.UnsafePath`), never written through.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from evalcase import attempt_check, scrub
from evalcase.atomic import make_folders, open_file, write_atomic
from evalcase.contract import records
from evalcase.model import FatalError

LOCK_FILE = ".lock"

RUN_FILE = "run.json"
ATTEMPTS_FILE = "attempts.jsonl"


def write_json_atomic(path: Path, data: Mapping[str, Any], *, base: Path | None = None) -> None:
    data = scrub.active().data(data)  # a run's record never holds a secret (evalcase.scrub)
    write_atomic(path, records.dumps_readable(data) + "\n", durable=True, base=base)


def read_attempts(
    path: Path, damaged: list[records.Damaged] | None = None
) -> Iterator[dict[str, Any]]:
    """The records of an attempts file: damaged lines are skipped (and appended to
    ``damaged``), a torn last line too (:func:`evalcase.contract.records.read_jsonl`)."""
    return records.read_jsonl(path, damaged)


def _cut_torn_tail(path: Path, base: Path) -> None:
    """Drop a last line without its newline (the runner was killed mid-write)."""
    if not os.path.lexists(path):
        return
    with open_file(path, "r+", base=base) as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size == 0:
            return
        back = min(size, 1 << 20)
        while True:
            handle.seek(size - back)
            tail = handle.read(back)
            cut = tail.rfind(b"\n")
            if cut >= 0 or back == size:
                break
            back = min(size, back * 4)
        keep = 0 if cut < 0 else size - back + cut + 1
        if keep != size:
            handle.truncate(keep)


@dataclass
class RunFolder:
    path: Path
    base: Path | None = None  # checked from here down (evalcase.atomic); else outputs/

    @property
    def trusted(self) -> Path:
        return self.base if self.base is not None else self.path.parent.parent

    @property
    def run_file(self) -> Path:
        return self.path / RUN_FILE

    @property
    def attempts_file(self) -> Path:
        return self.path / ATTEMPTS_FILE

    def read_meta(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.run_file.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise FatalError(f"{self.run_file}: cannot read the run's record: {exc}") from exc
        return data

    def write_meta(self, meta: Mapping[str, Any]) -> None:
        write_json_atomic(self.run_file, meta, base=self.trusted)

    def attempts(self, damaged: list[records.Damaged] | None = None) -> Iterator[dict[str, Any]]:
        return read_attempts(self.attempts_file, damaged)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run's writer lock, or refuse: another runner is writing this run."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, as before
            yield
            return
        handle = open_file(self.path / LOCK_FILE, "a+", base=self.trusted)
        try:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.seek(0)
                holder = handle.read().decode("utf-8", "replace").strip() or "another process"
                raise FatalError(
                    f"run {self.path.name} is being written by another runner ({holder}); "
                    "wait for it to finish, or stop it, before resuming"
                ) from None
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}\n".encode())
            handle.flush()
            yield
        finally:
            handle.close()

    def open_for_append(self) -> AttemptWriter:
        _cut_torn_tail(self.attempts_file, self.trusted)
        handle = open_file(self.attempts_file, "a", base=self.trusted)
        return AttemptWriter(io.TextIOWrapper(handle, encoding="utf-8"))


class AttemptWriter:
    """Appends one record per line, flushed at once (the driver is the only writer).

    The scrubber is built when the writer opens (the secrets registered and the
    environment's values at the start of the run), not again for every record: reading
    the whole environment per record cost more than writing it."""

    def __init__(self, handle: IO[str]) -> None:
        self.handle = handle
        self.scrubber = scrub.active()

    def write(self, record: Mapping[str, Any]) -> None:
        attempt_check.check_written(record)
        self.handle.write(self.scrubber.json_line(record, records.dumps) + "\n")
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


def create(
    outputs: Path, commit: str, run_id: str, meta: Mapping[str, Any], *, base: Path | None = None
) -> RunFolder:
    """A new run folder (FileExistsError when it exists), checked from ``base`` (else the
    folder of runs) down."""
    path = outputs / commit / run_id
    folder = RunFolder(path, base)
    make_folders(path, base=folder.trusted, exist_ok=False)
    folder.write_meta(meta)
    open_file(folder.attempts_file, "a", base=folder.trusted).close()
    return folder


def find(outputs: Path, run_id: str, *, base: Path | None = None) -> RunFolder:
    if not run_id or "/" in run_id or run_id.startswith("."):
        raise FatalError(f"not a run id: {run_id!r}")
    found = sorted(p for p in outputs.glob(f"*/{run_id}") if (p / RUN_FILE).is_file())
    if not found:
        raise FatalError(f"no run {run_id!r} under {outputs} (evalcase runs lists them)")
    return RunFolder(found[0], base)


def all_runs(outputs: Path) -> list[RunFolder]:
    if not outputs.is_dir():
        return []
    return [RunFolder(p.parent) for p in outputs.glob(f"*/*/{RUN_FILE}")]
