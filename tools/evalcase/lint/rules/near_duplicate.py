"""Two cases with the same input, context and initial state, up to case, whitespace and
punctuation.

Near-duplicates weigh one scenario twice in pass rates and usually come from copying a
case and forgetting to change what makes it different (docs/authoring.md: cover equivalence
classes with representative cases, not repetitions). The same input in a different
context, or over a different initial state (``state``, ``initial_state``), is a
different case (docs/fields.md), so the comparison covers all three together; other
differences (expectations, graders) are not considered. A warning: keep both when the
difference is real but elsewhere, and suppress with a reason. Two cases whose whole
execution and judging content is the same are an error (EC417), not reported here.

Passing::

    # case A
    input: 这个耳机能退吗？
    context: {signed_days: 3}
    # case B
    input: 这个耳机能退吗？
    context: {signed_days: 10}

Failing::

    # case A
    input: 这个耳机能退吗？
    # case B
    input: "这个耳机， 能退吗"
"""

from collections import Counter, defaultdict
from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.digest import case_digest
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity

CODE = "EC408"
NAME = "near-duplicate"
SEVERITY = Severity.WARNING
SCOPE = "repo"
# Besides the checked cases, this rule reads the cases sharing their input
# fingerprint (see evalcase.lint.base).
CASE_LOOKUPS = ("similarity",)

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    counts = Counter(case.similarity[0] for case in index.cases if case.similarity is not None)
    repeated = {key for key, n in counts.items() if n > 1}
    groups: dict[str, list[tuple[str, str, int, int]]] = defaultdict(list)
    for case in index.cases:
        if not repeated or case.similarity is None or case.similarity[0] not in repeated:
            continue
        key, line, col = case.similarity
        case_id = str(case.case_id[0]) if case.case_id else case.path
        groups[key].append((case_id, case.path, line, col))
    governance = tuple(sorted(config.governance_fields))
    digests = {
        case.path: case.copy_digest or case_digest(case, governance)
        for case in index.cases
        if case.similarity is not None and case.similarity[0] in repeated
    }
    for members in groups.values():
        if len(members) < 2:
            continue
        for case_id, path, line, col in members:
            # A copy under the same ID is a duplicate ID (EC206), an exact copy under
            # another ID (up to punctuation) is EC417: neither is a near-duplicate.
            others = [
                m for m in members if m[0] != case_id and digests.get(m[1]) != digests.get(path)
            ]
            if not others:
                continue
            names = ", ".join(f"{m[0]} ({m[1]})" for m in others[:3])
            more = f" and {len(others) - 3} more" if len(others) > 3 else ""
            yield report(
                path,
                line,
                col,
                f"input and context are the same as in {names}{more} (ignoring case, "
                "whitespace and punctuation); merge the cases, or make the difference "
                "explicit in input or context",
                tuple((m[1], m[2], m[3]) for m in others),
            )
