"""Pure work split between this process and one forked child: for a command that renders
a thousand independent texts (a trace import's drafts and fixtures) on a machine with a
second core.

:func:`run` calls each job (a function of no arguments returning a picklable value) and
returns the results in the jobs' order. With :data:`MIN_WEIGHT` of work or more, a second
core, ``fork``, and no other thread in this process (a fork copies one thread; a lock
another thread held would stay held in the child), a child forked from here takes the
first part of the jobs (by weight) and sends its results back through a pipe, while this
process does the rest. The child writes nothing but that pipe and leaves with
``os._exit`` (no atexit handler, no buffered output of this process flushed twice). A
child that fails, is killed or sends something unreadable costs nothing but time: this
process does its part again itself, so an error is raised here, as without the child,
and the first job's error in job order whichever process met it.
Otherwise, and with ``EVALCASE_FORK=0``, every job runs here, in order.

Jobs must be pure: what a child changes (a cache, a counter, a file) is not seen here.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

MIN_WEIGHT = 200.0  # about 0.1 s of work: below it a fork costs more than it saves


def _can_fork() -> bool:
    return (
        sys.platform == "linux"
        and hasattr(os, "fork")
        and (os.cpu_count() or 1) >= 2
        and threading.active_count() == 1
        and os.environ.get("EVALCASE_FORK", "1") != "0"
    )


def split(weights: Sequence[float]) -> int:
    """The number of leading jobs holding about half of the weight."""
    half, total = sum(weights) / 2, 0.0
    for n, weight in enumerate(weights):
        if total + weight / 2 > half:
            return n
        total += weight
    return len(weights)


def run(jobs: Sequence[Callable[[], T]], weights: Sequence[float] | None = None) -> list[T]:
    """Each job's result, in order (see the module's docstring for where each runs).
    ``weights`` says what each job costs, relatively (1 each when not given)."""
    costs = list(weights) if weights is not None else [1.0] * len(jobs)
    if len(costs) != len(jobs):
        raise ValueError("one weight per job")
    if len(jobs) < 2 or sum(costs) < MIN_WEIGHT or not _can_fork():
        return [job() for job in jobs]
    cut = min(max(split(costs), 1), len(jobs) - 1)
    read_end, write_end = os.pipe()
    gc.freeze()  # the child's collections leave this process's objects (and pages) alone
    try:
        pid = os.fork()
    except OSError:  # no process to be had (a limit): all of it here
        gc.unfreeze()
        os.close(read_end)
        os.close(write_end)
        return [job() for job in jobs]
    if pid != 0:
        gc.unfreeze()
    if pid == 0:  # the child: its part, to the pipe, then gone
        code = 0
        try:
            os.close(read_end)
            data = pickle.dumps([job() for job in jobs[:cut]], pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
        except BaseException:  # this process redoes the part
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    child: list[Any] | None = None
    source = os.fdopen(read_end, "rb")
    late: Exception | None = None  # raised after the child's part: errors in job order
    rest: list[T] = []
    try:
        try:
            rest = [job() for job in jobs[cut:]]
        except Exception as exc:
            late = exc
        data = source.read()
        _, status = os.waitpid(pid, 0)
        pid = 0
        if os.waitstatus_to_exitcode(status) == 0:
            loaded = pickle.loads(data) if data else None
            if isinstance(loaded, list) and len(loaded) == cut:
                child = loaded
    finally:
        source.close()
        if pid:  # this process failed first: the child is not left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    first: list[T] = child if child is not None else [job() for job in jobs[:cut]]
    if late is not None:
        raise late
    return first + rest
