"""Personal data patterns (mainland mobile numbers, resident ID numbers with their check
digit, bank card numbers with Luhn, emails, street addresses): found and masked.

Used by the ``no_privacy_leak`` grader and by ``--redact`` for what is written to
``outputs/`` and ``reports/``. Checksums keep order numbers and timestamps from being taken
for ID or card numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_MOBILE = re.compile(r"(?<![0-9])(?:\+?86[- ]?)?1[3-9][0-9](?:[- ]?[0-9]{4}){2}(?![0-9])")
_RESIDENT_ID = re.compile(r"(?<![0-9A-Za-z])[1-9][0-9]{16}[0-9Xx](?![0-9A-Za-z])")
_CARD = re.compile(r"(?<![0-9])(?:[0-9][ -]?){15,18}[0-9](?![0-9])")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_ADDRESS = re.compile(
    r"[\u4e00-\u9fa5]{2,16}(?:路|街|大道|大街|巷|胡同|弄)[0-9]{1,5}号"
    r"(?:[0-9\u4e00-\u9fa5-]{0,12}?(?:室|单元|楼|栋|层))?"
)

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def resident_id_valid(text: str) -> bool:
    if len(text) != 18 or not text[:17].isdigit():
        return False
    total = sum(int(d) * w for d, w in zip(text[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == text[17].upper()


def luhn_valid(digits: str) -> bool:
    if not digits.isdigit() or not 16 <= len(digits) <= 19:
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


@dataclass(frozen=True)
class Match:
    kind: str  # mobile | resident_id | bank_card | email | address
    text: str
    start: int
    end: int

    @property
    def normalised(self) -> str:
        if self.kind in ("mobile", "bank_card"):
            digits = re.sub(r"[^0-9]", "", self.text)
            return digits[-11:] if self.kind == "mobile" else digits
        return self.text.upper() if self.kind == "resident_id" else self.text.lower()


def find(text: str) -> list[Match]:
    """Every piece of personal data in ``text``, non-overlapping, in order."""
    found: list[Match] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, m: re.Match[str]) -> None:
        if any(m.start() < e and s < m.end() for s, e in taken):
            return
        taken.append((m.start(), m.end()))
        found.append(Match(kind, m.group(0), m.start(), m.end()))

    for m in _RESIDENT_ID.finditer(text):
        if resident_id_valid(m.group(0)):
            add("resident_id", m)
    for m in _CARD.finditer(text):
        if luhn_valid(re.sub(r"[^0-9]", "", m.group(0))):
            add("bank_card", m)
    for m in _MOBILE.finditer(text):
        add("mobile", m)
    for m in _EMAIL.finditer(text):
        add("email", m)
    for m in _ADDRESS.finditer(text):
        add("address", m)
    return sorted(found, key=lambda x: x.start)


def _mask(match: Match) -> str:
    if match.kind == "email":
        return "***@***"
    if match.kind == "address":
        return "[地址已脱敏]"
    keep = 3 if match.kind == "mobile" else 4
    digits = re.sub(r"[^0-9Xx]", "", match.text)
    return digits[:keep] + "*" * max(len(digits) - keep - 4, 0) + digits[-4:]


def redact_text(text: str) -> str:
    matches = find(text)
    if not matches:
        return text
    out, last = [], 0
    for m in matches:
        out.append(text[last : m.start])
        out.append(_mask(m))
        last = m.end
    out.append(text[last:])
    return "".join(out)


def redact(value: Any) -> Any:
    """A copy of JSON-like data with personal data masked in every string."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings(v)
