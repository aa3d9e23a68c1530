"""Personal data in text: found, described and masked. The one place for the detectors.

Lint's ``personal-data`` rule (EC410), the ``no_privacy_leak`` grader and ``--redact``
(what a run writes to ``outputs/`` and ``reports/``) all call ``find``, so what a case may
not contain, what an answer may not reveal and what a report masks are the same thing.

Text is normalised first (Unicode NFKC, and every decimal digit of any script read as its
ASCII digit), so full-width ``１３９８７６５４３２１``, a full-width ``＠`` or an ideographic
space hide nothing. Positions are always of the original text.

What is detected, each with a check that keeps ordinary numbers out:

- ``phone``: a phone number of any region, through Google's libphonenumber data
  (``phonenumbers``): ``+1 415 555 0134``, ``+44 20 7946 0958``, ``13800138000``,
  ``010-62345678``. Numbers without a ``+`` country code are read as mainland China
  numbers; only numbers valid for their region count.
- ``resident_id``: an 18-character resident identity number whose birth date is a real
  date and whose last character is the ISO 7064 MOD 11-2 check digit.
- ``bank_card``: 15 to 19 digits (optionally grouped by spaces or hyphens) that pass the
  Luhn check and start like a payment card (3, 4, 5, 6 or 9).
- ``email``: an address at a domain that is not reserved for examples (``example.com``,
  ``*.example``, ``*.test``, ``*.invalid`` and ``*.localhost`` are documentation names,
  not anyone's mailbox).
- ``address``: a street address with a house number (``…路100号``, ``…街8号3单元``).

Masked forms are not personal data: ``138****0001``, ``110101********1234``,
``6222 **** **** 0001`` and ``z***@corp.cn`` break the digit runs the detectors need.
A run of digits inside a longer run (an order or trace number) is not a match.
"""

from __future__ import annotations

import datetime as _dt
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

PHONE, RESIDENT_ID, BANK_CARD, EMAIL, ADDRESS = (
    "phone",
    "resident_id",
    "bank_card",
    "email",
    "address",
)
MOBILE = PHONE  # the older name: a mainland mobile number is one kind of phone number
KIND_WORDS = {
    PHONE: "a phone number",
    RESIDENT_ID: "a resident ID number",
    BANK_CARD: "a bank card number",
    EMAIL: "an email address",
    ADDRESS: "a street address",
}

# Digit runs are matched whole: a lookbehind and lookahead refuse a neighbouring digit,
# letter or mask character, so "ORDER_13800138000123" or "138****0001" are not numbers.
_EDGE_L = r"(?<![0-9A-Za-z*])"
_EDGE_R = r"(?![0-9A-Za-z*])"
# Every detector of numbers needs four ASCII digits in a row (a card's first group, a
# phone number's groups, an ID's digits); most strings have none.
_DIGITS = re.compile(r"[0-9]{4}")
_RESIDENT = re.compile(_EDGE_L + r"([1-9][0-9]{16}[0-9Xx])" + _EDGE_R)
_CARD = re.compile(_EDGE_L + r"([3-69][0-9]{3}(?:[ -]?[0-9]{2,4}){3,4})" + _EDGE_R)
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9._%+-]+@((?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}))(?![A-Za-z0-9-])"
)
_ADDRESS = re.compile(
    r"[\u4e00-\u9fa5]{2,16}(?:路|街|大道|大街|巷|胡同|弄)[0-9]{1,5}号"
    r"(?:[0-9\u4e00-\u9fa5-]{0,12}?(?:室|单元|楼|栋|层))?"
)
_RESERVED_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = ("example", "test", "invalid", "localhost")
# Something that could be a phone number: 7 to 17 digits in one group, with the
# separators numbers are written with; libphonenumber (slow to import and to run) only
# looks where one is. A date (2026-12-01, 2024/6/1) is not one: libphonenumber's matcher
# finds no number of the default region in any date of 1900-2099 written so (checked
# exhaustively in tests/test_pii.py), and every review record carries a date.
_PHONE_HINT = re.compile(
    r"(?<![0-9A-Za-z*])(?!\(?(?:19|20)[0-9]{2}([-/.])[0-9]{1,2}\1[0-9]{1,2}(?![0-9]))"
    r"\+?\(?[0-9](?:[ ()./-]{0,2}[0-9]){6,16}(?![0-9A-Za-z*])"
)
# What every detector needs one of, in NFKC text: a digit (any script's), an at sign or
# the 号 of an address.
_NOTHING_TO_FIND = re.compile(r"[\d@号]")
# Numbers without a "+" country code are read as numbers of this region.
DEFAULT_REGION = "CN"

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


@dataclass(frozen=True)
class Match:
    """One piece of personal data: its kind, where it is in the original text, the text
    there, its normalised value (for comparing two mentions of the same number) and a
    masked form safe to print in a finding or a report."""

    kind: str
    start: int
    end: int
    masked: str
    text: str = ""
    value: str = ""

    @property
    def normalised(self) -> str:
        """The same number or address however it is written (spaces, +86, case)."""
        if self.kind == PHONE:
            return _e164(self.value)
        if self.kind == BANK_CARD:
            return re.sub(r"[^0-9]", "", self.value)
        return self.value.upper() if self.kind == RESIDENT_ID else self.value.lower()


# A decimal digit that is not an ASCII one (full-width, Arabic-Indic, ...).
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")


def normalise(text: str) -> tuple[str, list[int]]:
    """``text`` in NFKC with ASCII digits, and for each character of the result the index
    of the original character it came from (plus one entry for the end)."""
    if text.isascii() or (
        unicodedata.is_normalized("NFKC", text) and _OTHER_DIGIT.search(text) is None
    ):
        return text, list(range(len(text) + 1))
    # Each character's piece depends on the character alone: one C-level translate with
    # the pieces remembered. No piece is empty, so when the lengths agree every piece is
    # one character, at its character's index; otherwise the loop below says where.
    joined = text.translate(_PIECES)
    if len(joined) == len(text) and not _PIECES.empty:
        return joined, list(range(len(text) + 1))
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch.isdecimal() and not ch.isascii():
            piece = str(unicodedata.decimal(ch))
        else:
            piece = unicodedata.normalize("NFKC", ch) if not ch.isascii() else ch
        out.append(piece)
        where.extend([i] * len(piece))
    where.append(len(text))
    return "".join(out), where


class _Pieces(dict[int, str]):
    """str.translate's table for normalise: a character -> what normalise makes of it
    (filled as characters are met; bounded, a hostile text may hold every character)."""

    empty = False  # a piece was empty: lengths no longer tell (never seen; a safeguard)

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        if ch.isdecimal() and not ch.isascii():
            piece = str(unicodedata.decimal(ch))
        else:
            piece = unicodedata.normalize("NFKC", ch) if not ch.isascii() else ch
        if not piece:
            _Pieces.empty = True
        if len(self) >= 1 << 16:
            self.clear()
        self[code] = piece
        return piece


_PIECES = _Pieces()


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
    if kind == ADDRESS:
        return f"{value[:2]}***{value[-1:]}"
    digits = re.sub(r"[^0-9Xx]", "", value)
    return f"{digits[:3]}{'*' * max(len(digits) - 7, 4)}{digits[-4:]}"


def _e164(value: str) -> str:
    """+8613800138000 for 13800138000, 138 0013 8000 and +86 138-0013-8000 alike."""
    import phonenumbers

    try:
        number = phonenumbers.parse(value, DEFAULT_REGION)
    except phonenumbers.NumberParseException:
        return re.sub(r"[^0-9]", "", value)
    return str(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164))


def _phones(text: str) -> Iterator[tuple[int, int]]:
    """Spans of valid phone numbers in normalised text."""
    if _PHONE_HINT.search(text) is None:
        return
    import phonenumbers

    for m in phonenumbers.PhoneNumberMatcher(
        text, DEFAULT_REGION, leniency=phonenumbers.Leniency.VALID
    ):
        start, end = m.start, m.end
        # A number glued to letters, digits or a mask is part of something else (an
        # order number, a masked value): the same edge rule as the other detectors.
        if start > 0 and re.match(r"[0-9A-Za-z*]", text[start - 1]):
            continue
        if end < len(text) and re.match(r"[0-9A-Za-z*]", text[end]):
            continue
        yield start, end


def find(text: str) -> list[Match]:
    """Every unmasked piece of personal data in ``text``, non-overlapping, in order of
    position (positions of ``text`` as given, before normalisation)."""
    if text.isascii() and "@" not in text and _DIGITS.search(text) is None:
        return []  # most strings of a case: no call made, no list built for them
    if not text.isascii() and _NOTHING_TO_FIND.search(unicodedata.normalize("NFKC", text)) is None:
        return []  # the same for text in other scripts: one C call, not one per character
    norm, where = normalise(text)
    found: list[Match] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, start: int, end: int) -> None:
        if any(start < e and s < end for s, e in taken):
            return
        taken.append((start, end))
        value = norm[start:end]
        a, b = where[start], where[end - 1] + 1
        found.append(Match(kind, a, b, mask(kind, value), text[a:b], value))

    if "@" in norm:
        for m in _EMAIL.finditer(norm):
            if email_is_personal(m.group(2)):
                add(EMAIL, m.start(1), m.end(1))
    if _DIGITS.search(norm) is not None:
        for m in _RESIDENT.finditer(norm):
            if resident_id_valid(m.group(1)):
                add(RESIDENT_ID, m.start(1), m.end(1))
        for m in _CARD.finditer(norm):
            digits = re.sub(r"[ -]", "", m.group(1))
            if 15 <= len(digits) <= 19 and luhn_valid(digits) and len(set(digits)) > 2:
                add(BANK_CARD, m.start(1), m.end(1))
        for start, end in _phones(norm):
            add(PHONE, start, end)
    if "号" in norm:
        for m in _ADDRESS.finditer(norm):
            add(ADDRESS, m.start(), m.end())
    return sorted(found, key=lambda m: m.start)


def find_personal_data(text: str) -> list[Match]:
    """The older name of ``find``."""
    return find(text)


def redact_text(text: str) -> str:
    """``text`` with every piece of personal data replaced by its masked form."""
    matches = find(text)
    if not matches:
        return text
    out, last = [], 0
    for m in matches:
        out.append(text[last : m.start])
        out.append(_redacted(m))
        last = m.end
    out.append(text[last:])
    return "".join(out)


def _redacted(match: Match) -> str:
    """What --redact writes: less than a finding shows (no email domain)."""
    if match.kind == EMAIL:
        return "***@***"
    if match.kind == ADDRESS:
        return "[地址已脱敏]"
    keep = 3 if match.kind == PHONE else 4
    digits = re.sub(r"[^0-9Xx]", "", match.value)
    return digits[:keep] + "*" * max(len(digits) - keep - 4, 0) + digits[-4:]


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
    """Every string inside JSON-like data."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings(v)
