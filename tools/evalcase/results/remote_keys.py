"""Which keys under a remote's ``runs/`` are runs' manifests, listed even when one key is
unreadable.

The client refuses a key with a ``..``, ``.`` or empty path segment or a control
character, and fails the whole listing page that holds it (developmentseed/obstore#429).
:func:`run_keys` lists ``runs/`` in one request while that works; on such a failure it lists
one level at a time and a run folder holding such a key again from just past it. Keys
that are no run's manifest (:func:`run_key_problem`) are skipped and named; a folder whose
failed page may have hidden manifests is reported possibly incomplete.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from evalcase.model import FatalError


class Remote(Protocol):
    """What listing needs of a remote (:class:`evalcase.results.remote.Remote`)."""

    url: str

    def list(self, prefix: str, offset: str | None = None) -> Iterator[str]: ...

    def list_level(self, prefix: str) -> tuple[tuple[str, ...], tuple[str, ...]]: ...


class UnreadableKey(Exception):
    """A remote key the client refuses to parse (obstore fails the whole listing page
    that holds it: developmentseed/obstore#429). ``key`` is relative to the remote."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


_DEBUG_PATH = re.compile(r'\bpath: "((?:[^"\\]|\\.)*)"')
_DEBUG_ESCAPE = re.compile(r"\\(u\{([0-9a-fA-F]{1,6})\}|.)")
_DEBUG_CHARS = {"n": "\n", "r": "\r", "t": "\t", "0": "\0"}


def unreadable_key(exc: Exception, key_prefix: str) -> str | None:
    """The key an obstore ``InvalidPathError`` names, relative to the remote; None when
    the error is another one or its key cannot be read back for sure. The key is taken
    from the error's debug section, where it is escaped (a key may hold quotes and line
    breaks that would make the message's first line ambiguous)."""
    if type(exc).__name__ != "InvalidPathError":
        return None
    text = str(exc)
    _head, marker, debug = text.rpartition("\nDebug source:\n")
    found = _DEBUG_PATH.search(debug) if marker else None
    if found is None:
        return None

    def unescape(match: re.Match[str]) -> str:
        if match.group(2) is not None:
            return chr(int(match.group(2), 16))
        return _DEBUG_CHARS.get(match.group(1), match.group(1))

    key = _DEBUG_ESCAPE.sub(unescape, found.group(1))
    if not key.startswith(key_prefix) or bad_segment(key.removeprefix(key_prefix)) is None:
        return None
    return key.removeprefix(key_prefix)


def bad_segment(key: str) -> int | None:
    """Where the first segment the client refuses starts in ``key`` (empty, ``.``, ``..``,
    or holding an ASCII control character), or None when it reads every segment (one
    trailing ``/``, a folder marker, is accepted)."""
    start = 0
    parts = key.split("/")
    if key.endswith("/"):
        parts.pop()
    for part in parts:
        if part in ("", ".", "..") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in part):
            return start
        start += len(part) + 1
    return None


def _past(key: str, at: int) -> str:
    """The smallest key the client reads that a listing may restart after, skipping
    ``key`` (whose first refused segment starts at ``at``). Every key between the two
    holds a refused segment too, except the returned key itself, which is never a run's
    key (it ends in a space or ``0``, not ``.json``, or has two segments)."""
    segment = key[at:].split("/", 1)[0]
    for index, char in enumerate(segment):
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return key[: at + index] + " "
    if key[at + len(segment) : at + len(segment) + 1] == "/":
        return key[: at + len(segment)] + "0"
    return key + " "


RUNS = "runs/"
# More unreadable keys than this in one listing (each costs a request to list past it):
# the listing is refused.
MAX_UNREADABLE_KEYS = 1000
_MANIFEST_NAME = re.compile(r"[0-9a-f]{64}\.json")


def run_key_problem(key: str) -> str | None:
    """Why a key under ``runs/`` is no run's manifest key (``runs/<run_id>/<sha256>.json``,
    the run's folder beginning with a letter or digit), or None when it is one."""
    at = bad_segment(key)
    if at is not None:
        segment = key[at:].split("/", 1)[0]
        return (
            f"a {segment!r} path segment" if segment in ("", ".", "..") else "a control character"
        )
    parts = key.split("/")
    if len(parts) != 3 or parts[0] != RUNS.rstrip("/"):
        return "not runs/<run_id>/<sha256>.json"
    if not _is_run_folder(parts[1]):
        return "a run folder not beginning with a letter or digit"
    if not _MANIFEST_NAME.fullmatch(parts[2]):
        return "not a manifest's name (<sha256>.json)"
    return None


def _is_run_folder(name: str) -> bool:
    return name[:1].isascii() and name[:1].isalnum()


@dataclass(frozen=True)
class RunKeys:
    """What :func:`run_keys` found under ``runs/``."""

    keys: tuple[str, ...]  # the run keys found
    skipped: tuple[str, ...]  # "'key' (why)": keys that are no run's, left alone
    incomplete: tuple[str, ...]  # "folder: why": keys there may not all have been listed


class _Walk:
    """The keys of ``runs/`` gathered past unreadable ones (see :func:`run_keys`)."""

    def __init__(self, remote: Remote) -> None:
        self.remote = remote
        self.keys: list[str] = []
        self.skipped: dict[str, str] = {}
        self.incomplete: list[str] = []
        self.restarts = 0

    def take(self, key: str) -> None:
        problem = run_key_problem(key)
        if problem is None:
            self.keys.append(key)
            return
        parts = key.split("/")
        # A folder inside a run's folder is named once, not by every key under it.
        deeper = len(parts) > 3 and bad_segment(key) is None
        self.skipped.setdefault("/".join(parts[:3]) + "/" if deeper else key, problem)

    def walk(self, prefix: str, depth: int) -> tuple[list[str], set[str]]:
        """Every key under ``prefix``, restarting after each unreadable one, and the
        folders (``runs/<name>/`` at ``depth``) that held an unreadable key further down.

        A failed page may have held readable keys before the unreadable one: none that
        matter when they all lie in the unreadable key's own folder at ``depth`` (listed
        on its own, or no run's), or when the unreadable key's name at ``depth`` is empty
        or begins below ``0`` (run folders and manifests begin with a letter or digit, so
        none sorts before it). Otherwise ``prefix`` is said to be possibly incomplete."""
        found: list[str] = []
        folders: set[str] = set()
        offset: str | None = None
        while True:
            try:
                for key in self.remote.list(prefix, offset):
                    found.append(key)
                return found, folders
            except UnreadableKey as exc:
                key = exc.key
                after = max(offset or "", found[-1] if found else "")
                at = bad_segment(key)
                if at is None or key <= after or not key.startswith(prefix):
                    raise FatalError(
                        f"{self.remote.url}: cannot list {prefix}: the listing did not move "
                        f"past the unreadable key {key!r}"
                    ) from exc
                self.skipped.setdefault(key, run_key_problem(key) or "unreadable")
                self.restarts += 1
                if self.restarts > MAX_UNREADABLE_KEYS:
                    raise FatalError(
                        f"{self.remote.url}: cannot list {RUNS}: over {MAX_UNREADABLE_KEYS} "
                        "keys the client cannot read (such as a '..' segment); delete them "
                        "from the bucket"
                    ) from exc
                parts = key.split("/")
                own = "/".join(parts[: depth + 1]) + "/"
                if at >= len(own):  # the unreadable segment is below the name at depth
                    folders.add(own)
                name = parts[depth] if len(parts) > depth else ""
                harmless = after.startswith(own) and at >= len(own)
                if not harmless and name[:1] >= "0" and prefix not in self.incomplete:
                    self.incomplete.append(prefix)
                offset = _past(key, at)

    def run_folders(self) -> list[str]:
        """``runs/<run_id>/`` of every run folder: one level listed, or (a name in
        ``runs/`` itself unreadable) every key walked."""
        try:
            objects, folders = self.remote.list_level(RUNS)
        except UnreadableKey:
            keys, below = self.walk(RUNS, 1)
            names = set(below)
            for key in keys:
                parts = key.split("/")
                if len(parts) >= 3 and _is_run_folder(parts[1]):
                    names.add(f"{RUNS}{parts[1]}/")
                else:
                    self.take(key)
            return sorted(names)
        for key in objects:
            self.take(key)
        return [folder.rstrip("/") + "/" for folder in folders]

    def folder(self, prefix: str) -> None:
        """The keys of one run folder: one level listed, or (an unreadable key directly in
        it) every key walked."""
        try:
            objects, folders = self.remote.list_level(prefix)
        except UnreadableKey:
            keys, _below = self.walk(prefix, 2)
            for key in keys:
                self.take(key)
            return
        for key in objects:
            self.take(key)
        for folder in folders:
            self.skipped.setdefault(folder.rstrip("/") + "/", "not a manifest (<sha256>.json)")


def run_keys(remote: Remote, run_ids: Iterable[str] | None = None) -> RunKeys:
    """The manifest keys under ``runs/`` (or those of the given runs), and every other key
    there, skipped with why. One listing of ``runs/`` when every key is readable (as a
    healthy remote's are); when the client refuses a key (obstore fails the whole page
    holding it), each run folder is listed on its own, one level at a time, so such a key
    stops only its own folder's listing, which then restarts after it."""
    walk = _Walk(remote)
    if run_ids is None:
        try:
            for key in remote.list(RUNS):
                walk.take(key)
            return RunKeys(tuple(walk.keys), _said(walk.skipped), ())
        except UnreadableKey:
            walk = _Walk(remote)
            prefixes = walk.run_folders()
    else:
        prefixes = [f"{RUNS}{run_id}/" for run_id in run_ids]
    for prefix in prefixes:
        walk.folder(prefix)
    incomplete = tuple(
        f"{prefix}: possibly incomplete: a key the client cannot list there may hide "
        "other keys of its listing page (delete the keys named above from the bucket)"
        for prefix in walk.incomplete
    )
    return RunKeys(tuple(walk.keys), _said(walk.skipped), incomplete)


def _said(skipped: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(f"{key!r} ({why})" for key, why in sorted(skipped.items()))
