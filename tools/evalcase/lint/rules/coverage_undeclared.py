"""A case's coverage cell that the manifest does not declare.

The coverage matrix (docs/authoring.md) is declared once, in dataset.yaml
``coverage.dimensions``: each dimension with its equivalence classes. A case names its
cell in ``metadata.coverage``; a dimension or class the manifest does not declare (a typo,
a class renamed in the manifest) drops the case out of the matrix, and the report shows a
gap that is not there, or hides one that is. A case that names a cell when the manifest
declares no coverage at all is reported too.

Passing::

    # dataset.yaml
    coverage:
      dimensions: {user_state: [verified, unverified]}
    # the case
    metadata:
      coverage: {user_state: verified}

Failing::

    metadata:
      coverage: {user_state: verifed}
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.lint.base import RepoIndex, reporter
from evalcase.lint.semantic import did_you_mean
from evalcase.model import Finding, Severity

CODE = "EC312"
NAME = "coverage-undeclared"
SEVERITY = Severity.ERROR
SCOPE = "repo"

# This rule reads the checked cases and their manifests (see evalcase.lint.base).
CASE_LOOKUPS = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for case in index.checked_cases():
        if not case.coverage:
            continue
        manifest = index.manifests_by_dir.get(case.dataset_dir)
        if manifest is None:
            continue  # a case outside a dataset is reported by the identity rules
        declared = manifest.coverage
        for dimension, value, line, col in case.coverage:
            if declared is None:
                yield report(
                    case.path,
                    line,
                    col,
                    f"metadata.coverage names {dimension}={value!r}, but {manifest.path} "
                    "declares no coverage dimensions; declare them under coverage.dimensions",
                )
            elif dimension not in declared:
                yield report(
                    case.path,
                    line,
                    col,
                    f"coverage dimension {dimension!r} is not declared in {manifest.path}"
                    f"{did_you_mean(dimension, declared)}; declared: "
                    f"{', '.join(sorted(declared))}",
                )
            elif value not in declared[dimension]:
                yield report(
                    case.path,
                    line,
                    col,
                    f"{value!r} is not a class of coverage dimension {dimension!r}"
                    f"{did_you_mean(value, declared[dimension])}; its classes: "
                    f"{', '.join(declared[dimension])}",
                )
