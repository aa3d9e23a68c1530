"""CEL evaluations that can be stopped: a pool of worker processes.

cel-cpp holds the GIL while it evaluates and cannot be interrupted; it bounds the
iterations of comprehensions (``map``, ``filter``, ``all``, ``exists``) but not the memory
one iteration may build (``list.map(x, list.map(y, s + s))`` over a long ``s`` takes
gigabytes). An expression is fixture data, written by anyone with a pull request, so an
evaluation that could be expensive (one with a comprehension or a ``+``) runs in a worker
process: with a memory limit (``RLIMIT_AS``, ``[run] cel_memory_mb``, default 512), killed
at the attempt's deadline (the attempt records ``timeout``), and in another process, so
that it never holds the GIL the other attempts of the run need. Other expressions
(comparisons, field reads, ``in``...) cost microseconds and are evaluated in process.

Workers are reused across attempts (one per concurrently evaluating attempt); a killed
one is replaced on demand. A large variable (a state key) is sent to a worker once, with
the token its :class:`~evalcase.contract.cel.Scopes` gave it, and afterwards by token
only: the worker keeps the last few values it was sent and evaluates over them with its
own ``Scopes``, so an unchanged 3 MB state is neither pickled nor converted again for
each evaluation.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalcase.contract.cel import Scopes

DEFAULT_MEMORY_MB = 512
HELD = 8  # large values a worker keeps (by token)
SENT: dict[str, int] = {}  # variable name -> times its value was sent to a worker
_HEADER = struct.Struct("!Q")


class WorkerTimeout(Exception):
    """The evaluation did not finish before the deadline (the worker was killed)."""


class WorkerFailed(Exception):
    """The worker died (for example at its memory limit)."""


def _read_exact(fd: int, size: int, deadline: float | None) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise WorkerTimeout()
        chunk = os.read(fd, min(1 << 20, size - len(chunks)))
        if not chunk:
            raise WorkerFailed("the CEL worker exited")
        chunks.extend(chunk)
    return bytes(chunks)


class Worker:
    def __init__(self, memory_mb: int) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.memory_mb = memory_mb
        self.held: OrderedDict[int, None] = OrderedDict()  # tokens the worker keeps
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evalcase.run.celworker", str(memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )

    def request(
        self, variables: Mapping[str, Any], scopes: Scopes | None
    ) -> tuple[dict[str, Any], dict[str, int], dict[int, Any], list[int]]:
        """What to send: small values inline, large ones by token (with the value only
        the first time), and the tokens the worker may forget."""
        from evalcase.contract import cel

        if scopes is None:
            return dict(cel.plain(variables)), {}, {}, []
        inline: dict[str, Any] = {}
        refs: dict[str, int] = {}
        values: dict[int, Any] = {}
        for name, value in variables.items():
            if cel.literal(value, 256) is not None:
                inline[name] = value
                continue
            token = scopes.token(name, value)
            refs[name] = token
            if token in self.held:
                self.held.move_to_end(token)
            else:
                # As it is (the state is JSON data): the worker's Scopes converts what
                # CEL cannot take (tuples, other mappings) itself.
                values[token] = value
                self.held[token] = None
                SENT[name] = SENT.get(name, 0) + 1
        drop: list[int] = []
        while len(self.held) > max(HELD, len(refs)):
            drop.append(self.held.popitem(last=False)[0])
        return inline, refs, values, drop

    def evaluate(
        self,
        source: str,
        variables: Mapping[str, Any],
        deadline: float | None,
        scopes: Scopes | None = None,
    ) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        message = (source, *self.request(variables, scopes))
        blob = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(_HEADER.pack(len(blob)) + blob)
            self.proc.stdin.flush()
        except OSError:
            raise WorkerFailed("the CEL worker exited") from None
        fd = self.proc.stdout.fileno()
        (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
        return pickle.loads(_read_exact(fd, size, deadline))

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


_idle: list[Worker] = []
_lock = threading.Lock()


def evaluate(
    source: str,
    variables: Mapping[str, Any],
    deadline: float | None,
    memory_mb: int,
    scopes: Scopes | None = None,
) -> Any:
    """``cel.evaluate(source, variables)`` in a worker; WorkerTimeout at the deadline,
    WorkerFailed when the worker died (its memory limit). With ``scopes``, large values
    go by token (sent once per worker)."""
    with _lock:  # the worker used last: it holds the values sent to it by token
        worker = next((w for w in reversed(_idle) if w.memory_mb == memory_mb), None)
        if worker is not None:
            _idle.remove(worker)
    if worker is None:
        worker = Worker(memory_mb)
    try:
        result = worker.evaluate(source, variables, deadline, scopes)
    except BaseException:
        worker.kill()
        raise
    with _lock:
        keep = len(_idle) < 32
        if keep:
            _idle.append(worker)
    if not keep:
        worker.kill()
    return result


def shutdown() -> None:
    with _lock:
        workers = list(_idle)
        _idle.clear()
    for worker in workers:
        worker.kill()


def _serve(memory_mb: int) -> None:
    if sys.platform.startswith("linux") and memory_mb > 0:
        import resource

        limit = memory_mb * 1024 * 1024
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from evalcase.contract import cel

    kept: dict[int, Any] = {}
    scopes = cel.Scopes()
    stdin, stdout = sys.stdin.buffer.fileno(), sys.stdout.buffer.fileno()
    while True:
        try:
            header = _read_exact(stdin, _HEADER.size, None)
        except WorkerFailed:
            return
        (size,) = _HEADER.unpack(header)
        source, inline, refs, values, drop = pickle.loads(_read_exact(stdin, size, None))
        kept.update(values)
        for token in drop:
            kept.pop(token, None)
        try:
            if refs:
                missing = [name for name, token in refs.items() if token not in kept]
                variables = {**inline, **{n: kept[t] for n, t in refs.items() if t in kept}}
                value: Any = (
                    cel.EvalError(f"the CEL worker lost the value of {', '.join(missing)}")
                    if missing
                    else scopes.evaluate(source, variables)
                )
            else:
                value = cel.evaluate(source, inline)
        except MemoryError:
            value = cel.EvalError(f"the evaluation exceeded its memory limit of {memory_mb} MB")
        try:
            blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            blob = pickle.dumps(cel.EvalError(f"the value cannot be returned: {exc}"))
        os.write(stdout, _HEADER.pack(len(blob)))
        view = memoryview(blob)
        while view:
            view = view[os.write(stdout, view) :]


if __name__ == "__main__":
    _serve(int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MEMORY_MB)
