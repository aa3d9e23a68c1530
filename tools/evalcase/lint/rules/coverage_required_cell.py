"""A required coverage cell without an approved case.

The manifest may mark cells of its coverage matrix required (``coverage.required``):
the high-risk combinations (docs/authoring.md) that must each have a representative
case. A required cell holds when at least one case names it in ``metadata.coverage``,
is approved (``review_status: approved``) and is counted (not an observation case):
only those cases count in pass rates, so only they show the cell is covered. A cell
may leave a dimension out (any of its classes will do). A required cell naming a
dimension or class the manifest does not declare is reported too.

Passing::

    # dataset.yaml
    coverage:
      dimensions: {plan_structure: [regular, special], operation: [delete, safety_avoid]}
      required: [{plan_structure: special, operation: safety_avoid}]
    # and an approved case with
    metadata: {coverage: {plan_structure: special, operation: safety_avoid}, ...}

Failing: the same manifest with no approved case in that cell (only a draft, or only an
observation case).
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.lint.base import RepoIndex, reporter
from evalcase.model import Finding, Severity

CODE = "EC452"
NAME = "coverage-required-cell"
SEVERITY = Severity.ERROR
SCOPE = "repo"

# A checked manifest's required cells are held by cases of its dataset (see
# evalcase.lint.base).
CASE_LOOKUPS = ("dataset",)

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for manifest in index.manifests:
        if not manifest.coverage_required or (
            index.focus is not None and manifest.path not in index.focus
        ):
            # Its findings belong to the manifest: a focused run (pre-commit) reports them
            # when the manifest is checked.
            continue
        declared = manifest.coverage or {}
        cases = [c for c in index.cases if c.dataset_dir == manifest.dataset_dir]
        for cell, line, col in manifest.coverage_required:
            shown = ", ".join(f"{k}={v}" for k, v in cell)
            unknown = [f"{k}={v}" for k, v in cell if k not in declared or v not in declared[k]]
            if unknown:
                yield report(
                    manifest.path,
                    line,
                    col,
                    f"required cell {{{shown}}} names {', '.join(unknown)}, which "
                    "coverage.dimensions does not declare; declare it or correct the cell",
                )
                continue
            holders = [
                c
                for c in cases
                if c.review_status == "approved"
                and "observation" not in c.roles
                and all((k, v) in {(d, x) for d, x, _, _ in c.coverage} for k, v in cell)
            ]
            if holders:
                continue
            others = [
                c.path.rsplit("/", 1)[-1]
                for c in cases
                if all((k, v) in {(d, x) for d, x, _, _ in c.coverage} for k, v in cell)
            ]
            hint = (
                f"; {', '.join(others[:3])} name{'s' * (len(others) == 1)} it but "
                f"{'is' if len(others) == 1 else 'are'} not approved or only observation"
                if others
                else ""
            )
            yield report(
                manifest.path,
                line,
                col,
                f"required coverage cell {{{shown}}} has no approved, counted case{hint}; "
                "add or approve a case for it, or drop the requirement",
            )
