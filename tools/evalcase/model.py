"""Result and fact types shared by every part of evalcase. All frozen, all sortable."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.IntEnum):
    """Ordered so that ``max()`` over findings gives the worst one."""

    INFO = 0
    WARNING = 1
    ERROR = 2

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.strip().upper()]

    def __str__(self) -> str:
        return self.name.lower()


class FileKind(enum.Enum):
    """What a file is, decided by where it lives in the repository."""

    CASE = "case"
    MANIFEST = "dataset"
    FIXTURE = "fixture"
    UNKNOWN = "unknown"


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place. ``line`` and ``column`` are 1-based; 0 means 'whole file'."""

    path: str
    line: int
    column: int
    code: str
    severity: Severity = field(compare=False)
    message: str
    name: str = field(default="", compare=False)
    # Extra places the problem involves (e.g. the other copy of a duplicate key).
    related: tuple[tuple[str, int, int], ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "name": self.name,
            "severity": str(self.severity),
            "message": self.message,
            "related": [{"path": p, "line": ln, "column": c} for p, ln, c in self.related],
        }

    def to_raw(self) -> tuple[Any, ...]:
        """A marshal-friendly form for the cache."""
        return (
            self.path,
            self.line,
            self.column,
            self.code,
            int(self.severity),
            self.message,
            self.name,
            tuple(self.related),
        )

    @classmethod
    def from_raw(cls, raw: tuple[Any, ...]) -> Finding:
        path, line, column, code, severity, message, name, related = raw
        return cls(
            path,
            line,
            column,
            code,
            Severity(severity),
            message,
            name,
            tuple(tuple(r) for r in related),
        )


class FatalError(Exception):
    """A problem that stops the command (bad configuration, not a repository...).

    Everything about the files being linted is a Finding instead.
    """
