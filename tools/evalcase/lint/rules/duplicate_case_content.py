"""Two cases under different IDs with the same execution and judging content.

A case is one test; the same test twice weighs its result twice in every pass rate and
gate, and usually comes from copying a case and forgetting to change it. Two cases whose
content is the same (every field but the identity fields and the governance fields:
input, context, state, tools, expectations, graders, risk level...) are an error, also
when they differ only in punctuation, spacing, letter case or full-width characters
(each text is NFKC-normalised, case-folded and stripped of punctuation and spaces before
the comparison). Make the copy test something else (another initial state, another
context, another expectation), or delete it. Near-duplicates (the same input and context
up to punctuation) are a warning, EC408.

Passing::

    # refund_eligibility_001 and refund_eligibility_002: the same input, but
    state: {fixtures: [order_signed_3_days]}        # and [order_signed_10_days]

Failing::

    # refund_eligibility_002 is refund_eligibility_001 with a new case_id and title
"""

from collections import defaultdict
from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.digest import case_digest, case_id_of
from evalcase.index.facts import CaseFacts
from evalcase.lint.base import RepoIndex, reporter
from evalcase.model import Finding, Severity

CODE = "EC417"
NAME = "duplicate-case-content"
SEVERITY = Severity.ERROR
SCOPE = "repo"

# Besides the checked cases, this rule reads the cases with the same execution and
# judging digest (see evalcase.lint.base).
CASE_LOOKUPS = ("content",)

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    governance = tuple(sorted(config.governance_fields))
    groups: dict[str, list[CaseFacts]] = defaultdict(list)
    for case in index.cases:
        # Tested on the text: decoding every case's digests would cost more than the rule.
        if case.case_id is not None and case.field_digest_text not in ("", "{}"):
            groups[case.copy_digest or case_digest(case, governance)].append(case)
    checked = {c.path for c in index.checked_cases()}
    for members in groups.values():
        ids = {case_id_of(c) for c in members}
        if len(ids) < 2:
            continue  # one ID twice is EC206
        ordered = sorted(members, key=lambda c: c.path)
        for case in ordered:
            if case.path not in checked:
                continue
            others = [c for c in ordered if case_id_of(c) != case_id_of(case)]
            line, col = case.case_id[1:] if case.case_id else (1, 1)
            names = ", ".join(f"{case_id_of(c)} ({c.path})" for c in others[:3])
            more = f" and {len(others) - 3} more" if len(others) > 3 else ""
            yield report(
                case.path,
                line,
                col,
                f"this case has the same execution and judging content as {names}{more}; "
                "the same test twice weighs its result twice in pass rates and gates: make "
                "it test something else, or delete the copy",
                tuple((c.path, *(c.case_id[1:] if c.case_id else (1, 1))) for c in others),
            )
