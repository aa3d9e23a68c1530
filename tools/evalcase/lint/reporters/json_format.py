"""A JSON list of findings: code, name, severity, path, line, column, message, related."""

from __future__ import annotations

import json
from collections.abc import Sequence

from evalcase.lint.reporters import ReportContext
from evalcase.model import Finding


def render(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=2) + "\n"
