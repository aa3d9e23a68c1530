"""Files written whole or not at all, and never through a link under a data folder.

Every file evalcase writes for later reading (a run's ``run.json`` and attempts when
redacted, a report, an audit record, a judge's cached answer, a file pulled from a
remote, the Inspect task file) is written to a temporary file beside it and renamed over
it: a reader sees the old content or the new one, never a mix, and a write interrupted by
a crash, a full disk or a kill leaves the old file as it was. The temporary name carries
the process and the thread, so two writers of one file (two ``evalcase grade`` of one
run, two judge threads caching one answer) never write into the same temporary file; the
last rename wins. Permissions follow the umask, as with a plain ``open``.

**Data folders.** ``outputs/`` and ``reports/`` are data: anyone with a pull request can
commit ``outputs/<commit> -> /somewhere/else``. A writer there passes ``base``, the folder
it trusts (:func:`base_for`: the repository root, or the configured folder itself when it
is outside the repository), and every component below it is then walked one directory
at a time from an open directory (``O_NOFOLLOW``, ``dir_fd``): a symbolic link anywhere
on the way, or a file where a folder is expected, raises :class:`UnsafePath` naming it;
missing folders are created inside the folder already opened, never through a link; the
file itself (and its temporary file) is opened with ``O_NOFOLLOW`` and renamed within
that same opened folder. Nothing is written when the path is refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Literal

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafePath(Exception):
    """A write under a data folder refused: a component of its path is a symbolic link,
    or not a folder where a folder is expected. Nothing was written."""

    def __init__(self, path: Path, component: Path, why: str, doing: str = "writing") -> None:
        super().__init__(
            f"{component} {why}: evalcase never writes or reads through a link under "
            f"outputs/ or reports/ (refused {doing} {path}); remove it, or point [run] "
            "outputs_dir / [grade] reports_dir at the real folder"
        )
        self.path = path
        self.component = component


def _absolute(path: Path) -> Path:
    """Absolute and normalised without following a link (``resolve`` would)."""
    return Path(os.path.normpath(path.absolute()))


def base_for(root: Path, folder: Path) -> Path:
    """The folder a data folder's writes are checked from: the repository root when the
    folder is inside it (so ``outputs`` itself may not be a link either), else the folder
    itself (named in ``evalcase.toml`` or on the command line: trusted)."""
    root_abs = _absolute(root)
    folder_abs = _absolute(folder)
    return root_abs if folder_abs.is_relative_to(root_abs) else folder_abs


def _parts(path: Path, base: Path) -> tuple[Path, tuple[str, ...]]:
    base_abs = _absolute(base)
    path_abs = _absolute(path)
    try:
        rel = path_abs.relative_to(base_abs)
    except ValueError:
        raise UnsafePath(path, path, f"is outside {base_abs}") from None
    return base_abs, rel.parts


def _why(name: str, dir_fd: int, *, folder: bool = True) -> str | None:
    """What is wrong with ``name`` inside the open folder: a symbolic link, or (``folder``)
    not a folder; None when nothing is (or when it is missing)."""
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            return f"is a symbolic link (to {os.readlink(name, dir_fd=dir_fd)})"
        except OSError:
            return "is a symbolic link"
    if folder and not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    return None


@contextlib.contextmanager
def _open_folder(path: Path, base: Path, *, create: bool, doing: str = "writing") -> Iterator[int]:
    """An open file descriptor of the folder ``path``, reached from ``base`` without
    following a link (created on the way when ``create``)."""
    base_abs, parts = _parts(path, base)
    if create:
        base_abs.mkdir(parents=True, exist_ok=True)
    fd = os.open(base_abs, _DIR_FLAGS)
    try:
        here = base_abs
        for part in parts:
            here = here / part
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            try:
                child = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                why = _why(part, fd)
                if why is not None:
                    raise UnsafePath(path, here, why, doing) from None
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(path, here, "is not a folder", doing) from None
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def make_folders(path: Path, *, base: Path, exist_ok: bool = True) -> None:
    """Create the folder ``path`` and its missing parents below ``base``, never through a
    link (:class:`UnsafePath`); FileExistsError when it exists and not ``exist_ok``."""
    with _open_folder(path.parent, base, create=True) as fd:
        try:
            os.mkdir(path.name, 0o777, dir_fd=fd)
        except FileExistsError:
            why = _why(path.name, fd)
            if why is not None:
                raise UnsafePath(path, path, why) from None
            if not exist_ok:
                raise


def _refuse_link(path: Path, fd: int, doing: str = "writing") -> None:
    """Refuse ``path`` (a file, in the open folder ``fd``) when it is a symbolic link."""
    why = _why(path.name, fd, folder=False)
    if why is not None:
        raise UnsafePath(path, path, why, doing)


OpenMode = Literal["a", "a+", "r+"]
_OPEN_FLAGS = {
    "a": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    "a+": os.O_RDWR | os.O_APPEND | os.O_CREAT,
    "r+": os.O_RDWR,
}


def open_file(path: Path, mode: OpenMode, *, base: Path, parents: bool = False) -> IO[bytes]:
    """A binary handle on ``path`` (``a``: append, created when missing; ``a+``: append
    and read; ``r+``: read and write, must exist), reached from ``base`` without following
    a link and opened with ``O_NOFOLLOW``; the caller closes it."""
    with _open_folder(path.parent, base, create=parents) as dir_fd:
        _refuse_link(path, dir_fd)
        try:
            fd = os.open(path.name, _OPEN_FLAGS[mode] | _NOFOLLOW | os.O_CLOEXEC, 0o666,
                         dir_fd=dir_fd)  # fmt: skip
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(path, path, "is a symbolic link") from None
            raise
    return os.fdopen(fd, {"a": "ab", "a+": "ab+", "r+": "rb+"}[mode])


@contextlib.contextmanager
def replacing(
    path: Path, *, durable: bool = False, parents: bool = False, base: Path | None = None
) -> Iterator[IO[bytes]]:
    """A binary handle whose content replaces ``path`` when the block ends without an
    exception (and is thrown away when it raises): for content written piece by piece.

    ``durable``: the data reaches the disk before the rename (fsync), so the new name
    never points at lost blocks after a power cut; for records a run resumes from.
    ``parents``: create the missing folders first. ``base``: ``path`` is under a data
    folder, checked from ``base`` down (see the module's docstring)."""
    checked = base is not None
    if base is None:
        if parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        base, parents = path.parent, False
    with (
        _open_folder(path.parent, base, create=parents) as dir_fd,
        _replacing_in(dir_fd, path, checked=checked, durable=durable) as handle,
    ):
        yield handle


@contextlib.contextmanager
def _replacing_in(dir_fd: int, path: Path, *, checked: bool, durable: bool) -> Iterator[IO[bytes]]:
    """:func:`replacing` in the open folder ``dir_fd`` (``path``'s)."""
    tmp = f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    if checked:
        _refuse_link(path, dir_fd)
    try:
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | os.O_CLOEXEC,
            0o666,
            dir_fd=dir_fd,
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(path, path.with_name(tmp), "is a symbolic link") from None
        raise
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def write_atomic(
    path: Path,
    data: bytes | str,
    *,
    durable: bool = False,
    parents: bool = False,
    base: Path | None = None,
) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8) in one rename; ``durable``,
    ``parents`` and ``base`` as for :func:`replacing`."""
    with replacing(path, durable=durable, parents=parents, base=base) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_atomic_many(
    files: Iterable[tuple[Path, bytes | str]], *, base: Path, parents: bool = False
) -> None:
    """Each file replaced as :func:`write_atomic` with ``base`` does it, each folder opened
    (and checked) once for all the files in it: for a thousand files at a time (a trace
    import's drafts), folder by folder in the order they first appear; one that fails
    stops the rest, those before it stay written."""
    by_folder: dict[Path, list[tuple[Path, bytes | str]]] = {}
    for path, data in files:
        by_folder.setdefault(path.parent, []).append((path, data))
    for folder, items in by_folder.items():
        with _open_folder(folder, base, create=parents) as dir_fd:
            for path, data in items:
                with _replacing_in(dir_fd, path, checked=True, durable=False) as handle:
                    handle.write(data.encode("utf-8") if isinstance(data, str) else data)


def read_bytes(path: Path, *, base: Path) -> bytes:
    """The content of the file ``path`` under a data folder, reached from ``base`` without
    following a link and opened with ``O_NOFOLLOW``: a link (to a secret outside, say) is
    refused (:class:`UnsafePath`), never read; FileNotFoundError when it is missing."""
    with _open_folder(path.parent, base, create=False, doing="reading") as dir_fd:
        _refuse_link(path, dir_fd, "reading")
        try:
            fd = os.open(path.name, os.O_RDONLY | _NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(path, path, "is a symbolic link", "reading") from None
            raise
    with os.fdopen(fd, "rb") as handle:
        return handle.read()
