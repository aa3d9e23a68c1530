"""A suite that lists a case ID the dataset does not have.

A suite that selects cases by ``case_ids`` runs exactly those cases; an ID that names no
case of the dataset (a typo, a renamed or removed case, a case of another dataset) makes
the suite, and any gate on it, silently measure less than it says. Every listed ID must
be a case of this dataset.

Passing::

    suites:
      launch_check:
        case_ids: [refund_eligibility_001]

Failing::

    suites:
      launch_check:
        case_ids: [refund_eligibilty_001]     # no such case in this dataset
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.digest import case_id_of
from evalcase.lint.base import RepoIndex, reporter
from evalcase.lint.semantic import dataset_cases, did_you_mean
from evalcase.model import Finding, Severity

CODE = "EC310"
NAME = "suite-unknown-case"
SEVERITY = Severity.ERROR
SCOPE = "repo"

# A checked manifest's suites name cases of its dataset (see evalcase.lint.base).
CASE_LOOKUPS = ("dataset",)

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for manifest in index.manifests:
        if index.focus is not None and manifest.path not in index.focus:
            continue
        if not any("case_ids" in s[3] for s in manifest.suites):
            continue
        ids = {case_id_of(c) for c in dataset_cases(index, manifest)}
        elsewhere = {case_id_of(c): c.dataset_dir for c in index.cases}
        for name, _, _, selectors in manifest.suites:
            for case_id, line, col in selectors.get("case_ids", ()):
                if case_id in ids:
                    continue
                other = elsewhere.get(case_id)
                hint = (
                    f"; it is a case of dataset {other!r}" if other else did_you_mean(case_id, ids)
                )
                yield report(
                    manifest.path,
                    line,
                    col,
                    f"suite {name!r} lists {case_id!r}, which is not a case of this dataset"
                    f"{hint}; list only this dataset's case IDs, or select by tags or roles",
                )
