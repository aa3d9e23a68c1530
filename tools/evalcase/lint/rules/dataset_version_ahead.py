"""A case whose ``dataset_version`` is greater than its dataset manifest's.

A case's dataset_version is the dataset version that last added or changed it; the
manifest's is the dataset's current version. A case ahead of its manifest claims a
release that does not exist (usually the manifest bump was forgotten, or the case was
copied from a branch further ahead). Versions compare by number: v10 is after v9.

Passing::

    # datasets/refund_regression_set/dataset.yaml: dataset_version: v2
    dataset_version: v2

Failing::

    # datasets/refund_regression_set/dataset.yaml: dataset_version: v2
    dataset_version: v3
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity
from evalcase.naming import version_number

CODE = "EC308"
NAME = "dataset-version-ahead"
SEVERITY = Severity.ERROR
SCOPE = "repo"

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    current: dict[str, tuple[int, str]] = {}
    for folder, manifest in index.manifests_by_dir.items():
        if manifest.dataset_version is not None:
            number = version_number(manifest.dataset_version[0])
            if number is not None:
                current[folder] = (number, str(manifest.dataset_version[0]))
    numbers: dict[object, int | None] = {}
    for case in index.checked_cases():
        if case.dataset_version is None:
            continue
        limit = current.get(case.dataset_dir)
        if limit is None:
            continue
        value, line, col = case.dataset_version
        mine = numbers.get(value, -1)
        if mine == -1:
            mine = numbers[value] = version_number(value)
        if mine is None or mine <= limit[0]:
            continue
        manifest = index.manifests_by_dir[case.dataset_dir]
        yield report(
            case.path,
            line,
            col,
            f"dataset_version {value} is ahead of the dataset's current version {limit[1]} "
            f"({manifest.path}); a case records the dataset version that last changed it: "
            f"bump the manifest, or set this to at most {limit[1]}",
        )
