"""A placeholder left unfilled: a value starting with ``TODO:``.

`evalcase new` and `evalcase import` write every field a case needs, with ``TODO:``
placeholders (saying what belongs there) where a person has to decide: the title, the
expected behaviour, the expected calls, the risk level. Until each one is replaced the
case is not finished and must not be merged, so each is an error naming its field. A
placeholder may also be a mapping key (``TODO: tool name``) where the key is what is
missing.

Passing::

    expected_behavior:
      - 识别为质量问题售后，说明需要质检。

Failing::

    expected_behavior:
      - "TODO: what the agent should do (behaviours, not a script)"
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document, capped
from evalcase.model import FileKind, Finding, Severity
from evalcase.placeholders import PREFIX, is_placeholder

CODE = "EC451"
NAME = "placeholder"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def _clip(text: object, limit: int = 60) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    # Nearly every file has none: one substring search instead of a walk over every value.
    # (A placeholder spelled with escapes is not one evalcase wrote.)
    if PREFIX not in doc.text:
        return
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    stack: list[tuple[tuple[str | int, ...], object]] = [((), data)]
    found: list[tuple[int, int, str]] = []
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, child in value.items():
                child_path = (*path, key)
                if is_placeholder(key):
                    line, col = doc.locate_key(child_path)
                    where = dotted(path) or "the top level"
                    what = f"a key under {where} is a placeholder ('{_clip(key)}')"
                    found.append((line, col, what))
                stack.append((child_path, child))
        elif isinstance(value, list):
            stack.extend(((*path, i), child) for i, child in enumerate(value))
        elif is_placeholder(value):
            line, col = doc.locate(path)
            found.append((line, col, f"{dotted(path)} is still a placeholder ('{_clip(value)}')"))
    yield from capped(
        report(doc.path, line, col, f"{what}; replace it with the real value")
        for line, col, what in sorted(found)
    )
