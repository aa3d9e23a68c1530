"""Two case files with the same case_id, in the same dataset or in different ones.

Case IDs are unique across the whole repository (docs/versioning.md): results, regressions
and review records follow a case by its ID alone, so two cases sharing one would have
their results mixed. Every file holding the ID is reported, pointing at the others.

Passing::

    # datasets/refund_regression_set/cases/refund_eligibility_001.yaml
    case_id: refund_eligibility_001
    # datasets/crm_safety_set/cases/crm_safety_bulk_delete_001.yaml
    case_id: crm_safety_bulk_delete_001

Failing::

    # datasets/refund_regression_set/cases/refund_eligibility_001.yaml
    case_id: refund_eligibility_001
    # datasets/crm_safety_set/cases/refund_eligibility_001.yaml
    case_id: refund_eligibility_001
"""

from collections import Counter, defaultdict
from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity

CODE = "EC206"
NAME = "duplicate-case-id"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Besides the checked cases, this rule reads the cases sharing their case_id
# (see evalcase.lint.base).
CASE_LOOKUPS = ("case_id",)

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    counts = Counter(case.case_id[0] for case in index.cases if case.case_id is not None)
    repeated = {value for value, n in counts.items() if n > 1 and value}
    by_id: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for case in index.cases:
        if repeated and case.case_id is not None and case.case_id[0] in repeated:
            value, line, col = case.case_id
            by_id[value].append((case.path, line, col))
    for value, places in by_id.items():
        if len(places) < 2:
            continue
        for place in places:
            others = tuple(p for p in places if p != place)
            where = ", ".join(p[0] for p in others)
            yield report(
                place[0],
                place[1],
                place[2],
                f"case ID {value!r} is also used by {where}; case IDs are unique across all "
                "datasets: give one of them a new ID (and file name)",
                others,
            )
