"""A suite that lists a case ID the dataset does not have, or selects no case at all.

A suite that selects cases by ``case_ids`` runs exactly those cases; an ID that names no
case of the dataset (a typo, a renamed or removed case, a case of another dataset) makes
the suite, and any gate on it, silently measure less than it says. Every listed ID must
be a case of this dataset, and every ID glob (``refund_*``) must match one. A suite whose
criteria select no case of the dataset (``tags: [smok]``) is reported too: ``evalcase run
--suite`` refuses a selection of nothing, and a lint-clean suite always runs. At most
100 findings are reported per manifest; the last says that more were left out.

Passing::

    suites:
      launch_check:
        case_ids: [refund_eligibility_001]

Failing::

    suites:
      launch_check:
        case_ids: [refund_eligibilty_001]     # no such case in this dataset
      smoke:
        tags: [smok]                          # no case has this tag
"""

from collections.abc import Iterable, Iterator
from fnmatch import fnmatchcase

from evalcase.config import Config
from evalcase.index.digest import case_id_of
from evalcase.index.facts import ManifestFacts
from evalcase.lint.base import RepoIndex, reporter
from evalcase.lint.semantic import criteria, dataset_cases, did_you_mean, in_suite_of
from evalcase.loader import capped
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
        if not manifest.suites:
            continue
        # At most MAX_FINDINGS_PER_RULE per manifest, like every rule: a manifest listing
        # 100,000 unknown IDs costs no more than a hundred findings.
        yield from capped(_unknown(index, manifest))


def _empty(index: RepoIndex, manifest: ManifestFacts, reported: set[str]) -> Iterator[Finding]:
    """Suites that select no case at all: `evalcase run --suite` would refuse them."""
    cases = dataset_cases(index, manifest)
    if not cases:  # a dataset just created (`evalcase new-dataset`): no suite can select yet
        return
    for name, line, col, selectors in manifest.suites:
        if name in reported:
            continue
        wanted = criteria(selectors)
        if any(in_suite_of(c, wanted) for c in cases):
            continue
        yield report(
            manifest.path,
            line,
            col,
            f"suite {name!r} selects no case of this dataset (its criteria: "
            f"{', '.join(sorted(selectors)) or 'none'}); evalcase run --suite {name} would "
            "refuse it: fix its criteria, or remove the suite",
        )


def _unknown(index: RepoIndex, manifest: ManifestFacts) -> Iterator[Finding]:
    ids = {case_id_of(c) for c in dataset_cases(index, manifest)}
    elsewhere: dict[str, str] | None = None
    reported: set[str] = set()
    for name, _, _, selectors in manifest.suites:
        for case_id, line, col in selectors.get("case_ids", ()):
            if case_id in ids:
                continue
            reported.add(name)
            if any(ch in case_id for ch in "*?["):
                if any(fnmatchcase(i, case_id) for i in ids):
                    continue
                yield report(
                    manifest.path,
                    line,
                    col,
                    f"suite {name!r} lists the pattern {case_id!r}, which matches no case of "
                    "this dataset; fix the pattern, or select by tags or roles",
                )
                continue
            if elsewhere is None:
                elsewhere = {case_id_of(c): c.dataset_dir for c in index.cases}
            other = elsewhere.get(case_id)
            hint = f"; it is a case of dataset {other!r}" if other else did_you_mean(case_id, ids)
            yield report(
                manifest.path,
                line,
                col,
                f"suite {name!r} lists {case_id!r}, which is not a case of this dataset"
                f"{hint}; list only this dataset's case IDs, or select by tags or roles",
            )
    yield from _empty(index, manifest, reported)
