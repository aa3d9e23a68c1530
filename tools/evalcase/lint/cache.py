"""The lint cache: per-file results keyed by content, and the last whole run.

Keys are git blob ids (a hash of the bytes), never modification times, which a fresh CI
checkout resets. The cache is valid only for the evalcase version, schemas and config it
was written with. It is one marshal file guarded by a checksum: a truncated or corrupted
cache is ignored and rebuilt, so the cache can make lint faster but never make it pass.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
from pathlib import Path
from typing import Any

_MAGIC = b"EVALCASE-LINT-CACHE-2\n"
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by evalcase.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


class Cache:
    def __init__(self, directory: Path, namespace: str) -> None:
        self.directory = directory
        self.file = directory / "lint.cache"
        self.namespace = namespace
        self.files: dict[str, Any] = {}
        self.runs: dict[str, Any] = {}
        self.used: set[str] = set()
        self.dirty = False
        self._load()

    def _load(self) -> None:
        try:
            blob = self.file.read_bytes()
        except OSError:
            return
        if not blob.startswith(_MAGIC):
            return
        body = blob[len(_MAGIC) :]
        checksum, payload = body[:32], body[32:]
        if hashlib.blake2b(payload, digest_size=32).digest() != checksum:
            return
        try:
            data = marshal.loads(payload)
        except (EOFError, ValueError, TypeError):
            return
        if not isinstance(data, dict) or data.get("namespace") != self.namespace:
            return
        files, runs = data.get("files"), data.get("runs")
        if isinstance(files, dict) and isinstance(runs, dict):
            self.files, self.runs = files, runs

    def get_file(self, key: str) -> Any:
        value = self.files.get(key)
        if value is not None:
            self.used.add(key)
        return value

    def put_file(self, key: str, value: Any) -> None:
        self.files[key] = value
        self.used.add(key)
        self.dirty = True

    def get_run(self, key: str) -> Any:
        return self.runs.get(key)

    def put_run(self, key: str, value: Any) -> None:
        self.runs = {key: value}
        self.dirty = True

    def save(self) -> None:
        """Write atomically; keep only what this run used. Failure to write is not fatal."""
        if not self.dirty and self.used == set(self.files):
            return
        files = {k: v for k, v in self.files.items() if k in self.used}
        payload = marshal.dumps({"namespace": self.namespace, "files": files, "runs": self.runs})
        checksum = hashlib.blake2b(payload, digest_size=32).digest()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tag = self.directory / "CACHEDIR.TAG"
            if not tag.exists():
                tag.write_text(_CACHEDIR_TAG)
                (self.directory / ".gitignore").write_text("# Created by evalcase.\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".lint.", suffix=".tmp")
            with os.fdopen(fd, "wb") as out:
                out.write(_MAGIC + checksum + payload)
            os.replace(tmp, self.file)
        except OSError:
            pass
