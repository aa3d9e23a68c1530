"""Wheels of the distributions installed in this interpreter, for pip to install offline.

pre-commit builds the published hook's virtualenv with ``pip install .`` in a snapshot of
this project (tests/published_hook.py): pip builds evalcase with its build backend in an
isolated environment, then resolves and installs every dependency. Without a pip cache
(this machine has none) it downloaded all of them, hatchling and duckdb included, on every
test run. :func:`build` writes a folder of wheels instead, repacked from the distributions
the test interpreter already has (their files as their RECORD lists them, with a new
RECORD), for the snapshot's dependencies and build requirements and everything they
require; the hook's environment is still built by pre-commit and pip from the snapshot,
with the same versions the tests run against, from ``PIP_FIND_LINKS`` with
``PIP_NO_INDEX``.

A file a distribution installed outside its site-packages folder (``../../bin/NAME``) is
left out: pip writes console scripts again from ``entry_points.txt``.

:func:`cached` keeps one wheelhouse per set of distributions (names, versions, tags) in
the tests' shared cache (tests/peer_tools.py: complete or absent, under a lock), so a
machine repacks them once, not once per test run.
"""

from __future__ import annotations

import base64
import hashlib
import re
import tomllib
import zipfile
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.peer_tools import CACHE, cached_install

_SKIPPED_META = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


class WheelhouseError(Exception):
    """A required distribution cannot be repacked (not installed, or not from a wheel)."""


def project_requirements(pyproject: Path) -> list[str]:
    """A project's dependencies and its build requirements, as pip would ask for them."""
    data = tomllib.loads(pyproject.read_text("utf-8"))
    return [*data["project"].get("dependencies", ()), *data["build-system"].get("requires", ())]


def closure(requirements: Iterable[str]) -> list[metadata.Distribution]:
    """The installed distributions that ``requirements`` need, transitively (markers
    evaluated for this interpreter; extras followed where a requirement names them)."""
    found: dict[str, metadata.Distribution] = {}
    queue = [(Requirement(r), "") for r in requirements]
    seen: set[tuple[str, str]] = set()
    while queue:
        req, extra = queue.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = _normal(req.name)
        for wanted in ["", *sorted(req.extras)]:
            if (name, wanted) in seen:
                continue
            seen.add((name, wanted))
            try:
                dist = found.get(name) or metadata.distribution(req.name)
            except metadata.PackageNotFoundError as e:
                raise WheelhouseError(f"{req.name} is not installed") from e
            found[name] = dist
            queue.extend((Requirement(r), wanted) for r in dist.requires or ())
    return sorted(found.values(), key=lambda d: _normal(d.metadata["Name"]))


def cached(requirements: Iterable[str], cache: Path = CACHE.parent / "wheelhouse") -> Path:
    """The folder of :func:`build`'s wheels for ``requirements``, built once per set of
    distributions they resolve to."""
    wanted = list(requirements)
    dists = closure(wanted)
    listed = "\n".join(
        f"{_normal(d.metadata['Name'])}=={d.version} {_tag(d.read_text('WHEEL') or '')}"
        for d in dists
    )
    key = hashlib.blake2b(listed.encode(), digest_size=8).hexdigest()
    return cached_install("wheels", key, lambda tmp: _build(tmp, dists), cache)


def build(dest: Path, requirements: Iterable[str]) -> list[Path]:
    """One wheel per distribution of :func:`closure` in ``dest``; returns their paths."""
    return _build(dest, closure(requirements))


def _build(dest: Path, dists: Iterable[metadata.Distribution]) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    return [repack(dist, dest) for dist in dists]


def repack(dist: metadata.Distribution, dest: Path) -> Path:
    """``dist``'s installed files as a wheel (stored, not compressed: pip only reads it)."""
    wheel_meta = dist.read_text("WHEEL")
    if wheel_meta is None or dist.files is None:
        raise WheelhouseError(f"{dist.metadata['Name']} was not installed from a wheel")
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    path = dest / f"{name}-{dist.version}-{_tag(wheel_meta)}.whl"
    record: list[str] = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as whl:
        info_dir = ""
        for file in dist.files:
            rel = file.as_posix()
            parts = rel.split("/")
            if parts[0] == ".." or "__pycache__" in parts or rel.endswith(".pyc"):
                continue
            if parts[0].endswith(".dist-info"):
                info_dir = parts[0]
                if len(parts) == 2 and parts[1] in _SKIPPED_META:
                    continue
            data = Path(str(dist.locate_file(file))).read_bytes()
            whl.writestr(rel, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{rel},sha256={digest.decode()},{len(data)}")
        if not info_dir:
            raise WheelhouseError(f"{dist.metadata['Name']} lists no .dist-info folder")
        record.append(f"{info_dir}/RECORD,,")
        whl.writestr(f"{info_dir}/RECORD", "\n".join(record) + "\n")
    return path


def _tag(wheel_meta: str) -> str:
    """The file name's tag triple from a WHEEL file's ``Tag:`` lines."""
    triples = [line.split(":", 1)[1].strip().split("-") for line in _tag_lines(wheel_meta)]
    if not triples:
        return "py3-none-any"
    return "-".join(".".join(sorted({t[i] for t in triples})) for i in range(3))


def _tag_lines(wheel_meta: str) -> Iterator[str]:
    return (line for line in wheel_meta.splitlines() if line.startswith("Tag:"))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
