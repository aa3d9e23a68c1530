"""How a long command shows its progress (``evalcase run``, ``evalcase audit``): a bar
on a terminal, a line per tenth and per error in logs and CI, or nothing. The library
reports progress through :class:`evalcase.run.driver.Progress`; these draw it."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
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

    def advance(self, record: Mapping[str, Any]) -> None:
        self.new += 1
        self.errors += attempt.read(record).errored
        rate = self.new / max(1e-9, time.monotonic() - self.t0)
        self.progress.update(self.task, advance=1, errors=self.errors, rate=f"{rate:.1f}/s")

    def close(self) -> None:
        self.progress.stop()


class PlainProgress:
    """A line per tenth of the run and per error, for logs and CI."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.total = self.done = self.errors = self.new = 0
        self.t0 = time.monotonic()
        self.step = 1

    def _line(self) -> None:
        elapsed = time.monotonic() - self.t0
        rate = self.new / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        click.echo(
            f"{self.label}: {self.done}/{self.total} done, {self.errors} errors, "
            f"{elapsed:.1f}s elapsed, {rate:.1f}/s, ETA {left:.0f}s",
            err=True,
        )

    def start(self, total: int, done: int, errors: int) -> None:
        self.total, self.done, self.errors = total, done, errors
        self.step = max(1, total // 10)
        self._line()

    def advance(self, record: Mapping[str, Any]) -> None:
        self.done += 1
        self.new += 1
        typed = attempt.read(record)
        if typed.errored:
            self.errors += 1
            kind, message = (typed.error.kind, typed.error.message) if typed.error else (None, None)
            click.echo(
                f"  error: {typed.case_id} attempt {typed.attempt}: {kind}: {str(message)[:200]}",
                err=True,
            )
        if self.done % self.step == 0 or self.done == self.total:
            self._line()

    def close(self) -> None:
        return None


def progress_display(label: str, mode: str) -> Any:
    """The progress display ``--progress MODE`` asks for (auto: a bar on a terminal, lines
    elsewhere; none: nothing)."""
    if mode == "none":
        from evalcase.run.driver import NoProgress

        return NoProgress()
    if mode == "bar" or (mode == "auto" and sys.stderr.isatty()):
        return RichProgress(label)
    return PlainProgress(label)
