"""The zygote: one long-lived reaper per runner process that forks a subreaper per attempt.

``python -I -S zygote.py FD`` is started once per run (or Ray worker) by
:mod:`evalcase.run.spawn`, with the environment ``PATH`` and ``LANG`` only (no key, no
token: nothing else of the runner's) and ``FD``, its end of a unix socket pair (no path
on any file system: no agent can connect to it). It makes itself non-dumpable (no other
process of the user reads its memory or ``/proc`` entries). Then, per message on ``FD``:
one attempt's spawn request (JSON: ``argv``, ``env``, ``cwd``, ``timeout``) with four
descriptors passed by ``SCM_RIGHTS``: the agent's stdin, stdout and stderr and the
attempt's own socket. It forks; the child becomes that attempt's subreaper exactly as
:mod:`evalcase.run.reaper` does (child subreaper, SIGTERM when its parent dies, its own
session) and starts the agent (the ``argv`` is bubblewrap's when the sandbox is on: the
forked child enters the sandbox as the per-attempt reaper does). The subreaper writes
``started PID`` on the attempt's socket, then waits for the first of: the agent's exit,
``kill`` (or the socket's end: the runner has gone) on the attempt's socket, the
``timeout``, or SIGTERM (the zygote died). Then it kills and reaps every descendant
(:func:`evalcase.run.reaper.kill_below`) and writes ``exit CODE`` before it exits.

A fork costs about 1 ms where a new Python process cost about 11 ms: at concurrency 200
on two cores that was most of an attempt's CPU (docs/performance.md). The zygote exits
when the runner's end of ``FD`` closes (the runner ended, however). Standard library
only; it imports nothing of evalcase but the reaper beside it.
"""

# ruff: noqa: SIM105

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

if __name__ == "__main__":  # -I: no script folder on the path; the package's folder
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))

from evalcase.run import reaper  # standard library only, as this module

PR_SET_DUMPABLE = 4
MAX_REQUEST = 1 << 20


def attempt(request: dict[str, object], fds: list[int], zygote: int) -> int:
    """The subreaper of one attempt (a forked child of the zygote): its exit code."""
    stdin, stdout, stderr, conn = fds
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    reaper.prctl(reaper.PR_SET_CHILD_SUBREAPER, 1)
    reaper.prctl(reaper.PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != zygote:  # the zygote died before the death signal was armed
        return 1
    os.setsid()  # the runner may kill this process's group as a last resort
    sock = socket.socket(fileno=conn)
    state: dict[str, int | None] = {"agent": None}

    def stop(signum: int, frame: object) -> None:
        reaper.kill_below(os.getpid(), state["agent"])
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
    env = {str(k): str(v) for k, v in request["env"].items()}  # type: ignore[attr-defined]
    cwd = str(request["cwd"])
    try:
        pid = os.fork()
    except OSError as exc:
        os.write(stderr, f"cannot start {argv[0]!r}: {exc}\n".encode())
        sock.send(b"exit 127")
        return 127
    if pid == 0:  # the agent
        try:
            os.dup2(stdin, 0)
            os.dup2(stdout, 1)
            os.dup2(stderr, 2)
            os.closerange(3, 65536)
            os.setsid()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            reaper.prctl(reaper.PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the subreaper
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            os.write(2, f"cannot start {argv[0]!r}: {exc}\n".encode())
        os._exit(127)
    state["agent"] = pid
    for fd in (stdin, stdout, stderr):
        os.close(fd)
    try:
        sock.send(f"started {os.getpid()}".encode())
    except OSError:
        pass
    timeout = request.get("timeout")
    poller = select.poll()
    poller.register(conn, select.POLLIN)
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
        poller.register(pidfd, select.POLLIN)
    except (AttributeError, OSError):
        pass  # no pidfd: look at the agent every 20 ms
    wait_ms = 20 if pidfd is None else None
    limit = None if not isinstance(timeout, int | float) else float(timeout)
    status: int | None = None
    clock = 0.0
    while status is None:
        step = wait_ms
        if limit is not None:
            left = max(0, int((limit - clock) * 1000))
            step = left if step is None else min(step, left)
        ready = poller.poll(step)
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
            break
        if any(fd == conn for fd, _ in ready):
            try:
                sock.recv(64)  # "kill", or the end of the socket: either way the attempt ends
            except OSError:
                pass
            break
        if step is not None:
            clock += step / 1000
        if limit is not None and clock >= limit:
            break
    reaper.kill_below(os.getpid(), pid)  # reaps the agent too, when it was still running
    code = -9 if status is None else (os.waitstatus_to_exitcode(status) if status else 0)
    try:
        sock.send(f"exit {code}".encode())
    except OSError:
        pass
    return 0


def main(fd: int) -> int:
    reaper.prctl(PR_SET_DUMPABLE, 0)
    # No death signal: the kernel sends it when the thread that started this process
    # ends (an attempt's thread), not the runner. The end of FD is the runner's end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides

    def reap(signum: int, frame: object) -> None:
        # Waited for, not ignored: their CPU (the agents' included) is then counted in
        # this process's children's times, and in the runner's once this one exits.
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass

    signal.signal(signal.SIGCHLD, reap)
    control = socket.socket(fileno=fd)
    me = os.getpid()
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, 4)
        except OSError:
            return 0
        if not data:  # the runner's end closed: the run is over
            return 0
        if len(fds) != 4:
            for extra in fds:
                os.close(extra)
            continue
        try:
            request = json.loads(data)
        except ValueError:
            request = None
        if not isinstance(request, dict):
            for extra in fds:
                os.close(extra)
            continue
        try:
            child = os.fork()
        except OSError:
            child = -1
        if child == 0:
            try:
                control.close()
                code = attempt(request, fds, me)
            except BaseException:  # never back into the zygote's loop
                code = 70
            os._exit(code)
        for extra in fds:  # the child holds them now (or the fork failed: the runner sees EOF)
            os.close(extra)
        del request, data


if __name__ == "__main__":
    os._exit(main(int(sys.argv[1])))
