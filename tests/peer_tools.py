"""Peer tools the export tests run (promptfoo's npm package, the OpenAI evals wheel),
installed once into a shared cache, atomically and under a lock.

``cached_install(name, version, install)`` returns ``<cache>/<name>-<version>``, complete:
the install runs in a temporary directory beside it, is marked complete, and is renamed
into place, all while holding ``<name>-<version>.lock`` (a file lock, so test runs sharing
the machine wait for each other instead of reading a half-written cache). An install
that is interrupted (killed, failed) leaves at most its temporary directory, which the
next install under the lock removes; the final directory exists only complete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

CACHE = (
    Path(os.environ.get("EVALCASE_TEST_CACHE", Path.home() / ".cache" / "evalcase-tests"))
    / "peer-tools"
)
MARKER = ".evalcase-complete"
LOCK_TIMEOUT_S = 3600  # a cold npm install on a loaded machine takes minutes


def cached_install(
    name: str, version: str, install: Callable[[Path], None], cache: Path = CACHE
) -> Path:
    """``install(tmp)`` fills ``tmp``; the result is ``cache/name-version``, complete."""
    final = cache / f"{name}-{version}"
    if (final / MARKER).is_file():
        return final
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / f"{name}-{version}.lock"), timeout=LOCK_TIMEOUT_S):
        if (final / MARKER).is_file():  # another run installed it while we waited
            return final
        # Left by interrupted installs: only the lock holder creates them.
        for stale in cache.glob(f".{name}-{version}.*"):
            shutil.rmtree(stale, ignore_errors=True)
        if final.exists():  # not complete (written without this lock): never reused
            shutil.rmtree(final)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-{version}.", dir=cache))
        try:
            install(tmp)
            (tmp / MARKER).write_text(version, "utf-8")
            tmp.rename(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final
