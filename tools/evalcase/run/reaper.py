"""The reaper: the small process every ``cmd:`` agent is started under.

``python -m evalcase.run.reaper PROGRAM ARGS...`` makes itself a child subreaper
(Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), asks to receive SIGTERM when the runner dies
(``PR_SET_PDEATHSIG``), starts the agent in its own session with the same stdin, stdout
and stderr, and waits. However the agent forks (``setsid``, a double fork, a daemon), its
descendants stay below the reaper: an orphan is re-parented to the nearest subreaper, not
to init. When the agent exits, when the runner sends SIGTERM (the attempt is over) or
when the runner dies, the reaper kills the agent's process group and then every process
still below it, until none is left, and exits with the agent's status.

Elsewhere than Linux the reaper only kills the agent's process group (no subreaper).
It is standard library only, imports nothing of evalcase and as little else as it can
(``python -I -S``: no site), so that it starts fast: it is started once per attempt.
The C modules ``_signal`` and ``_ctypes`` stand in for ``signal`` (which imports
``enum``) and ``ctypes`` (``struct``, ``functools``...): 7 ms of a process start instead
of 19 ms, which at concurrency 200 on two cores was most of an attempt's CPU
(docs/performance.md, "Bring your own agent"; tests/run/test_reaper.py keeps them out).
"""

# contextlib.suppress would cost this process an import of collections: try/except here.
# ruff: noqa: SIM105

from __future__ import annotations

# The C module: its constants are plain ints, no enum.
import _signal as signal  # type: ignore[import-not-found]
import os
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


_PRCTL: list[object] = []  # libc's prctl, made once per process (forks inherit it)


def _libc_prctl() -> object:
    """libc's ``prctl`` through ``_ctypes`` alone (what ``ctypes.CDLL(None).prctl`` is,
    without importing ``ctypes``): arguments as C ints, an int result. Made once: its
    three classes cost 40 us a call, and the zygote's children inherit it made."""
    if not _PRCTL:
        import _ctypes

        class Int(_ctypes._SimpleCData):  # type: ignore[type-arg]
            _type_ = "i"

        class Func(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = Int

        class Libc:
            _handle = _ctypes.dlopen(None, 0)  # type: ignore[arg-type]  # the program itself

        _PRCTL.append(Func(("prctl", Libc())))  # type: ignore[arg-type]
    return _PRCTL[0]


def prctl(option: int, value: int) -> bool:
    """libc's ``prctl(option, value, 0, 0, 0)``: whether it succeeded."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        call = _libc_prctl()
        return int(call(option, value, 0, 0, 0)) == 0  # type: ignore[operator]
    except (ImportError, OSError, AttributeError):
        return False


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc; empty where there is no /proc)."""
    try:  # one small file where the kernel offers it (CONFIG_PROC_CHILDREN), read raw
        fd = os.open(f"/proc/{pid}/task/{pid}/children", os.O_RDONLY)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            data = b""
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                data += chunk
            return [int(p) for p in data.split()]
        except (OSError, ValueError):
            pass
        finally:
            os.close(fd)
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: fields follow the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def kill_below(pid: int, group: int | None) -> None:
    """Kill ``group`` and every descendant of ``pid`` (the caller is their subreaper)."""
    if group is not None:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for _ in range(1000):  # bounded: each round kills what the last round orphaned
        below = children(pid)
        if not below:
            break
        for child in below:
            try:
                os.kill(child, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for child in below:
            try:
                os.waitpid(child, 0)
            except ChildProcessError:
                pass
    # Zombies of children that died by themselves.
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m evalcase.run.reaper PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    parent = os.getppid()
    state: dict[str, int | None] = {"agent": None}

    def stop(signum: int, frame: object) -> None:
        agent = state["agent"]
        kill_below(os.getpid(), agent)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides; Ctrl-C reaches it
    if os.getppid() != parent:  # the runner died before the death signal was armed
        return 1
    try:
        pid = os.fork()
    except OSError as exc:
        print(f"cannot start {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    if pid == 0:  # the agent
        try:
            os.setsid()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the reaper
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot start {argv[0]!r}: {exc}\n".encode())
        os._exit(127)
    state["agent"] = pid
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = 0
            break
        except InterruptedError:
            continue
    # The agent is gone; what it left behind goes with it. Give the stdout pipe's last
    # bytes a moment to be read (they are in the pipe already: no wait is needed).
    kill_below(os.getpid(), pid)
    return os.waitstatus_to_exitcode(status) if status else 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stderr.flush()
    # No interpreter finalization: nothing is left to clean up, and it cost 1.8 ms a start.
    os._exit(code if code >= 0 else 128 - code)
