"""Files written whole or not at all.

Every file evalcase writes for later reading (a run's ``run.json`` and attempts when
redacted, a report, an audit record, a judge's cached answer, a file pulled from a
remote, the Inspect task file) is written to a temporary file beside it and renamed over
it: a reader sees the old content or the new one, never a mix, and a write interrupted by
a crash, a full disk or a kill leaves the old file as it was. The temporary name carries
the process and the thread, so two writers of one file (two ``evalcase grade`` of one
run, two judge threads caching one answer) never write into the same temporary file; the
last rename wins. Permissions follow the umask, as with a plain ``open``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def replacing(path: Path, *, durable: bool = False, parents: bool = False) -> Iterator[IO[bytes]]:
    """A binary handle whose content replaces ``path`` when the block ends without an
    exception (and is thrown away when it raises): for content written piece by piece.

    ``durable``: the data reaches the disk before the rename (fsync), so the new name
    never points at lost blocks after a power cut; for records a run resumes from.
    ``parents``: create the missing folders first."""
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            yield handle
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_atomic(
    path: Path, data: bytes | str, *, durable: bool = False, parents: bool = False
) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8) in one rename; ``durable``
    and ``parents`` as for :func:`replacing`."""
    with replacing(path, durable=durable, parents=parents) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
