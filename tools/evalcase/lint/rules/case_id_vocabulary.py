"""A case ID whose domain or ability is not in the team's vocabulary.

The first word of a case ID is the business domain and the second the ability under
evaluation (docs/versioning.md). Drawing both from a list the team keeps (``[naming]
domains`` and ``abilities`` in evalcase.toml, plus ``extend_domains`` and
``extend_abilities``) keeps reports sliceable by ID prefix and stops synonyms
(``refunds``, ``rfnd``) from splitting one domain in two. A genuinely new domain or
ability is added to the configuration, in review, once.

evalcase ships no vocabulary: until a repository configures one, any well-formed word is
accepted and this rule reports nothing. The message names the vocabulary in force and the
file and keys it comes from.

Passing (with ``domains = ["refund"]`` and ``abilities = ["rag"]``)::

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
    checks = (
        ("domain", "domains", config.domains, 0),
        ("ability", "abilities", config.abilities, 1),
    )
    for what, key, vocabulary, index in checks:
        if not vocabulary or len(words) <= index or not words[index]:
            continue  # no vocabulary configured: any well-formed word
        word = words[index]
        if word not in vocabulary:
            source = config.vocabulary_sources.get(key, f"[naming] {key}")
            problems.append(
                f"{what} {word!r} is not in the {what} vocabulary of {source}"
                f"{did_you_mean(word, vocabulary)} ({listing(vocabulary, 40)}); add it "
                f"there (or to [naming] extend_{key}) if it is a new {what}"
            )
    if not problems:
        return
    line, col = doc.locate(("case_id",))
    yield report(doc.path, line, col, f"case_id {value!r}: {'; '.join(problems)}")
