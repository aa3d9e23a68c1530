"""Two corpus fixtures that claim the same corpus version.

A case pins its corpus by ``environment_requirements.corpus_version`` (docs/fields.md); a
run loads the corpus fixture that declares that version. When two fixtures declare the
same ``corpus_version`` (within a knowledge base or across knowledge bases), which one a
case is judged against depends on file order, and editing one silently changes what
half the runs see. Each corpus version lives in exactly one fixture: give the newer
snapshot a new ``corpus_version``, or merge the two files.

Passing::

    # fixtures/corpus/refund_policy_2026_01.yaml
    data: {knowledge_base: refund_policy, corpus_version: refund_policy_2026_01, ...}
    # fixtures/corpus/refund_policy_2026_07.yaml
    data: {knowledge_base: refund_policy, corpus_version: refund_policy_2026_07, ...}

Failing::

    # fixtures/corpus/refund_policy_2026_07.yaml
    data: {knowledge_base: refund_policy, corpus_version: refund_policy_2026_07, ...}
    # fixtures/corpus/refund_policy_2026_07_fix.yaml
    data: {knowledge_base: refund_policy, corpus_version: refund_policy_2026_07, ...}
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.lint.base import RepoIndex, reporter
from evalcase.model import Finding, Severity

CODE = "EC210"
NAME = "corpus-claimed-twice"
SEVERITY = Severity.ERROR
SCOPE = "repo"

# This rule reads fixtures only (see evalcase.lint.base).
CASE_LOOKUPS = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for version, fixtures in sorted(index.corpora_by_version.items()):
        if len(fixtures) < 2:
            continue
        ordered = sorted(fixtures, key=lambda f: f.path)
        for fixture in ordered:
            if index.focus is not None and fixture.path not in index.focus:
                continue
            others = [f for f in ordered if f is not fixture]
            line, col = fixture.corpus_at or (1, 1)
            kb = f" of knowledge base {fixture.knowledge_base!r}" if fixture.knowledge_base else ""
            yield report(
                fixture.path,
                line,
                col,
                f"corpus_version {version!r}{kb} is also claimed by "
                f"{', '.join(f.path for f in others)}; a case pins one corpus by its version: "
                "give each snapshot its own corpus_version, or merge the files",
                tuple((f.path, *(f.corpus_at or (1, 1))) for f in others),
            )
