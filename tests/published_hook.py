"""This project's pre-commit hook, published once per test run and consumed for real.

A snapshot of this project's installable files is committed to a temporary git
repository (the "published" evalcase); consumer repositories point their
.pre-commit-config.yaml at it and run the real pre-commit, which builds the hook's own
virtualenv from the snapshot (pip: about 6 s of CPU, not byte-compiled: PublishedHook.env).

Every test that runs the published hook shares one snapshot and one ``PRE_COMMIT_HOME``,
so that virtualenv is built once per run instead of once per test; what each test proves
(pre-commit installs the hook from a commit of this project, and the hook refuses or
accepts the commit) is unchanged. Under pytest-xdist the workers of one run share them
too: the snapshot is made under a file lock, and pre-commit builds its environments
under its own store lock, so two workers never build the same environment at once.

pip installs the hook's dependencies, and evalcase's build backend, from a wheelhouse
repacked from this interpreter's own distributions (tests/wheelhouse.py), with no
package index: the same versions the tests run against, no download on every run, and
no network needed (the wheelhouse is built once per machine and set of versions).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from tests import wheelhouse
from tests.helpers import GIT_ENV, REPO_ROOT, commit_all, init_repo

PROJECT_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml")
PROJECT_DIRS = ("tools", "schemas")


@dataclass(frozen=True)
class PublishedHook:
    repo: Path  # the git repository a consumer's `repo:` names
    rev: str  # the commit its `rev:` names
    home: Path  # PRE_COMMIT_HOME, where pre-commit keeps the hook's environment
    wheels: Path  # what pip installs the hook's environment from (tests/wheelhouse.py)

    def env(self) -> dict[str, str]:
        """The environment pre-commit and `git commit` run in."""
        env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(self.home)}
        env.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(self.wheels)})
        # pip byte-compiles every module it installs (3,400 files, phonenumbers' data and
        # duckdb's included): 8 of the environment's 14 s of CPU. Not here: the modules a
        # hook run imports (about 200) are compiled by the first run, into a folder of
        # this run's (nothing written into the test interpreter's own environment), and
        # read from there by the later runs. pip reads a variable's value as the option's:
        # PIP_COMPILE=0 is --no-compile (PIP_NO_COMPILE=1 would be --compile).
        env["PIP_COMPILE"] = "0"
        env["PYTHONPYCACHEPREFIX"] = str(self.home.parent / "pycache")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # The hook must run the package pre-commit installed, not this checkout.
        env.pop("PYTHONPATH", None)
        env.pop("PRE_COMMIT_FROM_REF", None)
        env.pop("PRE_COMMIT_TO_REF", None)
        return env

    def config(self, *hooks: str) -> str:
        """A .pre-commit-config.yaml using ``hooks`` of this snapshot."""
        listed = "".join(f"      - id: {hook}\n" for hook in hooks)
        return f"repos:\n  - repo: {self.repo}\n    rev: {self.rev}\n    hooks:\n{listed}"


def project_snapshot(dest: Path) -> str:
    """This project's installable files in a fresh git repository; returns the commit."""
    dest.mkdir(parents=True)
    for name in PROJECT_FILES:
        shutil.copy2(REPO_ROOT / name, dest / name)
    for name in PROJECT_DIRS:
        shutil.copytree(
            REPO_ROOT / name,
            dest / name,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".evalcase_cache"),
        )
    init_repo(dest)
    return commit_all(dest, "evalcase snapshot")


def publish(shared: Path) -> PublishedHook:
    """The run's one snapshot under ``shared`` (made by whichever worker comes first)."""
    shared.mkdir(parents=True, exist_ok=True)
    repo, home, done = shared / "evalcase", shared / "pre-commit-home", shared / "rev"
    with FileLock(str(shared / "publish.lock"), timeout=600):
        if not done.is_file():
            shutil.rmtree(repo, ignore_errors=True)  # left by an interrupted worker
            rev = project_snapshot(repo)
            done.write_text(rev, "utf-8")
    wheels = wheelhouse.cached(wheelhouse.project_requirements(repo / "pyproject.toml"))
    return PublishedHook(repo, done.read_text("utf-8").strip(), home, wheels)


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=1500
    )
