"""The local executor (evalcase.run.executors.local): attempts on a pool of threads, each
record handed over as its attempt finishes, for a constant cost whatever the number of
attempts in flight (at concurrency 200 a run keeps 400 pending)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from evalcase.run.executors import local


def _released_one_by_one(
    monkeypatch: pytest.MonkeyPatch, n: int, concurrency: int
) -> tuple[list[int], int]:
    """Run ``n`` fake attempts, each finishing only when the one before it has been
    handed over (so exactly one finishes at a time, whatever the machine's speed); the
    records in the order handed over, and the events of the executor's bookkeeping seen
    by the consuming thread (calls into concurrent.futures and threading)."""
    gates = [threading.Event() for _ in range(n)]

    def attempt(job: Any) -> Any:
        assert gates[job].wait(30), "the test's release never came"
        return job

    monkeypatch.setattr(local, "run_attempt", attempt)
    order: list[int] = []
    events = 0

    def count(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal events
        name = frame.f_code.co_filename
        if "concurrent/futures" in name or name.endswith("threading.py"):
            events += 1

    records: Iterator[Any] = local.LocalExecutor().run(list(range(n)), concurrency)
    gates[0].set()
    sys.setprofile(count)
    try:
        for record in records:
            order.append(record)
            if record + 1 < n:
                gates[record + 1].set()
    finally:
        sys.setprofile(None)
        for gate in gates:
            gate.set()
    return order, events


def test_records_come_in_the_order_attempts_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    order, _ = _released_one_by_one(monkeypatch, 30, 8)
    assert order == list(range(30))


def test_handing_over_a_record_costs_the_same_with_many_attempts_in_flight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``concurrent.futures.wait`` over every pending attempt registered a waiter on each
    of them for every record: at concurrency 200 (400 pending) that was about 0.3 ms of
    the driver's thread an attempt. The bookkeeping per record must not grow with the
    number in flight."""
    n = 256  # enough records that starting the pool's threads is not what is compared
    _, few = _released_one_by_one(monkeypatch, n, 2)
    _, many = _released_one_by_one(monkeypatch, n, 32)
    assert many < 2 * few, (few, many)
