"""``cmd:PROGRAM ARGS``: any program speaking the protocol as newline-delimited JSON.

One process per attempt, isolated (:mod:`evalcase.run.isolation`): a fresh temporary
working directory, a minimal environment (``PATH``, ``LANG``, ``HOME`` and ``TMPDIR``
set to that directory, plus what ``[run.agents.NAME] env`` allows) and a bubblewrap
sandbox (on by default wherever bubblewrap works; ``sandbox = false`` turns it off). The
program runs under a subreaper (:mod:`evalcase.run.spawn`: forked by the zygote, or the
per-attempt reaper), so that its whole process tree ends with the attempt and with the
runner. The runner writes one request per line to
the program's stdin and reads one reply line from its stdout, both bounded by the
attempt's deadline; the last 64 KiB of its stderr (and the total byte count) are kept in
the record's ``agent_stderr``. The attempt ends by closing stdin: the program should exit;
whatever it leaves running is killed. The program may be written in any language.

Passing: ``cmd:python examples/refund_agent/agent.py`` answering each line with
``{"role": "assistant", "content": "..."}``.
Failing (recorded, the run goes on): the program exits non-zero (``agent_exit``), says
nothing, or stops reading its input, before the deadline (``timeout``), prints a line that
is not JSON (``bad_json``) or longer than ``max_reply_bytes`` (``oversized``).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcase.run import isolation, spawn
from evalcase.run.protocol import AgentFault, Reply, dumps_strict, parse_reply_text

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob

STDERR_TAIL = 64 * 1024
_LIVE: set[CmdSession] = set()
_LIVE_LOCK = threading.Lock()


def kill_all() -> int:
    """End every agent still running in this process (the run was interrupted)."""
    with _LIVE_LOCK:
        sessions = list(_LIVE)
    for session in sessions:
        session.kill()
    return len(sessions)


class CmdSession:
    def __init__(self, argv: list[str], workdir: Path, limit: int, env: Mapping[str, str]) -> None:
        self.limit = limit
        self.workdir = workdir
        self.stderr_tail = bytearray()
        self.stderr_bytes = 0
        try:
            self.proc = spawn.start(argv, workdir, env)
        except OSError as exc:
            raise AgentFault("agent_exit", f"cannot start {argv[0]!r}: {exc}") from None
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            os.set_blocking(stream.fileno(), False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.selector.register(self.proc.stderr, selectors.EVENT_READ, "err")
        self.buffer = bytearray()
        self.out_open = True
        self.closed = False
        with _LIVE_LOCK:
            _LIVE.add(self)

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        line = (dumps_strict(request) + "\n").encode("utf-8")
        self._write(line, deadline)
        return parse_reply_text(self._read_line(deadline), self.limit)

    def _write(self, data: bytes, deadline: float) -> None:
        """Write the request, reading the agent's output meanwhile, until the deadline."""
        assert self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        view = memoryview(data)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.register(fd, selectors.EVENT_WRITE, "in")
        try:
            while view:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AgentFault("timeout", "the agent stopped reading its input")
                for key, _ in self.selector.select(timeout=remaining):
                    if key.data == "in":
                        try:
                            written = os.write(fd, view)
                        except BlockingIOError:
                            continue
                        except OSError:
                            raise self._exited("stopped reading its input") from None
                        view = view[written:]
                    else:
                        self._drain(key.data)
        finally:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(fd)

    def _drain(self, which: str) -> bool:
        """Read what is there from stdout ("out") or stderr ("err"); False at end of file."""
        stream = self.proc.stdout if which == "out" else self.proc.stderr
        assert stream is not None
        try:
            chunk = os.read(stream.fileno(), 1 << 16)
        except BlockingIOError:
            return True
        if not chunk:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(stream)
            if which == "out":
                self.out_open = False
            return False
        if which == "out":
            self.buffer.extend(chunk)
        else:
            self.stderr_bytes += len(chunk)
            self.stderr_tail.extend(chunk)
            if len(self.stderr_tail) > STDERR_TAIL:
                del self.stderr_tail[: len(self.stderr_tail) - STDERR_TAIL]
        return True

    def _read_line(self, deadline: float) -> bytes:
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self.buffer[:newline])
                del self.buffer[: newline + 1]
                if not line.strip():
                    continue
                return line
            if len(self.buffer) > self.limit:
                raise AgentFault(
                    "oversized",
                    f"reply longer than the limit of {self.limit} bytes (no newline yet)",
                )
            if not self.out_open:
                if self.buffer.strip():
                    line = bytes(self.buffer)
                    self.buffer.clear()
                    return line
                raise self._exited("closed its output without a reply")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault("timeout", "no reply before the attempt's deadline")
            for key, _ in self.selector.select(timeout=remaining):
                self._drain(key.data)

    def _exited(self, what: str) -> AgentFault:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        self._drain_stderr(time.monotonic() + 0.5)
        tail = bytes(self.stderr_tail[-600:]).decode("utf-8", "replace").strip()
        status = "is still running" if code is None else f"exited with status {code}"
        message = f"the agent {what} and {status}"
        lost = getattr(self.proc, "lost", None)
        if lost:
            message += f" ({lost})"
        if tail:
            message += f"; stderr ends: {tail[-400:]}"
        return AgentFault("agent_exit", message)

    def _drain_stderr(self, until: float) -> None:
        """Read stderr (and discard stdout) until both are closed or ``until``."""
        while self.selector.get_map() and time.monotonic() < until:
            ready = self.selector.select(timeout=max(0.0, until - time.monotonic()))
            if not ready:
                return
            for key, _ in ready:
                self._drain(key.data)
            if len(self.buffer) > self.limit:  # output after the last reply is not kept
                self.buffer.clear()

    def stderr_record(self) -> dict[str, Any]:
        """The record's ``agent_stderr``: the last 64 KiB and the total size."""
        return {
            "tail": bytes(self.stderr_tail).decode("utf-8", "replace"),
            "bytes": self.stderr_bytes,
            "truncated": self.stderr_bytes > len(self.stderr_tail),
        }

    def kill(self) -> None:
        """End the agent and everything it started (the reaper kills the tree)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            self.proc.send_signal(signal.SIGTERM)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        # The agent exits at the end of its input; the reaper then kills what it left and
        # exits, which closes both pipes: waiting for that is waiting for the tree.
        self._drain_stderr(time.monotonic() + 1.0)
        try:
            self.proc.wait(timeout=0 if self.selector.get_map() else 1)
        except subprocess.TimeoutExpired:
            self.kill()  # the reaper kills the agent's tree, then exits
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self._drain_stderr(time.monotonic() + 0.2)
        with _LIVE_LOCK:
            _LIVE.discard(self)
        self.selector.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        isolation.remove_workdir(self.workdir)


def preflight(target: str, options: Mapping[str, Any]) -> str | None:
    """Before the run: the program exists (on ``PATH``, or as a path from ``cwd``) and may
    be executed; its working directory exists."""
    try:
        argv = shlex.split(target)
    except ValueError as exc:
        return f"cmd:{target}: cannot be split into a command line ({exc})"
    if not argv:
        return "cmd: needs a program, as in cmd:python agent.py"
    cwd = Path(str(options.get("cwd") or "."))
    if not cwd.is_dir():
        return f"cmd:{target}: the working directory {cwd} does not exist ([run.agents.NAME] cwd)"
    program = argv[0]
    # env is a table of fixed values or a list of names copied from this environment.
    env = options.get("env")
    fixed = env.get("PATH") if isinstance(env, Mapping) else None
    env_path = str(fixed or os.environ.get("PATH", ""))
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program) if Path(program).is_absolute() else cwd / program
        if not path.is_file():
            return f"cmd:{target}: the program {program} does not exist (looked in {cwd})"
        if not os.access(path, os.X_OK):
            return (
                f"cmd:{target}: {path} is not executable (chmod +x it, or start it through its "
                "interpreter, as in cmd:{python} agent.py)"
            )
        return None
    if shutil.which(program, path=str(env_path)) is None:
        return f"cmd:{target}: no program {program!r} on PATH"
    return None


def open(target: str, options: Mapping[str, Any], job: AttemptJob) -> CmdSession:
    argv = shlex.split(target)
    if not argv:
        raise AgentFault("adapter", "cmd: needs a program, as in cmd:python agent.py")
    base = Path(str(options.get("cwd") or "."))
    argv = isolation.resolve_argv(argv, base)
    workdir = Path(tempfile.mkdtemp(prefix="evalcase-agent-")).resolve()
    try:
        env = isolation.agent_env(
            workdir, options.get("env"), [str(n) for n in options.get("secret_env") or ()]
        )
        if options.get("sandbox"):
            problem = isolation.sandbox_problem()
            if problem is None:
                root = options.get("root")
                argv = isolation.sandbox_argv(
                    argv,
                    workdir,
                    None if root is None else Path(str(root)),
                    bool(options.get("network")),
                    [str(p) for p in options.get("sandbox_paths") or ()],
                )
            elif options.get("require_sandbox"):
                # A worker of another machine (Ray) where bubblewrap does not work.
                raise AgentFault("adapter", f"the sandbox is required and cannot work: {problem}")
        # Before the first agent starts: no agent can read this process's keys.
        isolation.protect_runner()
        return CmdSession(argv, workdir, job.limits.max_reply_bytes, env)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
