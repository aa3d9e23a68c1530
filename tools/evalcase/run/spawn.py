"""Starting a ``cmd:`` agent: through the zygote where it works, else under its own reaper.

:func:`start` gives a :class:`subprocess.Popen`-like handle (``stdin``, ``stdout``,
``stderr``, ``pid``, ``wait``, ``send_signal``) of a process that is the agent's
subreaper: its whole tree ends with the attempt, and with the runner.

- On Linux, one zygote per process (:mod:`evalcase.run.zygote`, started at the first
  agent, with ``PATH`` and ``LANG`` as its whole environment) forks the subreaper: about
  1 ms an attempt instead of a Python process's start (about 11 ms).
- Elsewhere, or when the zygote cannot be started or dies and a new one does not work
  either, the per-attempt reaper (:mod:`evalcase.run.reaper`) as before.

The zygote's control socket is one end of a socket pair: it has no path, so no agent can
reach it, and the zygote exits when this process's end closes (the run ended, however).
If the zygote dies mid-run, the attempts it was running end (their subreapers kill their
trees) and fail as errors (``agent_exit``, saying so); the next attempt starts a new
zygote, up to :data:`RESTARTS` times per process, then falls back to the reaper.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from evalcase.run import isolation

ZYGOTE = Path(__file__).with_name("zygote.py")
RESTARTS = 3
START_TIMEOUT = 10.0
MAX_REQUEST = 1 << 20
LOST = (
    "the zygote (the process that starts and ends agents) ended during the attempt: "
    "the agent was ended with it"
)


class ZygoteLost(Exception):
    """The zygote is gone (or never answered): start the agent another way."""


class ZygoteProcess:
    """One agent started by the zygote, as the runner sees it (a ``Popen`` subset)."""

    def __init__(self, pid: int, conn: socket.socket, stdin: int, stdout: int, stderr: int):
        self.pid = pid
        self.conn = conn
        self.stdin: IO[bytes] | None = os.fdopen(stdin, "wb", buffering=0)
        self.stdout: IO[bytes] | None = os.fdopen(stdout, "rb", buffering=0)
        self.stderr: IO[bytes] | None = os.fdopen(stderr, "rb", buffering=0)
        self.returncode: int | None = None
        self.lost: str | None = None
        self._lock = threading.Lock()

    def wait(self, timeout: float | None = None) -> int:
        with self._lock:
            if self.returncode is not None:
                return self.returncode
            self.conn.settimeout(timeout)
            try:
                data = self.conn.recv(64)
            except (TimeoutError, BlockingIOError):  # timeout 0: a non-blocking socket
                raise subprocess.TimeoutExpired("agent", timeout or 0) from None
            except OSError:
                data = b""
            if data.startswith(b"exit "):
                try:
                    self.returncode = int(data[5:])
                except ValueError:
                    self.returncode = -9
            else:  # the subreaper died without a word: the zygote went, or it was killed
                self.returncode = -9
                self.lost = LOST
            with contextlib.suppress(OSError):
                self.conn.close()
            return self.returncode

    def send_signal(self, signum: int) -> None:
        """End the agent's tree (any signal means: the attempt is over)."""
        with contextlib.suppress(OSError):
            self.conn.send(b"kill")

    def kill(self) -> None:
        self.send_signal(9)


class Zygote:
    """The zygote process and this process's end of its control socket."""

    def __init__(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
        env.setdefault("PATH", isolation.DEFAULT_PATH)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(ZYGOTE), str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=env,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C on the terminal reaches the runner only
            )
        finally:
            theirs.close()
        self.sock = mine
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(
        self, argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float | None = None
    ) -> ZygoteProcess:
        payload = json.dumps(
            {"argv": argv, "env": dict(env), "cwd": str(cwd), "timeout": timeout}
        ).encode("utf-8")
        if len(payload) > MAX_REQUEST:
            raise ZygoteLost("the request is too large for the zygote")
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        conn, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mine = [in_w, out_r, err_r]
        try:
            with self.lock:
                socket.send_fds(self.sock, [payload], [in_r, out_w, err_w, theirs.fileno()])
        except OSError as exc:
            for fd in mine:
                os.close(fd)
            conn.close()
            raise ZygoteLost(f"the zygote does not answer: {exc}") from None
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
            theirs.close()
        conn.settimeout(START_TIMEOUT)
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if not data.startswith(b"started "):
            for fd in mine:
                os.close(fd)
            conn.close()
            raise ZygoteLost("the zygote did not start the agent")
        conn.settimeout(None)
        return ZygoteProcess(int(data[8:]), conn, in_w, out_r, err_r)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"zygote": None, "starts": 0}


def enabled() -> bool:
    """Whether agents start through a zygote here: Linux, unless ``EVALCASE_ZYGOTE=0``."""
    return sys.platform.startswith("linux") and os.environ.get("EVALCASE_ZYGOTE") != "0"


def current() -> Zygote | None:
    """This process's zygote, started (or started again) when needed; None once it failed
    :data:`RESTARTS` times over (the reaper is used from then on)."""
    with _LOCK:
        zygote: Zygote | None = _STATE["zygote"]
        if zygote is not None and zygote.alive():
            return zygote
        if zygote is not None:
            zygote.close()
            _STATE["zygote"] = None
        if _STATE["starts"] > RESTARTS:
            return None
        _STATE["starts"] += 1
        try:
            zygote = Zygote()
        except OSError:
            return None
        _STATE["zygote"] = zygote
        return zygote


def reset() -> None:
    """Stop this process's zygote (tests; a worker that ends)."""
    with _LOCK:
        zygote = _STATE["zygote"]
        _STATE.update(zygote=None, starts=0)
    if zygote is not None:
        zygote.close()


def start(
    argv: list[str], cwd: Path, env: Mapping[str, str]
) -> subprocess.Popen[bytes] | ZygoteProcess:
    """The agent ``argv`` started as the module doc says."""
    if enabled():
        for _ in range(2):  # a zygote found dead is replaced once for this attempt
            zygote = current()
            if zygote is None:
                break
            try:
                return zygote.spawn(argv, cwd, env)
            except ZygoteLost:
                continue
    return subprocess.Popen(
        isolation.reaper_argv(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(cwd),
        env=dict(env),
        start_new_session=True,  # Ctrl-C on the terminal reaches the runner only
    )
