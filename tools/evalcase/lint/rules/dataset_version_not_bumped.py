"""A released dataset version changed: its dataset_version must be bumped.

A git tag ``<dataset_id>@<dataset_version>`` (made by `evalcase tag`) releases a dataset
version and records its digest: every case's content and every fixture its cases
reference. A released version is frozen, so that a run months later (`evalcase export
DATASET@vN`) gets exactly what was evaluated before. When the dataset's current digest
differs from the digest in the tag of the manifest's current version (cases added,
changed, removed or renamed, or a referenced fixture changed), lint fails at the
manifest's dataset_version line, names what changed and the version to bump to. Runs on
every lint in a git repository with tags; no ``--base`` needed. A fixture shared by two
datasets changes both.

A release also freezes how its cases are grouped (seed 000 12.2.1: regrouping the same
cases is a dataset_version change): a case's tags, roles, risk level and coverage cell,
and the manifest's ``suites``, ``gates`` and ``coverage``. Adding a tag that
moves a case into a gated suite, promoting an observation case or loosening a gate
changes what the release's numbers mean, so it needs a dataset_version bump (the case's
own case_version stays: its task did not change). Other governance fields (title, owner,
review records), the manifest's title, description and owner, and its ``agent`` (which
agent runs the dataset is a run setting, not its content) change no digest.
`evalcase bump` writes the bump; `evalcase tag DATASET` then releases it.

Passing (after the tag refund_regression_set@v1, a case changed and)::

    dataset_version: v2

Failing::

    dataset_version: v1     # tagged as refund_regression_set@v1, content changed since
    dataset_version: v1     # tagged, then a gate's min_pass_rate went from 1.0 to 0.9
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity
from evalcase.versioning.history import position
from evalcase.versioning.tags import next_version

if TYPE_CHECKING:
    from evalcase.versioning.history import History

CODE = "EC505"
NAME = "dataset-version-not-bumped"
SEVERITY = Severity.ERROR
SCOPE = "history"

report = reporter(CODE, NAME, SEVERITY)


def check(history: History) -> Iterator[Finding]:
    for dataset_id in history.released_datasets():
        change = history.frozen_change(dataset_id)
        content = history.content(dataset_id)
        if change is None or content is None:
            continue
        release, delta = change
        target = next_version(content.version, history.releases.highest(dataset_id))
        case_paths = {e.id: e.path for e in content.cases}
        fixture_paths = {e.id: e.path for e in content.fixtures}
        related = tuple(
            (case_paths[i], 1, 1)
            for i in (*delta.cases_modified, *delta.cases_added, *delta.cases_regrouped)
            if i in case_paths
        ) + tuple(
            (fixture_paths[i], 1, 1)
            for i in (*delta.fixtures_modified, *delta.fixtures_added)
            if i in fixture_paths
        )
        line, column = position(content.manifest.dataset_version)
        yield report(
            content.manifest.path,
            line,
            column,
            f"dataset {dataset_id} {content.version} is released (tag {release.tag}) and "
            f"has changed since: {delta.describe()}; a released version is frozen: bump "
            f"dataset_version to {target} (`evalcase bump`), then release it with "
            f"`evalcase tag {dataset_id}`",
            related,
        )
