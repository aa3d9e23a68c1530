"""Inline suppressions, found by scanning raw lines (never by a second parse).

Syntax, in a YAML comment::

    case_id: Refund_Legacy_001  # evalcase: disable=EC201 legacy id kept for history
    # evalcase: disable-file=EC408 near-duplicates are intended in this case

``disable`` applies to findings on the same line, or, when the comment stands on a line
of its own, to the next line. ``disable-file`` applies to the whole file. Several codes
are separated by commas. A reason after the codes is required.
"""

from __future__ import annotations

import re

from evalcase.index.analysis import Suppression

__all__ = ["Suppression", "scan"]

_PATTERN = re.compile(
    r"#\s*evalcase:\s*(?P<scope>disable-file|disable)\s*=\s*(?P<codes>[A-Za-z0-9_,\s-]*?)"
    r"(?:\s+(?P<reason>\S.*?))?\s*$"
)
_CODE = re.compile(r"^[A-Z]{1,3}[0-9]{1,3}$")


def scan(text: str) -> list[Suppression]:
    """Every suppression comment in a file's text."""
    if "evalcase:" not in text:
        return []
    found = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if "evalcase:" not in line:
            continue
        match = _PATTERN.search(line)
        if match is None:
            continue
        codes_text = match.group("codes")
        reason = match.group("reason") or ""
        # "disable=EC201,EC203 reason": the codes are the comma-separated leading tokens.
        tokens = codes_text.replace(",", " ").split()
        codes = tuple(t for t in tokens if _CODE.match(t))
        extra = [t for t in tokens if not _CODE.match(t)]
        if extra:
            reason = " ".join([*extra, reason]).strip()
        own_line = line[: match.start()].strip() == ""
        if match.group("scope") == "disable-file":
            target = 0
        else:
            target = number + 1 if own_line else number
            # A comment above a block of comments applies to the next content line.
            while own_line and target <= len(lines) and lines[target - 1].strip().startswith("#"):
                target += 1
        found.append(Suppression(number, match.start() + 1, target, codes, reason))
    return found
