"""A changed or added case does not carry the manifest's current dataset_version.

A case's dataset_version names the dataset version that last added or changed it, so
reports can tell which cases a version brought in. A case whose execution or judging
fields changed since the base revision, or since the dataset's latest release at or
below the manifest's version, or that was added since, must carry the manifest's
current dataset_version. `evalcase bump` sets it (after bumping the manifest when the
current version is already released).

Passing (manifest at v2; this case changed in v2)::

    dataset_version: v2

Failing::

    dataset_version: v1     # the case changed, the manifest is at v2
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from evalcase.index.digest import case_id_of, text
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity
from evalcase.versioning.history import position
from evalcase.versioning.tags import version_number

if TYPE_CHECKING:
    from evalcase.versioning.history import History

CODE = "EC506"
NAME = "stale-case-dataset-version"
SEVERITY = Severity.ERROR
SCOPE = "history"

report = reporter(CODE, NAME, SEVERITY)


def check(history: History) -> Iterator[Finding]:
    for dataset_id in sorted(history.manifests_by_id):
        version = history.version_of(dataset_id)
        if version_number(version) is None:
            continue
        for case in history.cases_needing(dataset_id, version):
            label = text(case.dataset_version)
            if not label or label == version:
                continue
            line, column = position(case.dataset_version)
            yield report(
                case.path,
                line,
                column,
                f"case {case_id_of(case)} was added or changed in dataset {dataset_id} "
                f"{version} (the manifest's current version) but its dataset_version is "
                f"{label}; set it to {version} "
                "(`evalcase bump` does it)",
            )
