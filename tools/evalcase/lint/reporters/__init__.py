"""Output formats for findings. One module per format, registered in REPORTERS."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalcase.model import Finding


@dataclass(frozen=True)
class ReportContext:
    root: Path
    files_checked: int
    tool_version: str
    # The text findings' positions come from, by path, when it is not the work tree's
    # file: the staged blobs under --staged (evalcase-fmt may have rewritten the file
    # since it was staged). A path missing here has no text to quote.
    sources: Mapping[str, bytes] | None = None


Render = Callable[[Sequence[Finding], ReportContext], str]


def _registry() -> dict[str, Render]:
    from evalcase.lint.reporters import github, json_format, sarif, text

    return {
        "text": text.render,
        "json": json_format.render,
        "github": github.render,
        "sarif": sarif.render,
    }


REPORTER_NAMES = ("text", "json", "github", "sarif")


def get(name: str) -> Render:
    return _registry()[name]
