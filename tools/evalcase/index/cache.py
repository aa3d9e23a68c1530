"""The lint cache: per-file results keyed by content, and the last whole run.

Keys are git blob ids (a hash of the bytes), never modification times, which a fresh CI
checkout resets. The cache is valid only for the evalcase version, schemas and config it
was written with. It is two marshal files, each guarded by a checksum: a truncated or
corrupted cache is ignored and rebuilt, so the cache can make lint faster but never make
it pass.

- ``runs.cache``: the findings of the last whole run, keyed by every file's blob id.
  A run where nothing changed reads only this small file.
- ``files.cache``: per file, its findings, facts and suppressions (each entry marshalled
  on its own and decoded only when asked for), read only when something changed.
  Entries added by runs that changed little go to a small ``files.delta`` beside it, so a
  pre-commit run does not rewrite the whole cache for one file; the delta is folded into
  ``files.cache`` (dropping entries no run uses any more) once it grows past
  ``DELTA_LIMIT`` entries.
"""

from __future__ import annotations

import marshal
import os
import tempfile
import zlib
from pathlib import Path
from typing import Any

_MAGIC = b"EVALCASE-LINT-CACHE-4\n"
DELTA_LIMIT = 2000
RUNS_KEPT = 4
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by evalcase.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def _read(path: Path, namespace: str) -> dict[str, Any] | None:
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    if not blob.startswith(_MAGIC):
        return None
    body = blob[len(_MAGIC) :]
    checksum, payload = body[:4], body[4:]
    if zlib.crc32(payload).to_bytes(4, "big") != checksum:
        return None
    try:
        data = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("namespace") != namespace:
        return None
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else None


class Cache:
    def __init__(self, directory: Path, namespace: str) -> None:
        self.directory = directory
        self.namespace = namespace
        self._files: dict[str, bytes] | None = None
        self._delta: dict[str, bytes] = {}
        self._new: set[str] = set()
        self._decoded: dict[str, Any] = {}
        self._runs: dict[str, Any] | None = None
        self.used: set[str] = set()
        self._files_dirty = False
        self._runs_dirty = False

    # --- per-file entries ------------------------------------------------------------
    def _file_entries(self) -> dict[str, bytes]:
        if self._files is None:
            entries = _read(self.directory / "files.cache", self.namespace) or {}
            delta = _read(self.directory / "files.delta", self.namespace) or {}
            self._delta = {k: v for k, v in delta.items() if isinstance(v, bytes)}
            self._files = {k: v for k, v in entries.items() if isinstance(v, bytes)}
            self._files.update(self._delta)
        return self._files

    def get_file(self, key: str) -> Any:
        if key in self._decoded:
            self.used.add(key)
            return self._decoded[key]
        blob = self._file_entries().get(key)
        if blob is None:
            return None
        try:
            value = marshal.loads(blob)
        except (EOFError, ValueError, TypeError):
            return None
        self._decoded[key] = value
        self.used.add(key)
        return value

    def put_file(self, key: str, value: Any) -> None:
        self._file_entries()[key] = marshal.dumps(value)
        self._new.add(key)
        self._decoded[key] = value
        self.used.add(key)
        self._files_dirty = True

    # --- whole runs --------------------------------------------------------------------
    def get_run(self, key: str) -> Any:
        if self._runs is None:
            self._runs = _read(self.directory / "runs.cache", self.namespace) or {}
        return self._runs.get(key)

    def put_run(self, key: str, value: Any) -> None:
        """Keep the last few runs: a pre-commit run and a plain run do not evict each other."""
        if self._runs is None:
            self.get_run(key)
        assert self._runs is not None
        self._runs.pop(key, None)
        self._runs[key] = value
        while len(self._runs) > RUNS_KEPT:
            del self._runs[next(iter(self._runs))]
        self._runs_dirty = True

    # --- writing -----------------------------------------------------------------------
    def save(self) -> None:
        """Write atomically; keep only the entries this run used. Never fatal."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tag = self.directory / "CACHEDIR.TAG"
            if not tag.exists():
                tag.write_text(_CACHEDIR_TAG)
                (self.directory / ".gitignore").write_text("# Created by evalcase.\n*\n")
            if self._files is not None and self._files_dirty:
                delta_keys = (set(self._delta) & self.used) | self._new
                if len(delta_keys) <= DELTA_LIMIT and (self.directory / "files.cache").exists():
                    self._write("files.delta", {k: self._files[k] for k in delta_keys})
                else:
                    kept = {k: v for k, v in self._files.items() if k in self.used}
                    self._write("files.cache", kept)
                    (self.directory / "files.delta").unlink(missing_ok=True)
            if self._runs_dirty and self._runs is not None:
                self._write("runs.cache", self._runs)
        except OSError:
            pass

    def _write(self, name: str, entries: dict[str, Any]) -> None:
        payload = marshal.dumps({"namespace": self.namespace, "entries": entries})
        # A checksum against truncation and corruption, not an attacker (see the module
        # docstring); crc32 reads 25 MB in a few milliseconds.
        checksum = zlib.crc32(payload).to_bytes(4, "big")
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(_MAGIC + checksum + payload)
            os.replace(tmp, self.directory / name)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            raise
