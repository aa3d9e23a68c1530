"""How a long command shows its progress (``evalcase run``, ``evalcase audit``): a bar
on a terminal; in logs and CI a line at the start, at the end and at most one every
``PlainProgress.INTERVAL`` seconds between, plus one per error; or nothing. The library
reports progress through :class:`evalcase.run.driver.Progress`; these draw it."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import click

from evalcase.contract import attempt


class RichProgress:
    """done, errors so far, elapsed, rate, ETA, on a terminal."""

    def __init__(self, label: str) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.errors = 0
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.label = label
        self.task: Any = None
        self.t0 = time.monotonic()
        self.new = 0

    def start(self, total: int, done: int, errors: int) -> None:
        self.errors = errors
        self.progress.start()
        self.task = self.progress.add_task(
            self.label, total=total, completed=done, errors=errors, rate=""
        )

    def advance(self, record: attempt.AttemptRecord) -> None:
        self.new += 1
        self.errors += record.errored
        rate = self.new / max(1e-9, time.monotonic() - self.t0)
        self.progress.update(self.task, advance=1, errors=self.errors, rate=f"{rate:.1f}/s")

    def close(self) -> None:
        self.progress.stop()


class PlainProgress:
    """Lines for logs and CI: one at the start, one at the end, at most one every
    ``interval`` seconds between (a run of 70 quick attempts is three lines, not 70), and
    one per error. ``clock`` is injected by tests; it defaults to the monotonic clock."""

    INTERVAL = 5.0

    def __init__(
        self,
        label: str,
        clock: Callable[[], float] = time.monotonic,
        interval: float = INTERVAL,
    ) -> None:
        self.label = label
        self.clock = clock
        self.interval = interval
        self.total = self.done = self.errors = self.new = 0
        self.t0 = clock()
        self.shown_at = self.t0
        self.shown: int | None = None  # the count of the last line written

    def _line(self, now: float) -> None:
        elapsed = now - self.t0
        rate = self.new / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        click.echo(
            f"{self.label}: {self.done}/{self.total} done, {self.errors} errors, "
            f"{elapsed:.1f}s elapsed, {rate:.1f}/s, ETA {left:.0f}s",
            err=True,
        )
        self.shown_at, self.shown = now, self.done

    def start(self, total: int, done: int, errors: int) -> None:
        self.total, self.done, self.errors = total, done, errors
        self._line(self.clock())

    def advance(self, record: attempt.AttemptRecord) -> None:
        self.done += 1
        self.new += 1
        typed = record
        if typed.errored:
            self.errors += 1
            kind, message = (typed.error.kind, typed.error.message) if typed.error else (None, None)
            click.echo(
                f"  error: {typed.case_id} attempt {typed.attempt}: {kind}: {str(message)[:200]}",
                err=True,
            )
        now = self.clock()
        if self.done >= self.total or now - self.shown_at >= self.interval:
            self._line(now)

    def close(self) -> None:
        """The end line, when the run stopped short of its total (interrupted, stopped
        by a limit) after attempts no line has counted yet."""
        if self.shown != self.done:
            self._line(self.clock())


def progress_display(label: str, mode: str) -> Any:
    """The progress display ``--progress MODE`` asks for (auto: a bar on a terminal, lines
    elsewhere; none: nothing)."""
    if mode == "none":
        from evalcase.run.driver import NoProgress

        return NoProgress()
    if mode == "bar" or (mode == "auto" and sys.stderr.isatty()):
        return RichProgress(label)
    return PlainProgress(label)
