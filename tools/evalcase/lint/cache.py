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
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
from pathlib import Path
from typing import Any

_MAGIC = b"EVALCASE-LINT-CACHE-3\n"
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
    checksum, payload = body[:32], body[32:]
    if hashlib.blake2b(payload, digest_size=32).digest() != checksum:
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
        self._decoded: dict[str, Any] = {}
        self._runs: dict[str, Any] | None = None
        self.used: set[str] = set()
        self._files_dirty = False
        self._runs_dirty = False

    # --- per-file entries ------------------------------------------------------------
    def _file_entries(self) -> dict[str, bytes]:
        if self._files is None:
            entries = _read(self.directory / "files.cache", self.namespace) or {}
            self._files = {k: v for k, v in entries.items() if isinstance(v, bytes)}
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
        self._decoded[key] = value
        self.used.add(key)
        self._files_dirty = True

    # --- whole runs --------------------------------------------------------------------
    def get_run(self, key: str) -> Any:
        if self._runs is None:
            self._runs = _read(self.directory / "runs.cache", self.namespace) or {}
        return self._runs.get(key)

    def put_run(self, key: str, value: Any) -> None:
        self._runs = {key: value}
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
            if self._files is not None and (self._files_dirty or set(self._files) != self.used):
                kept = {k: v for k, v in self._files.items() if k in self.used}
                self._write("files.cache", kept)
            if self._runs_dirty and self._runs is not None:
                self._write("runs.cache", self._runs)
        except OSError:
            pass

    def _write(self, name: str, entries: dict[str, Any]) -> None:
        payload = marshal.dumps({"namespace": self.namespace, "entries": entries})
        checksum = hashlib.blake2b(payload, digest_size=32).digest()
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(_MAGIC + checksum + payload)
            os.replace(tmp, self.directory / name)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            raise
