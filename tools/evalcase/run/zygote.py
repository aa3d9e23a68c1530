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
session) and starts the agent with ``posix_spawn`` (:func:`spawn_agent`; the ``argv`` is
bubblewrap's when the sandbox is on). The subreaper writes ``started PID`` on the
attempt's socket, then waits for the first of: the agent's exit, ``kill`` (or the
socket's end: the runner has gone) on the attempt's socket, the ``timeout``, or SIGTERM
(the zygote died). Then it kills and reaps every descendant
(:func:`evalcase.run.reaper.kill_below`) and writes ``exit CODE`` before it exits. The
zygote is a child subreaper too: what a subreaper killed outright leaves (its agent and
the agent's tree) is adopted by the zygote and killed (:func:`sweep`).

A fork costs about 1 ms where a new Python process cost about 11 ms: at concurrency 200
on two cores that was most of an attempt's CPU (docs/performance.md). One fork of Python
an attempt, not two: the agent is spawned (a ``vfork``), and the subreaper's Python work
is kept small (the C module ``_signal``, ``prctl`` made once, its socket and ``/proc``
read as raw descriptors), since every page it touches after the fork is a copy-on-write
fault. The zygote exits when the runner's end of ``FD`` closes (the runner ended,
however). Standard library only; it imports nothing of evalcase but the reaper beside it.
"""

# ruff: noqa: SIM105
# os.path, not pathlib: pathlib is an import (fnmatch, urllib...) the zygote does without.
# ruff: noqa: PTH113, PTH118

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found]  # the C module: no enum
import json
import os
import select
import socket
import sys

if __name__ == "__main__":  # -I: no script folder on the path; the package's folder
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))

from evalcase.run import reaper  # standard library only, as this module

PR_SET_DUMPABLE = 4
MAX_REQUEST = 1 << 20
# What the agent starts with at their defaults: this process ignores SIGINT, Python
# SIGPIPE and SIGXFSZ (an ignored signal stays ignored across exec); the rest are
# handlers here, which exec resets anyway.
DEFAULT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD)


def program(name: str, env: dict[str, str]) -> str:
    """The file ``name`` names, looked up on the agent's ``PATH`` when it has no slash
    (what ``os.execvpe`` did); as it is when nothing is found (the spawn then fails)."""
    if os.sep in name:
        return name
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return name


def spawn_agent(argv: list[str], env: dict[str, str], cwd: str, fds: list[int]) -> int:
    """The agent started with ``posix_spawn`` (glibc's is a ``vfork``: no copy of this
    process's pages and none of the copy-on-write faults a ``fork`` and the Python code
    before an ``exec`` cost, about 0.9 ms an attempt): its stdin, stdout and stderr,
    its own session, the signals this process ignores back to their defaults, in
    ``cwd`` (this process's own: it does nothing else there). No other descriptor is
    inherited (Python's are close-on-exec; the four received here are made so). The
    agent has no death signal of its own: when this subreaper is killed outright, the
    zygote, a subreaper too, adopts the agent and kills it (:func:`sweep`)."""
    stdin, stdout, stderr, _ = fds
    for fd in fds:
        os.set_inheritable(fd, False)
    os.chdir(cwd)
    return os.posix_spawn(
        program(argv[0], env),
        argv,
        env,
        file_actions=[
            (os.POSIX_SPAWN_DUP2, stdin, 0),
            (os.POSIX_SPAWN_DUP2, stdout, 1),
            (os.POSIX_SPAWN_DUP2, stderr, 2),
        ],
        setsid=True,
        setsigmask=(),
        setsigdef=DEFAULT_SIGNALS,
    )


def attempt(request: dict[str, object], fds: list[int], zygote: int) -> int:
    """The subreaper of one attempt (a forked child of the zygote): its exit code."""
    stdin, stdout, stderr, conn = fds
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})  # blocked by the fork
    reaper.prctl(reaper.PR_SET_CHILD_SUBREAPER, 1)
    reaper.prctl(reaper.PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != zygote:  # the zygote died before the death signal was armed
        return 1
    os.setsid()  # the runner may kill this process's group as a last resort
    state: dict[str, int | None] = {"agent": None}

    def stop(signum: int, frame: object) -> None:
        reaper.kill_below(os.getpid(), state["agent"])
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
    env = {str(k): str(v) for k, v in request["env"].items()}  # type: ignore[attr-defined]
    cwd = str(request["cwd"])
    # The attempt's socket read and written as the descriptor it is (SOCK_SEQPACKET:
    # one write, one message), without the socket module's objects.
    try:
        pid = spawn_agent(argv, env, cwd, fds)
    except (OSError, ValueError) as exc:  # as a failed exec: started, then 127
        send(conn, f"started {os.getpid()}".encode())
        try:
            os.write(stderr, f"cannot start {argv[0]!r}: {exc}\n".encode())
        except OSError:
            pass
        send(conn, b"exit 127")
        return 127
    state["agent"] = pid
    for fd in (stdin, stdout, stderr):
        os.close(fd)
    send(conn, f"started {os.getpid()}".encode())
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
                os.read(conn, 64)  # "kill", or the end of the socket: either way the attempt ends
            except OSError:
                pass
            break
        if step is not None:
            clock += step / 1000
        if limit is not None and clock >= limit:
            break
    reaper.kill_below(os.getpid(), pid)  # reaps the agent too, when it was still running
    code = -9 if status is None else (os.waitstatus_to_exitcode(status) if status else 0)
    send(conn, f"exit {code}".encode())
    return 0


def send(conn: int, message: bytes) -> None:
    try:
        os.write(conn, message)
    except OSError:
        pass


def sweep(me: int, subreapers: set[int]) -> None:
    """Kill what a subreaper left when it was killed outright (SIGKILL: no clean-up of
    its own): the zygote is a subreaper too, so the orphans come here, and any child
    of the zygote that is not one of its subreapers is such an orphan (its attempt's
    subreaper is gone: the attempt has ended). Killed, not waited for here (a process
    that takes long to die must not hold up every attempt's start): each one's death
    is a SIGCHLD, whose handler reaps it and sweeps again, which kills what that death
    orphaned in turn, until nothing is left."""
    for pid in reaper.children(me):
        if pid not in subreapers:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def main(fd: int) -> int:
    reaper.prctl(PR_SET_DUMPABLE, 0)
    reaper.prctl(reaper.PR_SET_CHILD_SUBREAPER, 1)  # what a killed subreaper leaves: sweep
    # No death signal: the kernel sends it when the thread that started this process
    # ends (an attempt's thread), not the runner. The end of FD is the runner's end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides
    me = os.getpid()
    subreapers: set[int] = set()

    def reap(signum: int, frame: object) -> None:
        # Waited for, not ignored: their CPU (the agents' included) is then counted in
        # this process's children's times, and in the runner's once this one exits.
        try:
            while True:
                pid = os.waitpid(-1, os.WNOHANG)[0]
                if pid <= 0:
                    break
                subreapers.discard(pid)
        except ChildProcessError:
            pass
        sweep(me, subreapers)

    signal.signal(signal.SIGCHLD, reap)
    control = socket.socket(fileno=fd)
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
        # SIGCHLD held while the child is forked and counted: a sweep between the two
        # would take the new subreaper for an orphan.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
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
        if child > 0:
            subreapers.add(child)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for extra in fds:  # the child holds them now (or the fork failed: the runner sees EOF)
            os.close(extra)
        del request, data


if __name__ == "__main__":
    os._exit(main(int(sys.argv[1])))
