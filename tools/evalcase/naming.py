"""Identifiers: the case-ID grammar and what may not appear in an ID (docs/versioning.md).

A case ID is ``<domain>_<ability>_<scenario...>_<NNN>`` in lower snake case: a domain and
an ability from the repository's vocabularies, any number of scenario words, and a
zero-padded sequence number of at least three digits (``refund_rag_member_points_001``).
It names the business object under evaluation, never a run, so model names, prompt or
experiment words, versions and dates do not belong in it.

Every identifier (case, dataset and fixture IDs, tool names) is printable ASCII: look-alike
letters from other scripts and invisible characters would make two IDs that read the same
refer to different things.
"""

from __future__ import annotations

import datetime as _dt
import re
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache

CASE_ID = re.compile(r"^[a-z][a-z0-9]*_[a-z][a-z0-9]*(?:_[a-z0-9]+)*_[0-9]{3,}$")
CASE_ID_SHAPE = "<domain>_<ability>_<scenario...>_<NNN>"

# Letters from other scripts that render like ASCII letters (the common confusables).
_LOOKALIKES = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i",
    "ј": "j", "ѕ": "s", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ӏ": "l", "к": "k",
    "м": "m", "т": "t", "в": "b", "н": "h", "α": "a", "ο": "o", "ν": "v", "ι": "i",
    "κ": "k", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ε": "e", "ı": "i",
}  # fmt: skip

_VERSION = re.compile(r"^v[0-9]+(?:[a-z]+[0-9]*)*$")


def bad_characters(value: str) -> list[tuple[int, str]]:
    """(1-based position, character) of every character an identifier may not contain:
    anything outside printable ASCII, spaces, and the path separators ``/`` and ``\\``."""
    if (
        value.isascii()
        and value.isprintable()
        and " " not in value
        and "/" not in value
        and "\\" not in value
    ):
        return []  # the usual ID: a few C-level scans instead of a test per character
    return [(i, ch) for i, ch in enumerate(value, 1) if not ("!" <= ch <= "~") or ch in "/\\"]


def describe_character(ch: str) -> str:
    """``U+0430 CYRILLIC SMALL LETTER A (looks like 'a')``."""
    code = f"U+{ord(ch):04X}"
    name = unicodedata.name(ch, "")
    if not name:
        category = unicodedata.category(ch)
        name = "<control character>" if category == "Cc" else f"<unnamed, category {category}>"
    looks = _LOOKALIKES.get(ch)
    if looks is None and ch not in "/\\ ":
        folded = unicodedata.normalize("NFKC", ch)
        if folded != ch and folded.isascii() and folded.isprintable() and folded.strip():
            looks = folded
    return f"{code} {name}" + (f" (looks like {looks!r})" if looks else "")


def character_problems(value: str, limit: int = 3) -> str | None:
    """A readable list of the disallowed characters in ``value``, or None when it is clean."""
    bad = bad_characters(value)
    if not bad:
        return None
    parts = [f"{describe_character(ch)} at position {pos}" for pos, ch in bad[:limit]]
    if len(bad) > limit:
        parts.append(f"and {len(bad) - limit} more")
    return ", ".join(parts)


def ascii_form(value: str) -> str:
    """``value`` with look-alike letters replaced and invisible characters dropped: what the
    author most likely meant to type."""
    out = []
    for ch in value:
        if "!" <= ch <= "~":
            out.append(ch)
            continue
        looks = _LOOKALIKES.get(ch)
        if looks is None:
            folded = unicodedata.normalize("NFKC", ch)
            looks = folded if folded.isascii() and folded.isprintable() else ""
        out.append(looks.strip())
    return "".join(out)


def case_id_parts(case_id: str) -> tuple[list[str], str | None]:
    """The words of a case ID (lower-cased) and its trailing sequence number, if any.

    Words are split at anything but letters and digits, so that a malformed ID
    (``refund-rag-gpt4o-001``) is still read word by word."""
    tokens = [t for t in re.split(r"[^a-z0-9]+", case_id.lower()) if t]
    if len(tokens) > 1 and tokens[-1].isdigit():
        return tokens[:-1], tokens[-1]
    return tokens, None


def _is_date(token: str) -> bool:
    if not token.isdigit() or len(token) not in (4, 6, 8):
        return False
    year = int(token[:4])
    if not 1990 <= year <= 2099:
        return False
    if len(token) == 4:
        return True
    month = int(token[4:6])
    if not 1 <= month <= 12:
        return False
    if len(token) == 6:
        return True
    try:
        _dt.date(year, month, int(token[6:]))
    except ValueError:
        return False
    return True


@cache
def _forbidden(tokens: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Single forbidden words, and multi-word phrases (with underscores)."""
    single = frozenset(t.lower() for t in tokens if "_" not in t)
    return single, tuple(t.lower() for t in tokens if "_" in t)


_RUN_WORDS = frozenset(
    {"run", "trial", "round", "batch", "iter", "iteration", "epoch", "sweep", "ckpt", "checkpoint"}
)
_MODEL_SIZE = re.compile(r"^[0-9]+(?:p[0-9]+)?[bmk]$|^[0-9]+o(?:mini)?$")
_NUMBERED = re.compile(r"^v?[0-9][a-z0-9]*$")
# Variant names models ship under: gpt4turbo, o4mini, geminiflash, qwenmax.
_VARIANT = re.compile(
    r"^v?[0-9]*(?:p[0-9]+)?(?:mini|nano|turbo|pro|max|plus|flash|lite|preview|instruct|chat|coder)"
    r"[0-9]*$"
)


@lru_cache(maxsize=8192)
def _numbered_form(word: str, single: frozenset[str]) -> bool:
    """``prompt2``, ``promptv3``, ``qwen72b``, ``gpt4turbo``, ``o4mini``: a forbidden word with
    a version, size or variant name attached."""
    return any(
        word.startswith(f) and (_NUMBERED.match(word[len(f) :]) or _VARIANT.match(word[len(f) :]))
        for f in single
        if len(f) < len(word)
    )


def _date_phrase(words: list[str], i: int) -> str | None:
    """``2026_07`` or ``2026_07_08`` starting at word ``i``: a year followed by a month
    (and a day) as separate words. A year alone is not a date: it may be an amount."""
    year = words[i]
    if len(year) != 4 or not year.isdigit() or not 1990 <= int(year) <= 2099:
        return None
    if i + 1 >= len(words) or not words[i + 1].isdigit() or len(words[i + 1]) > 2:
        return None
    if not 1 <= int(words[i + 1]) <= 12:
        return None
    phrase = f"{year}_{words[i + 1]}"
    if i + 2 < len(words) and words[i + 2].isdigit() and len(words[i + 2]) <= 2:
        try:
            _dt.date(int(year), int(words[i + 1]), int(words[i + 2]))
        except ValueError:
            return phrase
        phrase += f"_{words[i + 2]}"
    return phrase


def run_words(case_id: str, forbidden: Iterable[str]) -> list[tuple[str, str]]:
    """Words of a case ID that name a run rather than the business object:
    ``(word, why)`` with why one of "forbidden word", "version", "date", "run",
    "model size".

    Caught: the forbidden words, alone or with a version or size attached (``gpt4o``,
    ``prompt2``, ``qwen72b``); run and experiment numbers (``run3``, ``run_3``,
    ``trial2``); model sizes (``7b``, ``4o``); versions (``v2``); dates written as one
    word (``202607``, ``20260708``) or as a year and month (``2026_07``). A bare number
    is not a date, even a four-digit one (``over_2000`` is an amount). The trailing
    sequence number is the case's number, not a version; it is only reported when it is
    itself a six- or eight-digit date (``..._20260708``).
    """
    words, sequence = case_id_parts(case_id)
    single, multi = _forbidden(tuple(forbidden))
    found: list[tuple[str, str]] = []
    skip = 0
    for i, word in enumerate(words):
        if skip:
            skip -= 1
            continue
        if not word:
            continue
        stem = word.rstrip("0123456789")
        if (
            word in single
            or (stem and stem != word and stem in single)
            or _numbered_form(word, single)
        ):
            found.append((word, "forbidden word"))
        elif _VERSION.match(word):
            found.append((word, "version"))
        elif stem in _RUN_WORDS and stem != word:
            found.append((word, "run"))
        elif word in _RUN_WORDS and i + 1 < len(words) and words[i + 1].isdigit():
            found.append((f"{word}_{words[i + 1]}", "run"))
            skip = 1
        elif _MODEL_SIZE.match(word):
            found.append((word, "model size"))
        elif (phrase := _date_phrase(words, i)) is not None:
            found.append((phrase, "date"))
            skip = phrase.count("_")
        elif len(word) in (6, 8) and _is_date(word):
            found.append((word, "date"))
    joined = "_" + "_".join(words) + "_"
    found.extend((phrase, "forbidden word") for phrase in multi if f"_{phrase}_" in joined)
    if sequence is not None and len(sequence) in (6, 8) and _is_date(sequence):
        found.append((sequence, "date"))
    return found


def format_problem(case_id: str) -> str | None:
    """Why ``case_id`` does not follow the grammar, or None when it does."""
    if CASE_ID.match(case_id):
        return None
    if case_id != case_id.strip():
        return "it has leading or trailing spaces"
    upper = next((i for i, ch in enumerate(case_id, 1) if ch.isupper()), None)
    if upper is not None:
        return f"it has an uppercase letter at position {upper} ({case_id[upper - 1]!r})"
    other = next(
        (
            (i, ch)
            for i, ch in enumerate(case_id, 1)
            if not (ch.islower() or ch.isdigit() or ch == "_")
        ),
        None,
    )
    if other is not None:
        return (
            f"it contains {other[1]!r} at position {other[0]}; use only lower-case letters, "
            "digits and underscores"
        )
    if "__" in case_id or case_id.startswith("_") or case_id.endswith("_"):
        return "it has an empty word (a doubled, leading or trailing underscore)"
    words, sequence = case_id_parts(case_id)
    if sequence is None:
        return "it does not end in a sequence number (e.g. _001)"
    if len(sequence) < 3:
        padded = f"{int(sequence):03d}"
        return f"its sequence number '{sequence}' is not zero-padded to three digits ({padded})"
    if len(words) < 2:
        return "it needs at least a domain and an ability before the sequence number"
    if words[0][0].isdigit():
        return f"its domain '{words[0]}' does not start with a letter"
    if words[1][0].isdigit():
        return f"its ability '{words[1]}' does not start with a letter"
    return "it does not match the pattern"


def version_number(value: object) -> int | None:
    """N of a version label ``vN``; None when it is not one."""
    if isinstance(value, str) and re.fullmatch(r"v[1-9][0-9]{0,8}", value):
        return int(value[1:])
    return None


_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def iso_date(value: object) -> str | None:
    """``value`` when it is a real calendar date written YYYY-MM-DD (comparable as text)."""
    if not isinstance(value, str) or not _DATE.match(value):
        return None
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        return None
    return value


def suggest_case_id(value: str) -> str | None:
    """A well-formed spelling of ``value`` (lower case, underscores, padded number), if any."""
    text = re.sub(r"[\s\-.]+", "_", value.strip().lower())
    text = re.sub(r"_+", "_", text).strip("_")
    text = re.sub(r"_([0-9]{1,2})$", lambda m: f"_{int(m.group(1)):03d}", text)
    return text if text != value and CASE_ID.match(text) else None


_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"


def is_blank(text: str) -> bool:
    """True for text with nothing visible: empty, spaces (any script), zero-width marks."""
    return not text.strip().strip(_INVISIBLE).strip()
