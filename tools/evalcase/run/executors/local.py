"""The local executor: attempts on a pool of threads in this process.

Agents are processes, HTTP services or model APIs, so an attempt mostly waits: threads
give the concurrency without pickling. At most ``2 * concurrency`` jobs are taken from
the iterator at a time, so memory stays flat however many attempts a run has.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from evalcase.contract.attempt import AttemptRecord
from evalcase.run.executors.base import AttemptJob
from evalcase.run.runner import lost_record, run_attempt


class LocalExecutor:
    name = "local"

    def run(self, jobs: Iterable[AttemptJob], concurrency: int) -> Iterator[AttemptRecord]:
        concurrency = max(1, concurrency)
        if concurrency == 1:
            for job in jobs:
                yield run_attempt(job)
            return
        pending: dict[Future[AttemptRecord], AttemptJob] = {}
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
                    pending[pool.submit(run_attempt, nxt)] = nxt
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
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
