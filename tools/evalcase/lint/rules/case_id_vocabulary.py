"""A case ID whose domain or ability is not in the repository's vocabulary.

The first word of a case ID is the business domain and the second the ability under
evaluation (seed 000 12.2.1). Drawing both from a fixed list (``[naming] domains`` and
``abilities`` in evalcase.toml) keeps reports sliceable by ID prefix and stops synonyms
(``refunds``, ``rfnd``) from splitting one domain in two. A genuinely new domain or
ability is added to the configuration, in review, once.

Passing::

    case_id: refund_rag_member_points_001

Failing::

    case_id: refunds_rag_member_points_001    # 'refunds' is not a configured domain
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, did_you_mean, listing
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.naming import bad_characters, case_id_parts

CODE = "EC202"
NAME = "case-id-vocabulary"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    value = data.get("case_id")
    if not isinstance(value, str) or not value or bad_characters(value):
        return
    words, _ = case_id_parts(value)
    problems = []
    config = ctx.config
    if words and words[0] and words[0] not in config.domains:
        problems.append(
            f"domain {words[0]!r} is not a known domain{did_you_mean(words[0], config.domains)}"
            f"; known domains: {listing(config.domains, 40)}"
        )
    if len(words) > 1 and words[1] and words[1] not in config.abilities:
        problems.append(
            f"ability {words[1]!r} is not a known ability"
            f"{did_you_mean(words[1], config.abilities)}; known abilities: "
            f"{listing(config.abilities, 40)}"
        )
    if not problems:
        return
    line, col = doc.locate(("case_id",))
    yield report(
        doc.path,
        line,
        col,
        f"case_id {value!r}: {'; '.join(problems)}. A new one is added to [naming] domains "
        "or abilities in evalcase.toml",
    )
