"""``cmd:PROGRAM ARGS``: any program speaking the protocol as newline-delimited JSON.

One process per attempt, started in the repository root (or ``[run.agents.NAME] cwd``).
The runner writes one request per line to the program's stdin and reads one reply line
from its stdout; stderr is kept for the error message. The attempt ends by closing
stdin: the program should exit. The program may be written in any language.

Passing: ``cmd:python examples/refund_agent/agent.py`` answering each line with
``{"role": "assistant", "content": "..."}``.
Failing (recorded, the run goes on): the program exits non-zero (``agent_exit``), says
nothing before the deadline (``timeout``), prints a line that is not JSON (``bad_json``)
or longer than ``max_reply_bytes`` (``oversized``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcase.run.protocol import AgentFault, Reply, parse_reply_text

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob


class CmdSession:
    def __init__(
        self, argv: list[str], cwd: str | None, limit: int, env: Mapping[str, str]
    ) -> None:
        self.limit = limit
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,  # so a timeout kills the agent's children too
            )
        except OSError as exc:
            self.stderr.close()
            raise AgentFault("agent_exit", f"cannot start {argv[0]!r}: {exc}") from None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = bytearray()

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        line = json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n"
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._exited("stopped reading its input") from None
        return parse_reply_text(self._read_line(deadline), self.limit)

    def _read_line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
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
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault("timeout", "no reply before the attempt's deadline")
            if not self.selector.select(timeout=remaining):
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                if self.buffer.strip():
                    line = bytes(self.buffer)
                    self.buffer.clear()
                    return line
                raise self._exited("closed its output without a reply")
            self.buffer.extend(chunk)

    def _exited(self, what: str) -> AgentFault:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        self.stderr.seek(0, os.SEEK_END)
        size = self.stderr.tell()
        self.stderr.seek(max(0, size - 600))
        tail = self.stderr.read().decode("utf-8", "replace").strip()
        status = "is still running" if code is None else f"exited with status {code}"
        message = f"the agent {what} and {status}"
        if tail:
            message += f"; stderr ends: {tail[-400:]}"
        return AgentFault("agent_exit", message)

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.selector.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.stderr.close()


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
    env_path = dict(options.get("env") or {}).get("PATH") or os.environ.get("PATH", "")
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
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in dict(options.get("env") or {}).items()})
    cwd = options.get("cwd")
    return CmdSession(argv, None if cwd is None else str(cwd), job.limits.max_reply_bytes, env)
