"""GitHub Actions workflow commands: ``::error file=,line=,col=,title=::message``.

Property values escape ``%``, CR, LF, ``:`` and ``,``; messages escape ``%``, CR and LF,
as the runner's toolkit does.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalcase.lint.reporters import ReportContext
from evalcase.model import Finding, Severity

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(findings: Sequence[Finding], ctx: ReportContext) -> str:
    lines = []
    for f in findings:
        props = ",".join(
            [
                f"file={escape_property(f.path)}",
                f"line={f.line}",
                f"col={f.column}",
                f"title={escape_property(f'{f.code} {f.name}')}",
            ]
        )
        lines.append(f"::{_LEVEL[f.severity]} {props}::{escape_data(f.message)}")
    return "\n".join(lines) + ("\n" if lines else "")
