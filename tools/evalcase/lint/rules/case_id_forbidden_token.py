"""A case ID that names a run: a model, a prompt or experiment word, a version or a date.

A case ID names the business object under evaluation, never one run of it (see
docs/case-format.md). ``refund_gpt4o_points_001`` or ``refund_points_v2_001`` stop making sense when
the model or prompt changes, and ``refund_points_20260708_001`` when the date passes; the
run records which model, prompt and versions it used. Case versions live in
``case_version``. The built-in forbidden words are model
families (``gpt``, ``claude``, ``qwen``, ``o4`` ...), prompt words and experiment words
(``exp``, ``abtest``, ``tmp``); ordinary nouns a business uses (``test``, ``draft``,
``final``) are not among them. They are configurable: ``[naming]
extend_forbidden_tokens`` adds words, ``ignore_forbidden_tokens`` takes words out (a
model-family name that is also your product), ``forbidden_tokens`` replaces the list.
They are caught with a version, size or variant attached (``gpt4o``, ``prompt2``,
``qwen72b``, ``o4mini``); run and
experiment numbers (``run3``, ``run_3``, ``trial2``), A/B test names (``abtest``,
``variant_a``), model sizes (``7b``, ``4o``), version-like words (``v2``) and dates
(``202607``, ``20260708``, ``2026_07``) are always rejected. A bare number is not a date,
even a four-digit one: ``refund_over_2000_001`` names an amount. The trailing sequence
number is the case's number, not a version.

Passing::

    case_id: refund_rag_member_points_001
    case_id: refund_policy_over_2000_001          # an amount, not a year

Failing::

    case_id: refund_rag_gpt4o_member_points_001
    case_id: refund_rag_member_points_v2_001
    case_id: refund_rag_member_points_20260708_001
    case_id: refund_rag_member_points_run3_001
    case_id: refund_rag_promptv2_points_001
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.naming import bad_characters, run_words

CODE = "EC203"
NAME = "case-id-forbidden-token"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_WHY = {
    "forbidden word": "a model or run word",
    "version": "a version",
    "date": "a date",
    "run": "a run or experiment number",
    "model size": "a model size",
}


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    value = data.get("case_id")
    if not isinstance(value, str) or not value or bad_characters(value):
        return
    hits = run_words(value, ctx.config.forbidden_tokens)
    if not hits:
        return
    words = ", ".join(f"{word!r} ({_WHY[why]})" for word, why in hits)
    line, col = doc.locate(("case_id",))
    yield report(
        doc.path,
        line,
        col,
        f"case_id {value!r} contains {words}; an ID names the business object under "
        "evaluation, never a run: describe the scenario instead (models, prompts and dates "
        "belong to the run, versions to case_version)",
    )
