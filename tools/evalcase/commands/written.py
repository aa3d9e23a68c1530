"""Writing a command's output file (``-o``): one clear error line, never a traceback.

A full disk (``-o /dev/full``), a folder that does not exist, a path without write
permission or a full standard output become a FatalError naming the path and the reason
(exit status 2), not an internal error.
"""

from __future__ import annotations

import errno
from pathlib import Path

import click

from evalcase.model import FatalError


def write_output(output: str, text: str) -> None:
    """Write ``text`` to the file ``output`` (UTF-8)."""
    path = Path(output)
    try:
        with path.open("w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise FatalError(f"cannot write {output}: {_reason(exc, path)}") from None


def echo_output(text: str) -> None:
    """Write ``text`` to standard output (a closed pipe is the caller's wrapper's)."""
    try:
        click.echo(text, nl=False)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise FatalError(f"cannot write to standard output: {_reason(exc, None)}") from None


def _reason(exc: OSError, path: Path | None) -> str:
    if exc.errno == errno.ENOENT and path is not None and not path.parent.is_dir():
        return f"its folder {path.parent} does not exist; create it first"
    return exc.strerror or str(exc)
