"""Where a ``cmd:`` agent runs: a fresh directory, a minimal environment, maybe a sandbox.

Every attempt gets its own temporary directory, removed when the attempt ends; the agent
starts there with ``HOME`` and ``TMPDIR`` inside it. Its environment is ``PATH``, ``LANG``
(and ``LC_ALL`` when set), ``HOME``, ``TMPDIR``, plus:

- the names listed in ``[run.agents.NAME] env = ["NAME", ...]``, copied from the
  runner's environment (an allow-list: nothing else of the runner's reaches the agent);
- the values of ``env = {NAME = "value"}`` (a table: fixed values written in the
  configuration).

A variable that holds a key the runner or the judge uses (``OPENAI_API_KEY``, the
``api_key_env`` of the judge or of any agent) is never passed, even when listed.

The program and its arguments are resolved against ``cwd`` (default: the repository
root): ``cmd:{python} examples/refund_agent/agent.py`` starts that file although the
agent's working directory is its temporary one.

A temporary directory keeps honest agents away from the answer key, not a determined one:
a program can walk up from its own path. ``sandbox = true`` (per agent, or ``[run]
sandbox`` for all) runs the agent under bubblewrap (``bwrap``, Debian's ``bubblewrap``):
its own mount, PID, IPC and network namespaces, seeing the system's read-only paths
(``/usr``, ``/bin``, ``/lib*``, ``/etc``), the Python installation, the program's own
directory (read-only) and its temporary directory, and nothing else: not ``datasets/``,
``fixtures/``, ``outputs/``, ``reports/`` or any cache. There is no network unless the
agent's ``network = true``. Without ``bwrap`` the run says so once and the other limits
hold.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

BASE_ENV = ("PATH", "LANG", "LC_ALL")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# Keys the runner or a judge may hold: never passed to an agent, even when listed.
ALWAYS_SECRET = frozenset({"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY"})
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# What a sandbox never shows, relative to the repository root.
HIDDEN = ("datasets", "fixtures", "outputs", "reports", ".evalcase_cache")
REAPER = Path(__file__).with_name("reaper.py")


class IsolationError(Exception):
    """The agent cannot be started as configured (a clear message for the record)."""


def agent_env(
    workdir: Path,
    allowed: Any,
    secret_names: Iterable[str] = (),
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The agent's whole environment (see the module doc)."""
    source = os.environ if source is None else source
    secrets = ALWAYS_SECRET | set(secret_names)
    env = {k: source[k] for k in BASE_ENV if k in source}
    env.setdefault("PATH", DEFAULT_PATH)
    env.setdefault("LANG", "C.UTF-8")
    home = workdir / "home"
    tmp = workdir / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1")
    if isinstance(allowed, Mapping):
        for name, value in allowed.items():
            if str(name) not in secrets:
                env[str(name)] = str(value)
    elif isinstance(allowed, list | tuple):
        for name in allowed:
            if str(name) in source and str(name) not in secrets:
                env[str(name)] = source[str(name)]
    return env


def resolve_argv(argv: list[str], base: Path) -> list[str]:
    """Arguments naming an existing path relative to ``base`` made absolute (the agent's
    working directory is its own temporary one)."""
    out = []
    for arg in argv:
        candidate = base / arg
        if arg and not arg.startswith("-") and not Path(arg).is_absolute() and candidate.exists():
            out.append(str(candidate.resolve()))
        else:
            out.append(arg)
    if out and os.sep not in out[0]:
        found = shutil.which(out[0])
        if found:
            out[0] = found
    return out


@functools.cache
def sandbox_problem() -> str | None:
    """None when bubblewrap works here, else why not (checked once per process)."""
    if not sys.platform.startswith("linux"):
        return "the sandbox needs Linux (bubblewrap)"
    found = shutil.which("bwrap")
    if found is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    try:
        probe = subprocess.run(
            [found, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not start: {exc}"
    if probe.returncode != 0:
        reason = probe.stderr.decode("utf-8", "replace").strip()[:200]
        return f"bubblewrap cannot create namespaces here: {reason}"
    return None


def _is_inside(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
    except ValueError:
        return False
    return True


def sandbox_argv(
    argv: list[str], workdir: Path, root: Path | None, network: bool, extra: Iterable[str] = ()
) -> list[str]:
    """``bwrap ... -- argv``: system paths, Python, the program's directory and the
    workdir; never a folder of case data."""
    bwrap = shutil.which("bwrap") or "bwrap"
    hidden = [(root / h).resolve() for h in HIDDEN] if root is not None else []
    binds: list[Path] = []
    binds += [Path(path) for path in SYSTEM_PATHS if Path(path).exists()]
    binds += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent]
    for arg in [*argv, *extra]:
        if not Path(arg).is_absolute() or not Path(arg).exists():
            continue
        real = Path(arg).resolve()
        target = real.parent if real.is_file() else real
        # A directory that holds case data is never shown whole: only the file itself.
        if any(_is_inside(h, target) or _is_inside(target, h) for h in hidden) or (
            root is not None and _is_inside(root.resolve(), target)
        ):
            target = real
            if any(_is_inside(target, h) for h in hidden):
                continue
        binds.append(target)
    out = [bwrap, "--die-with-parent", "--unshare-all", "--new-session"]
    if network:
        out.append("--share-net")
    # Fresh /tmp and /run first: a bind below them must come after, or it is hidden.
    out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    seen: set[str] = set()
    for path in binds:
        text = str(path)
        if text in seen or (not path.exists() and not path.is_symlink()):
            continue
        seen.add(text)
        out += ["--ro-bind", text, text]
    out += ["--bind", str(workdir), str(workdir), "--chdir", str(workdir), "--"]
    return out + argv


def reaper_argv(argv: list[str]) -> list[str]:
    """``argv`` started under the reaper (:mod:`evalcase.run.reaper`)."""
    return [sys.executable, "-I", "-S", str(REAPER), *argv]


def key_variables(run: Mapping[str, Any], grade: Mapping[str, Any]) -> list[str]:
    """Names of the variables that hold keys the runner or the judge uses: every
    ``..._env`` the configuration names (the ``api_key_env`` of each agent, judge and user
    simulator), the variables evalcase reads keys from by default, and the well-known ones.

    The same reading as the scrubber's (:func:`evalcase.scrub.sources_of`), so a variable
    masked in every record is also one no agent is given, whichever table names it."""
    from evalcase import scrub

    named = scrub.sources_of({"run": run, "grade": grade}).variables
    return sorted(ALWAYS_SECRET | set(scrub.DEFAULT_KEY_VARIABLES) | named)


def configure(
    spec: str, options: Mapping[str, Any], root: Path, sandbox_default: bool, secrets: list[str]
) -> dict[str, Any]:
    """A cmd: agent's options with what isolation needs: the repository root (hidden by
    the sandbox), the sandbox setting (the agent's, else ``[run] sandbox``) and the names
    never passed to it. Other agents' options are returned as they are."""
    out = dict(options)
    if not spec.startswith("cmd:"):
        return out
    out["root"] = str(root)
    out["sandbox"] = bool(out.get("sandbox", sandbox_default))
    out["secret_env"] = secrets
    return out
