"""Detectors for unmasked personal data in text (seed 002 section 9).

Shared by the lint rule ``personal-data`` (EC410) and the ``no_privacy_leak`` grader, so
that what a case may not contain and what an answer may not reveal are the same thing.

What is detected, each with a check that keeps ordinary numbers out:

- ``mobile``: a mainland mobile number, 11 digits starting ``1[3-9]`` (an optional
  ``+86``/``86`` prefix, spaces or hyphens in the usual 3-4-4 grouping).
- ``resident_id``: an 18-character resident identity number whose birth date is a real
  date and whose last character is the ISO 7064 MOD 11-2 check digit.
- ``bank_card``: 15 to 19 digits (optionally grouped by spaces or hyphens) that pass the
  Luhn check and start like a payment card (3, 4, 5, 6 or 9).
- ``email``: an address at a domain that is not reserved for examples (``example.com``,
  ``*.example``, ``*.test``, ``*.invalid`` and ``*.localhost`` are documentation names,
  not anyone's mailbox).

Masked forms are not personal data: ``138****0001``, ``110101********1234``,
``6222 **** **** 0001`` and ``z***@corp.cn`` break the digit runs the detectors need.
A run of digits inside a longer run (an order or trace number) is not a match.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

MOBILE, RESIDENT_ID, BANK_CARD, EMAIL = "mobile", "resident_id", "bank_card", "email"
KIND_WORDS = {
    MOBILE: "a mainland mobile number",
    RESIDENT_ID: "a resident ID number",
    BANK_CARD: "a bank card number",
    EMAIL: "an email address",
}

# Digit runs are matched whole: a lookbehind and lookahead refuse a neighbouring digit,
# letter or mask character, so "ORDER_13800138000123" or "138****0001" are not numbers.
_EDGE_L = r"(?<![0-9A-Za-z*])"
_EDGE_R = r"(?![0-9A-Za-z*])"
# Every detector below needs four ASCII digits in a row (a card's first group, a mobile
# number's groups, an ID's digits); most strings have none.
_DIGITS = re.compile(r"[0-9]{4}")
_MOBILE = re.compile(_EDGE_L + r"(?:\+?86[ -]?)?(1[3-9][0-9](?:[ -]?[0-9]{4}){2})" + _EDGE_R)
_RESIDENT = re.compile(_EDGE_L + r"([1-9][0-9]{16}[0-9Xx])" + _EDGE_R)
_CARD = re.compile(_EDGE_L + r"([3-69][0-9]{3}(?:[ -]?[0-9]{2,4}){3,4})" + _EDGE_R)
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9._%+-]+@((?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}))(?![A-Za-z0-9-])"
)
_RESERVED_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = ("example", "test", "invalid", "localhost")

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


@dataclass(frozen=True)
class Match:
    """One piece of personal data: its kind, where it is in the text, and a masked form
    safe to print in a finding or a report."""

    kind: str
    start: int
    end: int
    masked: str


def resident_id_valid(value: str) -> bool:
    """An 18-character resident ID with a real birth date and the right check digit."""
    if len(value) != 18 or not value[:17].isdigit():
        return False
    try:
        born = _dt.date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    if born.year < 1900:
        return False
    total = sum(int(d) * w for d, w in zip(value[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == value[17].upper()


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a string of digits."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def email_is_personal(domain: str) -> bool:
    """False for domains reserved for documentation and tests (RFC 2606/6761)."""
    domain = domain.lower()
    if domain in _RESERVED_DOMAINS or any(domain.endswith("." + d) for d in _RESERVED_DOMAINS):
        return False
    return domain.rsplit(".", 1)[-1] not in _RESERVED_TLDS


def mask(kind: str, value: str) -> str:
    """A form of ``value`` that shows what was found without repeating it."""
    if kind == EMAIL:
        name, _, domain = value.partition("@")
        return f"{name[:1]}***@{domain}"
    digits = re.sub(r"[^0-9Xx]", "", value)
    return f"{digits[:3]}{'*' * max(len(digits) - 7, 4)}{digits[-4:]}"


def find_personal_data(text: str) -> list[Match]:
    """Every unmasked piece of personal data in ``text``, in order of position."""
    if "@" not in text and _DIGITS.search(text) is None:
        return []  # most strings of a case: no call made, no list built for them
    found: list[Match] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, start: int, end: int, value: str) -> None:
        if any(start < e and s < end for s, e in taken):
            return
        taken.append((start, end))
        found.append(Match(kind, start, end, mask(kind, value)))

    if "@" in text:
        for m in _EMAIL.finditer(text):
            if email_is_personal(m.group(2)):
                add(EMAIL, m.start(1), m.end(1), m.group(1))
    if _DIGITS.search(text) is None:
        return sorted(found, key=lambda m: m.start)
    for m in _RESIDENT.finditer(text):
        if resident_id_valid(m.group(1)):
            add(RESIDENT_ID, m.start(1), m.end(1), m.group(1))
    for m in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", m.group(1))
        if 15 <= len(digits) <= 19 and luhn_valid(digits) and len(set(digits)) > 2:
            add(BANK_CARD, m.start(1), m.end(1), m.group(1))
    for m in _MOBILE.finditer(text):
        add(MOBILE, m.start(1), m.end(1), m.group(1))
    return sorted(found, key=lambda m: m.start)
