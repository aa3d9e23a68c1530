"""Shared test helpers: real git repositories in temporary folders, and running evalcase."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import HTTPServer
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[1]
# Every bundled dataset (datasets/<id>/dataset.yaml): tests that walk "each bundled
# dataset" read this, so a new dataset is covered without editing a list per test.
BUNDLED_DATASETS = tuple(
    sorted(p.parent.name for p in (REPO_ROOT / "datasets").glob("*/dataset.yaml"))
)
BASE_REPO = Path(__file__).parent / "rules" / "base_repo"
# serve_forever's keyword arguments for the suite's HTTP servers: shutdown() waits for
# the serving loop to look at its flag again, every 0.5 s by default, which was most of
# the wall time of many a test.
POLL = {"poll_interval": 0.02}


@contextmanager
def serving(server: HTTPServer) -> Iterator[str]:
    """``server`` answering on a thread while the block runs, then shut down and closed;
    yields its address, ``http://127.0.0.1:PORT``."""
    thread = threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Eval Tester",
    "GIT_AUTHOR_EMAIL": "tester@example.invalid",
    "GIT_COMMITTER_NAME": "Eval Tester",
    "GIT_COMMITTER_EMAIL": "tester@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def module_from(path: Path, name: str) -> ModuleType:
    """The Python file at ``path`` (an example or a benchmark: no package) imported as a
    module called ``name``, registered in ``sys.modules`` (dataclasses look it up)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def git(repo: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(repo.parent)}
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def identify(repo: Path) -> None:
    """The test identity and no signing, in ``repo``'s own config: what four `git config`
    calls would write, appended in one go (a process each, and about 285 repositories in
    the suite); `git config --get` reads them back the same."""
    with open(repo / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(
            f"[user]\n\tname = {GIT_ENV['GIT_AUTHOR_NAME']}\n"
            f"\temail = {GIT_ENV['GIT_AUTHOR_EMAIL']}\n"
            "[commit]\n\tgpgsign = false\n[tag]\n\tgpgsign = false\n"
        )


def init_repo(path: Path, source: Path | None = None) -> Path:
    """A real git repository at ``path``, optionally seeded from ``source`` and committed."""
    if source is not None:
        shutil.copytree(source, path, dirs_exist_ok=True)
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    identify(path)
    if source is not None:
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "seed")
    return path


def bundled_repo(root: Path, ignored: tuple[str, ...] = ("/outputs/",)) -> Path:
    """This repository's datasets, fixtures, examples and evalcase.toml as a committed git
    repository at ``root`` (what runs of the bundled cases work in), with ``ignored``
    in its .gitignore. Small (about 130 files): each module makes its own, since its
    tests write runs and reports into it."""
    root.mkdir(parents=True)
    for folder in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    shutil.copy(REPO_ROOT / "evalcase.toml", root / "evalcase.toml")
    (root / ".gitignore").write_text("".join(f"{line}\n" for line in ignored), "utf-8")
    init_repo(root)
    commit_all(root, "datasets")
    return root


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """evalcase as a whole process, the way users and hooks run it."""
    full_env = {**os.environ, **GIT_ENV, **(env or {})}
    if "GITHUB_ACTIONS" not in (env or {}):
        full_env.pop("GITHUB_ACTIONS", None)
    # The package under test, whether installed or not.
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT / "tools"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return subprocess.run(
        [sys.executable, "-m", "evalcase", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        input=input,
        check=False,
    )


@contextmanager
def collector_as_found() -> Iterator[None]:
    """The cyclic collector on again at the end if it was on at the start: `evalcase`'s
    group turns it off for a short-lived process, and a test that calls the group in
    this process (click's runner) would leave it off for every later test of the worker,
    which then depend on the order the workers run them in."""
    import gc

    enabled = gc.isenabled()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def invoke(
    *args: str, cwd: Path, env: Mapping[str, str | None] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """evalcase in this process (click's CliRunner against ``evalcase.cli.main``), with the
    shape and environment of :func:`run_cli`: for tests that check a command's result, not
    its process (a whole process costs 0.25-0.36 s just to start). Keep :func:`run_cli`
    where the process is the point (exit status of a real process, signals, the sandbox,
    the hook, servers, a killed run) and where a process's own state is (``python -m``
    puts the current directory on ``sys.path``; a plugin or handler found through it, or
    through ``PYTHONPATH``, needs a process). The current directory is ``cwd`` for the call and
    restored after; the variables of ``env`` (and GIT_ENV) are set for the call only, a None
    value unsetting one; the cyclic collector, which the group turns off for a short-lived
    process, is turned back on (nothing is collected after the call: a command closes its
    stores itself, see tests/index/test_store.py). An exception that escapes the command
    comes back the way Python would print it: a traceback on stderr and exit status 1."""
    import gc
    import traceback

    from click.testing import CliRunner

    from evalcase.cli import main

    overrides: dict[str, str | None] = {**GIT_ENV, **(env or {})}
    if "GITHUB_ACTIONS" not in (env or {}):
        overrides["GITHUB_ACTIONS"] = None
    previous = Path.cwd()
    gc_enabled = gc.isenabled()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            main, list(args), input=input, env=overrides, prog_name="python -m evalcase"
        )
    finally:
        os.chdir(previous)
        if gc_enabled:
            gc.enable()
    stderr = result.stderr
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        assert result.exc_info is not None
        stderr += "".join(traceback.format_exception(*result.exc_info))
        code = 1
    return subprocess.CompletedProcess(
        [sys.executable, "-m", "evalcase", *args], code, result.stdout, stderr
    )
