"""Where a ``cmd:`` agent runs: a fresh directory, a minimal environment, maybe a sandbox.

Every attempt gets its own temporary directory, removed when the attempt ends; the agent
starts there with ``HOME`` and ``TMPDIR`` set to it (one folder: a ``home`` and a ``tmp``
inside it, made and removed per attempt, were 0.35 ms of CPU an attempt on an ext4
``/tmp`` at concurrency 200, docs/performance.md). Its environment is ``PATH``, ``LANG``
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
a program can walk up from its own path. So ``cmd:`` agents run under bubblewrap
(``bwrap``, Debian's ``bubblewrap``) by default, wherever a real probe shows it can create
its namespaces (:func:`sandbox_problem`); ``sandbox = false`` (per agent, or ``[run]
sandbox`` for all) turns it off. The agent gets its own mount, PID, IPC and network
namespaces, a new ``/proc`` (its own processes only), the system's read-only paths
(``/usr``, ``/bin``, ``/lib*``, ``/etc``), the Python installation, each file named in its
command line (alone, never its folder), the ``sandbox_paths`` and its temporary directory,
and nothing else: not ``datasets/``, ``fixtures/``, ``outputs/``, ``reports/`` or any
cache. There is no network unless the agent's ``network = true``. Where the sandbox cannot
work the run says so once (:func:`decide` gives the warning; the CLI prints it) when
nothing asked for the sandbox; ``sandbox = true`` (the agent's or ``[run]``'s) and
``[run] require_sandbox = true`` refuse to run.

Sandboxed or not, the runner makes itself non-dumpable before the first agent starts
(:func:`protect_runner`), so that no agent reads its environment or memory in ``/proc``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
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
PR_SET_DUMPABLE = 4


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
    env.update(HOME=str(workdir), TMPDIR=str(workdir), PYTHONDONTWRITEBYTECODE="1")
    if isinstance(allowed, Mapping):
        for name, value in allowed.items():
            if str(name) not in secrets:
                env[str(name)] = str(value)
    elif isinstance(allowed, list | tuple):
        for name in allowed:
            if str(name) in source and str(name) not in secrets:
                env[str(name)] = source[str(name)]
    return env


def remove_workdir(workdir: Path) -> None:
    """The agent's folder removed: one ``rmdir`` when it is left empty, as made. Anything
    in it (files, folders, links) is removed by ``shutil.rmtree``, which follows no
    link. Its walk (a descriptor, a listing and a stat per folder) cost about 0.3 ms an
    attempt for a folder left as made."""
    try:
        workdir.rmdir()
    except OSError:
        shutil.rmtree(workdir, ignore_errors=True)


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
    """None when bubblewrap works here, else why not: a real probe, checked once per
    process. It starts ``true`` in a sandbox made as an agent's is (every namespace, a new
    ``/proc``, ``/dev`` and ``/tmp``): a ``bwrap`` that is installed but may not create
    user namespaces or mount ``/proc`` (a container without the privilege) fails it."""
    if not sys.platform.startswith("linux"):
        return "the sandbox needs Linux (bubblewrap)"
    found = shutil.which("bwrap")
    if found is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    program = shutil.which("true") or "/bin/true"
    workdir = Path(tempfile.mkdtemp(prefix="evalcase-probe-"))
    try:
        probe = subprocess.run(
            sandbox_argv([program], workdir, None, False, bwrap=found),
            capture_output=True,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not start: {exc}"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if probe.returncode != 0:
        reason = probe.stderr.decode("utf-8", "replace").strip()[:200]
        return f"bubblewrap cannot create its namespaces here: {reason or probe.returncode}"
    return None


@functools.cache
def protect_runner() -> bool:
    """Make this process non-dumpable (Linux ``prctl(PR_SET_DUMPABLE, 0)``), once, before
    any agent starts: its ``/proc/<pid>/environ``, ``mem``, ``cwd`` and ``fd`` then
    belong to root, and no other process of the same user (an unsandboxed agent) can read
    the keys in its environment or memory, follow its ``cwd`` to the repository, nor
    ptrace it (a process with ``CAP_SYS_PTRACE``, root's, still can). Processes it
    starts afterwards are dumpable again (``execve`` resets the flag), so it costs them
    nothing. False where there is no such call (not Linux): a harmless no-op."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _is_inside(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
    except ValueError:
        return False
    return True


def _python_paths(root: Path | None) -> list[Path]:
    """What the interpreter running evalcase needs (the one ``{python}`` names): its
    prefixes, or, for a prefix that holds the repository, only its library folders."""
    import sysconfig

    exe = Path(sys.executable)
    out = [exe, exe.resolve()]
    for prefix in {Path(sys.prefix), Path(sys.base_prefix)}:
        if root is not None and _is_inside(root.resolve(), prefix.resolve()):
            names = ("stdlib", "platstdlib", "purelib", "platlib")
            out += [Path(sysconfig.get_paths()[name]) for name in names]
            cfg = prefix / "pyvenv.cfg"
            out += [cfg] if cfg.is_file() else []
        else:
            out.append(prefix)
    return out


def shown_paths(root: Path | None, extra: Iterable[str]) -> list[str]:
    """Problems with ``sandbox_paths`` (the folders and files configured to be shown):
    each must be absolute and exist, and none may hold the repository or lie inside a
    folder of case data. Empty when they are all fine."""
    problems = []
    hidden = [(root / h).resolve() for h in HIDDEN] if root is not None else []
    for text in extra:
        path = Path(text)
        if not path.is_absolute() or not path.exists():
            problems.append(f"sandbox_paths: {text} is not an absolute path that exists")
            continue
        real = path.resolve()
        if root is not None and _is_inside(root.resolve(), real):
            problems.append(
                f"sandbox_paths: {text} holds the repository {root}: it would show the agent "
                "datasets/ and fixtures/; name the agent's own folder instead"
            )
        elif any(_is_inside(real, h) or _is_inside(h, real) for h in hidden):
            problems.append(f"sandbox_paths: {text} is or holds case data ({', '.join(HIDDEN)})")
    return problems


def sandbox_argv(
    argv: list[str],
    workdir: Path,
    root: Path | None,
    network: bool,
    extra: Iterable[str] = (),
    bwrap: str | None = None,
) -> list[str]:
    """``bwrap ... -- argv``: the system's paths, the Python running evalcase, each file
    named in ``argv`` (the file alone, never its folder), the ``extra`` paths
    (``sandbox_paths``) and the workdir; never a folder or file of case data."""
    bwrap = bwrap or shutil.which("bwrap") or "bwrap"
    hidden = [(root / h).resolve() for h in HIDDEN] if root is not None else []

    def secret(path: Path) -> bool:
        return any(_is_inside(path, h) for h in hidden)

    binds: list[tuple[Path, Path]] = []
    binds += [(Path(p), Path(p)) for p in SYSTEM_PATHS if Path(p).exists()]
    binds += [(p, p) for p in _python_paths(root)]
    for text in extra:
        path = Path(text)
        if path.is_absolute() and path.exists() and not secret(path.resolve()):
            binds.append((path, path))
    folders = [target for _, target in binds if target.is_dir()]
    for arg in argv:
        path = Path(arg)
        if not path.is_absolute() or not path.is_file():
            continue  # a folder named in argv is not shown: sandbox_paths names folders
        real = path.resolve()
        if secret(real) or secret(path.absolute()):
            continue
        # As named (the program looks itself up there) and where it really is (a
        # symlink), unless a folder shown already holds it.
        for target in dict.fromkeys([path, real]):
            if not any(_is_inside(target, folder) for folder in folders):
                binds.append((real, target))
    out = [bwrap, "--die-with-parent", "--unshare-all", "--new-session"]
    if network:
        out.append("--share-net")
    # A new /proc in the new PID namespace: the agent sees its own processes, none of the
    # runner's. Fresh /tmp and /run first: a bind below them must come after, or it is
    # hidden.
    out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    seen: set[str] = set()
    for source, target in binds:
        text = str(target)
        if text in seen or (not source.exists() and not source.is_symlink()):
            continue
        seen.add(text)
        out += ["--ro-bind", str(source), text]
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


@dataclass(frozen=True)
class Decision:
    """Whether an agent runs sandboxed, and what the run says about it (once)."""

    sandbox: bool
    warning: str | None = None
    error: str | None = None


def decide(
    options: Mapping[str, Any],
    run_default: bool | None,
    require: bool,
    root: Path | None = None,
    problem: Callable[[], str | None] | None = None,
) -> Decision:
    """The sandbox setting of a ``cmd:`` agent: its own ``sandbox``, else ``[run]
    sandbox``, else on wherever bubblewrap works. Where it cannot, the agent runs without
    (a warning) only when nothing asked for it (no setting): an explicit ``sandbox = true``
    (the agent's or ``[run]``'s) and ``[run] require_sandbox`` are errors (the run is
    refused); ``require_sandbox`` also refuses an agent configured with ``sandbox = false``."""
    own = options.get("sandbox")
    wanted = bool(own) if own is not None else run_default
    if wanted is False:
        if require:
            return Decision(
                False,
                error="[run] require_sandbox = true, but the agent is configured with "
                "sandbox = false: remove one of the two",
            )
        return Decision(False)
    found = (problem or sandbox_problem)()
    if found is not None:
        if require:
            return Decision(
                False,
                error=f"[run] require_sandbox = true, but the sandbox cannot work here: {found}",
            )
        if wanted is True:
            where = "the agent's [run.agents] entry" if own is not None else "[run]"
            return Decision(
                False,
                error=f"sandbox = true ({where}), but the sandbox cannot work here: {found}. "
                "Make bubblewrap work here, or remove the setting to run sandboxed where it "
                "works and unsandboxed, with a warning, where it does not",
            )
        return Decision(
            False,
            warning=f"agents are not isolated: {found}. They run in a temporary directory "
            "with a minimal environment, and can read what your user can "
            "(docs/untrusted-input.md); [run] require_sandbox = true refuses such a run",
        )
    problems = shown_paths(root, [str(p) for p in options.get("sandbox_paths") or ()])
    if problems:
        return Decision(False, error="; ".join(problems))
    return Decision(True)


def explicitly_sandboxed(options: Mapping[str, Any], run_default: bool | None) -> bool:
    """Whether the configuration says ``sandbox = true`` for this agent (its own setting,
    else ``[run]``'s), as opposed to no setting at all (the default)."""
    own = options.get("sandbox")
    return (bool(own) if own is not None else run_default) is True


def configure(
    spec: str,
    options: Mapping[str, Any],
    root: Path,
    sandbox_default: bool | None,
    secrets: list[str],
    require: bool = False,
) -> tuple[dict[str, Any], Decision | None]:
    """A cmd: agent's options with what isolation needs: the repository root (hidden by
    the sandbox), the sandbox decision (:func:`decide`) and the names never passed to it.
    Other agents' options are returned as they are, with no decision."""
    out = dict(options)
    if not spec.startswith("cmd:"):
        return out, None
    decision = decide(options, sandbox_default, require, root)
    out["root"] = str(root)
    out["sandbox"] = decision.sandbox
    # An explicit sandbox = true is required on every worker too (a Ray worker probes
    # again: evalcase.run.adapters.cmd).
    out["require_sandbox"] = require or explicitly_sandboxed(options, sandbox_default)
    out["secret_env"] = secrets
    return out, decision
