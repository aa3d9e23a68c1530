"""The local executor: attempts on a pool of threads in this process.

Agents are processes, HTTP services or model APIs, so an attempt mostly waits: threads
give the concurrency without pickling. At most ``2 * concurrency`` jobs are taken from
the iterator at a time, so memory stays flat however many attempts a run has. A finished
attempt's future puts itself on a queue the driver's thread reads: handing over a record
costs the same however many attempts are in flight (``concurrent.futures.wait`` over all
of them registered a waiter on each pending future per record, 0.3 ms a record at
concurrency 200).
"""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from evalcase.contract.attempt import AttemptRecord
from evalcase.run.executors.base import AttemptJob
from evalcase.run.runner import lost_record, run_attempt


class LocalExecutor:
    name = "local"

    def session(self) -> contextlib.AbstractContextManager[None]:
        """Nothing to keep between runs: threads start with each run."""
        return contextlib.nullcontext()

    def run(self, jobs: Iterable[AttemptJob], concurrency: int) -> Iterator[AttemptRecord]:
        concurrency = max(1, concurrency)
        if concurrency == 1:
            for job in jobs:
                yield run_attempt(job)
            return
        pending: dict[Future[AttemptRecord], AttemptJob] = {}
        finished: queue.SimpleQueue[Future[AttemptRecord]] = queue.SimpleQueue()
        source = iter(jobs)
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="evalcase-attempt")
        try:
            exhausted = False
            while True:
                while not exhausted and len(pending) < 2 * concurrency:
                    nxt = next(source, None)
                    if nxt is None:
                        exhausted = True
                        break
                    future = pool.submit(run_attempt, nxt)
                    pending[future] = nxt
                    future.add_done_callback(finished.put)
                if not pending:
                    return
                future = finished.get()
                job = pending.pop(future)
                try:
                    yield future.result()
                except Exception as exc:  # run_attempt records faults; this is a bug
                    yield lost_record(job, f"attempt crashed: {exc!r}")
        finally:
            for future in pending:
                future.cancel()
            # Abandoned py: agents past their timeout may still be running: do not wait.
            pool.shutdown(wait=False, cancel_futures=True)
