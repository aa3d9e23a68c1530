"""The plain progress display (logs, CI): start, end, at most one line per interval."""

from __future__ import annotations

import pytest

from evalcase.commands.progress import PlainProgress
from evalcase.contract.attempt import AttemptRecord


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _record(n: int, error: bool = False) -> AttemptRecord:
    record: dict[str, object] = {
        "case_id": "refund_eligibility_001",
        "attempt": n,
        "status": "error" if error else "completed",
    }
    if error:
        record["error"] = {"kind": "timeout", "message": "no reply"}
    return AttemptRecord.from_json(record)


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_quick_attempts_make_a_start_and_an_end_line_not_one_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock()
    shown = PlainProgress("audit gold", clock=clock, interval=5.0)
    shown.start(70, 0, 0)
    for n in range(70):
        clock.now += 0.01
        shown.advance(_record(n))
    shown.close()
    lines = _lines(capsys)
    assert [line.split(",")[0] for line in lines] == [
        "audit gold: 0/70 done",
        "audit gold: 70/70 done",
    ]


def test_a_long_run_writes_at_most_one_line_per_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock()
    shown = PlainProgress("run", clock=clock, interval=5.0)
    shown.start(20, 0, 0)
    for n in range(20):
        clock.now += 2.0  # 40 s in all: a line at 6, 12, 18... s, never two within 5 s
        shown.advance(_record(n, error=n == 4))
    shown.close()
    lines = _lines(capsys)
    counts = [line.split(":")[1].split("/")[0].strip() for line in lines if "done" in line]
    assert counts == ["0", "3", "6", "9", "12", "15", "18", "20"]
    assert "  error: refund_eligibility_001 attempt 4: timeout: no reply" in lines


def test_a_run_stopped_short_ends_with_its_count(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    shown = PlainProgress("run", clock=clock, interval=5.0)
    shown.start(10, 2, 0)  # a resume: two done before
    for n in range(3):
        clock.now += 0.1
        shown.advance(_record(n))
    shown.close()
    assert [line.split(",")[0] for line in _lines(capsys)] == ["run: 2/10 done", "run: 5/10 done"]
